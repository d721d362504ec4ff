package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter"
)

// target is one exporter implementation under comparison.
type target struct {
	name string
	// ours marks our exporter, which also takes a case's oursOnly settings.
	ours bool
	// start starts the exporter for the case's settings, given in the YAML
	// vocabulary of contrib's exporter; it registers the stop with t.Cleanup.
	start func(t *testing.T, name string, settings map[string]any) (*running, error)
}

var (
	// contribTarget is contrib's prometheusexporter in a program of its own
	// (conformance/contrib), fed over OTLP/HTTP.
	contribTarget = target{name: "contrib", start: startContrib}
	// oursTarget is our exporter in this process, fed through its factory.
	oursTarget = target{name: "ours", ours: true, start: startOurs}
)

// running is a started exporter.
type running struct {
	name string
	// endpoint serves /metrics.
	endpoint string
	// send hands the case's batches to the exporter, in order, and returns
	// once each has been consumed.
	send func(batches []pmetric.Metrics) error
	// logs returns the warnings and errors logged so far.
	logs func() string
}

// handedOut holds the ports freeEndpoint has returned in this run: the
// kernel may offer a port again once its probe listener is closed, before
// the exporter that was given it listens.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freeEndpoint returns a loopback address with a port that was free a moment
// ago and has not been returned before in this run. Another process, or an
// outgoing connection, may still take it first: starts retry on
// "address already in use" (startRetrying).
func freeEndpoint(t *testing.T) string {
	t.Helper()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(fmt.Sprintf("finding a free port: %v", err))
		}
		addr := ln.Addr().(*net.TCPAddr)
		_ = ln.Close()
		handedOut.Lock()
		seen := handedOut.ports[addr.Port]
		handedOut.ports[addr.Port] = true
		handedOut.Unlock()
		if !seen {
			return addr.String()
		}
	}
}

// startRetrying calls start until it does not fail on a port taken between
// freeEndpoint and the listen, three times at most.
func startRetrying(start func() (*running, error)) (*running, error) {
	for attempt := 1; ; attempt++ {
		r, err := start()
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return r, err
		}
	}
}

// oursConfig decodes our exporter's config from the case's settings, so the
// harness does not depend on its Go field names.
func oursConfig(settings map[string]any, endpoint string) (exporter.Factory, any, error) {
	f := agentprometheusexporter.NewFactory()
	cfg := f.CreateDefaultConfig()
	// Sample timestamps are on by default in ours and off in contrib: the
	// cases compare the same settings, so unless a case sets them, off.
	// The harness stops the exporters when a case ends, with no scraper left
	// to wait for the last deltas.
	m := map[string]any{"endpoint": endpoint, "send_timestamps": false, "scrape": map[string]any{"drain_timeout": "0s"}}
	for k, v := range settings {
		m[k] = v
	}
	if err := confmap.NewFromStringMap(m).Unmarshal(cfg); err != nil {
		return nil, nil, fmt.Errorf("decoding config: %w", err)
	}
	return f, cfg, confmap.Validate(cfg)
}

// startOurs creates and starts our exporter for the case's settings with a
// no-op host; it registers shutdown with t.Cleanup.
func startOurs(t *testing.T, name string, settings map[string]any) (*running, error) {
	t.Helper()
	return startRetrying(func() (*running, error) { return startOursOnce(t, name, settings) })
}

func startOursOnce(t *testing.T, name string, settings map[string]any) (*running, error) {
	endpoint := freeEndpoint(t)
	f, cfg, err := oursConfig(settings, endpoint)
	if err != nil {
		return nil, fmt.Errorf("%s: config: %w", name, err)
	}
	core, logs := observer.New(zapcore.WarnLevel)
	set := exportertest.NewNopSettings(f.Type())
	set.Logger = zap.New(core)
	exp, err := f.CreateMetrics(context.Background(), set, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: create: %w", name, err)
	}
	if err := exp.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		_ = exp.Shutdown(context.Background())
		return nil, fmt.Errorf("%s: start: %w", name, err)
	}
	t.Cleanup(func() {
		if err := exp.Shutdown(context.Background()); err != nil {
			t.Errorf("%s: shutdown: %v", name, err)
		}
	})
	return &running{
		name:     name,
		endpoint: endpoint,
		send:     func(batches []pmetric.Metrics) error { return consumeViaProto(name, exp, batches) },
		logs:     func() string { return observedLines(logs) },
	}, nil
}

