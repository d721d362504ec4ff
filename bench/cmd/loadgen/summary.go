package main

import (
	"fmt"
	"slices"
	"strings"
)

// summary is the machine-readable result of one run.
type summary struct {
	Name            string `json:"name,omitempty"`
	Agents          int    `json:"agents"`
	Families        int    `json:"families"`
	SeriesPerFamily int    `json:"series_per_family"`
	OTLPSeries      int    `json:"otlp_series"`
	ExpectedSamples int64  `json:"expected_samples"`

	SendSeconds     float64 `json:"send_seconds"`
	SendRequests    int     `json:"send_requests"`
	SendFailed      int     `json:"send_failed"`
	SendRetries     int64   `json:"send_retries"`
	RejectedPoints  int64   `json:"rejected_points"`
	SendFirstError  string  `json:"send_first_error,omitempty"`
	SendWireBytes   int64   `json:"send_request_bytes"`
	RSSMiBAfterSend float64 `json:"rss_mib_after_send,omitempty"`

	// Formats has one entry per profile, in the order of -profiles.
	Formats  []formatSummary `json:"formats"`
	Scrapes  int             `json:"scrapes"`
	Complete bool            `json:"complete"` // every scrape of every profile

	RSSMiB   float64 `json:"rss_mib,omitempty"`
	HWMMiB   float64 `json:"hwm_mib,omitempty"`
	TimedOut bool    `json:"timed_out,omitempty"`
}

// formatSummary gathers the scrapes of one profile.
type formatSummary struct {
	Profile        string `json:"profile"`
	Accept         string `json:"accept"`
	AcceptEncoding string `json:"accept_encoding"`

	Scrapes       int            `json:"scrapes"`
	CompleteCount int            `json:"complete_scrapes"`
	Complete      bool           `json:"complete"`
	Median        float64        `json:"median_s"`
	Min           float64        `json:"min_s"`
	Max           float64        `json:"max_s"`
	Statuses      map[string]int `json:"statuses"`
	// What the server negotiated: distinct values in the order seen, joined
	// by " / " should they change from one scrape to the next.
	ContentType     string `json:"content_type"`
	ContentEncoding string `json:"content_encoding"`
	// Of the last scrape.
	WireBytes  int64 `json:"wire_bytes"`
	BodyBytes  int64 `json:"body_bytes"`
	Samples    int64 `json:"samples"`
	TargetInfo int64 `json:"target_info"`

	Runs []scrapeResult `json:"runs"`
}

// scrapeResult describes one scrape.
type scrapeResult struct {
	Status          int    `json:"status"`
	ContentType     string `json:"content_type,omitempty"`
	ContentEncoding string `json:"content_encoding,omitempty"`
	// Seconds is the time from sending the request to the last byte of the
	// response received, as it came over the wire (compressed when so
	// served). Decompressing and parsing come after and are DecodeSeconds.
	Seconds          float64 `json:"seconds"`
	DecodeSeconds    float64 `json:"decode_seconds,omitempty"`
	WireBytes        int64   `json:"wire_bytes"`
	BodyBytes        int64   `json:"body_bytes"` // decompressed
	Samples          int64   `json:"samples"`    // target_info apart
	TargetInfo       int64   `json:"target_info"`
	NativeHistograms int64   `json:"native_histograms,omitempty"`
	Families         int64   `json:"families"`
	Complete         bool    `json:"complete"`
	// Error is a failed request or read; ParseError a body that does not
	// decompress or parse.
	Error      string `json:"error,omitempty"`
	ParseError string `json:"parse_error,omitempty"`
}

// add records one scrape.
func (f *formatSummary) add(r scrapeResult) {
	f.Runs = append(f.Runs, r)
	f.Scrapes++
	f.Statuses[fmt.Sprint(r.Status)]++
	if r.Complete {
		f.CompleteCount++
	}
	f.ContentType = addDistinct(f.ContentType, r.ContentType)
	f.ContentEncoding = addDistinct(f.ContentEncoding, r.ContentEncoding)
	f.WireBytes, f.BodyBytes, f.Samples, f.TargetInfo = r.WireBytes, r.BodyBytes, r.Samples, r.TargetInfo
	f.Complete = f.CompleteCount == f.Scrapes
	times := make([]float64, len(f.Runs))
	for i, r := range f.Runs {
		times[i] = r.Seconds
	}
	slices.Sort(times)
	f.Min, f.Max, f.Median = times[0], times[len(times)-1], median(times)
}

func addDistinct(list, v string) string {
	if v == "" {
		v = "(none)"
	}
	if list == "" {
		return v
	}
	if slices.Contains(strings.Split(list, " / "), v) {
		return list
	}
	return list + " / " + v
}

// median of sorted values; the mean of the middle two for an even count.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func (s *summary) human() string {
	var b strings.Builder
	name := s.Name
	if name == "" {
		name = "loadgen"
	}
	fmt.Fprintf(&b, "%s: %d OTLP series (%d agents × %d families × %d), %d expected samples; sent in %.2fs (%d/%d requests failed, %d points rejected)",
		name, s.OTLPSeries, s.Agents, s.Families, s.SeriesPerFamily, s.ExpectedSamples, s.SendSeconds, s.SendFailed, s.SendRequests, s.RejectedPoints)
	for _, f := range s.Formats {
		fmt.Fprintf(&b, "; %s: %s, median %.3fs of %d, %.2f MB on the wire, %d samples (+%d target_info), complete %d/%d",
			f.Profile, f.ContentType, f.Median, f.Scrapes, float64(f.WireBytes)/1e6, f.Samples, f.TargetInfo, f.CompleteCount, f.Scrapes)
		if !f.Complete {
			if r, ok := firstIncomplete(f); ok {
				fmt.Fprintf(&b, " (INCOMPLETE: %s)", incompleteReason(s.ExpectedSamples, r))
			}
		}
	}
	if s.HWMMiB > 0 {
		fmt.Fprintf(&b, "; RSS %.0f MiB (peak %.0f MiB)", s.RSSMiB, s.HWMMiB)
	}
	if s.TimedOut {
		b.WriteString("; TIMED OUT")
	}
	return b.String()
}

func firstIncomplete(f formatSummary) (scrapeResult, bool) {
	for _, r := range f.Runs {
		if !r.Complete {
			return r, true
		}
	}
	return scrapeResult{}, false
}
