package agentprometheusexporter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
	"github.com/statsgate/statsgate/internal/testnet"
)

func benchConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.ResourceConstantLabels.Included = []string{"host.name", "cloud.region"}
	cfg.WithoutScopeInfo = true
	return cfg
}

func benchExporter(b *testing.B) *agentPrometheusExporter {
	exp, err := newAgentPrometheusExporter(exportertest.NewNopSettings(metadata.Type), benchConfig(), wallClock)
	if err != nil {
		b.Fatal(err)
	}
	return exp
}

// BenchmarkIngestExisting updates series that exist already; ns/op and
// allocs/op are per data point.
func BenchmarkIngestExisting(b *testing.B) { benchIngestExisting(b, benchExporter(b)) }

// BenchmarkIngestExistingResourcePatterns is BenchmarkIngestExisting with
// the same resource labels chosen by wildcard patterns: each resource
// attribute is matched, where plain names are looked up.
func BenchmarkIngestExistingResourcePatterns(b *testing.B) {
	cfg := benchConfig()
	cfg.ResourceConstantLabels.Included = []string{"host.*", "cloud.reg?on"}
	exp, err := newAgentPrometheusExporter(exportertest.NewNopSettings(metadata.Type), cfg, wallClock)
	if err != nil {
		b.Fatal(err)
	}
	benchIngestExisting(b, exp)
}

func benchIngestExisting(b *testing.B, exp *agentPrometheusExporter) {
	batches := make([]pmetric.Metrics, 100)
	for a := range batches {
		batches[a] = storetest.AgentBatch(a, 100)
		_ = exp.consumeMetrics(context.Background(), batches[a])
	}
	points := batches[0].DataPointCount()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += points {
		_ = exp.consumeMetrics(context.Background(), batches[(i/points)%len(batches)])
	}
}

// BenchmarkIngestExistingInFleet is BenchmarkIngestExisting on a replica
// of a fleet (a memberlist node on loopback, alone): each agent's batch also
// asks the claims whether to claim the agent.
func BenchmarkIngestExistingInFleet(b *testing.B) {
	cfg := benchConfig()
	cfg.Fleet = FleetConfig{Enabled: true, Bind: "127.0.0.1:0", ClaimInterval: 15 * time.Second, RejoinInterval: time.Minute}
	exp, err := newAgentPrometheusExporter(exportertest.NewNopSettings(metadata.Type), cfg, wallClock)
	if err != nil {
		b.Fatal(err)
	}
	if err := exp.fleet.start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = exp.fleet.stop() }()
	benchIngestExisting(b, exp)
}

