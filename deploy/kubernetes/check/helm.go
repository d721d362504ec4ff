package check

import (
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// HelmTemplate renders the chart in chartDir as `helm install release chartDir -n
// namespace` would install it (helm template), with the extra arguments (-f FILE,
// --set ...). It returns helm's output, and its error output in the error.
func HelmTemplate(helm, chartDir, release, namespace string, args ...string) ([]byte, error) {
	cmd := exec.Command(helm, append([]string{"template", release, chartDir, "--namespace", namespace}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// helmLabels are the labels the chart adds to every object's metadata (not to the pods
// or any selector), as Helm charts do; every other label must be the kustomize base's.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"}

// configChecksum is the pod template annotation with which the chart rolls the pods on
// a config change; kustomize does it by the ConfigMap's name (statsgate-config-<hash>).
const configChecksum = "checksum/config"

// kustomizeHash is the suffix configMapGenerator appends to a ConfigMap's name.
var kustomizeHash = regexp.MustCompile(`-[a-z0-9]{10}$`)

// CompareRenderings returns every way the chart's rendering (chart) differs from the
// kustomize rendering it must reproduce (kust): the same kinds and names (the
// Namespace aside: Helm installs into a namespace, helm install --create-namespace or
// kubectl create one), the same namespace and labels (plus helmLabels), and the same
// spec of every object: the Deployment's whole spec (container ports compared as a set,
// the config checksum annotation aside, the ConfigMap by its name before kustomize's
// hash), Services, PDB, HPA, NetworkPolicy, ServiceAccount, PodMonitors and
// PrometheusRules field by field, and the collector config as decoded YAML.
func CompareRenderings(kust, chart *Set) error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	k, c := objectsByName(kust, true), objectsByName(chart, false)
	for _, id := range slices.SortedFunc(mapKeys(k), objectID.Compare) {
		if id.kind == "Namespace" {
			continue
		}
		co, ok := c[id]
		if !ok {
			fail("%s %s: in the kustomize rendering, not in the chart's", id.kind, id.name)
			continue
		}
		errs = append(errs, compareMeta(id, k[id].meta, co.meta))
		if !reflect.DeepEqual(k[id].spec, co.spec) {
			fail("%s %s: differs from the kustomize rendering:\n%s", id.kind, id.name, diffYAML(k[id].spec, co.spec, "chart"))
		}
	}
	for _, id := range slices.SortedFunc(mapKeys(c), objectID.Compare) {
		if _, ok := k[id]; !ok {
			fail("%s %s: in the chart's rendering, not in the kustomize one", id.kind, id.name)
		}
	}
	return errors.Join(errs...)
}

type objectID struct{ kind, name string }

func (a objectID) Compare(b objectID) int {
	if a.kind != b.kind {
		return strings.Compare(a.kind, b.kind)
	}
	return strings.Compare(a.name, b.name)
}

// comparable is an object's metadata and the part of it that must be equal.
type comparable struct {
	meta metav1.Object
	spec any
}

func mapKeys[V any](m map[objectID]V) func(func(objectID) bool) {
	return func(yield func(objectID) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// objectsByName normalises what may legitimately differ and keys each object by kind
// and name (ConfigMaps by their name before kustomize's hash when fromKustomize).
func objectsByName(s *Set, fromKustomize bool) map[objectID]comparable {
	out := map[objectID]comparable{}
	add := func(kind string, m metav1.Object, spec any) {
		out[objectID{kind, m.GetName()}] = comparable{m, spec}
	}
	cmName := func(n string) string {
		if fromKustomize {
			return kustomizeHash.ReplaceAllString(n, "")
		}
		return n
	}
	for _, o := range s.Namespaces {
		add("Namespace", o, o.Labels)
	}
	for _, o := range s.ServiceAccounts {
		add("ServiceAccount", o, o.AutomountServiceAccountToken)
	}
	for _, o := range s.Services {
		add("Service", o, o.Spec)
	}
	for _, o := range s.ConfigMaps {
		data := map[string]any{}
		for key, v := range o.Data {
			var tree any
			if err := yaml.Unmarshal([]byte(v), &tree); err != nil {
				tree = "does not parse as YAML: " + err.Error()
			}
			data[key] = tree
		}
		m := o.DeepCopy()
		m.Name = cmName(m.Name)
		add("ConfigMap", m, data)
	}
	for _, o := range s.Secrets {
		add("Secret", o, o.Type)
	}
	for _, o := range s.Deployments {
		add("Deployment", o, normalDeploymentSpec(o, cmName))
	}
	for _, o := range s.PDBs {
		add("PodDisruptionBudget", o, o.Spec)
	}
	for _, o := range s.HPAs {
		add("HorizontalPodAutoscaler", o, o.Spec)
	}
	for _, o := range s.PodMonitors {
		add("PodMonitor", o, o.Spec)
	}
	for _, o := range s.PrometheusRules {
		add("PrometheusRule", o, normalRuleSpec(o.Spec))
	}
	for _, o := range s.NetworkPolicies {
		add("NetworkPolicy", o, o.Spec)
	}
	return out
}

func normalDeploymentSpec(d *appsv1.Deployment, cmName func(string) string) appsv1.DeploymentSpec {
	spec := *d.Spec.DeepCopy()
	delete(spec.Template.Annotations, configChecksum)
	if len(spec.Template.Annotations) == 0 {
		spec.Template.Annotations = nil
	}
	for i := range spec.Template.Spec.Containers {
		c := &spec.Template.Spec.Containers[i]
		slices.SortFunc(c.Ports, func(a, b corev1.ContainerPort) int { return strings.Compare(a.Name, b.Name) })
	}
	for i := range spec.Template.Spec.Volumes {
		if cm := spec.Template.Spec.Volumes[i].ConfigMap; cm != nil {
			cm.Name = cmName(cm.Name)
		}
	}
	return spec
}

// normalRuleSpec compares rules by what Prometheus reads: an expression's text
// without the trailing newline of a YAML block scalar.
func normalRuleSpec(spec monitoringv1.PrometheusRuleSpec) monitoringv1.PrometheusRuleSpec {
	out := *spec.DeepCopy()
	for i := range out.Groups {
		for j := range out.Groups[i].Rules {
			r := &out.Groups[i].Rules[j]
			r.Expr.StrVal = strings.TrimRight(r.Expr.StrVal, "\n")
		}
	}
	return out
}

func compareMeta(id objectID, kust, chart metav1.Object) error {
	var errs []error
	if kust.GetNamespace() != chart.GetNamespace() {
		errs = append(errs, fmt.Errorf("%s %s: namespace %q, the kustomize rendering's is %q", id.kind, id.name, chart.GetNamespace(), kust.GetNamespace()))
	}
	for k, v := range kust.GetLabels() {
		if got, ok := chart.GetLabels()[k]; !ok || got != v {
			errs = append(errs, fmt.Errorf("%s %s: label %s=%q, the kustomize rendering's is %q", id.kind, id.name, k, got, v))
		}
	}
	for k := range chart.GetLabels() {
		if _, ok := kust.GetLabels()[k]; !ok && !slices.Contains(helmLabels, k) {
			errs = append(errs, fmt.Errorf("%s %s: label %s is not the kustomize rendering's, nor one of Helm's %v", id.kind, id.name, k, helmLabels))
		}
	}
	return errors.Join(errs...)
}

// diffYAML shows two values as YAML, the lines of each that the other lacks: want
// is kustomize's, got is the other's (named other).
func diffYAML(want, got any, other string) string {
	w, _ := yaml.Marshal(want)
	g, _ := yaml.Marshal(got)
	wl, gl := strings.Split(string(w), "\n"), strings.Split(string(g), "\n")
	var b strings.Builder
	for _, l := range wl {
		if !slices.Contains(gl, l) {
			fmt.Fprintf(&b, "  - %-10s %s\n", "kustomize:", l)
		}
	}
	for _, l := range gl {
		if !slices.Contains(wl, l) {
			fmt.Fprintf(&b, "  + %-10s %s\n", other+":", l)
		}
	}
	if b.Len() == 0 {
		return "  (the same lines, in another order)\n"
	}
	return b.String()
}
