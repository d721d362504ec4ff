package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/statsgate/statsgate/bench/internal/promscrape"
)

// writeTable turns the JSON summaries in file (one per line, as printed by
// loadgen) into markdown: a table of the scrapes, one row per size, profile
// and run, with the ratio of each run's median time to that of the run
// named base at the same size and profile; the headers of the profiles; a
// table of the runs (load, memory).
func writeTable(w io.Writer, file, base string) error {
	runs, err := readSummaries(file)
	if err != nil {
		return err
	}
	writeScrapeTable(w, runs, base)
	fmt.Fprintln(w)
	writeProfiles(w, runs)
	fmt.Fprintln(w)
	writeExtremes(w, runs, base)
	fmt.Fprintln(w)
	writeRunTable(w, runs)
	return nil
}

func readSummaries(file string) ([]*summary, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var runs []*summary
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var s summary
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if s.Name == "" {
			s.Name = "?"
		}
		runs = append(runs, &s)
	}
	return runs, sc.Err()
}

// scrapeRow is one profile of one run.
type scrapeRow struct {
	run *summary
	f   *formatSummary
}

// scrapeRows orders the rows by size (as first seen), profile (in the order
// of promscrape.Profiles) and run (base first, then as seen).
func scrapeRows(runs []*summary, base string) []scrapeRow {
	var sizes []int
	for _, s := range runs {
		if !slices.Contains(sizes, s.OTLPSeries) {
			sizes = append(sizes, s.OTLPSeries)
		}
	}
	profileRank := func(name string) int {
		for i, p := range promscrape.Profiles {
			if p.Name == name {
				return i
			}
		}
		return len(promscrape.Profiles)
	}
	var rows []scrapeRow
	for _, s := range runs {
		for i := range s.Formats {
			rows = append(rows, scrapeRow{s, &s.Formats[i]})
		}
	}
	runRank := func(s *summary) int {
		if s.Name == base {
			return -1
		}
		return slices.Index(runs, s)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if d := slices.Index(sizes, a.run.OTLPSeries) - slices.Index(sizes, b.run.OTLPSeries); d != 0 {
			return d < 0
		}
		if d := profileRank(a.f.Profile) - profileRank(b.f.Profile); d != 0 {
			return d < 0
		}
		return runRank(a.run) < runRank(b.run)
	})
	return rows
}

func writeScrapeTable(w io.Writer, runs []*summary, base string) {
	fmt.Fprintln(w, "| OTLP series | asked as | exporter | served as | scrape: median (min–max) | on the wire | decompressed | samples (expected) | complete | contrib/ours |")
	fmt.Fprintln(w, "|---:|---|---|---|---:|---:|---:|---:|---|---:|")
	rows := scrapeRows(runs, base)
	for _, r := range rows {
		cells := []string{si(float64(r.run.OTLPSeries)), r.f.Profile, r.run.Name}
		if r.f.Scrapes == 0 {
			cells = append(cells, "—", "—", "—", "—", "—", "no scrape", "—")
			fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
			continue
		}
		cells = append(cells,
			servedAs(r.f),
			fmt.Sprintf("%s (%s–%s)", seconds(r.f.Median), seconds(r.f.Min), seconds(r.f.Max)),
			megabytes(r.f.WireBytes),
			megabytes(r.f.BodyBytes),
			fmt.Sprintf("%d (%d)", r.f.Samples, r.run.ExpectedSamples),
			completeCell(r.run, r.f),
			ratioCell(rows, r, base),
		)
		fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
	}
}

// ratioCell is the row's median time over the base run's at the same size
// and profile; empty on the base's own rows.
func ratioCell(rows []scrapeRow, r scrapeRow, base string) string {
	if r.run.Name == base {
		return ""
	}
	v, ok := ratio(rows, r, base)
	if !ok {
		return "—"
	}
	return ratioText(v)
}

func ratioText(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("**%.0f×**", v)
	}
	return fmt.Sprintf("**%.1f×**", v)
}

// ratio is the row's median time over the base run's at the same size and
// profile.
func ratio(rows []scrapeRow, r scrapeRow, base string) (float64, bool) {
	if r.f.Scrapes == 0 {
		return 0, false
	}
	for _, o := range rows {
		if o.run.Name == base && o.run.OTLPSeries == r.run.OTLPSeries && o.f.Profile == r.f.Profile && o.f.Scrapes > 0 && o.f.Median > 0 {
			return r.f.Median / o.f.Median, true
		}
	}
	return 0, false
}

