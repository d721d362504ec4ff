package agentprometheusexporter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configauth"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensionauth"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.yaml.in/yaml/v3"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/cardinality"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadatatest"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
	"github.com/statsgate/statsgate/internal/testnet"
)

// floodLoad is one batch of a flooding agent: n series of "requests", each
// with its own request_id, and a method among 3.
func floodLoad(instance string, first, n int) pmetric.Metrics {
	md, ms := batch(map[string]any{"service.name": "flooder", "service.instance.id": instance})
	dps := sum(ms, "requests", "", true, pmetric.AggregationTemporalityCumulative)
	for i := first; i < first+n; i++ {
		dp := dps.AppendEmpty()
		dp.SetIntValue(1)
		dp.SetTimestamp(ts(time.Minute))
		dp.Attributes().PutStr("request_id", fmt.Sprint("req-", i))
		dp.Attributes().PutStr("method", fmt.Sprint("m", i%3))
	}
	return md
}

// calmLoad is a well-behaved agent's batch: a gauge and a counter of 5
// series each.
func calmLoad(instance string) pmetric.Metrics {
	md, ms := batch(map[string]any{"service.name": "calm", "service.instance.id": instance})
	for i := range 5 {
		gauge(ms, "temperature", float64(i), map[string]any{"sensor": fmt.Sprint("s", i)})
	}
	dps := sum(ms, "requests", "", true, pmetric.AggregationTemporalityCumulative)
	for i := range 5 {
		dp := dps.AppendEmpty()
		dp.SetIntValue(int64(i))
		dp.SetTimestamp(ts(time.Minute))
		dp.Attributes().PutStr("route", fmt.Sprint("/r", i))
	}
	return md
}

func cardinalityOn(c *Config) {
	c.Cardinality.Enabled = true
	c.MaxSeriesPerResource = 100
}

// getCardinality fetches the view with a query and an Accept header.
func (te *testExporter) getCardinality(query, accept string) (int, http.Header, []byte) {
	te.t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+te.endpoint+te.exp.cfg.Cardinality.Path+query, nil)
	require.NoError(te.t, err)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(te.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(te.t, err)
	return resp.StatusCode, resp.Header, body
}

// report fetches the JSON report, checks it against the documented schema
// and decodes it.
func (te *testExporter) report(query string) cardinality.Report {
	te.t.Helper()
	status, h, body := te.getCardinality(query, "application/json")
	require.Equal(te.t, http.StatusOK, status, "%s", body)
	require.Equal(te.t, "application/json", h.Get("Content-Type"))
	checkSchema(te.t, body)
	var r cardinality.Report
	require.NoError(te.t, json.Unmarshal(body, &r))
	return r
}

func checkSchema(t *testing.T, body []byte) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	schema, err := c.Compile("testdata/cardinality.schema.json")
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	require.NoError(t, err)
	require.NoError(t, schema.Validate(doc), "the report does not follow testdata/cardinality.schema.json:\n%s", body)
}

