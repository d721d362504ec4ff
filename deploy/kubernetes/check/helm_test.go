package check

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The chart, deploy/helm/statsgate, seen from this package.
var (
	chartDir    = filepath.Join(root, "..", "helm", "statsgate")
	chartReadme = filepath.Join(chartDir, "README.md")
)

// The release and namespace the chart is rendered as: helm install statsgate -n statsgate
// gives the names and namespace of deploy/kubernetes.
const (
	helmRelease   = "statsgate"
	helmNamespace = "statsgate"
)

// helmBinary is helm (make helm-check sets STATSGATE_HELM).
func helmBinary(t *testing.T) string {
	t.Helper()
	return tool(t, "STATSGATE_HELM", "run `make helm-check`, which installs helm into .tools/ and sets STATSGATE_HELM")
}

// The chart cannot read files outside itself: it carries copies of the default collector
// config and of the alert rules, which must be the files deploy/kubernetes uses.
func TestHelmChartFilesAreCopies(t *testing.T) {
	for copy, original := range map[string]string{
		filepath.Join(chartDir, "files", "config.yaml"):          filepath.Join(root, "base", "config.yaml"),
		filepath.Join(chartDir, "files", "statsgate.rules.yaml"): rulesFile,
	} {
		if !bytes.Equal(readFile(t, copy), readFile(t, original)) {
			t.Errorf("%s differs from %s; copy it again:\n  cp %s %s", copy, original, original, copy)
		}
	}
}

// helmExamples lists the chart's example values files.
func helmExamples(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples in %s/examples (%v)", chartDir, err)
	}
	return files
}

// helmCase is one way to render the chart: the default values or an example, and the
// kustomization whose rendering it must reproduce, if any.
type helmCase struct {
	name, values, kustomization string
}

func helmCases(t *testing.T) []helmCase {
	t.Helper()
	// The examples that say they render an overlay's objects.
	same := map[string]string{
		"production.yaml":          filepath.Join(root, "overlays", "production"),
		"prometheus-operator.yaml": filepath.Join(root, "overlays", "prometheus-operator"),
	}
	cases := []helmCase{{"default", "", filepath.Join(root, "base")}}
	for _, f := range helmExamples(t) {
		cases = append(cases, helmCase{"examples/" + filepath.Base(f), f, same[filepath.Base(f)]})
	}
	return cases
}

func (c helmCase) args() []string {
	if c.values == "" {
		return nil
	}
	return []string{"-f", c.values}
}

// renderHelm renders the chart, decodes every object strictly and finds the gateway.
func renderHelm(t *testing.T, helm string, args ...string) ([]byte, *Set, *Gateway) {
	t.Helper()
	out, err := HelmTemplate(helm, chartDir, helmRelease, helmNamespace, args...)
	if err != nil {
		t.Fatal(err)
	}
	set, err := DecodeAll(out)
	if err != nil {
		t.Fatalf("the chart renders objects that do not decode strictly:\n%v", err)
	}
	if len(set.Other) > 0 {
		t.Fatalf("the chart renders %d objects of other kinds", len(set.Other))
	}
	g, err := FindGateway(set)
	if err != nil {
		t.Fatal(err)
	}
	return out, set, g
}

// helm lint passes on the default values and on each example.
func TestHelmLint(t *testing.T) {
	helm := helmBinary(t)
	for _, c := range helmCases(t) {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"lint", "--strict", chartDir, "--namespace", helmNamespace}, c.args()...)
			if out, err := exec.Command(helm, args...).CombinedOutput(); err != nil {
				t.Fatalf("helm lint: %v\n%s", err, out)
			}
		})
	}
}

// The chart's rendering, with the default values and with each example, passes every
// check deploy/kubernetes passes (ports, probes, selectors, secrets documented in the
// chart's README, sizing, the fleet, the NetworkPolicy, PodMonitors, the alert rules),
// and its collector config passes the built distro's validate.
func TestHelmRenders(t *testing.T) {
	helm := helmBinary(t)
	readme := readFile(t, chartReadme)
	for _, c := range helmCases(t) {
		t.Run(c.name, func(t *testing.T) {
			_, set, g := renderHelm(t, helm, c.args()...)
			if err := Check(set, readme); err != nil {
				t.Fatal(err)
			}
			for _, pr := range set.PrometheusRules {
				if err := CheckRules(&RulesFile{Groups: pr.Spec.Groups}, g, readFile(t, operatingGuide)); err != nil {
					t.Errorf("PrometheusRule %s: %v", pr.Name, err)
				}
			}
			if bin := os.Getenv("STATSGATE_BINARY"); bin != "" {
				if out, err := validate(t, bin, g.Config, g.Env); err != nil {
					t.Fatalf("otelcol-statsgate validate: %v\n%s", err, out)
				}
			} else {
				t.Log("STATSGATE_BINARY is not set: the collector config was not validated")
			}
		})
	}
}

