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
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	var (
		rawFiles  = flag.String("raw", "bench/results/raw.txt", "raw go test -bench output files, comma-separated")
		benchstat = flag.String("benchstat", "bench/results/benchstat.txt", "benchstat -col /exporter output (optional)")
		commands  = flag.String("commands", "bench/results/commands.txt", "file with the commands that produced the results (optional)")
		e2e       = flag.String("e2e", "bench/results/e2e.md", "end-to-end results to include (optional)")
		design    = flag.String("design", "bench/design.md", "the measurements behind design choices in the code, included as they are (optional)")
		conc      = flag.String("concurrency", "bench/results/concurrency.txt", "benchstat of ingestion during scrapes (optional)")
		card      = flag.String("cardinality", "bench/results/cardinality.txt", "benchstat of the cardinality view (optional)")
		agg       = flag.String("aggregate", "bench/results/aggregate.txt", "benchstat -col /path of aggregated and plain ingestion (optional)")
		aggMem    = flag.String("aggregate-memory", "bench/results/aggregate-memory.txt", "go test output of BenchmarkAggregateSourceMemory (optional)")
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
		design:    readOptional(*design),
		conc:      readOptional(*conc),
		card:      readOptional(*card),
		agg:       readOptional(*agg),
		aggMem:    readOptional(*aggMem),
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