// BenchmarkScrapeText writes the text exposition of 100 agents × 1000 series
// (100k OTLP series); ns/op is per scrape.
func BenchmarkScrapeText(b *testing.B) {
	exp := benchExporter(b)
	for a := range 100 {
		_ = exp.consumeMetrics(context.Background(), storetest.AgentBatch(a, 100))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := exposition.Write(io.Discard, exp.store, exposition.Request{Format: exposition.Text, Options: exp.encoder.Options, Escaping: model.UnderscoreEscaping}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRetainedMemory reports heap bytes per series held, after GC, for
// 100 agents × 1000 series (100k OTLP series).
func BenchmarkRetainedMemory(b *testing.B) {
	for range b.N {
		batches := make([]pmetric.Metrics, 100)
		for a := range batches {
			batches[a] = storetest.AgentBatch(a, 100)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		exp := benchExporter(b)
		for _, md := range batches {
			_ = exp.consumeMetrics(context.Background(), md)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(exp.store.SeriesCount()), "B/series")
		runtime.KeepAlive(exp)
		runtime.KeepAlive(batches)
	}
}

// BenchmarkIngestDuringScrapes updates existing series (100k held) while 0,
// 1 or 4 clients scrape /metrics over loopback HTTP, back to back (the worst
// case: scraping takes a core for itself) or together once a second (the
// shortest interval Prometheus is run with); ns/op is per data point.
// Concurrent scrapes share encodings, so four scrapers cost ingestion what
// one does.
func BenchmarkIngestDuringScrapes(b *testing.B) {
	cases := []struct {
		scrapers int
		interval time.Duration
	}{{0, 0}, {1, 0}, {4, 0}, {4, time.Second}}
	for _, c := range cases {
		name := fmt.Sprintf("scrapers=%d", c.scrapers)
		if c.interval > 0 {
			name += "/every=" + c.interval.String()
		}
		scrapers := c.scrapers
		b.Run(name, func(b *testing.B) {
			exp, url := startedBenchExporter(b)
			batches := make([]pmetric.Metrics, 100)
			for a := range batches {
				batches[a] = storetest.AgentBatch(a, 100)
				_ = exp.consumeMetrics(context.Background(), batches[a])
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range scrapers {
				// One ticker each, started together: the scrapes coincide.
				var tick <-chan time.Time
				if c.interval > 0 {
					ticker := time.NewTicker(c.interval)
					defer ticker.Stop()
					tick = ticker.C
				}
				wg.Go(func() {
					for {
						if tick != nil {
							select {
							case <-stop:
								return
							case <-tick:
							}
						}
						select {
						case <-stop:
							return
						default:
							scrapeDiscard(b, url)
						}
					}
				})
			}
			points := batches[0].DataPointCount()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += points {
				_ = exp.consumeMetrics(context.Background(), batches[(i/points)%len(batches)])
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
		})
	}
}

// BenchmarkIngestPauseDuringScrape measures how long single-point updates
// take while a scrape of 1M series (1000 agents × 1000) is being written:
// the longest ingestion waits on the scrape. ns/op is per scrape.
func BenchmarkIngestPauseDuringScrape(b *testing.B) {
	exp, url := startedBenchExporter(b)
	for a := range 1000 {
		_ = exp.consumeMetrics(context.Background(), storetest.AgentBatch(a, 100))
	}
	b.ResetTimer()
	measureIngestPause(b, exp, func() { scrapeDiscard(b, url) })
}

// measureIngestPause updates one series over and over while request runs,
// b.N times, and reports the slowest update and the mean.
func measureIngestPause(b *testing.B, exp *agentPrometheusExporter, request func()) {
	one := storetest.AgentBatch(0, 1)
	var worst, total time.Duration
	var updates int
	for range b.N {
		done := make(chan struct{})
		go func() {
			defer close(done)
			request()
		}()
		for running := true; running; {
			select {
			case <-done:
				running = false
			default:
				start := time.Now()
				_ = exp.consumeMetrics(context.Background(), one)
				d := time.Since(start)
				worst, total, updates = max(worst, d), total+d, updates+1
			}
		}
	}
	b.ReportMetric(float64(worst)/float64(time.Millisecond), "max-update-ms")
	b.ReportMetric(float64(total)/float64(updates)/float64(time.Microsecond), "mean-update-µs")
}

// startedBenchExporter serves the bench exporter on a free loopback port.
func startedBenchExporter(b *testing.B) (*agentPrometheusExporter, string) {
	exp := benchExporter(b)
	exp.cfg.Server.NetAddr.Endpoint = testnet.FreeEndpoint(b)
	if err := exp.start(context.Background(), componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = exp.shutdown(context.Background()) })
	return exp, "http://" + exp.cfg.Server.NetAddr.Endpoint + metricsPath
}

// scrapeEncoding is what the scrapers ask for: gzip, as Prometheus does.
var scrapeEncoding = "gzip"

func scrapeDiscard(b *testing.B, url string) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept-Encoding", scrapeEncoding)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Error("scrape failed:", resp.Status, err)
	}
}

// writeBenchCase is a store of the gateway workload (100 agents × 1000
// series, 100k OTLP series) and the text samples it writes.
type writeBenchCase struct {
	exp     *agentPrometheusExporter
	samples int
}

// newWriteBenchCase loads the workload with names translated by strategy.
// Its points carry neither timestamps nor start times; stamped adds both, as
// agents send them, so that timestamps and _created samples are written.
func newWriteBenchCase(b *testing.B, strategy TranslationStrategy, stamped bool) writeBenchCase {
	cfg := benchConfig()
	cfg.TranslationStrategy = strategy
	exp, err := newAgentPrometheusExporter(exportertest.NewNopSettings(metadata.Type), cfg, wallClock)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	for a := range 100 {
		md := storetest.AgentBatch(a, 100)
		if stamped {
			stamp(md, now.Add(-time.Hour), now)
		}
		_ = exp.consumeMetrics(context.Background(), md)
	}
	var text bytes.Buffer
	if err := exposition.Write(&text, exp.store, exposition.Request{Format: exposition.Text, Options: exp.encoder.Options, Escaping: model.UnderscoreEscaping}); err != nil {
		b.Fatal(err)
	}
	samples := 0
	for line := range bytes.Lines(text.Bytes()) {
		if line[0] != '#' {
			samples++
		}
	}
	return writeBenchCase{exp: exp, samples: samples}
}

// stamp sets the start time and timestamp of every point of md.
func stamp(md pmetric.Metrics, start, ts time.Time) {
	s, t := pcommon.NewTimestampFromTime(start), pcommon.NewTimestampFromTime(ts)
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				switch m := ms.At(k); m.Type() {
				case pmetric.MetricTypeGauge:
					for _, dp := range m.Gauge().DataPoints().All() {
						dp.SetTimestamp(t)
					}
				case pmetric.MetricTypeSum:
					for _, dp := range m.Sum().DataPoints().All() {
						dp.SetStartTimestamp(s)
						dp.SetTimestamp(t)
					}
				case pmetric.MetricTypeHistogram:
					for _, dp := range m.Histogram().DataPoints().All() {
						dp.SetStartTimestamp(s)
						dp.SetTimestamp(t)
					}
				}
			}
		}
	}
}