// The default values render the objects of deploy/kubernetes/base, and the examples
// that say so those of an overlay: see CompareRenderings for what is compared.
func TestHelmMatchesKustomize(t *testing.T) {
	helm := helmBinary(t)
	for _, c := range helmCases(t) {
		if c.kustomization == "" {
			continue
		}
		t.Run(c.name+" = "+name(c.kustomization), func(t *testing.T) {
			_, kust, _ := render(t, c.kustomization)
			_, chart, _ := renderHelm(t, helm, c.args()...)
			if err := CompareRenderings(kust, chart); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The chart's README documents every example.
func TestHelmExamplesDocumented(t *testing.T) {
	readme := string(readFile(t, chartReadme))
	for _, f := range helmExamples(t) {
		if !strings.Contains(readme, "examples/"+filepath.Base(f)) {
			t.Errorf("README.md does not document examples/%s", filepath.Base(f))
		}
	}
}

// The checks fail on values that break the gateway, and the comparison on values that
// make the chart drift from the base.
func TestHelmBrokenValuesFail(t *testing.T) {
	helm := helmBinary(t)
	readme := readFile(t, chartReadme)
	_, base, _ := render(t, filepath.Join(root, "base"))
	for _, tt := range []struct {
		name string
		set  []string
		want string
	}{
		{"another mode", []string{"mode=daemonset"}, `mode "daemonset" is not supported`},
		{"misspelt value", []string{"replicaCunt=3"}, "additional properties 'replicaCunt' not allowed"},
		{"misspelt nested value", []string{"podMonitor.enable=true"}, "additional properties 'enable' not allowed"},
		{"metrics port moved", []string{"ports.metrics.containerPort=9465"}, `container port "metrics" is 9465 but the collector listens on 9464`},
		{"no timestamps", []string{"config.exporters.agentprometheus.send_timestamps=false"}, "needs send_timestamps: true"},
		{"less memory, same max_series", []string{"resources.limits.memory=1Gi", "resources.requests.memory=1Gi"}, "max_series (1500000)"},
		{"autoscaler below the replicas", []string{"autoscaling.minReplicas=2"}, "minReplicas 2 differs from the Deployment's replicas 3"},
		{"undocumented token secret", []string{"scrapeToken.secretName=token"}, `the gateway reads the Secret token (key "token"), but no`},
		{"telemetry unscraped port", []string{"podMonitor.enabled=true", "ports.telemetry.enabled=false"}, `no container port named "telemetry"`},
		{"drift: probe timing", []string{"readinessProbe.periodSeconds=6"}, "Deployment statsgate: differs from the kustomize rendering"},
		{"drift: another label", []string{"podLabels.team=obs"}, "Deployment statsgate: differs from the kustomize rendering"},
		{"drift: pdb", []string{"podDisruptionBudget.maxUnavailable=2"}, "PodDisruptionBudget statsgate: differs from the kustomize rendering"},
		{"no network policy", []string{"networkPolicy.enabled=false"}, "no NetworkPolicy"},
		{"drift: config", []string{"config.exporters.agentprometheus.metric_expiration=10m"}, "ConfigMap statsgate-config: differs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var args []string
			for _, s := range tt.set {
				args = append(args, "--set", s)
			}
			out, err := HelmTemplate(helm, chartDir, helmRelease, helmNamespace, args...)
			if err == nil {
				var set *Set
				if set, err = DecodeAll(out); err == nil {
					if err = Check(set, readme); err == nil {
						err = CompareRenderings(base, set)
					}
				}
			}
			if err == nil {
				t.Fatal("the broken values passed")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error does not say %q:\n%v", tt.want, err)
			}
		})
	}
	t.Run("misspelt config key", func(t *testing.T) {
		bin := binary(t)
		_, _, g := renderHelm(t, helm, "--set", "config.exporters.agentprometheus.send_timestamp=true")
		if out, err := validate(t, bin, g.Config, g.Env); err == nil || !strings.Contains(string(out), "send_timestamp") {
			t.Fatalf("validate accepted a misspelt key (err %v):\n%s", err, out)
		}
	})
}

// The default rules' statsgate:max_series follows sizing.maxSeries: with the production
// example's 3,000,000 the rules still agree with the gateway.
func TestHelmRulesFollowMaxSeries(t *testing.T) {
	helm := helmBinary(t)
	_, set, g := renderHelm(t, helm, "-f", filepath.Join(chartDir, "examples", "production.yaml"), "--set", "prometheusRule.enabled=true")
	if len(set.PrometheusRules) != 1 {
		t.Fatalf("%d PrometheusRules, want 1", len(set.PrometheusRules))
	}
	rf := &RulesFile{Groups: set.PrometheusRules[0].Spec.Groups}
	if n, err := rf.MaxSeries(); err != nil || n != 3000000 {
		t.Fatalf("statsgate:max_series = %d (%v), want 3000000", n, err)
	}
	if err := CheckRules(rf, g, readFile(t, operatingGuide)); err != nil {
		t.Fatal(err)
	}
}
