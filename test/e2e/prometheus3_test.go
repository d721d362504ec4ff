package e2e

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsgate/statsgate/internal/testnet"
	"github.com/statsgate/statsgate/test/internal/gatewaytest"
	"github.com/statsgate/statsgate/test/internal/proctest"
	"github.com/statsgate/statsgate/test/internal/promtest"
)

// promNames are the Prometheus names of the workload's instruments and
// attributes under one translation strategy.
type promNames struct {
	orders            string // the counter's samples
	requests, queries string // the classic and the exponential histogram
	table, method     string // label names
}

var (
	// UnderscoreEscapingWithSuffixes (the default): characters Prometheus
	// 2 does not allow become _, unit and _total suffixes are added.
	legacyNames = promNames{
		orders:   "caf_orders_total",
		requests: "http_server_request_duration_seconds", queries: "db_client_operation_duration_seconds",
		table: "caf__table", method: "http_request_method",
	}
	// NoUTF8EscapingWithSuffixes: names as sent, with the suffixes.
	utf8Names = promNames{
		orders:   "café.orders_total",
		requests: "http.server.request.duration_seconds", queries: "db.client.operation.duration_seconds",
		table: "café.table", method: "http.request.method",
	}
	// NoTranslation: names as sent, without suffixes.
	untranslatedNames = promNames{
		orders:   "café.orders",
		requests: "http.server.request.duration", queries: "db.client.operation.duration",
		table: "café.table", method: "http.request.method",
	}
)

// p3Case is one gateway configuration scraped by Prometheus 3 in one way.
type p3Case struct {
	name string // the scrape job, and the service.name the workload is sent as
	// sets are --set overrides of the configuration the gateway ships with.
	sets []string
	// nativeHistograms sets scrape_native_histograms on the job, which puts
	// protobuf first in Prometheus's Accept header.
	nativeHistograms bool
	// format is what the exporter must answer with: protobuf, openmetrics
	// or text.
	format string
	names  promNames
	// createdSamples says that sets turn on
	// enable_open_metrics_created_samples.
	createdSamples bool
}

// p3ContentTypes are the exporter's answers to Prometheus 3 in each format.
// Prometheus 3 asks for UTF-8 names (escaping=allow-utf-8) on its text
// formats and names no escaping on protobuf, which carries names as plain
// strings; the exporter answers allow-utf-8 in every format. Without
// OpenMetrics it offers text 1.0.0 and then 0.0.4: expfmt has no 1.0.0, so
// the exporter answers 0.0.4 with the escaping of the 1.0.0 entry, which
// Prometheus 3 parses alike.
var p3ContentTypes = map[string]string{
	"protobuf":    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=allow-utf-8",
	"openmetrics": "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=allow-utf-8",
	"text":        "text/plain; version=0.0.4; charset=utf-8; escaping=allow-utf-8",
}

var p3Cases = []p3Case{
	{
		name:             "p3-protobuf",
		nativeHistograms: true,
		format:           "protobuf",
		names:            legacyNames,
	},
	{
		name: "p3-openmetrics",
		sets: []string{
			"exporters::agentprometheus::enable_open_metrics=true",
			"exporters::agentprometheus::enable_open_metrics_created_samples=true",
		},
		format:         "openmetrics",
		names:          legacyNames,
		createdSamples: true,
	},
	{
		name:   "p3-utf8-text",
		sets:   []string{"exporters::agentprometheus::translation_strategy=NoUTF8EscapingWithSuffixes"},
		format: "text",
		names:  utf8Names,
	},
	{
		name: "p3-utf8-openmetrics",
		sets: []string{
			"exporters::agentprometheus::translation_strategy=NoUTF8EscapingWithSuffixes",
			"exporters::agentprometheus::enable_open_metrics=true",
		},
		format: "openmetrics",
		names:  utf8Names,
	},
	{
		name:             "p3-utf8-protobuf",
		sets:             []string{"exporters::agentprometheus::translation_strategy=NoTranslation"},
		nativeHistograms: true,
		format:           "protobuf",
		names:            untranslatedNames,
	},
}