// writeExtremes sums the scrape table up per size: the base's slowest
// compressed scrape, the lowest ratio to the base, and the ratio where
// protobuf was served.
func writeExtremes(w io.Writer, runs []*summary, base string) {
	rows := scrapeRows(runs, base)
	var sizes []int
	for _, r := range rows {
		if !slices.Contains(sizes, r.run.OTLPSeries) {
			sizes = append(sizes, r.run.OTLPSeries)
		}
	}
	fmt.Fprintf(w, "| OTLP series | %s: slowest gzip scrape (median) | lowest contrib/ours | contrib/ours where protobuf was served |\n", base)
	fmt.Fprintln(w, "|---:|---:|---:|---:|")
	for _, size := range sizes {
		slowest, lowest, proto := "—", "—", []string{}
		var slow, low float64
		for _, r := range rows {
			if r.run.OTLPSeries != size || r.f.Scrapes == 0 {
				continue
			}
			if r.run.Name == base {
				if r.f.AcceptEncoding == "gzip" && r.f.Median > slow {
					slow = r.f.Median
					slowest = fmt.Sprintf("%s (%s)", seconds(slow), r.f.Profile)
				}
				continue
			}
			v, ok := ratio(rows, r, base)
			if !ok {
				continue
			}
			if low == 0 || v < low {
				low = v
				lowest = fmt.Sprintf("%s (%s, %s)", ratioText(v), r.f.Profile, r.run.Name)
			}
			if strings.HasPrefix(r.f.ContentType, "application/vnd.google.protobuf") {
				proto = append(proto, fmt.Sprintf("%s (%s, %s)", ratioText(v), r.f.Profile, r.run.Name))
			}
		}
		protoCell := "—"
		if len(proto) > 0 {
			protoCell = strings.Join(proto, ", ")
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", si(float64(size)), slowest, lowest, protoCell)
	}
}

func servedAs(f *formatSummary) string {
	s := "`" + f.ContentType + "`"
	if enc := f.ContentEncoding; enc != "(none)" && enc != "identity" {
		s += ", " + enc
	} else if f.AcceptEncoding != "identity" {
		s += ", uncompressed"
	}
	return escapeCell(s)
}

func completeCell(s *summary, f *formatSummary) string {
	if f.Complete {
		return fmt.Sprintf("yes (%d/%d)", f.CompleteCount, f.Scrapes)
	}
	why := fmt.Sprintf("%d/%d", f.CompleteCount, f.Scrapes)
	if r, ok := firstIncomplete(*f); ok {
		why += ": " + incompleteReason(s.ExpectedSamples, r)
	}
	return "**no** " + escapeCell(why)
}

// incompleteReason says why one scrape was not complete.
func incompleteReason(expected int64, r scrapeResult) string {
	switch {
	case r.Status == 0:
		return "no HTTP response: " + r.Error
	case r.Error != "":
		return fmt.Sprintf("read failed after %s: %s", megabytes(r.WireBytes), r.Error)
	case r.Status != 200:
		return fmt.Sprintf("HTTP %d", r.Status)
	case r.ParseError != "":
		return "does not parse: " + r.ParseError
	case r.NativeHistograms > 0:
		return fmt.Sprintf("%d native histograms", r.NativeHistograms)
	case r.Samples != expected:
		return fmt.Sprintf("%d of %d samples", r.Samples, expected)
	}
	return fmt.Sprintf("%d target_info samples", r.TargetInfo)
}

// writeProfiles lists the headers of the profiles the runs used.
func writeProfiles(w io.Writer, runs []*summary) {
	fmt.Fprintln(w, "*Asked as* (bench/internal/promscrape):")
	fmt.Fprintln(w)
	for _, p := range promscrape.Profiles {
		used := false
		for _, s := range runs {
			for _, f := range s.Formats {
				used = used || f.Profile == p.Name
			}
		}
		if used {
			fmt.Fprintf(w, "- **%s**: %s. `Accept: %s`, `Accept-Encoding: %s`\n", p.Name, p.Title, p.Accept, p.AcceptEncoding)
		}
	}
}

func writeRunTable(w io.Writer, runs []*summary) {
	fmt.Fprintln(w, "| exporter | OTLP series | OTLP send | RSS after send | RSS after scrapes (peak) | HTTP status | all complete |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|---|")
	for _, s := range runs {
		send := fmt.Sprintf("%s (%d/%d requests failed)", seconds(s.SendSeconds), s.SendFailed, s.SendRequests)
		if s.SendFailed == 0 {
			send = seconds(s.SendSeconds)
		}
		if s.SendFirstError != "" {
			send += ": " + escapeCell(s.SendFirstError)
		}
		afterSend := "—"
		if s.RSSMiBAfterSend > 0 {
			afterSend = fmt.Sprintf("%.0f MiB", s.RSSMiBAfterSend)
		}
		statuses := map[string]int{}
		for _, f := range s.Formats {
			for k, n := range f.Statuses {
				statuses[k] += n
			}
		}
		complete := "yes"
		switch {
		case s.Scrapes == 0:
			complete = "**no**: no scrape"
		case !s.Complete:
			complete = "**no**"
		}
		if s.TimedOut {
			complete += " (timed out)"
		}
		cells := []string{s.Name, si(float64(s.OTLPSeries)), send, afterSend, rssCell(s), statusCell(statuses), complete}
		fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
	}
}

func rssCell(s *summary) string {
	if s.HWMMiB == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f MiB (%.0f)", s.RSSMiB, s.HWMMiB)
}

func statusCell(m map[string]int) string {
	if len(m) == 0 {
		return "—"
	}
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
	switch {
	case s < 0.01:
		return fmt.Sprintf("%.1f ms", s*1000)
	case s < 1:
		return fmt.Sprintf("%.0f ms", s*1000)
	}
	return fmt.Sprintf("%.2f s", s)
}

func megabytes(n int64) string {
	if n < 10e6 {
		return fmt.Sprintf("%.2f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
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
