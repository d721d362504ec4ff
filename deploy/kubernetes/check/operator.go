package check

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strconv"

	"github.com/go-logr/logr"
	otelv1beta1 "github.com/open-telemetry/opentelemetry-operator/apis/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// OperatorExample is deploy/operator/statsgate.yaml decoded: the OpenTelemetryCollector
// and the headless Service the fleet gossips through.
type OperatorExample struct {
	Collector *otelv1beta1.OpenTelemetryCollector
	Gossip    *corev1.Service
	// Config is the collector config of spec.config, as YAML.
	Config []byte
	// Env is the container's environment, secrets and downward API fields as
	// placeholders (as FindGateway has it).
	Env map[string]string
}

// ParseOperatorExample decodes the example strictly (the Operator's v1beta1 types).
func ParseOperatorExample(data []byte) (*OperatorExample, error) {
	set, err := DecodeAll(data)
	if err != nil {
		return nil, err
	}
	ex := &OperatorExample{Env: map[string]string{}}
	for _, o := range set.Other {
		if c, ok := o.Value.(*otelv1beta1.OpenTelemetryCollector); ok {
			if ex.Collector != nil {
				return nil, errors.New("more than one OpenTelemetryCollector")
			}
			ex.Collector = c
		}
	}
	if ex.Collector == nil {
		return nil, errors.New("no OpenTelemetryCollector (opentelemetry.io/v1beta1)")
	}
	if len(set.Services) != 1 {
		return nil, fmt.Errorf("want one Service (the fleet's gossip), found %d", len(set.Services))
	}
	ex.Gossip = set.Services[0]
	j, err := json.Marshal(&ex.Collector.Spec.Config)
	if err != nil {
		return nil, fmt.Errorf("spec.config: %w", err)
	}
	if ex.Config, err = yaml.JSONToYAML(j); err != nil {
		return nil, fmt.Errorf("spec.config: %w", err)
	}
	for _, e := range ex.Collector.Spec.Env {
		switch {
		case e.ValueFrom == nil:
			ex.Env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ex.Env[e.Name] = "placeholder-for-secret-" + e.ValueFrom.SecretKeyRef.Name
		default:
			ex.Env[e.Name] = "placeholder"
		}
	}
	return ex, nil
}

// operatorSelector is the selector the Operator gives the pods of the collector name
// in namespace (its manifestutils.SelectorLabels for the collector component).
func operatorSelector(namespace, name string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/managed-by": "opentelemetry-operator",
		"app.kubernetes.io/instance":   namespace + "." + name,
		"app.kubernetes.io/part-of":    "opentelemetry",
		"app.kubernetes.io/component":  "opentelemetry-collector",
	}
}

