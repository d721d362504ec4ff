package exporterbench

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/statsgate/statsgate/bench/internal/promscrape"
	"github.com/statsgate/statsgate/bench/internal/workload"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter"
	"github.com/statsgate/statsgate/internal/testnet"
)

const (
	ours    = "ours"
	contrib = "contrib"
)

var exporterNames = []string{ours, contrib}

// writeTimeout replaces confighttp's default of 30s on both servers: a
// contrib scrape of 1M series takes longer, and a cut response would make it
// look faster than it is.
const writeTimeout = 10 * time.Minute

// settings are the options a benchmark varies; everything else is the same
// for every benchmark.
type settings struct {
	expiration time.Duration // metric_expiration; 0 means one hour
}

// oursConfig decodes our exporter's config from a map, as a collector
// config file would give it.
func oursConfig(endpoint string, s settings) (exporter.Factory, any, error) {
	f := agentprometheusexporter.NewFactory()
	cfg := f.CreateDefaultConfig()
	m := map[string]any{
		"endpoint":                 endpoint,
		"write_timeout":            writeTimeout.String(),
		"resource_constant_labels": map[string]any{"included": []any{"host.name", "cloud.region"}},
		"without_scope_info":       true,
		"enable_open_metrics":      true,
		"metric_expiration":        s.expiration.String(),
		// Well above any benchmark's series count: no point is refused.
		"max_series":              50_000_000,
		"max_series_per_resource": 50_000_000,
	}
	if env := os.Getenv("BENCH_GZIP_LEVEL"); env != "" {
		level, err := strconv.Atoi(env)
		if err != nil {
			return nil, nil, fmt.Errorf("BENCH_GZIP_LEVEL: %w", err)
		}
		m["scrape"] = map[string]any{"gzip_level": level}
	}
	if err := confmap.NewFromStringMap(m).Unmarshal(cfg); err != nil {
		return nil, nil, fmt.Errorf("decoding config: %w", err)
	}
	return f, cfg, confmap.Validate(cfg)
}

// contribConfig sets contrib's Config in Go (decoding it from a map does not
// work with collector core v0.164, see bench/README.md). With
// exclude_service_attributes, the resource attributes that become labels are
// host.name and cloud.region: the same label set as ours' resource_constant_labels.
func contribConfig(endpoint string, s settings) (exporter.Factory, any, error) {
	f := prometheusexporter.NewFactory()
	cfg := f.CreateDefaultConfig().(*prometheusexporter.Config)
	cfg.NetAddr.Endpoint = endpoint
	cfg.WriteTimeout = writeTimeout
	cfg.ResourceToTelemetrySettings.Enabled = true
	cfg.ResourceToTelemetrySettings.ExcludeServiceAttributes = true
	cfg.WithoutScopeInfo = true
	cfg.EnableOpenMetrics = true
	cfg.MetricExpiration = s.expiration
	return f, cfg, confmap.Validate(cfg)
}

// instance is a started exporter.
type instance struct {
	name string
	exp  exporter.Metrics
	url  string
	logs *observer.ObservedLogs
}

