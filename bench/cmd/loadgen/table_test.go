package main

import (
	"strings"
	"testing"
)

func TestTableRowNoResponse(t *testing.T) {
	s := &summary{Name: "prometheus", OTLPSeries: 1_000_000, ExpectedSamples: 4_600_000, Scrapes: 1,
		Statuses: map[string]int{"0": 1}, CompleteCount: 0,
		Runs: []scrapeResult{{Status: 0, Error: `Get "http://127.0.0.1:1/metrics": EOF`}}}
	row := tableRow(s)
	for _, want := range []string{"| prometheus | 1M |", "| none |", "no HTTP response", "EOF"} {
		if !strings.Contains(row, want) {
			t.Fatalf("row %q lacks %q", row, want)
		}
	}
}