// run measures write as a sub-benchmark: ns/sample and allocs/sample are
// per line of the text exposition, allocations counted process-wide.
func (c writeBenchCase) run(b *testing.B, name string, write func(io.Writer) error) {
	b.Run(name, func(b *testing.B) {
		if err := write(io.Discard); err != nil { // warm the pools
			b.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b.ResetTimer()
		for range b.N {
			if err := write(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(c.samples), "ns/sample")
		b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N)/float64(c.samples), "allocs/sample")
	})
}

// direct runs the writer as a sub-benchmark named as it was when expfmt's
// encoder ran beside it (internal/exposition's BenchmarkWriteProtobuf
// compares the two), so that runs of both compare.
func (c writeBenchCase) direct(b *testing.B, write func(io.Writer) error) {
	c.run(b, "writer=direct", write)
}

// BenchmarkWriteText writes the text format of the gateway workload with
// legacy names, with the direct writers.
func BenchmarkWriteText(b *testing.B) {
	for _, stamped := range []bool{false, true} {
		b.Run(fmt.Sprint("stamped=", stamped), func(b *testing.B) {
			c := newWriteBenchCase(b, UnderscoreEscapingWithSuffixes, stamped)
			opts := c.exp.encoder.Options
			c.direct(b, func(w io.Writer) error {
				return exposition.Write(w, c.exp.store, exposition.Request{Format: exposition.Text, Options: opts, Escaping: model.UnderscoreEscaping})
			})
		})
	}
}

// BenchmarkWriteTextUTF8 writes the text format of the gateway workload
// stored with UTF-8 names (NoUTF8EscapingWithSuffixes: every series has the
// labels host.name and cloud.region) to a scraper that allows UTF-8 names
// (text 1.0.0: the names quoted) and to one that does not (underscores).
func BenchmarkWriteTextUTF8(b *testing.B) {
	c := newWriteBenchCase(b, NoUTF8EscapingWithSuffixes, false)
	opts := c.exp.encoder.Options
	for _, scheme := range []model.EscapingScheme{model.NoEscaping, model.UnderscoreEscaping} {
		b.Run("escaping="+scheme.String(), func(b *testing.B) {
			c.direct(b, func(w io.Writer) error {
				return exposition.Write(w, c.exp.store, exposition.Request{Format: exposition.Text, Options: opts, Escaping: scheme})
			})
		})
	}
}