// CheckOperatorExample compares the example with the base's gateway (base, rendered
// from deploy/kubernetes/base, and its HPA and PDB in set): mode deployment; the same
// image, replicas, autoscaler and disruption budget; the same environment, resources,
// security contexts, preStop, grace period and probe timings; the fleet key's volume
// and mount; every container port the Operator does not derive itself (the exporter's
// /metrics, gossip over TCP and UDP) at the same number and protocol; the collector
// config equal to the base's as decoded YAML; and a gossip Service that fleet::join
// names, headless, listing pods not ready, selecting the Operator's pods.
func CheckOperatorExample(ex *OperatorExample, base *Gateway, set *Set) error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	otc, spec, c := ex.Collector, ex.Collector.Spec, base.Container
	if spec.Mode != otelv1beta1.ModeDeployment {
		fail("spec.mode %q: statsgate runs as a Deployment", spec.Mode)
	}
	if spec.Image != c.Image {
		fail("spec.image %q, the base's is %q", spec.Image, c.Image)
	}
	same := func(what string, got, want any) {
		if !reflect.DeepEqual(got, want) {
			fail("%s differs from the base's:\n%s", what, diffYAML(want, got, "example"))
		}
	}
	pod := base.Deployment.Spec.Template.Spec
	same("spec.replicas", spec.Replicas, base.Deployment.Spec.Replicas)
	same("spec.env", spec.Env, c.Env)
	same("spec.resources", spec.Resources, c.Resources)
	same("spec.securityContext", spec.SecurityContext, c.SecurityContext)
	same("spec.podSecurityContext", spec.PodSecurityContext, pod.SecurityContext)
	same("spec.lifecycle", spec.Lifecycle, c.Lifecycle)
	same("spec.terminationGracePeriodSeconds", spec.TerminationGracePeriodSeconds, pod.TerminationGracePeriodSeconds)
	for _, p := range []struct {
		what string
		got  *otelv1beta1.Probe
		want *corev1.Probe
	}{{"spec.readinessProbe", spec.ReadinessProbe, c.ReadinessProbe}, {"spec.livenessProbe", spec.LivenessProbe, c.LivenessProbe}} {
		if p.got == nil || p.want == nil {
			fail("%s: not set", p.what)
			continue
		}
		same(p.what, []*int32{p.got.PeriodSeconds, p.got.TimeoutSeconds, p.got.FailureThreshold},
			[]*int32{&p.want.PeriodSeconds, &p.want.TimeoutSeconds, &p.want.FailureThreshold})
	}
	if len(set.HPAs) == 1 {
		h, a := set.HPAs[0].Spec, spec.Autoscaler
		if a == nil {
			fail("spec.autoscaler: not set, the base has an HPA")
		} else {
			var cpu, mem *int32
			for _, m := range h.Metrics {
				if m.Resource != nil && m.Resource.Name == corev1.ResourceCPU {
					cpu = m.Resource.Target.AverageUtilization
				}
				if m.Resource != nil && m.Resource.Name == corev1.ResourceMemory {
					mem = m.Resource.Target.AverageUtilization
				}
			}
			same("spec.autoscaler", []any{a.MinReplicas, a.MaxReplicas, a.TargetCPUUtilization, a.TargetMemoryUtilization, a.Behavior},
				[]any{h.MinReplicas, &h.MaxReplicas, cpu, mem, h.Behavior})
		}
	}
	if len(set.PDBs) == 1 {
		if spec.PodDisruptionBudget == nil {
			fail("spec.podDisruptionBudget: not set, the base has one")
		} else {
			same("spec.podDisruptionBudget", spec.PodDisruptionBudget.MaxUnavailable, set.PDBs[0].Spec.MaxUnavailable)
		}
	}

	// The fleet key: the base's volume and mount.
	for _, v := range pod.Volumes {
		if v.Secret == nil {
			continue
		}
		var got *corev1.Volume
		for i := range spec.Volumes {
			if spec.Volumes[i].Name == v.Name {
				got = &spec.Volumes[i]
			}
		}
		same("spec.volumes "+v.Name, got, &v)
		for _, m := range c.VolumeMounts {
			if m.Name != v.Name {
				continue
			}
			var gotMount *corev1.VolumeMount
			for i := range spec.VolumeMounts {
				if spec.VolumeMounts[i].Name == m.Name {
					gotMount = &spec.VolumeMounts[i]
				}
			}
			same("spec.volumeMounts "+m.Name, gotMount, &m)
		}
	}

	// Ports the Operator does not derive from the config (the receivers' and the
	// collector's own metrics it adds itself; the probes use health_check's endpoint).
	derived := map[string]bool{"otlp-grpc": true, "otlp-http": true, "health": true, TelemetryPortName: true}
	for _, cp := range c.Ports {
		if derived[cp.Name] {
			continue
		}
		found := false
		for _, p := range spec.Ports {
			found = found || (p.Port == cp.ContainerPort && protocol(p.Protocol) == protocol(cp.Protocol))
		}
		if !found {
			fail("spec.ports: no %d/%s (the base's container port %s)", cp.ContainerPort, protocol(cp.Protocol), cp.Name)
		}
	}

	// The config: the base's, as decoded YAML.
	var got, want any
	if err := yaml.Unmarshal(ex.Config, &got); err != nil {
		fail("spec.config: %v", err)
	}
	if err := yaml.Unmarshal(base.Config, &want); err != nil {
		fail("the base's config: %v", err)
	}
	same("spec.config", emptyComponents(got), emptyComponents(want))
	// The Operator's webhook warns about components configured as null ("use {}").
	if nulls := otc.Spec.Config.NullObjects(); len(nulls) > 0 {
		fail("spec.config has null objects %v: the Operator's webhook warns; write {} instead", nulls)
	}

	// What the Operator derives from the config itself, by its own parsers: the
	// receivers' ports, the probes on health_check's endpoint, its own metrics' port.
	if ports, err := otc.Spec.Config.GetReceiverPorts(logr.Discard()); err != nil {
		fail("the Operator's receiver ports: %v", err)
	} else {
		for _, name := range []string{"otlp-grpc", "otlp-http"} {
			cp, _ := namedPort(c, name)
			found := false
			for _, p := range ports {
				found = found || p.Port == cp.ContainerPort
			}
			if !found {
				fail("the Operator derives the receiver ports %v from spec.config, not %d (the base's %s)", ports, cp.ContainerPort, name)
			}
		}
	}
	health, _ := namedPort(c, "health")
	for what, get := range map[string]func(logr.Logger) (*corev1.Probe, error){
		"liveness": otc.Spec.Config.GetLivenessProbe, "readiness": otc.Spec.Config.GetReadinessProbe,
	} {
		probe, err := get(logr.Discard())
		switch {
		case err != nil:
			fail("the Operator's %s probe: %v", what, err)
		case probe == nil || probe.HTTPGet == nil:
			fail("the Operator derives no %s probe from spec.config (health_check)", what)
		case probe.HTTPGet.Port.IntValue() != int(health.ContainerPort):
			fail("the Operator's %s probe is on port %s, health_check's is %d", what, probe.HTTPGet.Port.String(), health.ContainerPort)
		}
	}
	telemetry, _ := namedPort(c, TelemetryPortName)
	if _, port, err := otc.Spec.Config.Service.MetricsEndpoint(logr.Discard()); err != nil || port != telemetry.ContainerPort {
		fail("the Operator reads the collector's own metrics at port %d (%v), the base serves them at %d", port, err, telemetry.ContainerPort)
	}
	for _, name := range RequiredEnv(ex.Config) {
		if _, ok := ex.Env[name]; !ok {
			fail("spec.config uses ${env:%s}, which spec.env does not set", name)
		}
	}

	// The gossip Service fleet::join names.
	svc := ex.Gossip
	f, err := base.Collector.Fleet()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if len(f.Join) != 1 {
		fail("fleet::join %v: want the gossip Service", f.Join)
	} else if host, port, err := net.SplitHostPort(f.Join[0]); err != nil || host != svc.Name {
		fail("fleet::join %q does not name the Service %s", f.Join[0], svc.Name)
	} else {
		for _, proto := range []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP} {
			ok := false
			for _, p := range svc.Spec.Ports {
				ok = ok || (strconv.Itoa(int(p.Port)) == port && protocol(p.Protocol) == proto)
			}
			if !ok {
				fail("Service %s: no port %s/%s", svc.Name, port, proto)
			}
		}
	}
	if svc.Namespace != otc.Namespace {
		fail("Service %s is in namespace %q, the OpenTelemetryCollector in %q", svc.Name, svc.Namespace, otc.Namespace)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		fail("Service %s: clusterIP must be None (headless: its name resolves to every replica)", svc.Name)
	}
	if !svc.Spec.PublishNotReadyAddresses {
		fail("Service %s: publishNotReadyAddresses must be true", svc.Name)
	}
	same("Service "+svc.Name+" selector", svc.Spec.Selector, operatorSelector(otc.Namespace, otc.Name))
	return errors.Join(errs...)
}

// emptyComponents treats a component configured as null (grpcstats:) as configured
// empty (grpcstats: {}): the collector reads both as its defaults.
func emptyComponents(tree any) any {
	m, ok := tree.(map[string]any)
	if !ok {
		return tree
	}
	out := map[string]any{}
	for section, v := range m {
		out[section] = v
		components, ok := v.(map[string]any)
		if !ok || section == "service" {
			continue
		}
		normal := map[string]any{}
		for name, cfg := range components {
			if cfg == nil {
				cfg = map[string]any{}
			}
			normal[name] = cfg
		}
		out[section] = normal
	}
	return out
}