// TestCardinalityReportMatchesTheStore loads a flooding agent among calm
// ones and checks every count of the JSON report against the store's own
// and the exporter's telemetry.
func TestCardinalityReportMatchesTheStore(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	te := startExporterWith(t, metadatatest.NewSettings(tel), cardinalityOn)
	for i := range 8 {
		te.consume(calmLoad(fmt.Sprint("calm-", i)))
	}
	for first := 0; first < 1000; first += 250 {
		te.consume(floodLoad("flood-1", first, 250))
	}
	st := te.exp.store

	r := te.report("")
	assert.Equal(t, st.SeriesCount(), r.Totals.Series)
	assert.Equal(t, int64(8*10+100), r.Totals.Series)
	assert.Equal(t, 9, r.Totals.Resources)
	assert.Equal(t, 2, r.Totals.Families)
	assert.Equal(t, 20, r.Top)

	// The flooding agent comes first, at its limit, with its refusals.
	require.Len(t, r.Resources, 9)
	flood := r.Resources[0]
	assert.Equal(t, cardinality.ResourceRef{Job: "flooder", Instance: "flood-1"}, flood.ResourceRef)
	assert.Equal(t, int64(100), flood.Series)
	assert.InDelta(t, 1.0, flood.LimitRatio, 1e-9)
	assert.Equal(t, cardinality.Refused{MaxSeriesPerResource: 900}, flood.Refused)
	var held int64
	for _, res := range r.Resources {
		assert.Equal(t, st.LookupResource(res.Job, res.Instance).SeriesCount(), res.Series, "%+v", res.ResourceRef)
		held += res.Series
	}
	assert.Equal(t, st.SeriesCount(), held, "every resource listed, every series counted once")
	require.Len(t, r.Refused, 1)
	assert.Equal(t, flood, r.Refused[0])
	assert.Equal(t, map[string]int64{"max_series_per_resource": 900}, refusedCounts(t, tel))

	// Families: series as each family holds them, and how many resources send them.
	require.Len(t, r.Families, 2)
	assert.Equal(t, cardinality.Family{Name: "requests_total", Type: "counter", Series: 140, SeriesRatio: 140.0 / 180, Resources: 9}, r.Families[0])
	assert.Equal(t, cardinality.Family{Name: "temperature", Type: "gauge", Series: 40, SeriesRatio: 40.0 / 180, Resources: 8}, r.Families[1])
	for _, f := range r.Families {
		assert.Equal(t, int64(st.LookupFamily(f.Name).Len()), f.Series)
	}

	// Limits.
	require.Len(t, r.Limits, 3)
	assert.Equal(t, cardinality.Limit{Name: "max_series", Limit: 1_000_000, Used: 180, Ratio: 180.0 / 1_000_000}, r.Limits[0])
	assert.Equal(t, cardinality.Limit{Name: "max_series_per_resource", Limit: 100, Used: 100, Ratio: 1, Resource: &flood.ResourceRef}, r.Limits[1])
	assert.Equal(t, "max_descriptors", r.Limits[2].Name)
	assert.Equal(t, int64(te.exp.descs.Len()), r.Limits[2].Used)

	// Activity: this minute holds what telemetry counted since the start.
	created := countsBy(t, tel, "otelcol_exporter_agentprometheus_series_created", "")[""]
	assert.Equal(t, int64(180), created)
	require.Len(t, r.Activity.Minutes, cardinality.Minutes)
	now := r.Activity.Minutes[cardinality.Minutes-1]
	assert.Equal(t, te.clock.now().Truncate(time.Minute), now.Start)
	want := cardinality.Change{Created: created, Refused: cardinality.Refused{MaxSeriesPerResource: 900}}
	assert.Equal(t, want, now.Change)
	assert.Equal(t, want, r.Activity.SinceStart)

	// By default the family with the most series is chosen: request_id is
	// what explodes it.
	sel := r.Selection
	require.NotNil(t, sel)
	require.NotNil(t, sel.Family)
	assert.Equal(t, "requests_total", sel.Family.Name)
	assert.Equal(t, int64(140), sel.Series)
	assert.Equal(t, cardinality.Scan{Series: 140, Complete: true, Seconds: sel.Scan.Seconds}, sel.Scan)
	require.NotEmpty(t, sel.Labels)
	top := sel.Labels[0]
	assert.Equal(t, "request_id", top.Name)
	assert.Equal(t, int64(100), top.Distinct)
	assert.False(t, top.Estimated)
	assert.Equal(t, []string{"req-0", "req-1", "req-2"}, top.Examples)
	labels := map[string]cardinality.Label{}
	for _, l := range sel.Labels {
		labels[l.Name] = l
	}
	assert.Equal(t, int64(9), labels["instance"].Distinct)
	assert.Equal(t, int64(140), labels["instance"].Series)
	assert.Equal(t, int64(5), labels["route"].Distinct)
	assert.Equal(t, int64(40), labels["route"].Series)
	assert.Equal(t, int64(3), labels["method"].Distinct)
	require.NotEmpty(t, sel.Resources)
	assert.Equal(t, cardinality.ResourceShare{ResourceRef: flood.ResourceRef, Series: 100, SeriesRatio: 100.0 / 140}, sel.Resources[0])
	assert.Len(t, sel.Resources, 9)
}

