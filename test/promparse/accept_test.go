package promparse

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	promscrape "github.com/prometheus/prometheus/scrape"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
)

// scraper is one way Prometheus asks for /metrics: the Accept and
// Accept-Encoding headers it sends, and which releases and settings send
// them.
type scraper struct {
	name             string
	accept, encoding string
}

// The escaping schemes of metric_name_escaping_scheme (3.4 and later).
var escapingSchemes = []string{model.AllowUTF8, model.EscapeUnderscores, model.EscapeDots, model.EscapeValues}

// setting is one scrape config of the pinned Prometheus whose headers
// captureHeaders records: scrape_protocols (nil for the default lists),
// scrape_native_histograms (which puts protobuf first in the default),
// metric_name_escaping_scheme, enable_compression and the zstd-scrape
// feature flag.
type setting struct {
	protocols  []config.ScrapeProtocol
	native     bool
	escaping   string
	noCompress bool
	zstd       bool
}

func (s setting) String() string {
	var b strings.Builder
	b.WriteString("Prometheus 3.16")
	if s.protocols != nil {
		fmt.Fprintf(&b, " scrape_protocols=%v", s.protocols)
	}
	if s.native {
		b.WriteString(" scrape_native_histograms=true")
	}
	fmt.Fprintf(&b, " metric_name_escaping_scheme=%s", s.escaping)
	if s.noCompress {
		b.WriteString(" enable_compression=false")
	}
	if s.zstd {
		b.WriteString(" --enable-feature=zstd-scrape")
	}
	return b.String()
}

// settings316 are the configs whose headers the test sends as the pinned
// Prometheus sends them: the default protocol lists and each protocol alone,
// with each escaping scheme; and the default list without compression and
// with zstd.
func settings316() []setting {
	var out []setting
	protocols := make([]config.ScrapeProtocol, 0, len(config.ScrapeProtocolsHeaders))
	for p := range config.ScrapeProtocolsHeaders {
		protocols = append(protocols, p)
	}
	slices.Sort(protocols)
	for _, esc := range escapingSchemes {
		out = append(out, setting{escaping: esc}, setting{native: true, escaping: esc})
		for _, p := range protocols {
			out = append(out, setting{protocols: []config.ScrapeProtocol{p}, escaping: esc})
		}
	}
	return append(out,
		setting{escaping: model.AllowUTF8, noCompress: true},
		setting{escaping: model.AllowUTF8, zstd: true})
}

// captured is what captureHeaders recorded, once per test binary.
var captured struct {
	once    sync.Once
	headers map[string]http.Header // by setting
	err     error
}

// capturedHeaders runs Prometheus' own scrape manager (the pinned version)
// once, with one scrape job per setting against a server that records the
// headers of each job's first scrape. This is what Prometheus sends, whatever
// scrape.acceptHeader and the config defaults become at another pin.
func capturedHeaders(t *testing.T) map[string]http.Header {
	t.Helper()
	captured.once.Do(func() {
		captured.headers, captured.err = captureHeaders(settings316())
	})
	require.NoError(t, captured.err)
	return captured.headers
}

