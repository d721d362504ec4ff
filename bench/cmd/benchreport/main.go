// Command benchreport turns the output of the exporter benchmarks
// (bench/exporterbench) into BENCHMARKS.md and an SVG chart of scrape time
// against series count.
//
//	benchreport -raw bench/results/raw.txt -benchstat bench/results/benchstat.txt \
//	    -commands bench/results/commands.txt -e2e bench/results/e2e.md \
//	    -out BENCHMARKS.md -svg docs/scrape-time.svg
//
// It reads the raw `go test -bench` output (several files may be given,
// comma-separated), takes the median of each metric over the runs, and
// writes tables with both exporters side by side and the ratio contrib/ours.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	var (
		rawFiles  = flag.String("raw", "bench/results/raw.txt", "raw go test -bench output files, comma-separated")
		benchstat = flag.String("benchstat", "bench/results/benchstat.txt", "benchstat -col /exporter output (optional)")
		commands  = flag.String("commands", "bench/results/commands.txt", "file with the commands that produced the results (optional)")
		e2e       = flag.String("e2e", "bench/results/e2e.md", "end-to-end results to include (optional)")
		conc      = flag.String("concurrency", "bench/results/concurrency.txt", "benchstat of ingestion during scrapes (optional)")
		out       = flag.String("out", "BENCHMARKS.md", "report to write")
		svg       = flag.String("svg", "docs/scrape-time.svg", "chart to write")
	)
	flag.Parse()

	res := newResults()
	for _, f := range strings.Split(*rawFiles, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if err := res.parseFile(f); err != nil {
			fail(err)
		}
	}
	if len(res.rows) == 0 {
		fail(fmt.Errorf("no benchmark results in %s", *rawFiles))
	}

	chart := scrapeChart(res)
	if err := os.MkdirAll(filepath.Dir(*svg), 0o755); err != nil {
		fail(err)
	}
	if err := os.WriteFile(*svg, []byte(chart), 0o644); err != nil {
		fail(err)
	}

	svgRel, err := filepath.Rel(filepath.Dir(*out), *svg)
	if err != nil {
		svgRel = *svg
	}
	report := writeReport(res, reportInputs{
		benchstat: readOptional(*benchstat),
		commands:  readOptional(*commands),
		e2e:       readOptional(*e2e),
		conc:      readOptional(*conc),
		svgPath:   filepath.ToSlash(svgRel),
	})
	if err := os.WriteFile(*out, []byte(report), 0o644); err != nil {
		fail(err)
	}
	fmt.Printf("wrote %s and %s\n", *out, *svg)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchreport:", err)
	os.Exit(1)
}

func readOptional(path string) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

// --- parsing ---------------------------------------------------------------

// row is one benchmark case without its exporter key, e.g.
// "Scrape" + {series: 100k, format: text}.
type row struct {
	bench string            // top-level name without "Benchmark"
	keys  []string          // sub-benchmark keys in order, exporter removed
	vals  map[string]string // key -> value
	id    string            // bench + "/" + keys joined
}

type results struct {
	rows   []*row
	byID   map[string]*row
	values map[string]map[string]map[string][]float64 // row id -> exporter -> unit -> values
	config map[string]string                          // goos, goarch, cpu, pkg
	notes  []string
	skips  []string
}

func newResults() *results {
	return &results{
		byID:   map[string]*row{},
		values: map[string]map[string]map[string][]float64{},
		config: map[string]string{},
	}
}

var procSuffix = regexp.MustCompile(`-\d+$`)

func (r *results) parseFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return r.parse(f)
}

func (r *results) parse(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "NOTE: "):
			if n := strings.TrimPrefix(line, "NOTE: "); !slices.Contains(r.notes, n) {
				r.notes = append(r.notes, n)
			}
		case strings.HasPrefix(line, "Benchmark"):
			r.parseBench(line)
		case strings.Contains(line, "--- SKIP: Benchmark"):
			name := strings.TrimSpace(line[strings.Index(line, "Benchmark"):])
			if !slices.Contains(r.skips, name) {
				r.skips = append(r.skips, name)
			}
		default:
			if k, v, ok := strings.Cut(line, ": "); ok && (k == "goos" || k == "goarch" || k == "cpu" || k == "pkg") {
				r.config[k] = strings.TrimSpace(v)
			}
		}
	}
	return sc.Err()
}

