// Package cardinality looks at the exporter's cardinality view the way a
// person does: the built distro, a flooding agent among well-behaved ones,
// and the page in a real browser (headless Chromium), screenshotted and read
// from the DOM after its script ran; and the JSON report, checked against
// what /metrics serves and what the collector counted in its own metrics.
//
// It needs the binary and Chromium: `make cardinality` builds the one,
// installs the other (Debian package chromium) and sets STATSGATE_BINARY and
// STATSGATE_CHROMIUM. Without STATSGATE_BINARY the test skips, as the other
// tests of the distro do; with it, a missing Chromium fails it. The screenshot, the DOM and the JSON are kept in
// STATSGATE_ARTIFACTS; STATSGATE_SCREENSHOT_COPY names a file that gets a
// copy of the screenshot (the README's, docs/cardinality.png).
package cardinality

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/test/internal/gatewaytest"
	"github.com/statsgate/statsgate/test/internal/proctest"
)

const (
	// perResource is max_series_per_resource: the flooding agent's 3000
	// request ids (and its own 6 series) run into it.
	perResource = 1000
	floodValues = 3000
	// Each well-behaved agent holds a counter and a histogram of 3 kinds.
	calmSeries = 6
	width      = 1280
	height     = 1600
)

// calm are the well-behaved agents: service, how many.
var calm = []struct {
	service string
	agents  int
}{{"checkout", 4}, {"payments", 3}, {"search", 2}}

// chromiumHelp says how to get the browser the test needs.
const chromiumHelp = "run `make cardinality`, which installs Chromium (Debian package chromium) and sets STATSGATE_CHROMIUM, " +
	"or install Chromium and set STATSGATE_CHROMIUM to its path"

// requireChromium is the Chromium STATSGATE_CHROMIUM names. It fails, not
// skips, when the browser is missing: with the distro set (the test skips
// without it, in a plain go test ./...), the caller meant to run this test.
func requireChromium(t *testing.T) string {
	t.Helper()
	p := os.Getenv("STATSGATE_CHROMIUM")
	if p == "" {
		t.Fatalf("STATSGATE_CHROMIUM is not set, and this test needs headless Chromium: %s", chromiumHelp)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatalf("STATSGATE_CHROMIUM=%s: %v; %s", p, err, chromiumHelp)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("STATSGATE_CHROMIUM=%s is not an executable file; %s", p, chromiumHelp)
	}
	return p
}

func TestCardinalityViewInABrowser(t *testing.T) {
	bin := gatewaytest.Binary(t)
	chromium := requireChromium(t)
	dir := t.TempDir()
	artifacts := os.Getenv("STATSGATE_ARTIFACTS")
	if artifacts == "" {
		artifacts = filepath.Join(dir, "artifacts")
	}
	require.NoError(t, os.MkdirAll(artifacts, 0o755))

	// The default config's pipeline, the view on, a limit the flood meets.
	c := gatewaytest.Config{
		Addrs:      gatewaytest.FreeAddrs(t),
		Processors: true,
		Exporter: map[string]any{
			"max_series_per_resource": perResource,
			"cardinality":             map[string]any{"enabled": true},
		},
	}
	gw := gatewaytest.Start(t, bin, c.WriteTemp(t))
	gatewaytest.WaitHealthy(t, gw, "http://"+c.Health+"/")
	view := "http://" + c.Metrics + "/cardinality"

	agentBin := proctest.GoBuild(t, "../..", "./cmd/otlpagent", dir)
	agent := func(service string, n int, extra ...string) *proctest.Proc {
		args := append([]string{"--endpoint", c.OTLP, "--agents", strconv.Itoa(n), "--service", service,
			"--instance-prefix", service, "--export-interval", "500ms", "--manifest", filepath.Join(dir, service+".json")}, extra...)
		return proctest.Start(t, dir, service, nil, agentBin, args...)
	}
	var agents []*proctest.Proc
	for _, g := range calm {
		agents = append(agents, agent(g.service, g.agents))
	}
	agents = append(agents, agent("flooder", 1, "--flood", strconv.Itoa(floodValues)))

	// Every agent in, the flood at its limit and refused, at least twice.
	proctest.Poll(t, 60*time.Second, "every agent's series and the flood's refusals", func() error {
		r, err := getReport(view + "?format=json&top=1000")
		if err != nil {
			return err
		}
		if len(r.Resources) != 1+len(calmAgents()) {
			return fmt.Errorf("%d resources", len(r.Resources))
		}
		if f := r.Resources[0]; f.Job != "flooder" || f.Series != perResource || f.Refused.MaxSeriesPerResource < 2*(floodValues-perResource) {
			return fmt.Errorf("first resource %+v", f)
		}
		for _, res := range r.Resources[1:] {
			if res.Series != calmSeries {
				return fmt.Errorf("%+v", res)
			}
		}
		return nil
	})
	// The agents stop (their last export flushed): the counts hold still.
	for _, a := range agents {
		a.Stop(t)
	}

	t.Run("json matches /metrics and the collector's own counts", func(t *testing.T) {
		checkReport(t, c, view, artifacts)
	})
	t.Run("the page in Chromium", func(t *testing.T) {
		checkPage(t, chromium, dir, view, artifacts)
	})
}