// consumeViaProto hands each batch to exp as the OTLP receiver would: decoded
// from its OTLP protobuf encoding, so that ours sees what contrib's receiver
// decodes, and as an independent copy, so the case's batches stay unchanged.
func consumeViaProto(name string, exp exporter.Metrics, batches []pmetric.Metrics) error {
	for i, md := range batches {
		b, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
		if err != nil {
			return err
		}
		cp, err := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(b)
		if err != nil {
			return err
		}
		if err := exp.ConsumeMetrics(context.Background(), cp); err != nil {
			return fmt.Errorf("%s: ConsumeMetrics batch %d: %w", name, i, err)
		}
	}
	return nil
}

// observedLines renders the warnings and errors an in-process exporter logged.
func observedLines(logs *observer.ObservedLogs) string {
	var b strings.Builder
	for _, e := range logs.All() {
		fmt.Fprintf(&b, "    %s %s", e.Level, e.Message)
		for _, f := range e.Context {
			if f.Type == zapcore.StringType {
				fmt.Fprintf(&b, " %s=%q", f.Key, f.String)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// scrapeFormat is one way of scraping /metrics.
type scrapeFormat struct {
	name   string
	accept string
	parse  func(string) (*exposition, error)
	// binary formats are quoted in failure messages when they do not parse.
	binary bool
}

// acceptProtobuf asks for the delimited protobuf format alone, as Prometheus
// 2 does first when it scrapes native histograms (its text formats follow,
// with no escaping).
const acceptProtobuf = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"

// acceptPrometheus3Protobuf is the Accept header of Prometheus 3.4 to 3.14
// with scrape_native_histograms and UTF-8 names (metric_name_escaping_scheme
// allow-utf-8, its default): protobuf first, which it sends without an
// escaping parameter, and escaping=allow-utf-8 on the text formats that
// define it (test/promparse checks every header of 2.42 to 3.16).
const acceptPrometheus3Protobuf = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.6," +
	"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4," +
	"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1"

var (
	formatText = scrapeFormat{name: "text 0.0.4", accept: "text/plain;version=0.0.4", parse: parseText}
	// formatUTF8 is what a Prometheus 3 server asks for when names may keep
	// UTF-8 characters.
	formatUTF8        = scrapeFormat{name: "text 1.0.0 utf-8", accept: "text/plain;version=1.0.0;escaping=allow-utf-8", parse: parseText}
	formatOpenMetrics = scrapeFormat{name: "openmetrics 1.0.0", accept: "application/openmetrics-text;version=1.0.0", parse: parseOpenMetrics}
	// formatProtobuf is a protobuf scrape that names no escaping: names
	// escaped with underscores. formatProtobufUTF8 is Prometheus 3's, which
	// takes UTF-8 names; its parser takes them too.
	formatProtobuf = scrapeFormat{
		name: "protobuf delimited", accept: acceptProtobuf, binary: true,
		parse: parseProtobuf(expfmt.NewFormat(expfmt.TypeProtoDelim)),
	}
	formatProtobufUTF8 = scrapeFormat{
		name: "protobuf delimited, Prometheus 3", accept: acceptPrometheus3Protobuf, binary: true,
		parse: parseProtobuf(expfmt.NewFormat(expfmt.TypeProtoDelim).WithEscapingScheme(model.NoEscaping)),
	}
)

// scrape fetches /metrics over HTTP in the given format and returns the body
// and the media type and version the server answered with.
func scrape(r *running, f scrapeFormat) (body, contentType string, err error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+r.endpoint+"/metrics", nil)
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Accept", f.accept)
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("%s: scrape: %w", r.name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", "", fmt.Errorf("%s: reading scrape: %w", r.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return string(b), "", fmt.Errorf("%s: scrape: HTTP %d: %s", r.name, resp.StatusCode, b)
	}
	return string(b), mediaTypeAndVersion(resp.Header.Get("Content-Type")), nil
}

// mediaTypeAndVersion renders a Content-Type for comparison: the media type
// and its version, for protobuf the message and its encoding, and the
// escaping of names.
func mediaTypeAndVersion(ct string) string {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return ct
	}
	out := mt + ";version=" + params["version"]
	if mt == expfmt.ProtoType {
		out = mt + ";proto=" + params["proto"] + ";encoding=" + params["encoding"]
	}
	return out + ";escaping=" + params["escaping"]
}

// scraped is one side's scrape in one format.
type scraped struct {
	expo        *exposition // nil when parsing failed
	raw         string
	contentType string
	err         error // scrape or parse error
}

// scrapeAndParse scrapes r in format f. The scrape's raw text is the body as
// read, or for a binary format the parser's rendering of it (quoted when it
// does not parse).
func scrapeAndParse(r *running, f scrapeFormat) scraped {
	body, ct, err := scrape(r, f)
	if err != nil {
		return scraped{raw: body, err: err}
	}
	e, err := f.parse(body)
	if err != nil {
		if f.binary {
			body = strconv.Quote(body)
		}
		return scraped{raw: body, contentType: ct, err: fmt.Errorf("%s: parsing %s: %w", r.name, f.name, err)}
	}
	e.contentType = ct
	return scraped{expo: e, raw: e.raw, contentType: ct}
}

// formatsFor lists the formats a case is scraped in: text and protobuf, and
// their UTF-8 forms and OpenMetrics where the settings make them differ.
func formatsFor(settings map[string]any) []scrapeFormat {
	fs := []scrapeFormat{formatText, formatProtobuf}
	if utf8Names(settings) {
		fs = append(fs, formatUTF8, formatProtobufUTF8)
	}
	if om, _ := settings["enable_open_metrics"].(bool); om {
		fs = append(fs, formatOpenMetrics)
	}
	return fs
}

// utf8Names reports whether the settings keep names that are not legacy
// ones, which show as sent only to a scraper that asks for UTF-8 names: a
// UTF-8 translation strategy, or a const label name with a space.
func utf8Names(settings map[string]any) bool {
	switch settings["translation_strategy"] {
	case "NoUTF8EscapingWithSuffixes", "NoTranslation":
		return true
	}
	if cl, ok := settings["const_labels"].(map[string]any); ok {
		for name := range cl {
			if !model.LegacyValidation.IsValidLabelName(name) {
				return true
			}
		}
	}
	return false
}

// startBoth starts a and b for the case's settings concurrently: the
// reference takes a process start.
func startBoth(t *testing.T, tc testCase, a, b target) (ra, rb *running) {
	t.Helper()
	var errA, errB error
	var wg sync.WaitGroup
	wg.Go(func() { ra, errA = a.start(t, a.name, tc.settingsFor(a)) })
	wg.Go(func() { rb, errB = b.start(t, b.name, tc.settingsFor(b)) })
	wg.Wait()
	if err := errors.Join(errA, errB); err != nil {
		t.Fatal(err)
	}
	return ra, rb
}

// awaitApplied polls r's text scrape until the case's applied hook accepts
// it, for cases whose batches the exporter applies after send returns (a
// sending queue). It returns silently at the deadline: the comparison then
// shows what is missing.
func awaitApplied(r *running, tc testCase) {
	if tc.applied == nil {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if s := scrapeAndParse(r, formatText); s.err == nil && tc.applied(s.expo) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// run feeds the case to both targets, scrapes them and checks the case's
// expectation. a is the reference (contrib), b the exporter under test.
func run(t *testing.T, tc testCase, a, b target) {
	ra, rb := startBoth(t, tc, a, b)
	batches := tc.build()
	for _, r := range []*running{ra, rb} {
		if err := r.send(batches); err != nil {
			t.Fatal(err)
		}
		awaitApplied(r, tc)
	}
	sendTS, _ := tc.config["send_timestamps"].(bool)
	// A new run of deltas is left out of ours' first scrape after it began and
	// shown as its zero in the second (a documented difference); take both as
	// Prometheus would, so that the scrapes compared show values.
	for range 2 {
		for _, r := range []*running{ra, rb} {
			if s := scrapeAndParse(r, formatsFor(tc.config)[0]); s.err != nil && (r == rb || tc.expect != expectReferenceInvalid) {
				t.Fatalf("%s: scrape before the compared ones: %v", r.name, s.err)
			}
		}
	}

	for _, f := range formatsFor(tc.config) {
		sa, sb := scrapeAndParse(ra, f), scrapeAndParse(rb, f)
		dump := func() {
			t.Logf("%s scrape of %s (%s):\n%s", f.name, ra.name, sa.contentType, sa.raw)
			if l := ra.logs(); l != "" {
				t.Logf("%s logged:\n%s", ra.name, l)
			}
			t.Logf("%s scrape of %s (%s):\n%s", f.name, rb.name, sb.contentType, sb.raw)
			if l := rb.logs(); l != "" {
				t.Logf("%s logged:\n%s", rb.name, l)
			}
		}

		switch tc.expect {
		case expectReferenceInvalid:
			// The reference's output is not a valid exposition; only the
			// exporter under test is held to parse.
			if sb.err != nil {
				t.Errorf("[%s] %v", f.name, sb.err)
				dump()
				continue
			}
			if tc.check != nil {
				if msg := tc.check(sb.expo); msg != "" {
					t.Errorf("[%s] %s: %s", f.name, rb.name, msg)
					dump()
				}
			}
			continue
		case expectNondeterministic:
			// The reference picks among valid outcomes at random: both must
			// parse, and the exporter under test must pass the case's check.
			failed := false
			for _, s := range []scraped{sa, sb} {
				if s.err != nil {
					t.Errorf("[%s] %v", f.name, s.err)
					failed = true
				}
			}
			if !failed && tc.check != nil {
				if msg := tc.check(sb.expo); msg != "" {
					t.Errorf("[%s] %s: %s", f.name, rb.name, msg)
					failed = true
				}
			}
			if failed {
				dump()
			}
			continue
		}

		if sa.err != nil || sb.err != nil {
			for _, s := range []scraped{sa, sb} {
				if s.err != nil {
					t.Errorf("[%s] %v", f.name, s.err)
				}
			}
			dump()
			continue
		}
		failed := false
		for _, d := range tc.differences {
			if !d.shownIn(f) {
				continue
			}
			if err := d.apply(sa.expo, sb.expo); err != nil {
				t.Errorf("[%s] the difference %q does not show: %v", f.name, d.readme, err)
				failed = true
			}
		}
		if sa.expo.contentType != sb.expo.contentType {
			t.Errorf("[%s] Content-Type differs: %s %q, %s %q", f.name, ra.name, sa.expo.contentType, rb.name, sb.expo.contentType)
		}
		if d := diff(sa.expo, sb.expo, ra.name, rb.name, sendTS); d != "" {
			t.Errorf("[%s] %s and %s differ:\n%s", f.name, ra.name, rb.name, d)
			failed = true
		}
		if failed {
			dump()
		}
	}
}

// runReferenceInvalid checks the claim behind an expectReferenceInvalid
// case: contrib's text scrape for it does not parse, or fails the case's
// check.
func runReferenceInvalid(t *testing.T, tc testCase) {
	r, err := contribTarget.start(t, contribTarget.name, tc.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.send(tc.build()); err != nil {
		t.Fatal(err)
	}
	awaitApplied(r, tc)
	s := scrapeAndParse(r, formatText)
	switch {
	case s.err != nil:
		t.Logf("contrib's scrape is invalid as expected: %v\n%s", s.err, s.raw)
	case tc.check != nil && tc.check(s.expo) != "":
		t.Logf("contrib's scrape lacks the series as expected: %s\n%s", tc.check(s.expo), s.raw)
	default:
		t.Errorf("contrib's scrape is usable, but the case says it is not:\n%s", s.raw)
	}
}
