package check

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The gateway's shutdown, which terminationGracePeriodSeconds must cover after the
// preStop hook (base/deployment.yaml).
const (
	// exporterShutdownWait: agentprometheus lets scrapes in flight end for up to 5 s.
	exporterShutdownWait = 5
	// exportsInFlight: an agent's export timeout (10 s in the OTel SDKs) bounds the
	// OTLP requests the receiver drains.
	exportsInFlight = 10
	// fleetLeave: with fleet::enabled, agentprometheus waits up to 2 s to tell the
	// fleet it leaves, after the drain and before the scrapes in flight.
	fleetLeave = 2
)

// Gateway is the statsgate Deployment of a rendering and what follows from it: its
// container, environment and the collector config it mounts.
type Gateway struct {
	Deployment *appsv1.Deployment
	Container  *corev1.Container
	// Env holds the container's environment as the collector would see it; a value
	// taken from a Secret or the downward API is a placeholder.
	Env map[string]string
	// SecretEnv holds the Secret each variable from a Secret comes from.
	SecretEnv map[string]corev1.SecretKeySelector
	// FieldEnv holds the pod field (downward API fieldRef) each such variable
	// comes from, e.g. status.podIP.
	FieldEnv map[string]string
	// Config is the collector config the container's --config names, read from the
	// ConfigMap mounted there.
	Config    []byte
	Collector *Collector
}

// FindGateway finds the Deployment of a rendering (there must be one), its
// collector container and the config it runs.
func FindGateway(s *Set) (*Gateway, error) {
	if len(s.Deployments) != 1 {
		return nil, fmt.Errorf("want exactly one Deployment, found %d", len(s.Deployments))
	}
	d := s.Deployments[0]
	g := &Gateway{Deployment: d, Env: map[string]string{}, SecretEnv: map[string]corev1.SecretKeySelector{}, FieldEnv: map[string]string{}}
	containers := d.Spec.Template.Spec.Containers
	if len(containers) != 1 {
		return nil, fmt.Errorf("Deployment %s: want one container (the collector), found %d", d.Name, len(containers))
	}
	g.Container = &containers[0]
	for _, e := range g.Container.Env {
		switch {
		case e.ValueFrom == nil:
			g.Env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			g.Env[e.Name] = "placeholder-for-secret-" + e.ValueFrom.SecretKeyRef.Name
			g.SecretEnv[e.Name] = *e.ValueFrom.SecretKeyRef
		case e.ValueFrom.FieldRef != nil:
			g.Env[e.Name] = "placeholder"
			g.FieldEnv[e.Name] = e.ValueFrom.FieldRef.FieldPath
		default:
			g.Env[e.Name] = "placeholder"
		}
	}
	config, err := mountedConfig(s, d, g.Container)
	if err != nil {
		return nil, fmt.Errorf("Deployment %s: %w", d.Name, err)
	}
	g.Config = config
	if g.Collector, err = ParseCollector(config, g.Env); err != nil {
		return nil, fmt.Errorf("Deployment %s: %w", d.Name, err)
	}
	return g, nil
}

// mountedConfig follows the container's --config argument to the ConfigMap key
// mounted at that path.
func mountedConfig(s *Set, d *appsv1.Deployment, c *corev1.Container) ([]byte, error) {
	var file string
	args := append(append([]string{}, c.Command...), c.Args...)
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			file = v
		} else if a == "--config" && i+1 < len(args) {
			file = args[i+1]
		}
	}
	if file == "" {
		return nil, errors.New("container args: no --config=<file>")
	}
	for _, m := range c.VolumeMounts {
		key, ok := strings.CutPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok || m.SubPath != "" {
			continue
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			for _, cm := range s.ConfigMaps {
				if cm.Name != v.ConfigMap.Name {
					continue
				}
				data, ok := cm.Data[key]
				if !ok {
					return nil, fmt.Errorf("--config=%s: ConfigMap %s has no key %q", file, cm.Name, key)
				}
				return []byte(data), nil
			}
			return nil, fmt.Errorf("--config=%s: volume %s names ConfigMap %s, which is not in the rendering", file, v.Name, v.ConfigMap.Name)
		}
	}
	return nil, fmt.Errorf("--config=%s: no ConfigMap volume is mounted at %s", file, path.Dir(file))
}