// BenchmarkWriteOpenMetrics writes OpenMetrics 1.0 of the gateway workload,
// with the direct writers; stamped with timestamps, with and
// without _created samples.
func BenchmarkWriteOpenMetrics(b *testing.B) {
	for _, stamped := range []bool{false, true} {
		c := newWriteBenchCase(b, UnderscoreEscapingWithSuffixes, stamped)
		for _, created := range []bool{false, true} {
			if created && !stamped {
				continue // no start times: no _created samples to write
			}
			b.Run(fmt.Sprintf("stamped=%v/created=%v", stamped, created), func(b *testing.B) {
				opts := c.exp.encoder.Options
				opts.CreatedSamples = created
				c.direct(b, func(w io.Writer) error {
					return exposition.Write(w, c.exp.store, exposition.Request{Format: exposition.OpenMetrics, Options: opts, Escaping: model.UnderscoreEscaping})
				})
			})
		}
	}
}

// BenchmarkIngestNew creates series: every point is one of a new agent's
// (1,000 per agent, 10 families). ns/op and allocs/op are per data point.
// names=utf8 keeps dotted attribute names (http.code, not code) under
// NoUTF8EscapingWithSuffixes, where each family keeps the record of series
// that a scraper without UTF-8 names would get alike (label_clash).
func BenchmarkIngestNew(b *testing.B) {
	for _, utf8 := range []bool{false, true} {
		b.Run(fmt.Sprint("names=", map[bool]string{false: "plain", true: "utf8"}[utf8]), func(b *testing.B) {
			cfg := benchConfig()
			if utf8 {
				cfg.TranslationStrategy = NoUTF8EscapingWithSuffixes
			}
			cfg.MaxSeries = 1 << 30
			cfg.MaxSeriesPerResource = 1 << 30
			exp, err := newAgentPrometheusExporter(exportertest.NewNopSettings(metadata.Type), cfg, wallClock)
			if err != nil {
				b.Fatal(err)
			}
			const points = 1000
			batches := make([]pmetric.Metrics, (b.N+points-1)/points)
			for a := range batches {
				batches[a] = storetest.AgentBatch(a, points/10)
				if utf8 {
					dottedAttributes(batches[a])
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for _, md := range batches {
				_ = exp.consumeMetrics(context.Background(), md)
			}
			b.StopTimer()
			if got := exp.store.SeriesCount(); got != int64(len(batches)*points) {
				b.Fatalf("%d series stored, want %d", got, len(batches)*points)
			}
		})
	}
}

// dottedAttributes prefixes every point attribute key with "http.".
func dottedAttributes(md pmetric.Metrics) {
	// In the order the keys came in, as AgentBatch sends them.
	rename := func(attrs pcommon.Map) {
		renamed := pcommon.NewMap()
		for k, v := range attrs.All() {
			v.CopyTo(renamed.PutEmpty("http." + k))
		}
		renamed.MoveTo(attrs)
	}
	ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := range ms.Len() {
		m := ms.At(i)
		switch m.Type() {
		case pmetric.MetricTypeGauge:
			for j := range m.Gauge().DataPoints().Len() {
				rename(m.Gauge().DataPoints().At(j).Attributes())
			}
		case pmetric.MetricTypeSum:
			for j := range m.Sum().DataPoints().Len() {
				rename(m.Sum().DataPoints().At(j).Attributes())
			}
		case pmetric.MetricTypeHistogram:
			for j := range m.Histogram().DataPoints().Len() {
				rename(m.Histogram().DataPoints().At(j).Attributes())
			}
		}
	}
}