func (r *results) parseBench(line string) {
	fields := strings.Fields(line)
	if len(fields) < 4 || len(fields)%2 != 0 {
		return
	}
	if _, err := strconv.Atoi(fields[1]); err != nil {
		return
	}
	name := procSuffix.ReplaceAllString(fields[0], "")
	parts := strings.Split(strings.TrimPrefix(name, "Benchmark"), "/")
	rw := &row{bench: parts[0], vals: map[string]string{}}
	exporter := ""
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			k, v = p, p
		}
		if k == "exporter" {
			exporter = v
			continue
		}
		rw.keys = append(rw.keys, k)
		rw.vals[k] = v
	}
	if exporter == "" {
		return
	}
	var id strings.Builder
	id.WriteString(rw.bench)
	for _, k := range rw.keys {
		id.WriteString("/" + k + "=" + rw.vals[k])
	}
	rw.id = id.String()
	if _, ok := r.byID[rw.id]; !ok {
		r.byID[rw.id] = rw
		r.rows = append(r.rows, rw)
		r.values[rw.id] = map[string]map[string][]float64{}
	}
	byExp := r.values[rw.id]
	if byExp[exporter] == nil {
		byExp[exporter] = map[string][]float64{}
	}
	for i := 2; i+1 < len(fields); i += 2 {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			continue
		}
		byExp[exporter][fields[i+1]] = append(byExp[exporter][fields[i+1]], v)
	}
}

// median returns the median of the runs of one metric, NaN when there are none.
func (r *results) median(id, exporter, unit string) (float64, int) {
	vs := r.values[id][exporter][unit]
	if len(vs) == 0 {
		return math.NaN(), 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2], n
	}
	return (s[n/2-1] + s[n/2]) / 2, n
}

// rowsOf returns the rows of one benchmark, sorted by format, kind, label
// shape, then series count.
func (r *results) rowsOf(bench string) []*row {
	var out []*row
	for _, rw := range r.rows {
		if rw.bench == bench {
			out = append(out, rw)
		}
	}
	rank := func(k, v string) int {
		switch k {
		case "format":
			return slices.Index([]string{"text", "openmetrics", "protobuf"}, v)
		case "kind":
			return slices.Index([]string{"existing", "new"}, v)
		case "series":
			return int(seriesCount(v))
		}
		return 0
	}
	order := []string{"format", "kind", "series"}
	slices.SortStableFunc(out, func(a, b *row) int {
		for _, k := range order {
			if d := rank(k, a.vals[k]) - rank(k, b.vals[k]); d != 0 {
				return d
			}
		}
		return 0
	})
	return out
}

// seriesCount parses "10k", "100k", "1M".
func seriesCount(v string) float64 {
	mult := 1.0
	switch {
	case strings.HasSuffix(v, "k"):
		mult, v = 1e3, strings.TrimSuffix(v, "k")
	case strings.HasSuffix(v, "M"):
		mult, v = 1e6, strings.TrimSuffix(v, "M")
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0
	}
	return f * mult
}

// --- report ----------------------------------------------------------------

type reportInputs struct {
	benchstat, commands, e2e, svgPath string
	conc                              string
}

// column is one metric shown as ours | contrib | contrib/ours.
type column struct {
	unit  string
	title string
	fmt   func(float64) string
}