// TestCardinalityOfAggregateRules: a rule sums the calm agents'
// temperatures by sensor; the report shows what it absorbs and serves, and
// the flood's request_id gets a rule to paste. Pasted into a second
// exporter's aggregate list and fed the same batches, the rule checks out
// and takes the label off /metrics.
func TestCardinalityOfAggregateRules(t *testing.T) {
	bySensor := aggregate.RuleConfig{Metrics: []string{"temperature"}, By: []string{"service.name", "sensor"}}
	withRules := func(rules ...aggregate.RuleConfig) func(*Config) {
		return func(c *Config) {
			cardinalityOn(c)
			c.MaxSeriesPerResource = 1000
			c.Aggregate = rules
		}
	}
	load := func(te *testExporter) {
		for i := range 8 {
			te.consume(calmLoad(fmt.Sprint("calm-", i)))
		}
		te.consume(floodLoad("flood-1", 0, 300))
	}
	te := startExporter(t, withRules(bySensor))
	load(te)

	r := te.report("")
	assert.Equal(t, []cardinality.Aggregate{{Rule: 0, Metrics: []string{"temperature"}, By: []string{"service.name", "sensor"},
		Sources: 8 * 5, Series: 5, Reduction: 8}}, r.Aggregates)
	assert.Equal(t, cardinality.Limit{Name: "max_aggregate_sources", Limit: 1_000_000, Used: 40, Ratio: 40.0 / 1_000_000}, r.Limits[len(r.Limits)-1])
	assert.Equal(t, te.exp.agg.Sources(), r.Limits[len(r.Limits)-1].Used)
	assert.Equal(t, int64(8*5+300+5), r.Totals.Series, "the calm requests, the flood's and the groups")
	assert.Equal(t, 9, r.Totals.Resources, "the agents; the groups are the gateway's")
	assert.Len(t, r.Resources, 9)

	sel := r.Selection
	require.NotNil(t, sel)
	require.NotNil(t, sel.Family)
	assert.Equal(t, "requests_total", sel.Family.Name)
	assert.Equal(t, "request_id", sel.Labels[0].Name)
	require.NotNil(t, sel.Suggestion)
	sug := *sel.Suggestion
	assert.Equal(t, cardinality.Suggestion{Label: "request_id", Metric: "requests", Key: "request_id",
		YAML: "aggregate:\n  - metrics: [requests]\n    without: [request_id]\n"}, sug)
	assert.Nil(t, te.report("?family=temperature").Selection.Suggestion, "the rule's groups: already aggregated")
	status, _, page := te.getCardinality("", "")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, string(page), `<section id="aggregates">`)
	assert.Contains(t, string(page), "<pre id=\"suggestion-yaml\">aggregate:\n  - metrics: [requests]\n    without: [request_id]\n</pre>")

	// The rule, pasted as the exporter's configuration.
	var pasted struct {
		Aggregate []aggregate.RuleConfig `yaml:"aggregate"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(sug.YAML), &pasted))
	require.Len(t, pasted.Aggregate, 1)
	require.NoError(t, pasted.Aggregate[0].Check())
	requestIDs := func(fams map[string]*dto.MetricFamily) (series int, withLabel int) {
		for _, m := range fams["requests_total"].GetMetric() {
			series++
			for _, l := range m.GetLabel() {
				if l.GetName() == "request_id" {
					withLabel++
				}
			}
		}
		return series, withLabel
	}
	te.takeZeros()
	series, withLabel := requestIDs(te.scrape())
	assert.Equal(t, 8*5+300, series)
	assert.Equal(t, 300, withLabel, "without the rule, every flooded series has its request_id")

	fixed := startExporter(t, withRules(append([]aggregate.RuleConfig{bySensor}, pasted.Aggregate...)...))
	load(fixed)
	fixed.takeZeros()
	series, withLabel = requestIDs(fixed.scrape())
	assert.Equal(t, 5+3, series, "a series per route of the calm agents and per method of the flood")
	assert.Zero(t, withLabel)
	r = fixed.report("?family=requests_total")
	assert.Equal(t, int64(8*5+300), r.Aggregates[1].Sources)
	assert.Equal(t, int64(8), r.Aggregates[1].Series)
	assert.Nil(t, r.Selection.Suggestion, "summed away: nothing left to suggest")
}

func TestCardinalitySelections(t *testing.T) {
	te := startExporter(t, cardinalityOn)
	te.consume(calmLoad("calm-0"))
	te.consume(floodLoad("flood-1", 0, 200))

	t.Run("a resource: its families and labels", func(t *testing.T) {
		r := te.report("?job=calm&instance=calm-0")
		sel := r.Selection
		require.NotNil(t, sel)
		assert.Nil(t, sel.Family)
		assert.Equal(t, &cardinality.ResourceRef{Job: "calm", Instance: "calm-0"}, sel.Resource)
		assert.Equal(t, int64(10), sel.Series)
		assert.Equal(t, []cardinality.Family{
			{Name: "requests_total", Type: "counter", Series: 5, SeriesRatio: 0.5, Resources: 2},
			{Name: "temperature", Type: "gauge", Series: 5, SeriesRatio: 0.5, Resources: 1},
		}, sel.Families)
		assert.Equal(t, int64(10), sel.Scan.Series, "only its own series of the shared family")
		names := map[string]int64{}
		for _, l := range sel.Labels {
			names[l.Name] = l.Distinct
		}
		assert.Equal(t, int64(5), names["route"])
		assert.Equal(t, int64(5), names["sensor"])
		assert.Equal(t, int64(1), names["instance"])
		assert.NotContains(t, names, "request_id")
	})
	t.Run("a family", func(t *testing.T) {
		r := te.report("?family=temperature&top=1")
		require.NotNil(t, r.Selection)
		assert.Equal(t, "temperature", r.Selection.Family.Name)
		assert.Equal(t, 1, r.Top)
		assert.Len(t, r.Resources, 1)
		assert.Len(t, r.Families, 1)
	})
	t.Run("nothing by that name", func(t *testing.T) {
		for _, q := range []string{"?family=nope", "?job=calm&instance=nope", "?job=&instance="} {
			status, _, body := te.getCardinality(q, "application/json")
			assert.Equal(t, http.StatusNotFound, status, q)
			checkSchema(t, body)
			var r cardinality.Report
			require.NoError(t, json.Unmarshal(body, &r))
			assert.Nil(t, r.Selection)
			assert.NotEmpty(t, r.Error)
			assert.Equal(t, int64(110), r.Totals.Series, "the rest of the report is there")
		}
	})
	t.Run("questions it cannot answer", func(t *testing.T) {
		for _, q := range []string{"?top=0", "?top=1001", "?top=x", "?family=a&job=b", "?format=xml"} {
			status, _, _ := te.getCardinality(q, "")
			assert.Equal(t, http.StatusBadRequest, status, q)
		}
		req, err := http.NewRequest(http.MethodPost, "http://"+te.endpoint+"/cardinality", nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	})
}

func TestCardinalityNegotiatesJSONAndHTML(t *testing.T) {
	te := startExporter(t, cardinalityOn)
	te.consume(calmLoad("calm-0"))
	browser := "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	for _, tc := range []struct {
		query, accept, want string
	}{
		{"", "", "text/html; charset=utf-8"},
		{"", "*/*", "text/html; charset=utf-8"},
		{"", browser, "text/html; charset=utf-8"},
		{"", "application/json", "application/json"},
		{"", "text/html;q=0.5, application/json", "application/json"},
		{"?format=json", browser, "application/json"},
		{"?format=html", "application/json", "text/html; charset=utf-8"},
	} {
		status, h, body := te.getCardinality(tc.query, tc.accept)
		require.Equal(t, http.StatusOK, status)
		assert.Equal(t, tc.want, h.Get("Content-Type"), "%q with Accept %q", tc.query, tc.accept)
		assert.Equal(t, "no-store", h.Get("Cache-Control"))
		if tc.want == "application/json" {
			assert.True(t, json.Valid(body))
		} else {
			assert.True(t, strings.HasPrefix(string(body), "<!DOCTYPE html>"))
		}
	}
}

// TestCardinalityPageIsSelfContained: what an agent sends is escaped, and the
// page refers to nothing outside itself.
func TestCardinalityPageIsSelfContained(t *testing.T) {
	te := startExporter(t, cardinalityOn)
	md, ms := batch(map[string]any{"service.name": `<script>alert("job")</script>`, "service.instance.id": `"><img src=x>`})
	gauge(ms, "g", 1, map[string]any{"k": `</td><b>value</b>`})
	te.consume(md)
	te.consume(floodLoad("flood-1", 0, 150))

	status, _, body := te.getCardinality("?family=g", "")
	require.Equal(t, http.StatusOK, status)
	page := string(body)
	assert.NotContains(t, page, `<script>alert`)
	assert.NotContains(t, page, `<img src=x>`)
	assert.NotContains(t, page, `<b>value</b>`)
	assert.Contains(t, page, `&lt;script&gt;alert(&#34;job&#34;)&lt;/script&gt;`)
	assert.Contains(t, page, `&lt;/td&gt;&lt;b&gt;value&lt;/b&gt;`)
	// A resource's link carries its job and instance, escaped as a query.
	assert.Contains(t, page, `href="/cardinality?instance=%22%3E%3Cimg&#43;src%3Dx%3E&amp;job=%3Cscript%3Ealert%28%22job%22%29%3C%2Fscript%3E#selection"`)
	for _, external := range []string{"http://", "https://", "//cdn", "<link", "@import", "src="} {
		assert.NotContains(t, strings.ReplaceAll(page, "src=x", ""), external)
	}
	assert.Contains(t, page, `<table class="sortable"`)
	assert.Contains(t, page, "flooder")
	assert.Contains(t, page, `class="refusing"`, "the refusing agent's row is marked")
}

