package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/statsgate/statsgate/bench/internal/promscrape"
	"github.com/statsgate/statsgate/bench/internal/workload"
)

type reportInputs struct {
	benchstat, commands, e2e, svgPath string
	// design is bench/design.md: the measurements behind choices in the
	// code, which cites them by benchmark name rather than by figure.
	design string
	conc   string
	card   string
	// agg and aggMem are the aggregation benchmarks.
	agg, aggMem string
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
	// The workload is described from its definition, which the benchmarks play.
	gw := workload.Gateway
	w("%s %s. Every series has the same %d labels on both exporters (`job`, `instance`,\n", gw.Describe(), agentsPerSize(gw), gw.BaseLabels+gw.ExtraLabels)
	w("`host_name`, `cloud_region` + the %d attributes); `TestSameSeries` checks that both serve the same\n", gw.ExtraLabels)
	w("samples.\n\n")
	w("| | ours | contrib |\n|---|---|---|\n")
	w("| resource labels | `resource_constant_labels: {included: [host.name, cloud.region]}` | `resource_to_telemetry_conversion: {enabled: true, exclude_service_attributes: true}` |\n")
	w("| both | `without_scope_info: true`, `enable_open_metrics: true`, `write_timeout: 10m` | same |\n")
	w("| limits | `max_series`, `max_series_per_resource`: 50M (nothing refused) | none |\n\n")
	w("The write timeout is raised from confighttp's 30s on both: contrib's scrape of 1M series takes\n")
	w("longer, and a cut response would look faster than a whole one. B/op and allocs/op come from\n")
	w("`runtime.MemStats`, which is process-wide: they include the HTTP server's goroutines and the\n")
	w("client, the same for both exporters.\n\n")

	w("## Scrape\n\n")
	w("One whole `/metrics` response, read to the end, in every format a Prometheus server negotiates,\n")
	w("each asked for with the `Accept` header under which Prometheus gets it (`bench/internal/promscrape`):\n\n")
	for _, f := range promscrape.Formats {
		w("- **%s**: `%s`\n", f.Name, f.Accept)
	}
	w("\n*identity* rows ask for `Accept-Encoding: identity`, *gzip* rows for `Accept-Encoding: gzip`, as\n")
	w("Prometheus does; a gzip response is read as it comes over the wire (decompressing it is the\n")
	w("scraper's work). Before the timed scrapes, one response of each format and encoding is\n")
	w("decompressed and parsed with the parser Prometheus picks for its Content-Type, and must hold the\n")
	w("samples of the text scrape (a note below says otherwise). *series* are OTLP series; a *sample*\n")
	w("is one line of the text exposition (counted once per exporter and size), in every format.\n\n")
	if in.svgPath != "" {
		w("![Scrape time per scrape against series count, text format, both exporters, log-log](%s)\n\n", in.svgPath)
	}
	w("Time per scrape:\n\n")
	pivot(&b, r, "Scrape", "format", column{"ns/op", "time/scrape", fmtDuration})
	w("Time per sample:\n\n")
	pivot(&b, r, "Scrape", "format", column{"ns/sample", "ns/sample", fmtNum})
	w("Allocations per sample:\n\n")
	pivot(&b, r, "Scrape", "format", column{"allocs/sample", "allocs/sample", fmtNum})
	w("Ours at its worst over the formats and encodings, against the goal of at most 100 ns and 0.01\n")
	w("allocations per sample in every format:\n\n")
	worstTable(&b, r, "Scrape", []column{{"ns/sample", "ns/sample", fmtNum}, {"allocs/sample", "allocs/sample", fmtNum}})
	w("Response size, as received:\n\n")
	pivot(&b, r, "Scrape", "format", column{"B/response", "response", fmtBytes})
	w("Per series:\n\n")
	table(&b, r, "Scrape", []column{{"ns/series", "ns/series", fmtNum}, {"B/series", "B/series", fmtNum}, {"allocs/series", "allocs/series", fmtNum}})

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
	seed := workload.Seed(4, 0)
	w("A text scrape of 10k series (100 agents × %d gauge families × %d series) per label shape of the\n", seed.Gauges, seed.SeriesPerFamily)
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

	if strings.TrimSpace(in.card) != "" {
		w("## Cardinality view\n\n")
		w(cardinalityIntro)
		w("```\n%s\n```\n\n", strings.TrimRight(in.card, "\n"))
	}

	if strings.TrimSpace(in.agg) != "" || strings.TrimSpace(in.aggMem) != "" {
		w("## Aggregation\n\n")
		w(aggregateIntro)
		if a := strings.TrimSpace(in.agg); a != "" {
			w("```\n%s\n```\n\n", a)
		}
		if m := benchLines(in.aggMem); m != "" {
			w(aggregateMemoryIntro)
			w("```\n%s\n```\n\n", m)
		}
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

	if d := strings.TrimSpace(in.design); d != "" {
		w("%s\n\n", d)
	}

	if strings.TrimSpace(in.benchstat) != "" {
		w("## benchstat\n\n")
		w("`benchstat -col /exporter` over the raw output (ours is the baseline column).\n\n")
		w("<details><summary>benchstat output</summary>\n\n```\n%s\n```\n\n</details>\n", strings.TrimRight(in.benchstat, "\n"))
	}
	return b.String()
}

// aggregateIntro explains the benchmarks of the aggregate rules.
const aggregateIntro = "Ours only (`exporter/agentprometheusexporter`): the cost of an aggregated point next to a plain\n" +
	"one, the ingest workload above (100 agents × 1000 series, existing series updated) with every\n" +
	"family aggregated by `service.name` and `method` (*path=aggregated*, `BenchmarkIngestAggregated`) or\n" +
	"not (*path=plain*, `BenchmarkIngestExisting`), one binary run for each in turn; ns per point.\n\n"

// aggregateMemoryIntro explains BenchmarkAggregateSourceMemory.
const aggregateMemoryIntro = "`BenchmarkAggregateSourceMemory`: the heap held per source (an agent's series that a rule\n" +
	"absorbs) after GC, with 1,000 agents × 1,000 series aggregated by `service.name` and `method`;\n" +
	"*series* is what the gateway serves for them (its groups). *counters*: monotonic sums only; *mixed*:\n" +
	"the workload's gauges, counters and ten-bucket histograms (a histogram's source keeps its buckets).\n\n"

// benchLines keeps a go test output's benchmark lines.
func benchLines(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "Benchmark") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// cardinalityIntro explains the benchmark of the cardinality view.
const cardinalityIntro = "Ours only (`BenchmarkCardinality` in `exporter/agentprometheusexporter`): the view of 1M series\n" +
	"(1000 agents × 1000, the workload above), default settings (`top: 20`, `scan_timeout: 100ms`),\n" +
	"fetched over loopback HTTP. *page=html* and *page=json*: the default report, whose label count reads\n" +
	"the largest family (100k series); *page=json-resource*: one agent's report, its 1000 series found by\n" +
	"scanning every family that holds some; *scanned-series* is how many label sets the count read.\n" +
	"*IngestPause*: single-point updates made while pages are served back to back; the slowest and the\n" +
	"mean, next to *IngestPauseDuringScrape* (the same during 1M-series gzip scrapes) in the same run.\n\n"

// agentsPerSize says how many agents of shape s make each size.
func agentsPerSize(s workload.Shape) string {
	var parts []string
	for i, z := range workload.Sizes {
		if i == 0 {
			parts = append(parts, fmt.Sprintf("%s series are %d agents", z.Name, z.Agents(s)))
		} else {
			parts = append(parts, fmt.Sprintf("%s are %d", z.Name, z.Agents(s)))
		}
	}
	return strings.Join(parts, ", ")
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

// worstTable writes, per series count, ours' highest value of each column's
// metric over the benchmark's other keys, and where it is.
func worstTable(b *strings.Builder, r *results, bench string, cols []column) {
	rows := r.rowsOf(bench)
	if len(rows) == 0 {
		b.WriteString("_(not run)_\n\n")
		return
	}
	var sizes []string
	for _, rw := range rows {
		if !slices.Contains(sizes, rw.vals["series"]) {
			sizes = append(sizes, rw.vals["series"])
		}
	}
	slices.SortFunc(sizes, func(x, y string) int { return rank("series", x) - rank("series", y) })
	b.WriteString("| series |")
	for _, c := range cols {
		fmt.Fprintf(b, " highest %s ours | where |", c.title)
	}
	b.WriteString("\n|---|")
	for range cols {
		b.WriteString("--:|---|")
	}
	b.WriteString("\n")
	for _, sz := range sizes {
		b.WriteString("| " + sz + " |")
		for _, c := range cols {
			worst, where := math.NaN(), "—"
			for _, rw := range rows {
				if rw.vals["series"] != sz {
					continue
				}
				v, n := r.median(rw.id, "ours", c.unit)
				if n > 0 && (math.IsNaN(worst) || v > worst) {
					var at []string
					for _, k := range rw.keys {
						if k != "series" {
							at = append(at, rw.vals[k])
						}
					}
					worst, where = v, strings.Join(at, ", ")
				}
			}
			fmt.Fprintf(b, " %s | %s |", cell(worst, c.fmt), where)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// pivot writes one metric of a benchmark as a table with a group of columns
// per value of the key across (ours | contrib | contrib/ours), and a row per
// combination of the other keys (by series count first).
func pivot(b *strings.Builder, r *results, bench, across string, c column) {
	rows := r.rowsOf(bench)
	if len(rows) == 0 {
		b.WriteString("_(not run)_\n\n")
		return
	}
	var (
		keys    []string // the row keys, series first
		groups  []string // values of across, in order
		rowKeys []*row   // one row per combination of keys, in order
		seen    = map[string]bool{}
	)
	for _, k := range rows[0].keys {
		if k != across {
			keys = append(keys, k)
		}
	}
	if i := slices.Index(keys, "series"); i > 0 {
		keys = append([]string{"series"}, slices.Delete(keys, i, i+1)...)
	}
	rowID := func(rw *row) string {
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+"="+rw.vals[k])
		}
		return strings.Join(parts, "/")
	}
	for _, rw := range rows {
		if g := rw.vals[across]; !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
		if id := rowID(rw); !seen[id] {
			seen[id] = true
			rowKeys = append(rowKeys, rw)
		}
	}
	slices.SortStableFunc(groups, func(x, y string) int { return rank(across, x) - rank(across, y) })
	slices.SortStableFunc(rowKeys, func(x, y *row) int { return compareBy(keys, x, y) })
	cellRow := map[string]*row{} // rowID + across value -> row
	for _, rw := range rows {
		cellRow[rowID(rw)+"|"+rw.vals[across]] = rw
	}

	b.WriteString("|")
	for _, k := range keys {
		b.WriteString(" " + k + " |")
	}
	for _, g := range groups {
		fmt.Fprintf(b, " %s ours | %s contrib | contrib/ours |", g, g)
	}
	b.WriteString("\n|")
	for range keys {
		b.WriteString("---|")
	}
	for range groups {
		b.WriteString("--:|--:|--:|")
	}
	b.WriteString("\n")
	for _, rk := range rowKeys {
		b.WriteString("|")
		for _, k := range keys {
			b.WriteString(" " + rk.vals[k] + " |")
		}
		for _, g := range groups {
			o, x := math.NaN(), math.NaN()
			if rw := cellRow[rowID(rk)+"|"+g]; rw != nil {
				o, _ = r.median(rw.id, "ours", c.unit)
				x, _ = r.median(rw.id, "contrib", c.unit)
			}
			fmt.Fprintf(b, " %s | %s | %s |", cell(o, c.fmt), cell(x, c.fmt), ratio(x, o))
		}
		b.WriteString("\n")
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