func writeReport(r *results, in reportInputs) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	w("# Benchmarks: agentprometheus vs contrib's prometheusexporter\n\n")
	w("Side-by-side benchmarks of `exporter/agentprometheusexporter` (**ours**) and contrib's\n")
	w("`prometheusexporter` v0.155.0 (**contrib**), run in the same `go test -bench` process from\n")
	w("`bench/exporterbench`. Both exporters are created through their public factories, fed identical\n")
	w("OTLP batches and scraped over loopback HTTP. Regenerate this file with `bash bench/bench.sh`\n")
	w("(`QUICK=1` for a short run); the raw output is in `bench/results/`.\n\n")
	w("Figures are medians over the runs; **contrib/ours** is contrib's figure divided by ours (above 1:\n")
	w("ours is cheaper). The confidence intervals and p-values are in the benchstat output at the end.\n\n")

	w("## Machine\n\n")
	w("| | |\n|---|---|\n")
	w("| OS/arch | %s |\n", goEnv())
	w("| CPU | %s |\n", cpuModel(r))
	w("| cores | %d |\n", cpuCores())
	w("| Go | %s |\n", goVersion())
	w("| date | %s |\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	w("The machine is shared and has few cores: absolute figures are noisy, the ratios less so.\n\n")

	if strings.TrimSpace(in.commands) != "" {
		w("## Commands\n\n```sh\n%s\n```\n\n", strings.TrimSpace(in.commands))
	}

	w("## Workload and settings\n\n")
	w("Each agent is one resource (`service.name`, `service.namespace`, `service.instance.id`, `host.name`,\n")
	w("`cloud.region`) sending the same 10 families: 4 gauges, 3 monotonic cumulative counters and\n")
	w("3 cumulative histograms with 10 bounds, 100 series per family, each series with 4 point\n")
	w("attributes (`code`, `method`, `region`, `route`, in that order): 1000 OTLP series and 4601 text\n")
	w("samples per agent. 10k series are 10 agents, 100k are 100, 1M are 1000. Every series has the\n")
	w("same 8 labels on both exporters (`job`, `instance`, `host_name`, `cloud_region` + the 4\n")
	w("attributes); `TestSameSeries` checks that both serve the same samples.\n\n")
	w("| | ours | contrib |\n|---|---|---|\n")
	w("| resource labels | `resource_labels: [host.name, cloud.region]` | `resource_to_telemetry_conversion: {enabled: true, exclude_service_attributes: true}` |\n")
	w("| both | `without_scope_info: true`, `enable_open_metrics: true`, `write_timeout: 10m` | same |\n")
	w("| limits | `max_series`, `max_series_per_resource`: 50M (nothing refused) | none |\n\n")
	w("The write timeout is raised from confighttp's 30s on both: contrib's scrape of 1M series takes\n")
	w("longer, and a cut response would look faster than a whole one. Scrapes send\n")
	w("`Accept-Encoding: identity` and read the whole body. B/op and allocs/op come from\n")
	w("`runtime.MemStats`, which is process-wide: they include the HTTP server's goroutines and the\n")
	w("client, the same for both exporters.\n\n")

	timeCol := column{"ns/op", "time/scrape", fmtDuration}
	w("## Scrape\n\n")
	w("One whole `/metrics` response. *series* are OTLP series; a *sample* is one line of the text\n")
	w("exposition (counted once per exporter and size).\n\n")
	if in.svgPath != "" {
		w("![Scrape time per scrape against series count, text format, both exporters, log-log](%s)\n\n", in.svgPath)
	}
	table(&b, r, "Scrape", []column{timeCol, {"ns/series", "ns/series", fmtNum}, {"B/response", "response", fmtBytes}})
	w("Allocation per series:\n\n")
	table(&b, r, "Scrape", []column{{"B/series", "B/series", fmtNum}, {"allocs/series", "allocs/series", fmtNum}})
	w("Per sample:\n\n")
	table(&b, r, "Scrape", []column{{"ns/sample", "ns/sample", fmtNum}, {"allocs/sample", "allocs/sample", fmtNum}})

	w("## Ingest\n\n")
	w("`ConsumeMetrics`, per data point. *existing*: every point updates a series that exists (100 agents'\n")
	w("batches again and again with later timestamps, 100k series held); *new*: every point creates a series\n")
	w("(on top of the same 100k). Each batch is a fresh copy, as a receiver would decode it.\n\n")
	table(&b, r, "Ingest", []column{{"ns/point", "ns/point", fmtNum}, {"B/point", "B/point", fmtNum}, {"allocs/point", "allocs/point", fmtNum}})

	w("## Retained memory\n\n")
	w("Heap after a full GC once the workload is loaded, minus the heap before the exporter was created,\n")
	w("per OTLP series. Batches are dropped after `ConsumeMetrics`, as in a collector (contrib keeps\n")
	w("references into them).\n\n")
	table(&b, r, "Retained", []column{{"B/series-retained", "B/series retained", fmtNum}, {"ns/op", "time to load", fmtDuration}})

	w("## Churn\n\n")
	w("`metric_expiration: 1s` on both, real time. A warm-up period brings in 25 agents (25k series);\n")
	w("then each of 8 periods of 1s replaces 20%% of the live agents with new ones, and every live agent\n")
	w("sends twice per period. The heap is measured after a full GC at the end of each period, between\n")
	w("two sweeps: the agents that left at the start of the period are still held then (+20%%), on both\n")
	w("exporters. *heap growth* is the heap held by the exporter at the end of the last churn period\n")
	w("over that at the end of the first; *B/live series* is the final heap held per live series. The\n")
	w("heap held at the end of every period is listed under the notes below.\n\n")
	table(&b, r, "Churn", []column{{"heap-growth-ratio", "heap growth", fmtNum}, {"B/live-series", "B/live series", fmtNum}})

	w("## Seed label shapes\n\n")
	w("A text scrape of 10k series (100 agents × 100 gauge families × 1 series) per label shape of the\n")
	w("coder metrics-aggregator seed: *base* labels come from the resource (`job`, `instance`, and\n")
	w("`host_name`, `cloud_region` for 4), *extra* labels are point attributes.\n\n")
	table(&b, r, "Seed", []column{{"ns/series", "ns/series", fmtNum}, {"B/series", "B/series", fmtNum}, {"allocs/series", "allocs/series", fmtNum}})

	if strings.TrimSpace(in.conc) != "" {
		w("## Ingestion during scrapes\n\n")
		w("Ours only (in-package benchmarks of `exporter/agentprometheusexporter`): the scrapers are HTTP\n")
		w("clients in the same process asking for gzip, as Prometheus does. *IngestDuringScrapes*: ns per\n")
		w("updated point, 100k series held, with 0, 1 or 4 scrapers back to back (the worst case: a scrape\n")
		w("always running) or 4 scrapers together once a second. Concurrent scrapes of one format share an\n")
		w("encoding, so 4 scrapers cost about what 1 does. *IngestPauseDuringScrape*:\n")
		w("single-point updates made while a 1M-series scrape is written; the slowest and the mean.\n\n")
		w("```\n%s\n```\n\n", strings.TrimRight(in.conc, "\n"))
	}

	if len(r.notes) > 0 || len(r.skips) > 0 {
		w("## Notes from the run\n\n")
		for _, n := range r.notes {
			w("- %s\n", n)
		}
		for _, s := range r.skips {
			w("- skipped: `%s`\n", s)
		}
		w("\n")
	}

	if strings.TrimSpace(in.e2e) != "" {
		w("## End to end\n\n")
		e := strings.TrimSpace(in.e2e)
		// Demote the included file's headings below this section's.
		var lines []string
		for _, l := range strings.Split(e, "\n") {
			if strings.HasPrefix(l, "#") {
				l = "##" + l
			}
			lines = append(lines, l)
		}
		w("%s\n\n", strings.Join(lines, "\n"))
	}

	if strings.TrimSpace(in.benchstat) != "" {
		w("## benchstat\n\n")
		w("`benchstat -col /exporter` over the raw output (ours is the baseline column).\n\n")
		w("<details><summary>benchstat output</summary>\n\n```\n%s\n```\n\n</details>\n", strings.TrimRight(in.benchstat, "\n"))
	}
	return b.String()
}