func TestCardinalityIsOffByDefault(t *testing.T) {
	te := startExporter(t, nil)
	status, _, _ := te.getCardinality("", "")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Nil(t, te.exp.cardinality, "nothing is counted for a view that is not served")
}

func TestCardinalityOnItsOwnPath(t *testing.T) {
	te := startExporter(t, func(c *Config) {
		cardinalityOn(c)
		c.Cardinality.Path = "/debug/series"
	})
	te.consume(calmLoad("calm-0"))
	r := te.report("")
	assert.Equal(t, int64(10), r.Totals.Series)
	resp, err := http.Get("http://" + te.endpoint + "/cardinality")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestCardinalityCountsExpiryAndEnds(t *testing.T) {
	te := startExporter(t, func(c *Config) {
		cardinalityOn(c)
		c.MetricExpiration = time.Minute
	})
	te.consume(calmLoad("calm-0"))
	md, ms := batch(map[string]any{"service.name": "calm", "service.instance.id": "calm-0"})
	gauge(ms, "temperature", 0, map[string]any{"sensor": "s0"}).SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	te.consume(md)
	te.clock.advance(2 * time.Minute)
	te.sweep()

	r := te.report("")
	assert.Equal(t, cardinality.Change{Created: 10, Ended: 1, Expired: 9}, r.Activity.SinceStart)
	last := r.Activity.Minutes[cardinality.Minutes-1]
	assert.Equal(t, cardinality.Change{Expired: 9}, last.Change, "the sweep's minute")
	assert.Equal(t, cardinality.Change{Created: 10, Ended: 1}, r.Activity.Minutes[cardinality.Minutes-3].Change, "two minutes earlier")
	assert.Nil(t, r.Selection, "nothing held: nothing to choose")
	assert.Zero(t, r.Totals.Series)
}

func TestCardinalityScanStopsAtItsTimeout(t *testing.T) {
	te := startExporter(t, func(c *Config) {
		cardinalityOn(c)
		c.Cardinality.ScanTimeout = time.Nanosecond
	})
	te.consume(floodLoad("flood-1", 0, 100))
	r := te.report("")
	require.NotNil(t, r.Selection)
	assert.False(t, r.Selection.Scan.Complete)
	assert.Less(t, r.Selection.Scan.Series, int64(100))
	status, _, body := te.getCardinality("", "")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, string(body), "stopped at scan_timeout")
}