// Check runs every check on one rendering and returns all that fail. readme is
// deploy/kubernetes/README.md, which must tell how to create every Secret the
// gateway reads.
func Check(s *Set, readme []byte) error {
	g, err := FindGateway(s)
	if err != nil {
		return err
	}
	var errs []error
	add := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	d := g.Deployment
	add("Deployment "+d.Name, checkDeployment(s, g))
	for _, svc := range s.Services {
		add("Service "+svc.Name, checkService(svc, g))
	}
	add("fleet", checkFleet(s, g))
	add("deploy/kubernetes/README.md", CheckSecretsDocumented(readme, g))
	for _, pdb := range s.PDBs {
		add("PodDisruptionBudget "+pdb.Name, checkPDB(pdb.Spec.Selector, pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable, g))
	}
	if len(s.HPAs) == 0 {
		errs = append(errs, errors.New("no HorizontalPodAutoscaler"))
	}
	for _, hpa := range s.HPAs {
		add("HorizontalPodAutoscaler "+hpa.Name, checkHPA(hpa, g))
	}
	for _, pm := range s.PodMonitors {
		add("PodMonitor "+pm.Name, checkPodMonitor(pm, g))
	}
	if len(s.NetworkPolicies) == 0 {
		errs = append(errs, errors.New("no NetworkPolicy: the collector's own metrics (port telemetry) have no authentication"))
	}
	for _, np := range s.NetworkPolicies {
		add("NetworkPolicy "+np.Name, checkNetworkPolicy(np, g))
	}
	for _, sec := range s.Secrets {
		if len(sec.Data) > 0 || len(sec.StringData) > 0 {
			errs = append(errs, fmt.Errorf("Secret %s carries a value: secrets are created in the cluster, never committed", sec.Name))
		}
	}
	add("namespaces", checkNamespaces(s, d.Namespace))
	return errors.Join(errs...)
}