// table writes one markdown table of a benchmark's rows with the given
// columns; rows that have none of the columns' units are left out.
func table(b *strings.Builder, r *results, bench string, cols []column) {
	rows := r.rowsOf(bench)
	if len(rows) == 0 {
		b.WriteString("_(not run)_\n\n")
		return
	}
	keys := rows[0].keys
	b.WriteString("|")
	for _, k := range keys {
		b.WriteString(" " + k + " |")
	}
	for _, c := range cols {
		fmt.Fprintf(b, " %s ours | %s contrib | contrib/ours |", c.title, c.title)
	}
	b.WriteString("\n|")
	for range keys {
		b.WriteString("---|")
	}
	for range cols {
		b.WriteString("--:|--:|--:|")
	}
	b.WriteString("\n")
	for _, rw := range rows {
		var cells []string
		has := false
		for _, c := range cols {
			o, _ := r.median(rw.id, "ours", c.unit)
			x, _ := r.median(rw.id, "contrib", c.unit)
			if !math.IsNaN(o) || !math.IsNaN(x) {
				has = true
			}
			cells = append(cells, cell(o, c.fmt), cell(x, c.fmt), ratio(x, o))
		}
		if !has {
			continue
		}
		b.WriteString("|")
		for _, k := range keys {
			b.WriteString(" " + rw.vals[k] + " |")
		}
		b.WriteString(" " + strings.Join(cells, " | ") + " |\n")
	}
	b.WriteString("\n")
}

func cell(v float64, f func(float64) string) string {
	if math.IsNaN(v) {
		return "—"
	}
	return f(v)
}

func ratio(contrib, ours float64) string {
	if math.IsNaN(contrib) || math.IsNaN(ours) || ours == 0 {
		return "—"
	}
	return "**" + sig3(contrib/ours) + "×**"
}

