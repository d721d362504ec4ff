package promparse

import (
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/test/internal/dashboardtest"
)

// The Grafana dashboard's queries (deploy/dashboards/statsgate.json), each
// with the dashboard's variables as Grafana substitutes them, parse with
// Prometheus 3.16's PromQL parser; so do the selectors of its query
// variables. test/fleet runs each one against a real Prometheus.
func TestDashboardQueriesParse(t *testing.T) {
	d, err := dashboardtest.Load("../../deploy/dashboards/statsgate.json")
	require.NoError(t, err)
	limit, ok := d.Value("limit_mib")
	require.True(t, ok, "text box limit_mib")
	gomemlimit, ok := d.Value("gomemlimit_mib")
	require.True(t, ok, "text box gomemlimit_mib")
	// Multi-value variables as Grafana writes them into a regex matcher:
	// one value, several, and All (.+ where the variable sets it).
	for _, values := range []map[string]string{
		{"job": "statsgate-telemetry", "replica": "10.0.0.1:8888", "agent_job": "checkout"},
		{"job": "(statsgate-telemetry|gateway)", "replica": "(10.0.0.1:8888|10.0.0.2:8888)", "agent_job": "(checkout|payments)"},
		{"job": ".+", "replica": ".+", "agent_job": "(checkout|payments)"},
	} {
		values["__rate_interval"] = "1m"
		values["limit_mib"], values["gomemlimit_mib"] = limit, gomemlimit
		p := parser.NewParser(parser.Options{})
		queries := 0
		for _, panel := range d.Panels {
			require.NotEmpty(t, panel.Targets, panel.Title)
			for _, tg := range panel.Targets {
				expr, err := dashboardtest.Expand(tg.Expr, values)
				require.NoError(t, err, "%s %s", panel.Title, tg.RefID)
				_, err = p.ParseExpr(expr)
				assert.NoError(t, err, "%s %s: %s", panel.Title, tg.RefID, expr)
				queries++
			}
		}
		for _, v := range d.Variables {
			if v.Type != "query" {
				continue
			}
			sel, ok := dashboardtest.LabelValuesSelector(v.Query)
			require.True(t, ok, "variable %s: %q is not label_values(...)", v.Name, v.Query)
			if sel == "" {
				continue
			}
			sel, err := dashboardtest.Expand(sel, values)
			require.NoError(t, err, "variable %s", v.Name)
			_, err = p.ParseMetricSelector(sel)
			assert.NoError(t, err, "variable %s: %s", v.Name, sel)
		}
		t.Logf("%d panels, %d queries parsed with %v", len(d.Panels), queries, values)
	}
}