func checkDeployment(s *Set, g *Gateway) error {
	d, c, pod := g.Deployment, g.Container, g.Deployment.Spec.Template.Spec
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	replicas := replicasOf(d)
	if replicas < 2 {
		fail("replicas is %d; a gateway needs at least 2", replicas)
	}
	if err := selects(d.Spec.Selector, d.Spec.Template.Labels); err != nil {
		fail("spec.selector: %v", err)
	}

	// Ports: named, unique, and where the collector listens.
	names := map[string]bool{}
	for _, p := range c.Ports {
		if p.Name == "" {
			fail("container port %d has no name", p.ContainerPort)
		} else if names[p.Name] {
			fail("container port name %q is used twice", p.Name)
		} else if msgs := validation.IsValidPortName(p.Name); len(msgs) > 0 {
			// The API server refuses the Deployment then: names are IANA service names.
			fail("container port name %q: %s", p.Name, strings.Join(msgs, "; "))
		}
		names[p.Name] = true
	}
	for _, l := range Listeners {
		port, err := g.Collector.ListenPort(l)
		if err != nil {
			errs = append(errs, fmt.Errorf("collector config: %w", err))
			continue
		}
		cp, ok := namedPort(c, l.PortName)
		switch {
		case !ok:
			fail("no container port named %q (the collector listens on %d for it)", l.PortName, port)
		case cp.ContainerPort != port:
			fail("container port %q is %d but the collector listens on %d (%s)", l.PortName, cp.ContainerPort, port, strings.Join(l.Path, "::"))
		}
	}

	// The collector's own metrics, scraped on the pod's IP.
	if port, err := g.Collector.TelemetryPort(); err != nil {
		errs = append(errs, fmt.Errorf("collector config: %w", err))
	} else if cp, ok := namedPort(c, TelemetryPortName); !ok {
		fail("no container port named %q (the collector serves its own metrics on %d)", TelemetryPortName, port)
	} else if cp.ContainerPort != port {
		fail("container port %q is %d but the collector serves its own metrics on %d", TelemetryPortName, cp.ContainerPort, port)
	}

	// Probes: on health_check's port.
	health, healthErr := g.Collector.ListenPort(Listeners[0])
	for _, probe := range []struct {
		name string
		p    *corev1.Probe
	}{{"readinessProbe", c.ReadinessProbe}, {"livenessProbe", c.LivenessProbe}} {
		if probe.p == nil || probe.p.HTTPGet == nil {
			fail("%s: want an httpGet probe on the health_check extension", probe.name)
			continue
		}
		cp, ok := containerPort(c, probe.p.HTTPGet.Port)
		switch {
		case !ok:
			fail("%s: port %s is not a container port", probe.name, probe.p.HTTPGet.Port.String())
		case healthErr == nil && cp.ContainerPort != health:
			fail("%s: port %s (%d) is not health_check's (%d)", probe.name, probe.p.HTTPGet.Port.String(), cp.ContainerPort, health)
		}
	}

	// Security: the image's user, nothing it does not need.
	sc, psc := c.SecurityContext, pod.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if !isTrue(sc.RunAsNonRoot) && !isTrue(psc.RunAsNonRoot) {
		fail("securityContext: runAsNonRoot must be true")
	}
	user := psc.RunAsUser
	if sc.RunAsUser != nil {
		user = sc.RunAsUser
	}
	if user == nil || *user != 10001 {
		fail("securityContext: runAsUser must be 10001, the image's user")
	}
	if !isTrue(sc.ReadOnlyRootFilesystem) {
		fail("securityContext: readOnlyRootFilesystem must be true")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		fail("securityContext: allowPrivilegeEscalation must be false")
	}
	if sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) > 0 {
		fail("securityContext: capabilities must drop ALL and add none")
	}

	// Resources and the memory sizing.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			fail("resources.requests.%s is not set", r)
		}
		if _, ok := c.Resources.Limits[r]; !ok {
			fail("resources.limits.%s is not set", r)
		}
	}
	for _, name := range RequiredEnv(g.Config) {
		if _, ok := g.Env[name]; !ok {
			fail("the collector config uses ${env:%s}, which the container does not set", name)
		}
	}
	if err := checkSizing(g); err != nil {
		errs = append(errs, err)
	}
	if _, err := g.ScrapeToken(); err != nil {
		errs = append(errs, err)
	}
	if replicas >= 2 {
		if ts, err := g.Collector.SendsTimestamps(); err != nil || !ts {
			fail("with %d replicas the exporter needs send_timestamps: true, or an agent moving between replicas makes its counters reset in Prometheus", replicas)
		}
	}

	// Shutdown: preStop, then the receiver's drain and the exporter's wait.
	preStop := int64(0)
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		preStop = c.Lifecycle.PreStop.Sleep.Seconds
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.TerminationGracePeriodSeconds != nil {
		grace = *pod.TerminationGracePeriodSeconds
	}
	drain, err := g.Collector.DrainTimeout()
	if err != nil {
		errs = append(errs, err)
	}
	drainSecs := int64(drain.Round(time.Second) / time.Second)
	leave := int64(0)
	if f, err := g.Collector.Fleet(); err == nil && f.Enabled {
		leave = fleetLeave
	}
	if need := preStop + exportsInFlight + drainSecs + leave + exporterShutdownWait; grace < need {
		fail("terminationGracePeriodSeconds %d < %d (preStop %d s + %d s for exports in flight + %d s for scrapers to take the last deltas + %d s to leave the fleet + %d s for the exporter's scrapes)",
			grace, need, preStop, exportsInFlight, drainSecs, leave, exporterShutdownWait)
	}

	if sa := pod.ServiceAccountName; sa != "" && sa != "default" {
		found := false
		for _, a := range s.ServiceAccounts {
			found = found || a.Name == sa
		}
		if !found {
			fail("serviceAccountName %s: no such ServiceAccount in the rendering", sa)
		}
	}
	return errors.Join(errs...)
}

