package fleet

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/test/internal/dashboardtest"
	"github.com/statsgate/statsgate/test/internal/promtest"
)

// dashboardPath is the Grafana dashboard make dashboard writes.
const dashboardPath = "../../deploy/dashboards/statsgate.json"

// dashboardStep is the range queries' resolution.
const dashboardStep = time.Second

// checkDashboard runs every query of the Grafana dashboard, its variables
// set as a user of this fleet would set them, over the run, and requires
// data from each: a finite value at least once. With
// STATSGATE_DASHBOARD_PNG set it plots what they returned into that file
// (an SVG of the panels, turned into PNG by rsvg-convert).
func checkDashboard(t *testing.T, run *fleetRun) {
	d, err := dashboardtest.Load(dashboardPath)
	require.NoError(t, err)
	values := map[string]string{
		"job":     telemetryJob,
		"replica": ".+", // All
		// All: the jobs of the agents' resources, as Grafana joins them.
		"agent_job": "(" + strings.Join(run.jobs(), "|") + ")",
		// Grafana's $__rate_interval: four scrape intervals, at least the
		// step plus one.
		"__rate_interval": (max(4*scrapeInterval, dashboardStep+scrapeInterval)).String(),
	}
	for _, name := range []string{"limit_mib", "gomemlimit_mib"} {
		v, ok := d.Value(name)
		require.True(t, ok, name)
		values[name] = v
	}
	start, end := run.began, run.checkedAt
	var panels []chartPanel
	queries, answered := 0, 0
	for _, p := range d.Panels {
		cp := chartPanel{title: p.Title, unit: p.Unit}
		for _, tg := range p.Targets {
			queries++
			expr, err := dashboardtest.Expand(tg.Expr, values)
			require.NoError(t, err, "%s %s", p.Title, tg.RefID)
			series, err := run.prom.Range(expr, start, end, dashboardStep)
			if !assert.NoError(t, err, "%s %s", p.Title, tg.RefID) {
				continue
			}
			finite := 0
			for _, s := range series {
				for _, pt := range s.Points {
					if !math.IsNaN(pt.V) && !math.IsInf(pt.V, 0) {
						finite++
					}
				}
				cp.lines = append(cp.lines, chartLine{label: legend(tg.Legend, s.Metric), points: s.Points})
			}
			if assert.Positive(t, finite, "%s %s returned no data over the run:\n%s", p.Title, tg.RefID, expr) {
				answered++
			}
			t.Logf("%s %s: %d series, %d values", p.Title, tg.RefID, len(series), finite)
		}
		panels = append(panels, cp)
	}
	t.Logf("%d of %d queries of %d panels returned data", answered, queries, len(d.Panels))

	out := os.Getenv("STATSGATE_DASHBOARD_PNG")
	if out == "" {
		return
	}
	svg := dashboardChart("statsgate fleet dashboard: its panels' queries over a make fleet run",
		"3 replicas, gRPC and OTLP agents moving between them, a rolling restart and a replica killed; Prometheus 3, step "+dashboardStep.String(),
		start, end, panels)
	svgPath := filepath.Join(t.TempDir(), "dashboard.svg")
	require.NoError(t, os.WriteFile(svgPath, []byte(svg), 0o644))
	rsvg := os.Getenv("STATSGATE_RSVG_CONVERT")
	if rsvg == "" {
		rsvg, err = exec.LookPath("rsvg-convert")
		require.NoError(t, err, "rsvg-convert (Debian package librsvg2-bin) turns the chart into PNG")
	}
	cmd := exec.Command(rsvg, "--format", "png", "--output", out, svgPath)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", msg)
	t.Logf("wrote %s", out)
}

// legend renders a Grafana legend format ({{label}}) for a series.
func legend(format string, metric map[string]string) string {
	out := format
	for k, v := range metric {
		out = strings.ReplaceAll(out, "{{"+k+"}}", v)
	}
	if out == "" {
		out = promtest.Series{Metric: metric}.LabelString()
	}
	return out
}