// start creates and starts the named exporter. The caller shuts it down.
func start(tb testing.TB, name string, s settings) *instance {
	tb.Helper()
	if s.expiration == 0 {
		s.expiration = time.Hour
	}
	endpoint := testnet.FreeEndpoint(tb)
	var (
		f   exporter.Factory
		cfg any
		err error
	)
	switch name {
	case ours:
		f, cfg, err = oursConfig(endpoint, s)
	case contrib:
		f, cfg, err = contribConfig(endpoint, s)
	default:
		err = fmt.Errorf("unknown exporter %q", name)
	}
	if err != nil {
		tb.Fatalf("%s: config: %v", name, err)
	}
	core, logs := observer.New(zapcore.WarnLevel)
	set := exportertest.NewNopSettings(f.Type())
	set.Logger = zap.New(core)
	exp, err := f.CreateMetrics(context.Background(), set, cfg)
	if err != nil {
		tb.Fatalf("%s: create: %v", name, err)
	}
	if err := exp.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		tb.Fatalf("%s: start: %v", name, err)
	}
	in := &instance{name: name, exp: exp, url: "http://" + endpoint + "/metrics", logs: logs}
	// Wait until the listener serves.
	for deadline := time.Now().Add(5 * time.Second); ; {
		conn, err := net.Dial("tcp", endpoint)
		if err == nil {
			_ = conn.Close()
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not listening on %s: %v", name, endpoint, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return in
}

func (in *instance) shutdown(tb testing.TB) {
	tb.Helper()
	if err := in.exp.Shutdown(context.Background()); err != nil {
		tb.Errorf("%s: shutdown: %v", in.name, err)
	}
	client.CloseIdleConnections()
}

func (in *instance) consume(tb testing.TB, md pmetric.Metrics) {
	if err := in.exp.ConsumeMetrics(context.Background(), md); err != nil {
		tb.Fatalf("%s: ConsumeMetrics: %v", in.name, err)
	}
}

// load gives the exporter agents batches of shape s, built one at a time
// and dropped after use, as a receiver would decode them.
func (in *instance) load(tb testing.TB, s workload.Shape, agents int, ts int) {
	for a := range agents {
		in.consume(tb, batch(s, a, 0, ts))
	}
}

// noteLogs reports what the exporter logged at warning level or above since
// the last call, as a note.
func (in *instance) noteLogs(context string) {
	entries := in.logs.TakeAll()
	if len(entries) == 0 {
		return
	}
	var b strings.Builder
	for i, e := range entries {
		if i == 3 {
			fmt.Fprintf(&b, "; ... (%d in all)", len(entries))
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		msg := e.Message
		for _, f := range e.Context {
			if f.Type == zapcore.StringType || f.Type == zapcore.ErrorType {
				if f.Type == zapcore.ErrorType {
					msg += fmt.Sprintf(" %s=%v", f.Key, f.Interface)
				} else {
					msg += fmt.Sprintf(" %s=%q", f.Key, f.String)
				}
			}
		}
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		fmt.Fprintf(&b, "%s %s", e.Level, msg)
	}
	note("%s logged while %s: %s", in.name, context, b.String())
}

// notes are remarks about the exporters' behaviour during the run (partial
// responses, logged errors, missing samples). TestMain prints them after the
// benchmarks, each once, as "NOTE: " lines that bench/cmd/benchreport
// collects: printing while a benchmark runs would split its result line.
var notes struct {
	sync.Mutex
	order []string
	count map[string]int
}

func note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	notes.Lock()
	defer notes.Unlock()
	if notes.count == nil {
		notes.count = map[string]int{}
	}
	if notes.count[msg] == 0 {
		notes.order = append(notes.order, msg)
	}
	notes.count[msg]++
}

func TestMain(m *testing.M) {
	code := m.Run()
	notes.Lock()
	for _, msg := range notes.order {
		if n := notes.count[msg]; n > 1 {
			msg += fmt.Sprintf(" (%d times)", n)
		}
		fmt.Println("NOTE: " + msg)
	}
	notes.Unlock()
	os.Exit(code)
}

// textFormat is the text format 0.0.4, the one whose lines are counted as
// samples.
var textFormat = promscrape.Formats[0]

// encodings are the Accept-Encodings of the scrapes: none, and gzip as
// Prometheus asks by default.
var encodings = []string{"identity", "gzip"}

// client keeps connections alive between scrapes, as a Prometheus server
// does, and never decompresses: a gzip response is read as it comes over the
// wire.
var client = &http.Client{Transport: &http.Transport{
	DisableCompression:  true,
	MaxIdleConnsPerHost: 4,
	// Large responses: read in big chunks.
	ReadBufferSize: 64 << 10,
}}

// scrape asks for f with Accept-Encoding enc, reads the whole response body
// into w as it comes (compressed if so served) and returns its size.
func (in *instance) scrape(f promscrape.Format, enc string, w io.Writer) (int64, error) {
	n, _, err := in.fetch(f, enc, w)
	return n, err
}

// fetch is scrape, and also returns the response's Content-Type.
func (in *instance) fetch(f promscrape.Format, enc string, w io.Writer) (int64, string, error) {
	req, err := http.NewRequest(http.MethodGet, in.url, http.NoBody)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Accept", f.Accept)
	req.Header.Set("Accept-Encoding", enc)
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("%s: scrape: %w", in.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return 0, "", fmt.Errorf("%s: scrape: HTTP %d: %s", in.name, resp.StatusCode, b)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != f.MediaType {
		return 0, "", fmt.Errorf("%s: asked for %s, got Content-Type %q", in.name, f.Accept, resp.Header.Get("Content-Type"))
	}
	got := resp.Header.Get("Content-Encoding")
	if got == "" {
		got = "identity"
	}
	if got != enc {
		return 0, "", fmt.Errorf("%s: asked for Accept-Encoding %s, got Content-Encoding %q", in.name, enc, resp.Header.Get("Content-Encoding"))
	}
	n, err := io.Copy(w, resp.Body)
	return n, resp.Header.Get("Content-Type"), err
}

// checkFormat scrapes f once with enc, untimed, decompresses the response
// and counts its samples with the parser Prometheus uses for its
// Content-Type. It notes a response that does not parse or does not hold the
// samples of the text scrape (textSamples, target_info included), and
// returns the size of the response as received.
func (in *instance) checkFormat(tb testing.TB, f promscrape.Format, enc string, textSamples int, textBytes int64, what string) int64 {
	tb.Helper()
	// Room for the whole response up front, as a scraper that reads the body
	// before parsing it has: a buffer that doubles as it fills stops reading
	// for as long as it copies, and the exporter cuts off a scraper that
	// leaves a write blocked for 2 s (at 1M series the copies took that long).
	var wire bytes.Buffer
	wire.Grow(int(textBytes + textBytes/4))
	n, contentType, err := in.fetch(f, enc, &wire)
	if err != nil {
		tb.Fatal(err)
	}
	body := wire.Bytes()
	if enc == "gzip" {
		zr, err := gzip.NewReader(&wire)
		if err == nil {
			body, err = io.ReadAll(zr)
		}
		if err != nil {
			note("%s: the %s response does not decompress: %v", what, enc, err)
			return n
		}
	}
	c, err := promscrape.Count(body, contentType)
	switch {
	case err != nil:
		note("%s: the %s response (%s) does not parse: %v", what, enc, contentType, err)
	case int(c.Samples+c.TargetInfo) != textSamples || c.NativeHistograms != 0:
		note("%s: the %s response (%s) has %d samples and %d native histograms, the text scrape %d samples",
			what, enc, contentType, c.Samples+c.TargetInfo, c.NativeHistograms, textSamples)
	}
	return n
}

// sampleCounter counts the sample lines of a text exposition written to it.
type sampleCounter struct {
	inLine  bool
	samples int
}

func (c *sampleCounter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if !c.inLine {
			if p[0] != '#' && p[0] != '\n' {
				c.samples++
			}
			c.inLine = true
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			break
		}
		c.inLine = false
		p = p[i+1:]
	}
	return n, nil
}

// countSamples scrapes the text format and counts its samples.
func (in *instance) countSamples(tb testing.TB) (samples int, bytes int64) {
	tb.Helper()
	var c sampleCounter
	n, err := in.scrape(textFormat, "identity", &c)
	if err != nil {
		tb.Fatal(err)
	}
	return c.samples, n
}

// meter measures time and allocations of the timed parts of a benchmark,
// like testing.B does, so that they can be reported per series or point.
type meter struct {
	b              *testing.B
	ms             runtime.MemStats
	mallocs, bytes uint64
	startM, startB uint64
	elapsedStart   time.Time
	elapsed        time.Duration
	running        bool
}

// newMeter stops b's timer; call start before the timed part.
func newMeter(b *testing.B) *meter {
	b.StopTimer()
	b.ResetTimer()
	return &meter{b: b}
}

func (m *meter) start() {
	runtime.ReadMemStats(&m.ms)
	m.startM, m.startB = m.ms.Mallocs, m.ms.TotalAlloc
	m.running = true
	m.elapsedStart = time.Now()
	m.b.StartTimer()
}

func (m *meter) stop() {
	m.b.StopTimer()
	m.elapsed += time.Since(m.elapsedStart)
	runtime.ReadMemStats(&m.ms)
	m.mallocs += m.ms.Mallocs - m.startM
	m.bytes += m.ms.TotalAlloc - m.startB
	m.running = false
}

// report adds ns, B and allocs per unit, for units of which each op has perOp.
func (m *meter) report(unit string, perOp float64) {
	n := float64(m.b.N) * perOp
	m.b.ReportMetric(float64(m.elapsed.Nanoseconds())/n, "ns/"+unit)
	m.b.ReportMetric(float64(m.bytes)/n, "B/"+unit)
	m.b.ReportMetric(float64(m.mallocs)/n, "allocs/"+unit)
}

// heapAfterGC returns the live heap after a full collection.
func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// sizes returns the sizes selected by BENCH_SIZES (default: all).
func sizes() []workload.Size {
	env := os.Getenv("BENCH_SIZES")
	if env == "" {
		return workload.Sizes
	}
	var out []workload.Size
	for _, s := range workload.Sizes {
		for w := range strings.SplitSeq(env, ",") {
			if strings.EqualFold(strings.TrimSpace(w), s.Name) {
				out = append(out, s)
			}
		}
	}
	return out
}

// skipContrib1M reports whether BENCH_CONTRIB_1M=0 asks to leave out contrib
// at 1M series.
func skipContrib1M(name string, s workload.Size) bool {
	return name == contrib && s.Series >= 1_000_000 && os.Getenv("BENCH_CONTRIB_1M") == "0"
}