// p3Gateway is the distro running one case, scraped through a proxy that
// records what was negotiated.
type p3Gateway struct {
	p3Case
	otlp   string
	health string
	proc   *proctest.Proc
	proxy  *promtest.ScrapeProxy
	sent   workload
}

// TestPrometheus3 runs the distro against Prometheus 3.16, built from the Go
// module proxy, in the ways Prometheus 3 scrapes: protobuf with native
// histograms, OpenMetrics with exemplars, and UTF-8 names in each format.
// One gateway per case, on the configuration the distro ships with and the
// case's overrides; one Prometheus scraping them all as separate jobs, with
// exemplar storage on. Each case sends the same workload through the OTel Go
// SDK and compares what Prometheus stored with what the SDK sent.
func TestPrometheus3(t *testing.T) {
	bin := binary(t)
	prom3 := requireTool(t, "STATSGATE_PROMETHEUS3")
	dir := t.TempDir()
	shipped, err := filepath.Abs("../../testdata/gateway.yaml")
	require.NoError(t, err)

	gws := make([]*p3Gateway, len(p3Cases))
	for i, c := range p3Cases {
		g := &p3Gateway{p3Case: c, otlp: testnet.FreeEndpoint(t)}
		metrics, health := testnet.FreeEndpoint(t), testnet.FreeEndpoint(t)
		args := []string{"--config", shipped}
		for _, s := range c.sets {
			args = append(args, "--set="+s)
		}
		g.proc = proctest.Start(t, dir, c.name, []string{
			"STATSGATE_OTLP_GRPC_ENDPOINT=" + g.otlp,
			"STATSGATE_OTLP_HTTP_ENDPOINT=" + testnet.FreeEndpoint(t),
			"STATSGATE_METRICS_ENDPOINT=" + metrics,
			"STATSGATE_HEALTH_ENDPOINT=" + health,
			"STATSGATE_TELEMETRY_PORT=" + gatewaytest.PortOf(t, testnet.FreeEndpoint(t)),
		}, bin, args...)
		g.proxy = promtest.NewScrapeProxy(t, metrics)
		g.health = health
		gws[i] = g
	}
	for _, g := range gws {
		proctest.Poll(t, 30*time.Second, g.name+" healthy", func() error {
			return errors.Join(g.proc.Running(), getStatus("http://"+g.health+"/"))
		})
	}

	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n")
	for _, g := range gws {
		fmt.Fprintf(&cfg, "  - job_name: %s\n    honor_labels: true\n    scrape_native_histograms: %t\n    static_configs:\n      - targets: [%q]\n",
			g.name, g.nativeHistograms, g.proxy.Addr)
	}
	prom := promtest.Start(t, dir, "prometheus3", prom3, cfg.String(), "--enable-feature=exemplar-storage")
	for _, g := range gws {
		prom.WaitUp(t, g.name, 1, 30*time.Second)
	}

	// Each export is acknowledged before sendWorkload returns: a scrape
	// that starts after the last one sees every workload.
	sentAt := time.Now()
	for _, g := range gws {
		g.sent = sendWorkload(t, g.otlp, g.name)
	}
	for _, g := range gws {
		prom.WaitScrapedAfter(t, g.name, time.Now(), 30*time.Second)
	}

	for _, g := range gws {
		t.Run(g.name, func(t *testing.T) {
			api, n, w := prom.API, g.names, g.sent
			t.Run("format negotiated", func(t *testing.T) { assertNegotiated(t, g) })
			t.Run("counter", func(t *testing.T) { assertOrders(t, api, n, w) })
			t.Run("classic histogram", func(t *testing.T) { assertClassic(t, api, n, w) })
			t.Run("exponential histogram", func(t *testing.T) { assertExponential(t, api, g, w) })
			t.Run("exemplars", func(t *testing.T) { assertExemplars(t, api, g, w, sentAt) })
			t.Run("created series", func(t *testing.T) { assertCreated(t, api, g) })
		})
	}
	t.Run("no sample refused", func(t *testing.T) { assertNothingRefused(t, prom) })
}

// sel is a selector of name with the workload's job and instance, in the
// quoted form Prometheus 3 accepts for any name.
func sel(name string, w workload, matchers ...string) string {
	return fmt.Sprintf(`{%q, job=%q, instance=%q%s}`, name, w.Service, w.Instance, strings.Join(append([]string{""}, matchers...), ", "))
}