// sig3 formats v with three significant digits, without exponent.
func sig3(v float64) string {
	if v == 0 {
		return "0"
	}
	a := math.Abs(v)
	decimals := max(0, 2-int(math.Floor(math.Log10(a))))
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

func fmtNum(v float64) string { return sig3(v) }

func fmtDuration(ns float64) string {
	switch {
	case ns >= 1e9:
		return sig3(ns/1e9) + " s"
	case ns >= 1e6:
		return sig3(ns/1e6) + " ms"
	case ns >= 1e3:
		return sig3(ns/1e3) + " µs"
	}
	return sig3(ns) + " ns"
}

func fmtBytes(v float64) string {
	switch {
	case v >= 1<<30:
		return sig3(v/(1<<30)) + " GiB"
	case v >= 1<<20:
		return sig3(v/(1<<20)) + " MiB"
	case v >= 1<<10:
		return sig3(v/(1<<10)) + " KiB"
	}
	return sig3(v) + " B"
}

// --- machine ---------------------------------------------------------------

func command(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func goEnv() string {
	if out := command("go", "env", "GOOS", "GOARCH"); out != "" {
		return strings.Join(strings.Fields(out), "/")
	}
	return runtime.GOOS + "/" + runtime.GOARCH
}

func goVersion() string {
	if out := command("go", "version"); out != "" {
		return strings.TrimPrefix(out, "go version ")
	}
	return runtime.Version()
}

func cpuInfo() []string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return nil
	}
	return strings.Split(string(b), "\n")
}