// TestCardinalityBehindAnAuthenticator serves the view through confighttp's
// server with an authenticator: without credentials it answers 401, as
// /metrics does.
func TestCardinalityBehindAnAuthenticator(t *testing.T) {
	authID := component.MustNewID("testauth")
	cfg := createDefaultConfig().(*Config)
	cfg.Server.NetAddr.Endpoint = testnet.FreeEndpoint(t)
	cfg.Scrape.DrainTimeout = 0
	cfg.Server.Auth = configoptional.Some(confighttp.AuthConfig{Config: configauth.Config{AuthenticatorID: authID}})
	cardinalityOn(cfg)
	require.NoError(t, cfg.Validate())
	exp, err := newAgentPrometheusExporter(exportertest.NewNopSettings(metadata.Type), cfg, newFakeClock().clock())
	require.NoError(t, err)
	host := authHost{ext: map[component.ID]component.Component{authID: tokenAuth("s3cret")}}
	require.NoError(t, exp.start(context.Background(), host))
	t.Cleanup(func() { require.NoError(t, exp.shutdown(context.Background())) })

	get := func(path, auth string) int {
		req, err := http.NewRequest(http.MethodGet, "http://"+cfg.Server.NetAddr.Endpoint+path, nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/cardinality", "/cardinality?format=json", metricsPath} {
		assert.Equal(t, http.StatusUnauthorized, get(path, ""), path)
		assert.Equal(t, http.StatusUnauthorized, get(path, "Bearer wrong"), path)
		assert.Equal(t, http.StatusOK, get(path, "Bearer s3cret"), path)
	}
}

// tokenAuth is a server authenticator that accepts one bearer token.
type tokenAuth string

var _ extensionauth.Server = tokenAuth("")

func (tokenAuth) Start(context.Context, component.Host) error { return nil }
func (tokenAuth) Shutdown(context.Context) error              { return nil }

func (a tokenAuth) Authenticate(ctx context.Context, headers map[string][]string) (context.Context, error) {
	for k, vs := range headers {
		if strings.EqualFold(k, "Authorization") && len(vs) == 1 && vs[0] == "Bearer "+string(a) {
			return client.NewContext(ctx, client.Info{}), nil
		}
	}
	return ctx, errors.New("unauthenticated")
}

// authHost offers the authenticator as an extension.
type authHost struct {
	ext map[component.ID]component.Component
}

func (h authHost) GetExtensions() map[component.ID]component.Component { return h.ext }

var _ extension.Extension = tokenAuth("")

// TestCardinalityWhileIngestingAndExpiring builds reports while agents come,
// flood and go, and the sweep expires them: under -race, the view reads the
// store only as the store allows.
func TestCardinalityWhileIngestingAndExpiring(t *testing.T) {
	te := startExporter(t, func(c *Config) {
		cardinalityOn(c)
		c.MetricExpiration = time.Minute
	})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Not te.consume: a failure must not be reported from this goroutine.
			_ = te.exp.consumeMetrics(context.Background(), calmLoad(fmt.Sprint("calm-", i%7)))
			_ = te.exp.consumeMetrics(context.Background(), floodLoad(fmt.Sprint("flood-", i%3), i*50, 50))
			if i%5 == 4 {
				te.clock.advance(40 * time.Second)
				te.sweep()
			}
		}
	}()
	for _, q := range []string{"", "?family=requests_total", "?job=flooder&instance=flood-1", "?family=temperature&top=3"} {
		for range 10 {
			status, _, body := te.getCardinality(q, "application/json")
			require.Contains(t, []int{http.StatusOK, http.StatusNotFound}, status, "%s", body)
			checkSchema(t, body)
			status, _, _ = te.getCardinality(q, "")
			require.Contains(t, []int{http.StatusOK, http.StatusNotFound}, status)
		}
	}
	close(stop)
	<-done
}