// report is the JSON report as a script reads it: the fields this test
// needs, named as the schema (exporter/agentprometheusexporter/testdata/cardinality.schema.json) names them.
type report struct {
	Totals struct {
		Series int64 `json:"series"`
	} `json:"totals"`
	Resources []resource `json:"resources"`
	Refused   []resource `json:"refused"`
	Families  []struct {
		Name   string `json:"name"`
		Series int64  `json:"series"`
	} `json:"families"`
	Activity struct {
		Minutes    []change `json:"minutes"`
		SinceStart change   `json:"since_start"`
	} `json:"activity"`
	Selection *struct {
		Family *struct {
			Name string `json:"name"`
		} `json:"family"`
		Series int64 `json:"series"`
		Labels []struct {
			Name     string `json:"name"`
			Distinct int64  `json:"distinct"`
		} `json:"labels"`
		Scan struct {
			Complete bool `json:"complete"`
		} `json:"scan"`
		Suggestion *struct {
			Label  string `json:"label"`
			Metric string `json:"metric"`
			Key    string `json:"key"`
			YAML   string `json:"yaml"`
		} `json:"suggestion"`
	} `json:"selection"`
}

type resourceRef struct {
	Job      string `json:"job"`
	Instance string `json:"instance"`
}

type resource struct {
	resourceRef
	Series  int64   `json:"series"`
	Refused refused `json:"refused"`
}

type refused struct {
	MaxSeries            int64 `json:"max_series"`
	MaxSeriesPerResource int64 `json:"max_series_per_resource"`
}

type change struct {
	Created int64   `json:"created"`
	Refused refused `json:"refused"`
}

func calmAgents() []string {
	var ids []string
	for _, g := range calm {
		for i := range g.agents {
			ids = append(ids, fmt.Sprintf("%s-%d", g.service, i+1))
		}
	}
	return ids
}

func getReport(url string) (report, error) {
	var r report
	body, err := get(url)
	if err == nil {
		err = json.Unmarshal(body, &r)
	}
	return r, err
}

func get(url string) ([]byte, error) {
	resp, err := gatewaytest.HTTPClient.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: status %d: %.200s", url, resp.StatusCode, body)
	}
	return body, err
}

