package check

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// RulesFile is a Prometheus rules file (rule_files:), decoded into the
// prometheus-operator's types: a PrometheusRule's spec has the same shape.
type RulesFile struct {
	Groups []monitoringv1.RuleGroup `json:"groups"`
}

// ParseRules decodes a rules file strictly (unknown fields and duplicate keys fail).
func ParseRules(data []byte) (*RulesFile, error) {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, err
	}
	var rf RulesFile
	strict, err := sigsjson.UnmarshalStrict(j, &rf, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		return nil, errors.Join(strict...)
	}
	return &rf, nil
}

// Alerts lists the alerting rules of every group.
func (rf *RulesFile) Alerts() []monitoringv1.Rule {
	var alerts []monitoringv1.Rule
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts = append(alerts, r)
			}
		}
	}
	return alerts
}

// PrometheusRuleHeader is what the generated PrometheusRule carries above the
// rules file's groups.
const PrometheusRuleHeader = `# GENERATED from ../../prometheus/statsgate.rules.yaml, the canonical rules file: do not
# edit here. Change that file, then regenerate this one:
#   cd deploy/kubernetes/check && STATSGATE_UPDATE_RULES=1 go test -run TestPrometheusRuleIsTheRulesFile .
# make k8s-check fails while the two differ.
#
# The Prometheus resource must select it (its ruleSelector and ruleNamespaceSelector).
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: statsgate
  labels:
    app.kubernetes.io/name: statsgate
    app.kubernetes.io/component: gateway
spec:
`

// PrometheusRuleFrom generates the PrometheusRule of the prometheus-operator
// overlay from the rules file: the header above, then the rules file from its
// "groups:" line on, indented under spec.
func PrometheusRuleFrom(rules []byte) ([]byte, error) {
	i := bytes.Index(rules, []byte("\ngroups:\n"))
	if i < 0 {
		return nil, errors.New(`the rules file has no top-level "groups:" line`)
	}
	var out bytes.Buffer
	out.WriteString(PrometheusRuleHeader)
	for line := range bytes.Lines(rules[i+1:]) {
		if len(bytes.TrimSpace(line)) > 0 {
			out.WriteString("  ")
		}
		out.Write(line)
	}
	return out.Bytes(), nil
}

// maxSeriesRule is the recording rule that holds max_series.
const maxSeriesRule = "statsgate:max_series"

var vectorConst = regexp.MustCompile(`^\s*vector\(\s*([0-9]+)\s*\)\s*$`)

// MaxSeries returns the max_series the rules hold (the recording rule
// statsgate:max_series, vector(N)).
func (rf *RulesFile) MaxSeries() (int64, error) {
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != maxSeriesRule {
				continue
			}
			m := vectorConst.FindStringSubmatch(r.Expr.String())
			if m == nil {
				return 0, fmt.Errorf("%s: expr %q is not vector(<integer>)", maxSeriesRule, r.Expr.String())
			}
			return strconv.ParseInt(m[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("no recording rule %s", maxSeriesRule)
}

// jobMatcher finds job label matchers in an expression: job="x", job=~"x|y".
var jobMatcher = regexp.MustCompile(`\bjob\s*(=~|!~|!=|=)\s*"([^"]*)"`)

// CheckRules checks what the rules promise about the deployment: every alert has
// a severity, a summary, a description and a runbook_url that points at a section of
// the operating guide (operating, docs/operating.md); its expression selects only
// the scrape jobs the scrape config and PodMonitors set; and the max_series it
// holds is the gateway's.
func CheckRules(rf *RulesFile, g *Gateway, operating []byte) error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	anchors := MarkdownAnchors(operating)
	alerts := rf.Alerts()
	if len(alerts) == 0 {
		fail("no alerting rules")
	}
	seen := map[string]bool{}
	for _, r := range alerts {
		at := "alert " + r.Alert
		if seen[r.Alert] {
			fail("%s: defined twice", at)
		}
		seen[r.Alert] = true
		switch r.Labels["severity"] {
		case "warning", "critical":
		default:
			fail("%s: severity %q, want warning or critical", at, r.Labels["severity"])
		}
		for _, a := range []string{"summary", "description", "runbook_url"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				fail("%s: no %s annotation", at, a)
			}
		}
		if url := r.Annotations["runbook_url"]; url != "" {
			anchor, ok := strings.CutPrefix(url, RunbookBase+"#")
			switch {
			case !ok:
				fail("%s: runbook_url %q is not a section of %s", at, url, RunbookBase)
			case !anchors[anchor]:
				fail("%s: runbook_url's section #%s is not a heading of docs/operating.md", at, anchor)
			case anchor != strings.ToLower(r.Alert):
				fail("%s: runbook_url's section #%s is not the alert's own (#%s)", at, anchor, strings.ToLower(r.Alert))
			}
		}
		for _, m := range jobMatcher.FindAllStringSubmatch(r.Expr.String(), -1) {
			var jobs []string
			switch m[1] {
			case "=":
				jobs = []string{m[2]}
			case "=~":
				jobs = strings.Split(m[2], "|")
			default:
				fail("%s: job%s%q: select the jobs by = or =~", at, m[1], m[2])
			}
			for _, job := range jobs {
				if job != MetricsJob && job != TelemetryJob {
					fail("%s: selects job %q; the scrape config and PodMonitors set %q and %q", at, job, MetricsJob, TelemetryJob)
				}
			}
		}
	}
	if limit, err := rf.MaxSeries(); err != nil {
		errs = append(errs, err)
	} else if want, err := g.Collector.int("exporters", "agentprometheus", "max_series"); err != nil {
		errs = append(errs, err)
	} else if limit != want {
		fail("%s is %d, but the gateway's max_series is %d", maxSeriesRule, limit, want)
	}
	return errors.Join(errs...)
}

// RunbookBase is where the alerts' runbook_url point: docs/operating.md.
const RunbookBase = "https://github.com/statsgate/statsgate/blob/main/docs/operating.md"

var headingLine = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*$`)

// MarkdownAnchors returns the anchors GitHub gives the headings of a Markdown
// document: lower case, punctuation other than - and _ removed, spaces as -.
func MarkdownAnchors(doc []byte) map[string]bool {
	anchors := map[string]bool{}
	for _, m := range headingLine.FindAllSubmatch(doc, -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(string(m[1])) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9'):
				b.WriteRune(r)
			}
		}
		anchors[b.String()] = true
	}
	return anchors
}

// RulesTests is the part of a promtool rules test file this check reads.
type RulesTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name          string `json:"name"`
		AlertRuleTest []struct {
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// CheckRulesTested requires, for every alert, a test case where it fires and one
// where it must not.
func CheckRulesTested(rf *RulesFile, testFile []byte) error {
	var rt RulesTests
	if err := yaml.Unmarshal(testFile, &rt); err != nil {
		return err
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, t := range rt.Tests {
		for _, a := range t.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	var errs []error
	for _, r := range rf.Alerts() {
		if !fires[r.Alert] {
			errs = append(errs, fmt.Errorf("alert %s: no test case where it fires", r.Alert))
		}
		if !silent[r.Alert] {
			errs = append(errs, fmt.Errorf("alert %s: no test case where it must not fire", r.Alert))
		}
	}
	return errors.Join(errs...)
}