func assertNegotiated(t *testing.T, g *p3Gateway) {
	ex := g.proxy.Exchanges()
	require.NotEmpty(t, ex, "no scrape went through the proxy")
	for _, e := range ex {
		assert.Equal(t, 200, e.Status, "Accept: %s", e.Accept)
		assert.Equal(t, p3ContentTypes[g.format], e.ContentType, "Accept: %s", e.Accept)
		assert.Equal(t, "gzip", e.ContentEncoding, "Accept-Encoding: %s", e.AcceptEncoding)
	}
	t.Logf("%d scrapes; Prometheus asked for %s and got %s", len(ex), ex[0].Accept, ex[0].ContentType)
}

func assertOrders(t *testing.T, api promtest.API, n promNames, w workload) {
	want := map[string]float64{}
	for table, adds := range orders {
		for _, a := range adds {
			want[table] += float64(a)
		}
	}
	got, err := api.Floats(sel(n.orders, w), n.table)
	require.NoError(t, err)
	assert.Equal(t, want, got, "%s by %s", n.orders, n.table)
}

// assertClassic compares every bucket, the count and the sum of the
// explicit-bucket histogram with the measurements.
func assertClassic(t *testing.T, api promtest.API, n promNames, w workload) {
	for method, ks := range requests {
		values := seconds(ks)
		want := map[float64]float64{}
		for _, le := range append(requestBounds, math.Inf(1)) {
			want[le] = 0
			for _, v := range values {
				if v <= le {
					want[le]++
				}
			}
		}
		res, err := api.Query(sel(n.requests+"_bucket", w, fmt.Sprintf("%q=%q", n.method, method)))
		require.NoError(t, err)
		got := map[float64]float64{}
		for _, s := range res {
			le, err := strconv.ParseFloat(s.Metric["le"], 64)
			require.NoError(t, err, "le of %v", s.Metric)
			got[le], err = s.Float()
			require.NoError(t, err)
		}
		assert.Equal(t, want, got, "%s buckets of %s", n.requests, method)

		var sum float64
		for _, v := range values {
			sum += v
		}
		for suffix, want := range map[string]float64{"_count": float64(len(values)), "_sum": sum} {
			got, err := api.Floats(sel(n.requests+suffix, w, fmt.Sprintf("%q=%q", n.method, method)))
			require.NoError(t, err)
			assert.Equal(t, map[string]float64{"": want}, got, "%s%s of %s", n.requests, suffix, method)
		}
	}
}

