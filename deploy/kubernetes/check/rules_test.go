package check

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

var (
	rulesFile      = filepath.Join(root, "prometheus", "statsgate.rules.yaml")
	rulesTestFile  = filepath.Join(root, "prometheus", "statsgate.rules.test.yaml")
	prometheusRule = filepath.Join(root, "overlays", "prometheus-operator", "prometheusrule.yaml")
	operatingGuide = filepath.Join(root, "..", "..", "docs", "operating.md")
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func parseRules(t *testing.T, data []byte) *RulesFile {
	t.Helper()
	rf, err := ParseRules(data)
	if err != nil {
		t.Fatalf("%s does not decode strictly: %v", name(rulesFile), err)
	}
	return rf
}

// The PrometheusRule of the operator overlay is generated from the rules file, and
// the rendered overlay carries the same groups: one set of rules, never two copies.
// STATSGATE_UPDATE_RULES=1 rewrites it.
func TestPrometheusRuleIsTheRulesFile(t *testing.T) {
	rules := readFile(t, rulesFile)
	want, err := PrometheusRuleFrom(rules)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("STATSGATE_UPDATE_RULES") != "" {
		if err := os.WriteFile(prometheusRule, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := readFile(t, prometheusRule); !bytes.Equal(got, want) {
		t.Fatalf("%s is not what %s generates; run\n  cd deploy/kubernetes/check && STATSGATE_UPDATE_RULES=1 go test -run TestPrometheusRuleIsTheRulesFile .",
			name(prometheusRule), name(rulesFile))
	}
	_, set, _ := render(t, filepath.Join(root, "overlays", "prometheus-operator"))
	if len(set.PrometheusRules) != 1 {
		t.Fatalf("the prometheus-operator overlay renders %d PrometheusRules, want 1", len(set.PrometheusRules))
	}
	rf := parseRules(t, rules)
	if got := set.PrometheusRules[0].Spec.Groups; !reflect.DeepEqual(got, rf.Groups) {
		t.Fatalf("the rendered PrometheusRule's groups differ from %s", name(rulesFile))
	}
}

// Every alert has its severity, annotations and runbook section; the rules select
// the jobs the scrape config and PodMonitors set; max_series is the base's.
func TestRules(t *testing.T) {
	rf := parseRules(t, readFile(t, rulesFile))
	_, _, g := render(t, filepath.Join(root, "base"))
	if err := CheckRules(rf, g, readFile(t, operatingGuide)); err != nil {
		t.Fatal(err)
	}
	if err := CheckRulesTested(rf, readFile(t, rulesTestFile)); err != nil {
		t.Fatal(err)
	}
}

// The collector's own metrics the rules read exist: each otelcol_exporter_agentprometheus_*
// name is in the exporter's generated documentation.md (the names the built binary
// exposes were read from its :8888 endpoint when the rules were written).
func TestRulesUseDocumentedMetrics(t *testing.T) {
	docs := string(readFile(t, filepath.Join(root, "..", "..", "exporter", "agentprometheusexporter", "documentation.md")))
	rules := string(readFile(t, rulesFile))
	names := regexp.MustCompile(`otelcol_exporter_agentprometheus_[a-z_]+`).FindAllString(rules, -1)
	if len(names) == 0 {
		t.Fatal("the rules read none of the exporter's metrics")
	}
	for _, n := range names {
		base := strings.TrimSuffix(n, "_bucket")
		if !strings.Contains(docs, "### "+base+"\n") {
			t.Errorf("%s: not a metric of the exporter's documentation.md", n)
		}
	}
}

// The checks fail on real mistakes in the rules.
func TestBrokenRulesFail(t *testing.T) {
	rules := string(readFile(t, rulesFile))
	tests := string(readFile(t, rulesTestFile))
	operating := readFile(t, operatingGuide)
	_, _, g := render(t, filepath.Join(root, "base"))
	for _, tt := range []struct{ name, from, to, want string }{
		{"another job", `{job="statsgate-telemetry"}[5m])`, `{job="otelcol"}[5m])`, `selects job "otelcol"`},
		{"max_series not the base's", "vector(1500000)", "vector(3000000)", "statsgate:max_series is 3000000, but the gateway's max_series is 1500000"},
		{"no severity", "          severity: critical\n", "          severity: page\n", `severity "page"`},
		{"runbook elsewhere", "operating.md#statsgatereplicadown", "operating.md#statsgatetargetsmissing", "is not the alert's own (#statsgatereplicadown)"},
		{"runbook section missing", "operating.md#statsgatereplicadown", "operating.md#replica-down", "#replica-down is not a heading of docs/operating.md"},
		{"no summary", "          summary: \"statsgate {{ $labels.instance }} is not scraped", "          summery: \"statsgate {{ $labels.instance }} is not scraped", "no summary annotation"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rf, err := ParseRules([]byte(mutate(t, rules, tt.from, tt.to)))
			if err != nil {
				t.Fatal(err)
			}
			err = CheckRules(rf, g, operating)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error does not say %q:\n%v", tt.want, err)
			}
		})
	}
	t.Run("misspelt field", func(t *testing.T) {
		if _, err := ParseRules([]byte(mutate(t, rules, "        for: 5m\n", "        fro: 5m\n"))); err == nil {
			t.Fatal("a misspelt field decoded")
		}
	})
	t.Run("an alert without a silent case", func(t *testing.T) {
		rf := parseRules(t, []byte(rules))
		from, to := "        alertname: StatsgateReplicaDown\n        exp_alerts: []\n", "        alertname: StatsgateTargetsMissing\n        exp_alerts: []\n"
		broken := strings.ReplaceAll(mutate(t, tests, from, to), from, to)
		err := CheckRulesTested(rf, []byte(broken))
		if err == nil || !strings.Contains(err.Error(), "alert StatsgateReplicaDown: no test case where it must not fire") {
			t.Fatalf("error does not name the untested alert:\n%v", err)
		}
	})
}

// promtool checks the rules and runs their unit tests; each unit test catches its
// alert broken in one way (the threshold, the for, the selection, a label): the
// firing case stops firing or the silent one fires.
func TestRulesPromtool(t *testing.T) {
	promtool := tool(t, "STATSGATE_PROMTOOL", promtoolHow)
	rules := string(readFile(t, rulesFile))
	tests := readFile(t, rulesTestFile)
	run := func(t *testing.T, rules string) ([]byte, error) {
		dir := t.TempDir()
		for file, data := range map[string][]byte{"statsgate.rules.yaml": []byte(rules), "statsgate.rules.test.yaml": tests} {
			if err := os.WriteFile(filepath.Join(dir, file), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		out, err := exec.Command(promtool, "check", "rules", filepath.Join(dir, "statsgate.rules.yaml")).CombinedOutput()
		if err != nil {
			return out, err
		}
		return exec.Command(promtool, "test", "rules", filepath.Join(dir, "statsgate.rules.test.yaml")).CombinedOutput()
	}
	if out, err := run(t, rules); err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
	for _, tt := range []struct{ alert, from, to string }{
		{"StatsgateSeriesRefused", "[5m])\n          ) > 0\n        for: 15m", "[5m])\n          ) > 2\n        for: 15m"},
		{"StatsgateSeriesNearLimit", "          > 0.9\n", "          > 0.8\n"},
		{"StatsgateMemoryLimiterRefusing", "refused_metric_points{job=\"statsgate-telemetry\"}[5m])\n          ) > 0\n        for: 10m", "refused_metric_points{job=\"statsgate-telemetry\"}[5m])\n          ) > 0\n        for: 45m"},
		{"StatsgateScrapesCutOff", `outcome=~"refused|timeout|too_slow|failed"`, `outcome=~"refused|too_slow|failed"`},
		{"StatsgateScrapesSlow", "          ) > 10\n", "          ) > 30\n"},
		{"StatsgateReplicaDown", "== 0\n        for: 5m", "== 0\n        for: 1m"},
		{"StatsgateTargetsMissing", `absent(up{job="statsgate"}) or absent(up{job="statsgate-telemetry"})`, `absent(up{job="statsgate"})`},
		{"StatsgateOutOfOrderSamples", "          > 0.05\n", "          > 0.001\n"},
		{"StatsgatePipelineDroppingPoints", "            unless on (job, instance)\n", "            or on (job, instance)\n"},
		{"StatsgatePointsDropped", "points_dropped{job=\"statsgate-telemetry\"}[5m])\n          ) > 0\n        for: 15m", "points_dropped{job=\"statsgate-telemetry\"}[30m])\n          ) > 0\n        for: 15m"},
		{"StatsgateFleetIncomplete", "          count(up{job=\"statsgate-telemetry\"} == 1)\n        for: 15m", "          count(up{job=\"statsgate-telemetry\"} == 1)\n        for: 1m"},
	} {
		t.Run("broken "+tt.alert, func(t *testing.T) {
			out, err := run(t, mutate(t, rules, tt.from, tt.to))
			if err == nil {
				t.Fatalf("promtool test rules passed with %s broken (%q -> %q)", tt.alert, tt.from, tt.to)
			}
			if !strings.Contains(string(out), "alertname: "+tt.alert+",") {
				t.Fatalf("the failure is not %s's:\n%s", tt.alert, out)
			}
		})
	}
}