func checkSizing(g *Gateway) error {
	c := g.Container
	sizing, err := g.Collector.Sizing()
	if err != nil {
		return err
	}
	limit, ok := c.Resources.Limits[corev1.ResourceMemory]
	if !ok {
		return nil // reported with the other resources
	}
	sizing.ContainerLimit = limit.Value()
	gml, ok := g.Env["GOMEMLIMIT"]
	if !ok {
		return errors.New("GOMEMLIMIT is not set: without it the Go runtime does not know the container's memory limit")
	}
	if sizing.GoMemLimit, err = ParseGoMemLimit(gml); err != nil {
		return err
	}
	return sizing.Check()
}

func checkService(svc *corev1.Service, g *Gateway) error {
	var errs []error
	if len(svc.Spec.Selector) == 0 {
		return errors.New("no selector")
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(g.Deployment.Spec.Template.Labels)) {
		errs = append(errs, fmt.Errorf("selector %v does not match the pod template's labels %v", svc.Spec.Selector, g.Deployment.Spec.Template.Labels))
	}
	metrics, _ := namedPort(g.Container, "metrics")
	for _, p := range svc.Spec.Ports {
		target := p.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(p.Port)
		}
		cp, ok := containerPort(g.Container, target)
		if !ok {
			errs = append(errs, fmt.Errorf("port %s: targetPort %s is not a container port", p.Name, target.String()))
			continue
		}
		if cp.ContainerPort == metrics.ContainerPort {
			errs = append(errs, fmt.Errorf("port %s exposes /metrics: Prometheus must scrape each pod, not one behind the Service", p.Name))
		}
	}
	return errors.Join(errs...)
}

func checkPDB(sel *metav1.LabelSelector, maxUnavailable, minAvailable *intstr.IntOrString, g *Gateway) error {
	var errs []error
	if err := selects(sel, g.Deployment.Spec.Template.Labels); err != nil {
		errs = append(errs, fmt.Errorf("selector: %w", err))
	}
	replicas := replicasOf(g.Deployment)
	switch {
	case maxUnavailable != nil && maxUnavailable.Type == intstr.Int:
		if maxUnavailable.IntVal < 1 || maxUnavailable.IntVal >= replicas {
			errs = append(errs, fmt.Errorf("maxUnavailable %d: want 1 to %d with %d replicas (0 blocks every drain, %d allows them all at once)", maxUnavailable.IntVal, replicas-1, replicas, replicas))
		}
	case minAvailable != nil && minAvailable.Type == intstr.Int:
		if minAvailable.IntVal < 1 || minAvailable.IntVal >= replicas {
			errs = append(errs, fmt.Errorf("minAvailable %d: want 1 to %d with %d replicas", minAvailable.IntVal, replicas-1, replicas))
		}
	}
	return errors.Join(errs...)
}