// checkReport compares the JSON report with /metrics (series per resource
// and per family) and with the collector's own metrics (series held,
// created and refused).
func checkReport(t *testing.T, c gatewaytest.Config, view, artifacts string) {
	body, err := get(view + "?format=json&top=1000")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(artifacts, "cardinality.json"), body, 0o644))
	var r report
	require.NoError(t, json.Unmarshal(body, &r))

	fams, _, _, err := gatewaytest.Scrape("http://" + c.Metrics + "/metrics")
	require.NoError(t, err)
	perResource, perFamily := map[resourceRef]int64{}, map[string]int64{}
	var total int64
	for name, fam := range fams {
		if name == "target_info" {
			continue
		}
		for _, m := range fam.GetMetric() {
			perResource[refOf(m)]++
			perFamily[name]++
			total++
		}
	}
	assert.Equal(t, total, r.Totals.Series)
	got := map[resourceRef]int64{}
	for _, res := range r.Resources {
		got[res.resourceRef] = res.Series
	}
	assert.Equal(t, perResource, got, "series per resource: /metrics against the report")
	gotFamilies := map[string]int64{}
	for _, f := range r.Families {
		gotFamilies[f.Name] = f.Series
	}
	assert.Equal(t, perFamily, gotFamilies, "series per family: /metrics against the report")

	own, _, _, err := gatewaytest.Scrape("http://" + c.Telemetry + "/metrics")
	require.NoError(t, err)
	value := func(name string, match map[string]string) int64 {
		v, ok := gatewaytest.Value(own, name, match)
		require.True(t, ok, "%s in the collector's own metrics", name)
		return int64(v)
	}
	assert.Equal(t, value("otelcol_exporter_agentprometheus_series_active", nil), r.Totals.Series)
	refused := value("otelcol_exporter_agentprometheus_series_refused", map[string]string{"reason": "max_series_per_resource"})
	require.Len(t, r.Refused, 1, "only the flood is refused")
	assert.Equal(t, "flooder", r.Refused[0].Job)
	assert.Equal(t, refused, r.Refused[0].Refused.MaxSeriesPerResource)
	assert.Equal(t, refused, r.Activity.SinceStart.Refused.MaxSeriesPerResource)
	assert.Equal(t, value("otelcol_exporter_agentprometheus_series_created", nil), r.Activity.SinceStart.Created)
	var minutes change
	for _, m := range r.Activity.Minutes {
		minutes.Created += m.Created
		minutes.Refused.MaxSeriesPerResource += m.Refused.MaxSeriesPerResource
	}
	assert.Equal(t, r.Activity.SinceStart.Created, minutes.Created, "the run fits in the last minutes")
	assert.Equal(t, refused, minutes.Refused.MaxSeriesPerResource)

	// The family the flood fills, and the attribute that fills it.
	require.NotNil(t, r.Selection)
	require.NotNil(t, r.Selection.Family)
	assert.Equal(t, "fleet_requests_total", r.Selection.Family.Name)
	require.NotEmpty(t, r.Selection.Labels)
	assert.Equal(t, "request_id", r.Selection.Labels[0].Name)
	assert.Equal(t, r.Selection.Series, r.Selection.Labels[0].Distinct)
	assert.True(t, r.Selection.Scan.Complete)
	// and the rule that sums it away, in the names the agent sends.
	require.NotNil(t, r.Selection.Suggestion, "a rule is suggested for request_id")
	assert.Equal(t, "request_id", r.Selection.Suggestion.Label)
	assert.Equal(t, "fleet.requests", r.Selection.Suggestion.Metric)
	assert.Equal(t, "request.id", r.Selection.Suggestion.Key)
}

func refOf(m *dto.Metric) resourceRef {
	return resourceRef{Job: gatewaytest.LabelValue(m, "job"), Instance: gatewaytest.LabelValue(m, "instance")}
}