func captureHeaders(settings []setting) (map[string]http.Header, error) {
	var mu sync.Mutex
	got := map[string]http.Header{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if _, ok := got[r.URL.Path]; !ok {
			got[r.URL.Path] = r.Header.Clone()
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = io.WriteString(w, "up 1\n")
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()

	// Two managers: the zstd-scrape feature flag is an option of the manager.
	jobs := map[bool]*strings.Builder{false: {}, true: {}}
	tsets := map[bool]map[string][]*targetgroup.Group{false: {}, true: {}}
	for i, s := range settings {
		job := "j" + strconv.Itoa(i)
		y := jobs[s.zstd]
		fmt.Fprintf(y, "- job_name: %s\n  metrics_path: /%s\n  metric_name_escaping_scheme: %s\n", job, job, s.escaping)
		if s.protocols != nil {
			names := make([]string, len(s.protocols))
			for i, p := range s.protocols {
				names[i] = string(p)
			}
			fmt.Fprintf(y, "  scrape_protocols: [%s]\n", strings.Join(names, ", "))
		}
		if s.native {
			y.WriteString("  scrape_native_histograms: true\n")
		}
		if s.noCompress {
			y.WriteString("  enable_compression: false\n")
		}
		tsets[s.zstd][job] = []*targetgroup.Group{{
			Source:  job,
			Targets: []model.LabelSet{{model.AddressLabel: model.LabelValue(l.Addr().String())}},
		}}
	}
	for _, zstd := range []bool{false, true} {
		if len(tsets[zstd]) == 0 {
			continue
		}
		cfg, err := config.Load("global: {scrape_interval: 100ms, scrape_timeout: 100ms}\nscrape_configs:\n"+jobs[zstd].String(), promslog.NewNopLogger())
		if err != nil {
			return nil, err
		}
		m, err := promscrape.NewManager(&promscrape.Options{DiscoveryReloadOnStartup: true, EnableZstdScrape: zstd},
			nil, nil, nil, nopAppendable{}, prometheus.NewRegistry())
		if err != nil {
			return nil, err
		}
		if err := m.ApplyConfig(cfg); err != nil {
			return nil, err
		}
		ch := make(chan map[string][]*targetgroup.Group, 1)
		ch <- tsets[zstd]
		go func() { _ = m.Run(ch) }()
		deadline := time.Now().Add(20 * time.Second)
		for {
			mu.Lock()
			scraped := 0
			for job := range tsets[zstd] {
				if _, ok := got["/"+job]; ok {
					scraped++
				}
			}
			mu.Unlock()
			if scraped == len(tsets[zstd]) {
				break
			}
			if time.Now().After(deadline) {
				m.Stop()
				return nil, fmt.Errorf("the scrape manager scraped %d of %d jobs", scraped, len(tsets[zstd]))
			}
			time.Sleep(5 * time.Millisecond)
		}
		m.Stop()
	}
	out := map[string]http.Header{}
	for i, s := range settings {
		out[s.String()] = got["/j"+strconv.Itoa(i)]
	}
	return out, nil
}

// nopAppendable takes what the scrape manager appends and drops it.
type nopAppendable struct{}

func (nopAppendable) AppenderV2(context.Context) storage.AppenderV2 { return nopAppender{} }

type nopAppender struct{}

func (nopAppender) Append(storage.SeriesRef, labels.Labels, int64, int64, float64, *histogram.Histogram, *histogram.FloatHistogram, storage.AppendV2Options) (storage.SeriesRef, error) {
	return 0, nil
}
func (nopAppender) Commit() error   { return nil }
func (nopAppender) Rollback() error { return nil }

// release is how a range of Prometheus releases builds its Accept header,
// read from scrape/scrape.go (acceptHeader) and config/config.go
// (ScrapeProtocolsHeaders, DefaultScrapeProtocols,
// DefaultProtoFirstScrapeProtocols) at the releases' tags. Every release from
// 2.49 on builds it the same way (see acceptHeader); they differ in the media
// types, the parameters added to them, and the settings that choose those.
type release struct {
	versions string
	headers  map[config.ScrapeProtocol]string
	// defaults and protoFirst are the default lists: the latter is chosen
	// by scrape_native_histograms (3.x) or the native-histograms feature flag
	// (2.x).
	defaults, protoFirst []config.ScrapeProtocol
	// setting names the config that changes the header ("" for none) and
	// values its values.
	setting string
	values  []string
	// param is what an entry of the protocol gets for a value of the setting.
	param func(p config.ScrapeProtocol, value string) string
	// star formats the */* entry with its weight.
	star string
}

const (
	protoHeader  = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
	text004      = "text/plain;version=0.0.4"
	text100      = "text/plain;version=1.0.0"
	om001        = "application/openmetrics-text;version=0.0.1"
	om100        = "application/openmetrics-text;version=1.0.0"
	om200        = "application/openmetrics-text;version=2.0.0"
	utf8NamesKey = ";" + model.EscapingKey + "=" + model.AllowUTF8
)

var (
	headers2 = map[config.ScrapeProtocol]string{
		config.PrometheusProto: protoHeader, config.PrometheusText0_0_4: text004,
		config.OpenMetricsText0_0_1: om001, config.OpenMetricsText1_0_0: om100,
	}
	defaults2   = []config.ScrapeProtocol{config.OpenMetricsText1_0_0, config.OpenMetricsText0_0_1, config.PrometheusText0_0_4}
	protoFirst2 = append([]config.ScrapeProtocol{config.PrometheusProto}, defaults2...)
	// headers3_0 is 3.0.0 to 3.2.0's, whose text 1.0.0 asks for UTF-8 names
	// whatever the setting; headers3 is 3.2.1 to 3.14's; 3.15 adds
	// OpenMetrics 2.0.0.
	headers3_0  = with(headers2, config.PrometheusText1_0_0, text100+utf8NamesKey)
	headers3    = with(headers2, config.PrometheusText1_0_0, text100)
	headers3_15 = with(headers3, config.OpenMetricsText2_0_0, om200)
	defaults3   = []config.ScrapeProtocol{
		config.OpenMetricsText1_0_0, config.OpenMetricsText0_0_1, config.PrometheusText1_0_0, config.PrometheusText0_0_4,
	}
	protoFirst3 = append([]config.ScrapeProtocol{config.PrometheusProto}, defaults3...)

	noParam = func(config.ScrapeProtocol, string) string { return "" }
	// utf8Everywhere: 2.55 to 3.3 add escaping=allow-utf-8 to every entry,
	// protobuf's included, when metric_name_validation_scheme is utf8 (3.x's
	// default; 2.55 also needs --enable-feature=utf8-names).
	utf8Everywhere = func(_ config.ScrapeProtocol, validation string) string {
		if validation == "utf8" {
			return utf8NamesKey
		}
		return ""
	}
)

// escapingOf: 3.4 and later add escaping=<metric_name_escaping_scheme> to
// the text formats that define it only: text 1.0.0 and OpenMetrics 1.0.0,
// and from 3.16 on OpenMetrics 2.0.0.
func escapingOf(protocols ...config.ScrapeProtocol) func(config.ScrapeProtocol, string) string {
	return func(p config.ScrapeProtocol, scheme string) string {
		if slices.Contains(protocols, p) {
			return ";" + model.EscapingKey + "=" + scheme
		}
		return ""
	}
}

func with(m map[config.ScrapeProtocol]string, p config.ScrapeProtocol, h string) map[config.ScrapeProtocol]string {
	out := map[config.ScrapeProtocol]string{p: h}
	for k, v := range m {
		if k != p {
			out[k] = v
		}
	}
	return out
}

// releases are the releases before the pinned one (3.15's from the module
// proxy's v0.315.0 and v0.315.1, the others from their tags); release316 is
// the pinned one, built from its own config.ScrapeProtocolsHeaders.
var releases = []release{
	{
		versions: "2.49.0", headers: headers2, defaults: defaults2, protoFirst: protoFirst2, param: noParam,
		// 2.49.0 formats the */* weight without "0.": */*;q=2.
		star: "*/*;q=%d",
	},
	{
		versions: "2.49.1 to 2.55", headers: headers2, defaults: defaults2, protoFirst: protoFirst2, param: noParam,
		star: "*/*;q=0.%d",
	},
	{
		versions: "2.55", headers: headers2, defaults: defaults2, protoFirst: protoFirst2,
		setting: "metric_name_validation_scheme", values: []string{"utf8"}, param: utf8Everywhere,
		star: "*/*;q=0.%d",
	},
	{
		versions: "3.0.0 to 3.2.0", headers: headers3_0, defaults: defaults3, protoFirst: protoFirst3,
		setting: "metric_name_validation_scheme", values: []string{"utf8", "legacy"}, param: utf8Everywhere,
		star: "*/*;q=0.%d",
	},
	{
		versions: "3.2.1 to 3.3", headers: headers3, defaults: defaults3, protoFirst: protoFirst3,
		setting: "metric_name_validation_scheme", values: []string{"utf8", "legacy"}, param: utf8Everywhere,
		star: "*/*;q=0.%d",
	},
	{
		versions: "3.4 to 3.14", headers: headers3, defaults: defaults3, protoFirst: protoFirst3,
		setting: "metric_name_escaping_scheme", values: escapingSchemes,
		param: escapingOf(config.PrometheusText1_0_0, config.OpenMetricsText1_0_0), star: "*/*;q=0.%d",
	},
	{
		versions: "3.15", headers: headers3_15, defaults: defaults3, protoFirst: protoFirst3,
		setting: "metric_name_escaping_scheme", values: escapingSchemes,
		param: escapingOf(config.PrometheusText1_0_0, config.OpenMetricsText1_0_0), star: "*/*;q=0.%d",
	},
}

var release316 = release{
	versions: "3.16", headers: config.ScrapeProtocolsHeaders,
	defaults: config.DefaultScrapeProtocols, protoFirst: config.DefaultProtoFirstScrapeProtocols,
	setting: "metric_name_escaping_scheme", values: escapingSchemes,
	param: escapingOf(config.PrometheusText1_0_0, config.OpenMetricsText1_0_0, config.OpenMetricsText2_0_0),
	star:  "*/*;q=0.%d",
}

// acceptHeader builds the Accept header of release r for the protocols sps
// and a value of its setting as scrape.acceptHeader does since 2.49: each
// protocol's media type with the release's parameters and a weight that
// falls by a tenth from len(ScrapeProtocolsHeaders)+1 tenths, then */*.
func acceptHeader(r release, sps []config.ScrapeProtocol, value string) string {
	var vals []string
	weight := len(r.headers) + 1
	for _, sp := range sps {
		vals = append(vals, r.headers[sp]+r.param(sp, value)+";q=0."+strconv.Itoa(weight))
		weight--
	}
	vals = append(vals, fmt.Sprintf(r.star, weight))
	return strings.Join(vals, ",")
}

// The headers of 2.42 to 2.48, constants in scrape/scrape.go
// (scrapeAcceptHeader, and scrapeAcceptHeaderWithProtobuf with
// --enable-feature=native-histograms). The Debian prometheus 2.42.0+ds
// package sends these two, byte for byte.
const (
	accept2_42         = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
	accept2_42Protobuf = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)

// releaseScrapers are the headers release r sends: the default lists and
// each protocol alone, for each value of its setting.
func releaseScrapers(r release) []scraper {
	protocols := make([]config.ScrapeProtocol, 0, len(r.headers))
	for p := range r.headers {
		protocols = append(protocols, p)
	}
	slices.Sort(protocols)
	values := r.values
	if len(values) == 0 {
		values = []string{""}
	}
	var out []scraper
	for _, v := range values {
		name := "Prometheus " + r.versions
		if r.setting != "" {
			name += " " + r.setting + "=" + v
		}
		out = append(out,
			scraper{name: name, accept: acceptHeader(r, r.defaults, v), encoding: "gzip"},
			scraper{name: name + " (protobuf first)", accept: acceptHeader(r, r.protoFirst, v), encoding: "gzip"})
		for _, p := range protocols {
			out = append(out, scraper{name: fmt.Sprintf("%s scrape_protocols=[%s]", name, p), accept: acceptHeader(r, []config.ScrapeProtocol{p}, v), encoding: "gzip"})
		}
	}
	return out
}

// prometheusScrapers lists every distinct pair of Accept and Accept-Encoding
// headers that Prometheus 2.42 to 3.16 send: the pinned release's as its
// scrape manager sends them, the earlier ones built from their sources. A
// pair is named after the first release and setting that sends it, the
// pinned release first.
func prometheusScrapers(t *testing.T) []scraper {
	t.Helper()
	var all []scraper
	headers := capturedHeaders(t)
	for _, s := range settings316() {
		h := headers[s.String()]
		all = append(all, scraper{name: s.String(), accept: h.Get("Accept"), encoding: h.Get("Accept-Encoding")})
	}
	all = append(all,
		scraper{name: "Prometheus 2.42 to 2.48", accept: accept2_42, encoding: "gzip"},
		scraper{name: "Prometheus 2.42 to 2.48 --enable-feature=native-histograms", accept: accept2_42Protobuf, encoding: "gzip"})
	for _, r := range releases {
		all = append(all, releaseScrapers(r)...)
	}
	at := map[[2]string]int{}
	var out []scraper
	others := map[int]int{}
	for _, s := range all {
		k := [2]string{s.accept, s.encoding}
		if i, ok := at[k]; ok {
			others[i]++
			continue
		}
		at[k] = len(out)
		out = append(out, s)
	}
	for i, n := range others {
		out[i].name += fmt.Sprintf(" (and %d more)", n)
	}
	return out
}

// The headers that Prometheus' own scrape manager sends are the ones
// acceptHeader builds from the pinned config.ScrapeProtocolsHeaders: the
// rule that builds the earlier releases' headers is the rule of the pinned
// one.
func TestAcceptHeadersAsPrometheusBuildsThem(t *testing.T) {
	headers := capturedHeaders(t)
	for _, s := range settings316() {
		h := headers[s.String()]
		sps := s.protocols
		switch {
		case sps != nil:
		case s.native:
			sps = release316.protoFirst
		default:
			sps = release316.defaults
		}
		require.Equal(t, acceptHeader(release316, sps, s.escaping), h.Get("Accept"), s.String())
		wantEncoding := "gzip"
		switch {
		case s.noCompress:
			wantEncoding = "identity"
		case s.zstd:
			wantEncoding = "zstd,gzip"
		}
		require.Equal(t, wantEncoding, h.Get("Accept-Encoding"), s.String())
	}
	scrapers := prometheusScrapers(t)
	t.Logf("%d distinct pairs of Accept and Accept-Encoding headers from Prometheus 2.42 to 3.16", len(scrapers))
}

// negotiated is the format a scrape is answered in.
type negotiated struct {
	mediaType string
	version   string // of text and OpenMetrics
	escaping  model.EscapingScheme
}

func (n negotiated) String() string {
	return fmt.Sprintf("%s version=%q escaping=%s", n.mediaType, n.version, n.escaping)
}

// acceptEntry is one media range of an Accept header.
type acceptEntry struct {
	mediaType string
	params    map[string]string
	q         float64
}

// parseAccept splits an Accept header into its entries, highest q first
// (in header order among equals). A parameter named twice keeps its last
// value, as goautoneg keeps it (3.0 names escaping twice on text 1.0.0).
func parseAccept(accept string) []acceptEntry {
	var out []acceptEntry
	for entry := range strings.SplitSeq(accept, ",") {
		parts := strings.Split(entry, ";")
		e := acceptEntry{mediaType: strings.TrimSpace(parts[0]), params: map[string]string{}, q: 1}
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(p, "=")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if k == "q" {
				if q, err := strconv.ParseFloat(v, 64); err == nil {
					e.q = q
				}
				continue
			}
			e.params[k] = v
		}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b acceptEntry) int {
		switch {
		case a.q > b.q:
			return -1
		case a.q < b.q:
			return 1
		}
		return 0
	})
	return out
}