func cpuModel(r *results) string {
	for _, l := range cpuInfo() {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	if c := r.config["cpu"]; c != "" {
		return c
	}
	return "unknown"
}

func cpuCores() int {
	n := 0
	for _, l := range cpuInfo() {
		if k, _, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "processor" {
			n++
		}
	}
	if n == 0 {
		n = runtime.NumCPU()
	}
	return n
}

// --- chart -----------------------------------------------------------------

type point struct{ x, y float64 }

// scrapeChart draws time per text scrape against series count for both
// exporters, on log-log axes.
func scrapeChart(r *results) string {
	series := map[string][]point{}
	for _, rw := range r.rowsOf("Scrape") {
		if rw.vals["format"] != "text" {
			continue
		}
		x := seriesCount(rw.vals["series"])
		for _, e := range []string{"ours", "contrib"} {
			if v, n := r.median(rw.id, e, "ns/op"); n > 0 && x > 0 {
				series[e] = append(series[e], point{x, v / 1e9})
			}
		}
	}
	return drawLogLog(series)
}

func drawLogLog(series map[string][]point) string {
	const (
		width, height = 720, 460
		left, right   = 90, 30
		top, bottom   = 50, 70
	)
	pw, ph := float64(width-left-right), float64(height-top-bottom)

	// Decades covering the data.
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, ps := range series {
		for _, p := range ps {
			minX, maxX = math.Min(minX, p.x), math.Max(maxX, p.x)
			minY, maxY = math.Min(minY, p.y), math.Max(maxY, p.y)
		}
	}
	if math.IsInf(minX, 1) {
		minX, maxX, minY, maxY = 1e4, 1e6, 1e-3, 1
	}
	// Some room around the points on x; whole decades on y.
	x0, x1 := math.Log10(minX)-0.15, math.Log10(maxX)+0.15
	y0, y1 := math.Floor(math.Log10(minY)-0.1), math.Ceil(math.Log10(maxY)+0.1)
	px := func(x float64) float64 { return float64(left) + (math.Log10(x)-x0)/(x1-x0)*pw }
	py := func(y float64) float64 { return float64(top) + (1-(math.Log10(y)-y0)/(y1-y0))*ph }

	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="13">`+"\n", width, height, width, height)
	w(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	w(`<text x="%d" y="28" font-size="16" font-weight="bold">Time per /metrics scrape, text format (lower is better)</text>`+"\n", left)

	// Grid, ticks and tick labels.
	w(`<g stroke="#ddd" stroke-width="1">` + "\n")
	for d := math.Floor(x0); d <= x1; d++ {
		for m := 1.0; m < 10; m++ {
			if l := d + math.Log10(m); l < x0 || l > x1 {
				continue
			}
			x := px(m * math.Pow(10, d))
			stroke := ""
			if m != 1 {
				stroke = ` stroke="#f0f0f0"`
			}
			w(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d"%s/>`+"\n", x, top, x, height-bottom, stroke)
		}
	}
	for d := y0; d <= y1; d++ {
		for m := 1.0; m < 10; m++ {
			if d+math.Log10(m) > y1 {
				continue
			}
			y := py(m * math.Pow(10, d))
			stroke := ""
			if m != 1 {
				stroke = ` stroke="#f0f0f0"`
			}
			w(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f"%s/>`+"\n", left, y, width-right, y, stroke)
		}
	}
	w("</g>\n")
	w(`<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	for d := math.Ceil(x0); d <= x1; d++ {
		x := px(math.Pow(10, d))
		w(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, height-bottom+20, countLabel(math.Pow(10, d)))
	}
	for d := y0; d <= y1; d++ {
		y := py(math.Pow(10, d))
		w(`<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-8, y, tickSeconds(math.Pow(10, d)))
	}
	// Axis titles.
	w(`<text x="%.1f" y="%d" text-anchor="middle">OTLP series held (log scale)</text>`+"\n", float64(left)+pw/2, height-22)
	w(`<text transform="translate(22 %.1f) rotate(-90)" text-anchor="middle">time per scrape (log scale)</text>`+"\n", float64(top)+ph/2)

	// Lines and markers.
	styles := []struct{ name, label, color, marker string }{
		{"ours", "agentprometheus (ours)", "#1f77b4", "circle"},
		{"contrib", "contrib prometheusexporter", "#d62728", "square"},
	}
	for i, s := range styles {
		ps := slices.Clone(series[s.name])
		slices.SortFunc(ps, func(a, b point) int { return int(math.Copysign(1, a.x-b.x)) })
		if len(ps) > 0 {
			var pts []string
			for _, p := range ps {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.x), py(p.y)))
			}
			w(`<polyline fill="none" stroke="%s" stroke-width="2.5" points="%s"/>`+"\n", s.color, strings.Join(pts, " "))
			for _, p := range ps {
				marker(&b, s.marker, px(p.x), py(p.y), s.color)
				// Value labels right of the point, or left of it near the right edge.
				x, anchor := px(p.x)+8, "start"
				if px(p.x) > float64(left)+0.85*pw {
					x, anchor = px(p.x)-8, "end"
				}
				w(`<text x="%.1f" y="%.1f" font-size="11" fill="%s" text-anchor="%s">%s</text>`+"\n", x, py(p.y)-8, s.color, anchor, secondsLabel(p.y))
			}
		}
		// Legend, in the plot's top left corner, which the rising lines leave free.
		if i == 0 {
			w(`<rect x="%d" y="%d" width="250" height="%d" fill="white" stroke="#999"/>`+"\n", left+12, top+12, 24*len(styles)+12)
		}
		ly := float64(top) + 30 + float64(i)*24
		lx := float64(left) + 22
		w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"/>`+"\n", lx, ly, lx+24, ly, s.color)
		marker(&b, s.marker, lx+12, ly, s.color)
		w(`<text x="%.1f" y="%.1f" font-size="12" dominant-baseline="middle">%s</text>`+"\n", lx+30, ly, legendLabel(s.label))
	}
	w("</svg>\n")
	return b.String()
}

func legendLabel(s string) string {
	s = strings.ReplaceAll(s, "&", "&amp;")
	s = strings.ReplaceAll(s, "<", "&lt;")
	return s
}

func marker(b *strings.Builder, kind string, x, y float64, color string) {
	if kind == "square" {
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="9" height="9" fill="%s"/>`+"\n", x-4.5, y-4.5, color)
		return
	}
	fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="5" fill="%s"/>`+"\n", x, y, color)
}

func countLabel(v float64) string {
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	switch {
	case v >= 1e6:
		return g(v/1e6) + "M"
	case v >= 1e3:
		return g(v/1e3) + "k"
	}
	return g(v)
}

// tickSeconds labels a decade of seconds: 1 ms, 10 ms, 100 ms, 1 s, ...
func tickSeconds(s float64) string {
	g := func(f float64) string { return strconv.FormatFloat(math.Round(f), 'g', -1, 64) }
	switch {
	case s >= 1:
		return g(s) + " s"
	case s >= 1e-3:
		return g(s*1e3) + " ms"
	case s >= 1e-6:
		return g(s*1e6) + " µs"
	}
	return g(s*1e9) + " ns"
}

func secondsLabel(s float64) string {
	return fmtDuration(s * 1e9)
}