// checkPage loads the page in headless Chromium twice: once for a
// screenshot, once for the DOM after the page's script ran, and reads it as
// a person would: the flooding agent first, with its refusals, and the
// rule that would sum its request.id away.
func checkPage(t *testing.T, chromium, dir, view, artifacts string) {
	shot := filepath.Join(artifacts, "cardinality.png")
	runChromium(t, chromium, dir, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", width, height), view)
	f, err := os.Open(shot)
	require.NoError(t, err)
	img, err := png.Decode(f)
	f.Close()
	require.NoError(t, err, "the screenshot is a PNG")
	assert.Equal(t, width, img.Bounds().Dx())
	assert.Equal(t, height, img.Bounds().Dy())
	t.Logf("screenshot: %s", shot)
	if dst := os.Getenv("STATSGATE_SCREENSHOT_COPY"); dst != "" {
		b, err := os.ReadFile(shot)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst, b, 0o644))
		t.Logf("copied to %s", dst)
	}

	dom := runChromium(t, chromium, dir, "--dump-dom", view)
	require.NoError(t, os.WriteFile(filepath.Join(artifacts, "cardinality-dom.html"), dom, 0o644))
	doc, err := parseDOM(dom)
	require.NoError(t, err)

	for _, table := range doc.all(isTag("table"), hasClass("sortable")) {
		assert.Equal(t, "ready", table.attr("data-sortable"), "the page's script ran over every sortable table")
	}

	resources := doc.byID("resources")
	require.NotNil(t, resources, "the resources table")
	rows := resources.all(isTag("tbody")).first().all(isTag("tr"))
	require.Len(t, rows, 1+len(calmAgents()))
	first := rows[0].all(isTag("td"))
	assert.Equal(t, "flooder", first[1].text(), "the flooding agent comes first")
	assert.Equal(t, "flooder-1", first[2].text())
	assert.Equal(t, strconv.Itoa(perResource), first[3].attr("data-v"))
	assert.Equal(t, "100%", first[4].text(), "at max_series_per_resource")
	assert.True(t, first[5].hasClass("bad"), "its refusals are marked")
	refused, err := strconv.Atoi(first[5].attr("data-v"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, refused, 2*(floodValues-perResource))
	assert.Equal(t, digits(first[5].text()), strconv.Itoa(refused), "the refusals are shown")
	assert.True(t, rows[0].hasClass("refusing"))
	for _, row := range rows[1:] {
		cells := row.all(isTag("td"))
		assert.Equal(t, strconv.Itoa(calmSeries), cells[3].attr("data-v"), cells[2].text())
		assert.Equal(t, "0", cells[5].text(), "%s is refused nothing", cells[2].text())
	}

	refusedTable := doc.byID("refused")
	require.NotNil(t, refusedTable, "the refused table is shown")
	refusedRows := refusedTable.all(isTag("tbody")).first().all(isTag("tr"))
	require.Len(t, refusedRows, 1)
	assert.Equal(t, "flooder", refusedRows[0].all(isTag("td"))[0].text())

	limits := doc.byID("limits").text()
	assert.Contains(t, limits, "max_series_per_resource")
	assert.Contains(t, limits, "fullest: flooder / flooder-1")

	selection := doc.byID("selection")
	require.NotNil(t, selection)
	assert.Contains(t, selection.all(isTag("h2")).first().text(), "fleet_requests_total")
	labels := doc.byID("labels").all(isTag("tbody")).first().all(isTag("tr"))
	require.NotEmpty(t, labels)
	assert.Equal(t, "request_id", labels[0].all(isTag("td"))[0].text(), "the attribute that floods comes first")
	rule := doc.byID("suggestion").all(isTag("pre")).first().text()
	assert.Contains(t, rule, "without: [request.id]", "the rule to paste sums the attribute away")
	assert.Contains(t, rule, "fleet.requests")
	assert.NotEmpty(t, doc.byID("suggestion").all(isTag("button")), "with the button the page's script adds to copy it")

	activity := doc.byID("activity").text()
	assert.Contains(t, activity, "refused")
	assert.Contains(t, activity, "since start")
}

// digits keeps the digits of a count written with thin spaces.
func digits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

// runChromium runs headless Chromium on its own profile in dir and returns
// what it wrote to stdout.
func runChromium(t *testing.T, chromium, dir string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-background-networking", "--hide-scrollbars", "--user-data-dir=" + filepath.Join(dir, "chromium")}
	cmd := exec.CommandContext(ctx, chromium, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "chromium %v:\n%s", args, stderr.String())
	return stdout.Bytes()
}