// assertExponential checks the exponential histogram: a native histogram
// whose every bucket holds exactly the measurements that fall into it when
// the scrape was protobuf; count, sum and the +Inf bucket otherwise.
func assertExponential(t *testing.T, api promtest.API, g *p3Gateway, w workload) {
	n := g.names
	for method, ks := range queries {
		values := seconds(ks)
		var sum float64
		for _, v := range values {
			sum += v
		}
		m := fmt.Sprintf("%q=%q", n.method, method)
		if g.format != "protobuf" {
			for suffix, want := range map[string]float64{"_count": float64(len(values)), "_sum": sum} {
				got, err := api.Floats(sel(n.queries+suffix, w, m))
				require.NoError(t, err)
				assert.Equal(t, map[string]float64{"": want}, got, "%s%s of %s", n.queries, suffix, method)
			}
			got, err := api.Floats(sel(n.queries+"_bucket", w, m), "le")
			require.NoError(t, err)
			assert.Equal(t, map[string]float64{"+Inf": float64(len(values))}, got, "%s_bucket of %s", n.queries, method)
			continue
		}
		res, err := api.Query(sel(n.queries, w, m))
		require.NoError(t, err)
		require.Len(t, res, 1, "%s of %s", n.queries, method)
		h, err := res[0].NativeHistogram()
		require.NoError(t, err, "%s of %s arrived as a float series, not a native histogram", n.queries, method)
		assert.Equal(t, float64(len(values)), h.Count, "count")
		assert.Equal(t, sum, h.Sum, "sum")
		placed := 0
		for _, b := range h.Buckets {
			var in []float64
			for _, v := range values {
				if b.Contains(v) {
					in = append(in, v)
				}
			}
			placed += len(in)
			assert.Equal(t, float64(len(in)), b.Count, "bucket (%g, %g] holds %v", b.Lower, b.Upper, in)
		}
		assert.Equal(t, len(values), placed, "measurements in some bucket: %v in %+v", values, h.Buckets)
		// The buckets are those of the SDK's scale (native histograms go
		// down to schema 8, which the SDK's scale is below here): each bound
		// is 2^(2^-scale) times the one before. Every measurement is
		// positive: there is no zero bucket.
		var scale int32
		for _, dp := range w.metric(t, queriesName).Data.(metricdata.ExponentialHistogram[float64]).DataPoints {
			if v, _ := dp.Attributes.Value(methodKey); v.AsString() == method {
				scale = dp.Scale
			}
		}
		require.LessOrEqual(t, scale, int32(8), "the SDK's scale")
		for _, b := range h.Buckets {
			require.Positive(t, b.Lower, "bucket (%g, %g]", b.Lower, b.Upper)
			assert.InEpsilon(t, math.Exp2(math.Exp2(-float64(scale))), b.Upper/b.Lower, 1e-12, "bucket (%g, %g] at scale %d", b.Lower, b.Upper, scale)
		}
		for fn, want := range map[string]float64{"histogram_count": float64(len(values)), "histogram_sum": sum} {
			got, err := api.Floats(fmt.Sprintf("%s(%s)", fn, sel(n.queries, w, m)))
			require.NoError(t, err)
			assert.Equal(t, map[string]float64{"": want}, got, "%s(%s) of %s", fn, n.queries, method)
		}
	}
}

// sentExemplar is an exemplar as the SDK sent it, with the labels the
// exporter gives it.
type sentExemplar struct {
	series string // the key of the series it belongs to
	value  float64
	labels map[string]string
	at     time.Time
}

func exemplarOf[N int64 | float64](series string, e metricdata.Exemplar[N]) sentExemplar {
	return sentExemplar{series, float64(e.Value),
		map[string]string{"trace_id": hex.EncodeToString(e.TraceID), "span_id": hex.EncodeToString(e.SpanID)}, e.Time}
}

// assertSameExemplars compares exemplars by series, value and labels, and
// their timestamps to the millisecond Prometheus keeps (give or take one for
// the float seconds of OpenMetrics).
func assertSameExemplars(t *testing.T, want, got []sentExemplar, what string) {
	t.Helper()
	sentAt := map[string]time.Time{}
	for i, e := range want {
		sentAt[e.labels["span_id"]] = e.at
		want[i].at = time.Time{}
	}
	for i, e := range got {
		if sent, ok := sentAt[e.labels["span_id"]]; ok {
			assert.WithinDuration(t, sent, e.at, time.Millisecond, "%s: timestamp of %v", what, e)
		}
		got[i].at = time.Time{}
	}
	assert.ElementsMatch(t, want, got, what)
}