// wantNegotiated is what the exporter must answer accept with: the entry
// with the highest q that it serves — delimited protobuf; text 0.0.4 or
// 1.0.0, both written as 0.0.4 as promhttp writes them; OpenMetrics 0.0.1 or
// 1.0.0 with enable_open_metrics, never 2.0.0 (README: Formats) — and text
// when it serves none (*/*). Names are escaped as the chosen entry's
// escaping parameter says. Without one: in protobuf, which names none in
// Prometheus' headers, and in the text that answers */*, as the header's
// entries that name a scheme agree (a scraper that takes UTF-8 names in its
// text formats takes them in protobuf: README, Scrapes); otherwise, and
// when they name none, with underscores, expfmt's default.
func wantNegotiated(accept string, openMetrics bool) negotiated {
	entries := parseAccept(accept)
	want := negotiated{mediaType: formatText, version: "0.0.4"}
	scheme, chosen := "", false
	for _, e := range entries {
		if n, ok := serves(e, openMetrics); ok {
			want, scheme, chosen = n, knownScheme(e.params[model.EscapingKey]), true
			break
		}
	}
	if scheme == "" && (!chosen || want.mediaType == formatProtobuf) {
		agreed := map[string]bool{}
		for _, e := range entries {
			if s := knownScheme(e.params[model.EscapingKey]); s != "" {
				agreed[s] = true
			}
		}
		if len(agreed) == 1 {
			for s := range agreed {
				scheme = s
			}
		}
	}
	if scheme == "" {
		scheme = model.EscapeUnderscores
	}
	want.escaping, _ = model.ToEscapingScheme(scheme)
	return want
}

// serves reports whether the exporter serves the entry, and in what.
func serves(e acceptEntry, openMetrics bool) (negotiated, bool) {
	switch e.mediaType {
	case formatProtobuf:
		return negotiated{mediaType: formatProtobuf},
			e.params["proto"] == "io.prometheus.client.MetricFamily" && e.params["encoding"] == "delimited"
	case formatText:
		v := e.params["version"]
		return negotiated{mediaType: formatText, version: "0.0.4"}, v == "" || v == "0.0.4" || v == "1.0.0"
	case formatOpenMetrics:
		v := e.params["version"]
		if v == "" {
			v = "0.0.1"
		}
		return negotiated{mediaType: formatOpenMetrics, version: v}, openMetrics && (v == "0.0.1" || v == "1.0.0")
	}
	return negotiated{}, false
}

func knownScheme(s string) string {
	if slices.Contains(escapingSchemes, s) {
		return s
	}
	return ""
}