func checkHPA(h *autoscalingv2.HorizontalPodAutoscaler, g *Gateway) error {
	d := g.Deployment
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	ref := h.Spec.ScaleTargetRef
	if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != d.Name {
		fail("scaleTargetRef %s %s %s is not the Deployment (apps/v1 Deployment %s)", ref.APIVersion, ref.Kind, ref.Name, d.Name)
	}
	minReplicas := int32(1)
	if h.Spec.MinReplicas != nil {
		minReplicas = *h.Spec.MinReplicas
	}
	if minReplicas < 2 {
		fail("minReplicas %d: a gateway needs at least 2", minReplicas)
	}
	if minReplicas != replicasOf(d) {
		fail("minReplicas %d differs from the Deployment's replicas %d", minReplicas, replicasOf(d))
	}
	if h.Spec.MaxReplicas < minReplicas {
		fail("maxReplicas %d < minReplicas %d", h.Spec.MaxReplicas, minReplicas)
	}
	targets := map[corev1.ResourceName]int32{}
	for _, m := range h.Spec.Metrics {
		if m.Resource != nil && m.Resource.Target.AverageUtilization != nil {
			targets[m.Resource.Name] = *m.Resource.Target.AverageUtilization
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := targets[r]; !ok {
			fail("no %s utilization target", r)
		}
	}
	// Memory utilization is of the request: its target must fall below GOMEMLIMIT,
	// or the runtime holds memory under it and no replica is ever added.
	if pct, ok := targets[corev1.ResourceMemory]; ok {
		req := g.Container.Resources.Requests[corev1.ResourceMemory]
		if gml, err := ParseGoMemLimit(g.Env["GOMEMLIMIT"]); err == nil && req.Value()*int64(pct)/100 >= gml {
			fail("memory target %d%% of the %s request is not below GOMEMLIMIT (%s)", pct, req.String(), g.Env["GOMEMLIMIT"])
		}
	}
	return errors.Join(errs...)
}

func checkPodMonitor(pm *monitoringv1.PodMonitor, g *Gateway) error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if err := selects(&pm.Spec.Selector, g.Deployment.Spec.Template.Labels); err != nil {
		fail("selector: %v", err)
	}
	if len(pm.Spec.PodMetricsEndpoints) == 0 {
		fail("no podMetricsEndpoints")
	}
	metrics, err := g.Collector.ListenPort(Listeners[3])
	if err != nil {
		return err
	}
	telemetry, err := g.Collector.TelemetryPort()
	if err != nil {
		return err
	}
	token, tokenErr := g.ScrapeToken()
	for i, ep := range pm.Spec.PodMetricsEndpoints {
		at := fmt.Sprintf("podMetricsEndpoints[%d]", i)
		var ref intstr.IntOrString
		switch {
		case ep.Port != nil:
			ref = intstr.FromString(*ep.Port)
		case ep.PortNumber != nil:
			ref = intstr.FromInt32(*ep.PortNumber)
		default:
			fail("%s: no port", at)
			continue
		}
		cp, ok := containerPort(g.Container, ref)
		switch {
		case !ok:
			fail("%s: port %s is not a container port of the pod", at, ref.String())
			continue
		case cp.ContainerPort == telemetry:
			// The collector's own metrics: the job the alert rules read.
			if job := podMonitorJob(ep); job != TelemetryJob {
				fail("%s: the collector's own metrics must be scraped as job %q (the alert rules select it), not %q", at, TelemetryJob, job)
			}
			if strings.ToLower(ep.Scheme.String()) == "https" {
				fail("%s: scheme https, but the collector serves its own metrics over plain HTTP", at)
			}
			continue
		case cp.ContainerPort != metrics:
			fail("%s: port %s (%d) is neither the exporter's (%d) nor the collector's own metrics' (%d)", at, ref.String(), cp.ContainerPort, metrics, telemetry)
			continue
		}
		if job := podMonitorJob(ep); job != MetricsJob {
			fail("%s: the agents' metrics must be scraped as job %q (the alert rules select up{job=%q}), not %q", at, MetricsJob, MetricsJob, job)
		}
		if !ep.HonorLabels {
			fail("%s: honorLabels must be true, or every series takes the gateway pod's job and instance instead of its agent's", at)
		}
		if !isTrue(ep.HonorTimestamps) {
			fail("%s: honorTimestamps must be set to true: the samples' own timestamps keep counters exact when agents move between replicas", at)
		}
		if isTrue(ep.TrackTimestampsStaleness) {
			fail("%s: trackTimestampsStaleness must stay off: a staleness marker when an agent leaves a replica would make its next points on another replica out of order", at)
		}
		if want := scheme(g.Collector); ep.Scheme == nil || strings.ToLower(ep.Scheme.String()) != want {
			fail("%s: scheme must be %s, as the exporter serves it", at, want)
		}
		if tokenErr != nil {
			errs = append(errs, tokenErr)
			continue
		}
		if token == nil {
			continue
		}
		var got *corev1.SecretKeySelector
		switch {
		case ep.Authorization != nil && ep.Authorization.Credentials != nil:
			got = ep.Authorization.Credentials
		case ep.BearerTokenSecret != nil:
			got = ep.BearerTokenSecret
		}
		if got == nil || got.Name != token.Name || got.Key != token.Key {
			fail("%s: must authenticate with the Secret key the gateway checks (%s/%s)", at, token.Name, token.Key)
		}
	}
	return errors.Join(errs...)
}