// assertExemplars compares the exemplars Prometheus stored with those the
// SDK sent: every exemplar of the counter (one per series, the latest) and
// of the explicit-bucket histogram (one per bucket, on the first bucket
// whose bound is not below it) arrives with its trace and span ids when the
// format carries exemplars (OpenMetrics, protobuf), and those of the
// exponential histogram too in protobuf, where it is native. The text
// format carries none.
func assertExemplars(t *testing.T, api promtest.API, g *p3Gateway, w workload, since time.Time) {
	n, format := g.names, g.format
	var wantOrders, wantRequests, wantQueries []sentExemplar
	for _, dp := range w.metric(t, ordersName).Data.(metricdata.Sum[int64]).DataPoints {
		table, _ := dp.Attributes.Value(tableKey)
		require.Len(t, dp.Exemplars, 1, "exemplars sent for %s", table.AsString())
		wantOrders = append(wantOrders, exemplarOf(table.AsString(), dp.Exemplars[0]))
	}
	for _, dp := range w.metric(t, requestsName).Data.(metricdata.Histogram[float64]).DataPoints {
		method, _ := dp.Attributes.Value(methodKey)
		for _, e := range dp.Exemplars {
			le := math.Inf(1)
			if i := sort.SearchFloat64s(requestBounds, e.Value); i < len(requestBounds) {
				le = requestBounds[i]
			}
			wantRequests = append(wantRequests, exemplarOf(method.AsString()+" "+strconv.FormatFloat(le, 'g', -1, 64), e))
		}
	}
	for _, dp := range w.metric(t, queriesName).Data.(metricdata.ExponentialHistogram[float64]).DataPoints {
		method, _ := dp.Attributes.Value(methodKey)
		require.Len(t, dp.Exemplars, len(queries[method.AsString()]), "exemplars sent for %s", method.AsString())
		for _, e := range dp.Exemplars {
			wantQueries = append(wantQueries, exemplarOf(method.AsString(), e))
		}
	}
	if format == "text" {
		wantOrders, wantRequests, wantQueries = nil, nil, nil
	}
	if format != "protobuf" {
		wantQueries = nil
	}
	until := time.Now().Add(time.Minute)
	assertSameExemplars(t, wantOrders, storedExemplars(t, api, sel(n.orders, w), since, until, n.table), n.orders)
	assertSameExemplars(t, wantRequests, storedExemplars(t, api, sel(n.requests+"_bucket", w), since, until, n.method, "le"), n.requests+"_bucket")
	assertSameExemplars(t, wantQueries, storedExemplars(t, api, sel(n.queries, w), since, until, n.method), n.queries)
}

// storedExemplars are the exemplars Prometheus stored for the series of
// query, each keyed by the values of labels (le as a number).
func storedExemplars(t *testing.T, api promtest.API, query string, start, end time.Time, labels ...string) []sentExemplar {
	t.Helper()
	res, err := api.Exemplars(query, start, end)
	require.NoError(t, err)
	var out []sentExemplar
	for _, s := range res {
		if le, ok := s.Metric["le"]; ok {
			f, err := strconv.ParseFloat(le, 64)
			require.NoError(t, err)
			s.Metric["le"] = strconv.FormatFloat(f, 'g', -1, 64)
		}
		for _, e := range s.Exemplars {
			out = append(out, sentExemplar{promtest.Key(s.Metric, labels...), e.Value, e.Labels, e.T})
		}
	}
	return out
}

// assertCreated lists the _created series Prometheus stored for the job.
// Prometheus 3 stores OpenMetrics _created lines as series of their own
// (unless its created-timestamp-zero-ingestion feature is on); protobuf
// carries the start time in a field, and the text format has none.
//
// The exporter writes _created lines in OpenMetrics scrapes only with
// enable_open_metrics_created_samples: then each counter and histogram series
// has a _created series of its own; without it, and in the other formats,
// none has.
func assertCreated(t *testing.T, api promtest.API, g *p3Gateway) {
	n := g.names
	res, err := api.Query(fmt.Sprintf(`{__name__=~".+_created", job=%q}`, g.name))
	require.NoError(t, err)
	var got []string
	for _, s := range res {
		got = append(got, s.Metric["__name__"])
	}
	var want []string
	if g.format == "openmetrics" && g.createdSamples {
		// One per series: two tables, two methods, one method.
		strip := func(s string) string { return strings.TrimSuffix(s, "_total") }
		for _, name := range []string{strip(n.orders), strip(n.orders), n.requests, n.requests, n.queries} {
			want = append(want, name+"_created")
		}
	}
	assert.ElementsMatch(t, want, got, "_created series of %s", g.name)
}

// assertNothingRefused checks Prometheus's own counters of samples and
// exemplars it refused while scraping: every one is zero.
func assertNothingRefused(t *testing.T, prom *promtest.Server) {
	for _, name := range []string{
		"prometheus_target_scrapes_sample_out_of_order_total",
		"prometheus_target_scrapes_sample_duplicate_timestamp_total",
		"prometheus_target_scrapes_sample_out_of_bounds_total",
		"prometheus_target_scrapes_exemplar_out_of_order_total",
		"prometheus_target_scrapes_exceeded_sample_limit_total",
		"prometheus_tsdb_exemplar_out_of_order_exemplars_total",
	} {
		v, err := prom.SelfMetric(name)
		require.NoError(t, err)
		assert.Zero(t, v, name)
	}
}
