package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTableRowNoResponse(t *testing.T) {
	s := &summary{Name: "prometheus", OTLPSeries: 1_000_000, ExpectedSamples: 4_600_000, Scrapes: 1}
	f := formatSummary{Profile: "prom3", Statuses: map[string]int{}}
	f.add(scrapeResult{Status: 0, Error: `Get "http://127.0.0.1:1/metrics": EOF`})
	s.Formats = []formatSummary{f}
	var b strings.Builder
	writeScrapeTable(&b, []*summary{s}, "agentprometheus")
	writeRunTable(&b, []*summary{s})
	out := b.String()
	for _, want := range []string{"| 1M | prom3 | prometheus |", "| none |", "no HTTP response", "EOF"} {
		if !strings.Contains(out, want) {
			t.Fatalf("table\n%s\nlacks %q", out, want)
		}
	}
}

func TestTableRatiosWithinSizeAndProfile(t *testing.T) {
	run := func(name string, series int, medians ...float64) *summary {
		s := &summary{Name: name, OTLPSeries: series, ExpectedSamples: 10}
		for i, m := range medians {
			f := formatSummary{Profile: []string{"text-0.0.4", "prom3"}[i], Statuses: map[string]int{}}
			f.add(scrapeResult{Status: 200, Seconds: m, Samples: 10, Complete: true, ContentType: "text/plain"})
			s.Formats = append(s.Formats, f)
		}
		return s
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "runs.jsonl")
	var lines []string
	for _, s := range []*summary{
		run("agentprometheus", 10_000, 0.010, 0.020),
		run("prometheus", 10_000, 0.200, 0.500),
		run("prometheus", 100_000, 2, 5),
		run("agentprometheus", 100_000, 0.1, 0.1),
	} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := writeTable(&b, file, "agentprometheus"); err != nil {
		t.Fatal(err)
	}
	scrapeTable, rest, _ := strings.Cut(b.String(), "\n\n")
	var rows []string
	for _, l := range strings.Split(scrapeTable, "\n") {
		if strings.HasPrefix(l, "| 10k |") || strings.HasPrefix(l, "| 100k |") {
			f := strings.Split(l, " | ")
			rows = append(rows, f[0]+" "+f[1]+" "+f[2]+" "+strings.TrimSuffix(f[len(f)-1], " |"))
		}
	}
	want := []string{
		"| 10k text-0.0.4 agentprometheus ",
		"| 10k text-0.0.4 prometheus **20×**",
		"| 10k prom3 agentprometheus ",
		"| 10k prom3 prometheus **25×**",
		"| 100k text-0.0.4 agentprometheus ",
		"| 100k text-0.0.4 prometheus **20×**",
		"| 100k prom3 agentprometheus ",
		"| 100k prom3 prometheus **50×**",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant\n%s\n\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"), b.String())
	}
	for _, want := range []string{
		"| 10k | — | **20×** (text-0.0.4, prometheus) | — |",
		"| 100k | — | **20×** (text-0.0.4, prometheus) | — |",
	} {
		if !strings.Contains(rest, want) {
			t.Errorf("no line %q in\n%s", want, rest)
		}
	}
}