// The scrape jobs the alert rules (prometheus/statsgate.rules.yaml) select: the
// agents' metrics (up, scrape_samples_scraped) and the collector's own.
const (
	MetricsJob   = "statsgate"
	TelemetryJob = "statsgate-telemetry"
)

// podMonitorJob is the job label prometheus-operator gives an endpoint's targets:
// <namespace>/<name> unless a relabeling replaces it (jobLabel is not used here).
func podMonitorJob(ep monitoringv1.PodMetricsEndpoint) string {
	job := "<namespace>/<PodMonitor name>"
	for _, r := range ep.RelabelConfigs {
		action := strings.ToLower(r.Action)
		if (action == "" || action == "replace") && r.TargetLabel == "job" && len(r.SourceLabels) == 0 && r.Replacement != nil {
			job = *r.Replacement
		}
	}
	return job
}

// checkNamespaces: every namespaced object lands in the Deployment's namespace.
func checkNamespaces(s *Set, ns string) error {
	var errs []error
	check := func(kind string, m metav1.Object) {
		if m.GetNamespace() != ns {
			errs = append(errs, fmt.Errorf("%s %s is in namespace %q, the Deployment in %q", kind, m.GetName(), m.GetNamespace(), ns))
		}
	}
	for _, o := range s.ServiceAccounts {
		check("ServiceAccount", o)
	}
	for _, o := range s.Services {
		check("Service", o)
	}
	for _, o := range s.ConfigMaps {
		check("ConfigMap", o)
	}
	for _, o := range s.Secrets {
		check("Secret", o)
	}
	for _, o := range s.PDBs {
		check("PodDisruptionBudget", o)
	}
	for _, o := range s.HPAs {
		check("HorizontalPodAutoscaler", o)
	}
	for _, o := range s.PodMonitors {
		check("PodMonitor", o)
	}
	for _, o := range s.PrometheusRules {
		check("PrometheusRule", o)
	}
	for _, o := range s.NetworkPolicies {
		check("NetworkPolicy", o)
	}
	if ns == "" {
		errs = append(errs, errors.New("the Deployment has no namespace; set one in the kustomization"))
	}
	return errors.Join(errs...)
}

// selects reports whether sel is set and matches the pod template's labels.
func selects(sel *metav1.LabelSelector, podLabels map[string]string) error {
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return errors.New("empty selector")
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return err
	}
	if !s.Matches(labels.Set(podLabels)) {
		return fmt.Errorf("%s does not match the pod template's labels %v", s, podLabels)
	}
	return nil
}

func namedPort(c *corev1.Container, name string) (corev1.ContainerPort, bool) {
	return containerPort(c, intstr.FromString(name))
}

// containerPort resolves a port reference (a name or a number) on the container.
func containerPort(c *corev1.Container, ref intstr.IntOrString) (corev1.ContainerPort, bool) {
	for _, p := range c.Ports {
		if (ref.Type == intstr.String && p.Name == ref.StrVal) || (ref.Type == intstr.Int && p.ContainerPort == ref.IntVal) {
			return p, true
		}
	}
	return corev1.ContainerPort{}, false
}

// replicasOf is the Deployment's replicas, 1 when unset (the API's default).
func replicasOf(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func isTrue(b *bool) bool { return b != nil && *b }
