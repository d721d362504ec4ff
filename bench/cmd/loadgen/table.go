package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// writeTable turns the JSON summaries in file (one per line, as printed by
// loadgen) into a markdown table.
func writeTable(w io.Writer, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()

	fmt.Fprintln(w, "| exporter | OTLP series | samples (expected) | body MB | gzip MB | scrape p50 | scrape p99 | gzip scrape | RSS after scrapes (peak) | HTTP status | complete |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var s summary
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		fmt.Fprintln(w, tableRow(&s))
	}
	return sc.Err()
}

func tableRow(s *summary) string {
	name := s.Name
	if name == "" {
		name = "?"
	}
	cells := []string{name, si(float64(s.OTLPSeries))}
	if s.Scrapes == 0 {
		reason := "no scrape"
		if s.SendFirstError != "" {
			reason = "send failed: " + s.SendFirstError
		}
		if s.TimedOut {
			reason += " (timed out)"
		}
		cells = append(cells, "—", "—", "—", "—", "—", "—", rssCell(s), "—", "no: "+escapeCell(reason))
		return "| " + strings.Join(cells, " | ") + " |"
	}
	gzipMB, gzipTime := "—", "—"
	if g := s.Gzip; g != nil {
		gzipMB = fmt.Sprintf("%.2f", float64(g.WireBytes)/1e6)
		gzipTime = seconds(g.Seconds)
		if !g.Complete {
			gzipTime += " (incomplete)"
		}
	}
	cells = append(cells,
		fmt.Sprintf("%d (%d)", s.Samples-s.TargetInfo, s.ExpectedSamples),
		fmt.Sprintf("%.1f", float64(s.BodyBytes)/1e6),
		gzipMB,
		seconds(s.ScrapeP50),
		seconds(s.ScrapeP99),
		gzipTime,
		rssCell(s),
		statusCell(s.Statuses),
		completeCell(s),
	)
	return "| " + strings.Join(cells, " | ") + " |"
}

func completeCell(s *summary) string {
	if s.Complete && (s.Gzip == nil || s.Gzip.Complete) {
		return fmt.Sprintf("yes (%d/%d)", s.CompleteCount, s.Scrapes)
	}
	var why []string
	if s.CompleteCount < s.Scrapes {
		why = append(why, fmt.Sprintf("%d/%d plain scrapes", s.CompleteCount, s.Scrapes))
	}
	for _, r := range s.Runs {
		if !r.Complete {
			why = append(why, incompleteReason(s, r))
			break
		}
	}
	if s.Gzip != nil && !s.Gzip.Complete {
		why = append(why, "gzip scrape: "+incompleteReason(s, *s.Gzip))
	}
	if s.TimedOut {
		why = append(why, "timed out")
	}
	return "**no**: " + escapeCell(strings.Join(why, "; "))
}

// incompleteReason says why one scrape was not complete.
func incompleteReason(s *summary, r scrapeResult) string {
	var why []string
	switch {
	case r.Status == 0:
		why = append(why, "no HTTP response")
	case r.Status != 200:
		why = append(why, fmt.Sprintf("HTTP %d", r.Status))
	case r.BodyBytes == 0:
		why = append(why, "empty body")
	case r.PartialLine || !r.EndsNewline:
		why = append(why, fmt.Sprintf("body cut mid-line after %.1f MB", float64(r.BodyBytes)/1e6))
	case r.Samples-r.TargetInfo != s.ExpectedSamples:
		why = append(why, fmt.Sprintf("%d of %d samples", r.Samples-r.TargetInfo, s.ExpectedSamples))
	}
	if r.Error != "" {
		why = append(why, r.Error)
	}
	return strings.Join(why, ", ")
}

func rssCell(s *summary) string {
	if s.HWMMiB == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f MiB (%.0f)", s.RSSMiB, s.HWMMiB)
}

func statusCell(m map[string]int) string {
	name := func(code string) string {
		if code == "0" {
			return "none"
		}
		return code
	}
	if len(m) == 1 {
		for k := range m {
			return name(k)
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s×%d", name(k), m[k]))
	}
	return strings.Join(parts, ", ")
}

func seconds(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.0f ms", s*1000)
	}
	return fmt.Sprintf("%.2f s", s)
}

func si(v float64) string {
	switch {
	case v >= 1e6:
		return trimZero(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case v >= 1e3:
		return trimZero(fmt.Sprintf("%.1f", v/1e3)) + "k"
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

func escapeCell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