// TestUpdatingWithTheCardinalityViewDoesNotAllocate: with the view on, the
// ingest hot path stays as it is without it.
func TestUpdatingWithTheCardinalityViewDoesNotAllocate(t *testing.T) {
	if storetest.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	cfg := createDefaultConfig().(*Config)
	cfg.ResourceConstantLabels.Included = []string{"host.name", "cloud.region"}
	cfg.Cardinality.Enabled = true
	exp, err := newAgentPrometheusExporter(exportertest.NewNopSettings(metadata.Type), cfg, wallClock)
	require.NoError(t, err)
	require.NotNil(t, exp.cardinality)
	md := storetest.AgentBatch(1, 100)
	require.NoError(t, exp.consumeMetrics(context.Background(), md))
	allocs := testing.AllocsPerRun(50, func() { _ = exp.consumeMetrics(context.Background(), md) })
	assert.Zero(t, allocs, "allocations per batch of %d points", md.DataPointCount())
}

// TestUnderAttackTheCardinalityViewNamesTheAttacker: one agent sends 2M
// series next to 1000 agents with 10 each (as in limits_test.go); the view
// puts it first with its refusals and finds the label it floods with.
func TestUnderAttackTheCardinalityViewNamesTheAttacker(t *testing.T) {
	te, tel, _ := attackTarget(t, func(c *Config) { c.Cardinality.Enabled = true })
	limit := int64(te.exp.cfg.MaxSeriesPerResource)
	for a := range goodAgents {
		te.consume(agentLoad(goodAgent(a), 0, seriesPerAgent, 1))
	}
	for first := 0; first < attackSeries; first += attackBatchSize {
		te.consume(agentLoad("attacker", first, attackBatchSize, 1))
	}

	r := te.report("?top=1000")
	t.Logf("report of %d series built in %.1f ms, labels of %d series read in %.1f ms", r.Totals.Series,
		r.Seconds*1000, r.Selection.Scan.Series, r.Selection.Scan.Seconds*1000)
	assert.Equal(t, te.exp.store.SeriesCount(), r.Totals.Series)
	require.Len(t, r.Resources, 1000)
	attacker := r.Resources[0]
	assert.Equal(t, cardinality.ResourceRef{Job: "fleet", Instance: "attacker"}, attacker.ResourceRef)
	assert.Equal(t, limit, attacker.Series)
	refused := int64(attackSeries) - limit
	assert.Equal(t, cardinality.Refused{MaxSeriesPerResource: refused}, attacker.Refused)
	assert.Equal(t, refusedCounts(t, tel)["max_series_per_resource"], refused)
	require.Len(t, r.Refused, 1)
	for _, res := range r.Resources[1:] {
		assert.Equal(t, int64(seriesPerAgent), res.Series, res.Instance)
	}

	sel := r.Selection
	require.NotNil(t, sel.Family)
	assert.Equal(t, "load", sel.Family.Name)
	require.NotEmpty(t, sel.Labels)
	top := sel.Labels[0]
	assert.Equal(t, "series", top.Name, "the attribute it floods with comes first")
	if sel.Scan.Complete {
		assert.True(t, top.Estimated, "50k values: past the exact count")
		assert.InEpsilon(t, float64(limit), float64(top.Distinct), 0.03)
		assert.Equal(t, int64(goodAgents+1), sel.Labels[1].Distinct, "then instance")
	}
}
