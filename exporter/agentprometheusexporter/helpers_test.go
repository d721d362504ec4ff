package agentprometheusexporter

import (
	"context"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
	"github.com/statsgate/statsgate/internal/testnet"
)

// fakeClock is a clock the test moves by hand; Tick fires the sweeper.
type fakeClock struct {
	mu   sync.Mutex
	t    time.Time
	tick chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), tick: make(chan time.Time)}
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) clock() clock {
	return clock{now: c.now, newTicker: func(time.Duration) (<-chan time.Time, func()) { return c.tick, func() {} }}
}

// testExporter is a started exporter on a free loopback port.
type testExporter struct {
	t        *testing.T
	exp      *agentPrometheusExporter
	endpoint string
	clock    *fakeClock
}

func startExporter(t *testing.T, configure func(*Config)) *testExporter {
	t.Helper()
	return startExporterWith(t, exportertest.NewNopSettings(metadata.Type), configure)
}

func startExporterWith(t *testing.T, set exporter.Settings, configure func(*Config)) *testExporter {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.Server.NetAddr.Endpoint = testnet.FreeEndpoint(t)
	// Tests stop at once; the drain's own tests set it.
	cfg.Scrape.DrainTimeout = 0
	if configure != nil {
		configure(cfg)
	}
	require.NoError(t, cfg.Validate())
	clk := newFakeClock()
	exp, err := newAgentPrometheusExporter(set, cfg, clk.clock())
	require.NoError(t, err)
	require.NoError(t, exp.start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, exp.shutdown(context.Background())) })
	return &testExporter{t: t, exp: exp, endpoint: cfg.Server.NetAddr.Endpoint, clock: clk}
}

func (te *testExporter) consume(md pmetric.Metrics) {
	te.t.Helper()
	require.NoError(te.t, te.exp.consumeMetrics(context.Background(), md))
}

// sweep runs one expiry pass of the background sweeper and waits for it.
func (te *testExporter) sweep() {
	te.clock.tick <- te.clock.now()
	// A second send returns once the first tick has been handled.
	te.clock.tick <- te.clock.now()
}

// scrapeRaw fetches /metrics with the given Accept header, decompressed by
// Go's transport, which asks for gzip.
func (te *testExporter) scrapeRaw(accept string) (string, http.Header) {
	te.t.Helper()
	body, h := te.fetch(http.DefaultTransport, accept, "")
	return string(body), h
}

// scrapeEncoded fetches /metrics with the given Accept (none when empty) and
// Accept-Encoding headers, and returns the body as it came, compressed.
func (te *testExporter) scrapeEncoded(accept, acceptEncoding string) ([]byte, http.Header) {
	te.t.Helper()
	// A transport of its own, so that Go's does not unpack gzip.
	return te.fetch(&http.Transport{DisableCompression: true}, accept, acceptEncoding)
}

// fetch GETs /metrics through rt with the given Accept and Accept-Encoding
// headers, each left out when empty, and requires a 200.
func (te *testExporter) fetch(rt http.RoundTripper, accept, acceptEncoding string) ([]byte, http.Header) {
	te.t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+te.endpoint+metricsPath, nil)
	require.NoError(te.t, err)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	resp, err := rt.RoundTrip(req)
	require.NoError(te.t, err)
	defer resp.Body.Close()
	require.Equal(te.t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(te.t, err)
	return body, resp.Header
}

// scrape fetches the text format and parses it with expfmt; a scrape that
// does not parse fails the test.
func (te *testExporter) scrape() map[string]*dto.MetricFamily {
	te.t.Helper()
	body, _ := te.scrapeRaw("text/plain;version=0.0.4")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(te.t, err, "exposition does not parse:\n%s", body)
	return families
}

// takeZeros scrapes twice, as Prometheus would: a new run of deltas is left
// out of the first scrape after it began and shown as its zero in the second
// (store.Series.Shown); the scrapes after them show its value. The scrapes
// are parsed like any other.
func (te *testExporter) takeZeros() {
	te.t.Helper()
	te.scrape()
	te.scrape()
}

// samples flattens families into "name{sorted labels} value" lines.
func samples(families map[string]*dto.MetricFamily) []string {
	var out []string
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			labels := labelString(m.GetLabel())
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out = append(out, name+labels+" "+formatFloat(m.GetCounter().GetValue()))
			case dto.MetricType_GAUGE:
				out = append(out, name+labels+" "+formatFloat(m.GetGauge().GetValue()))
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					out = append(out, name+"_bucket"+labels+" le="+formatFloat(b.GetUpperBound())+" "+formatFloat(float64(b.GetCumulativeCount())))
				}
				out = append(out, name+"_sum"+labels+" "+formatFloat(h.GetSampleSum()), name+"_count"+labels+" "+formatFloat(float64(h.GetSampleCount())))
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					out = append(out, name+labels+" quantile="+formatFloat(q.GetQuantile())+" "+formatFloat(q.GetValue()))
				}
				out = append(out, name+"_sum"+labels+" "+formatFloat(s.GetSampleSum()), name+"_count"+labels+" "+formatFloat(float64(s.GetSampleCount())))
			}
		}
	}
	sort.Strings(out)
	return out
}

func labelString(pairs []*dto.LabelPair) string {
	parts := make([]string, 0, len(pairs))
	for _, p := range pairs {
		parts = append(parts, p.GetName()+"="+p.GetValue())
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

func formatFloat(f float64) string { return model.SampleValue(f).String() }

// countsBy sums one of the exporter's counters by the value of attr; a
// counter nothing has been recorded on yet reads as empty.
func countsBy(t *testing.T, tel *componenttest.Telemetry, name, attr string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	m, err := tel.GetMetric(name)
	if err != nil {
		return out
	}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		v, _ := dp.Attributes.Value(attribute.Key(attr))
		out[v.AsString()] += dp.Value
	}
	return out
}
