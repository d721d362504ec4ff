package main

import (
	"fmt"
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

	Scrapes        int            `json:"scrapes"`
	ScrapeP50      float64        `json:"scrape_p50_s"`
	ScrapeP99      float64        `json:"scrape_p99_s"`
	ScrapeMin      float64        `json:"scrape_min_s"`
	ScrapeMax      float64        `json:"scrape_max_s"`
	Statuses       map[string]int `json:"statuses"`
	BodyBytes      int64          `json:"body_bytes"`
	Samples        int64          `json:"samples"`
	TargetInfo     int64          `json:"target_info"`
	FamiliesServed int64          `json:"families_served"`
	EndsNewline    bool           `json:"ends_with_newline"`
	Complete       bool           `json:"complete"`
	CompleteCount  int            `json:"complete_scrapes"`
	ScrapeFirstErr string         `json:"scrape_first_error,omitempty"`
	Runs           []scrapeResult `json:"runs"`

	Gzip *scrapeResult `json:"gzip,omitempty"`

	RSSMiB   float64 `json:"rss_mib,omitempty"`
	HWMMiB   float64 `json:"hwm_mib,omitempty"`
	TimedOut bool    `json:"timed_out,omitempty"`
}

// scrapeResult describes one scrape.
type scrapeResult struct {
	Encoding    string  `json:"encoding"`
	Status      int     `json:"status"`
	Seconds     float64 `json:"seconds"`
	WireBytes   int64   `json:"wire_bytes"`
	BodyBytes   int64   `json:"body_bytes"`
	Samples     int64   `json:"samples"`
	TargetInfo  int64   `json:"target_info"`
	Families    int64   `json:"families"`
	EndsNewline bool    `json:"ends_with_newline"`
	PartialLine bool    `json:"partial_line,omitempty"`
	Complete    bool    `json:"complete"`
	Error       string  `json:"error,omitempty"`
}

func (s *summary) human() string {
	var b strings.Builder
	name := s.Name
	if name == "" {
		name = "loadgen"
	}
	fmt.Fprintf(&b, "%s: %d OTLP series (%d agents × %d families × %d), %d expected samples; sent in %.2fs (%d/%d requests failed, %d points rejected)",
		name, s.OTLPSeries, s.Agents, s.Families, s.SeriesPerFamily, s.ExpectedSamples, s.SendSeconds, s.SendFailed, s.SendRequests, s.RejectedPoints)
	if s.Scrapes > 0 {
		fmt.Fprintf(&b, "; %d scrapes p50 %.3fs p99 %.3fs, body %.1f MB, %d samples (+%d target_info), statuses %v, complete %d/%d",
			s.Scrapes, s.ScrapeP50, s.ScrapeP99, float64(s.BodyBytes)/1e6, s.Samples-s.TargetInfo, s.TargetInfo, s.Statuses, s.CompleteCount, s.Scrapes)
		if !s.Complete {
			fmt.Fprintf(&b, " (INCOMPLETE: ends with newline %v", s.EndsNewline)
			if s.ScrapeFirstErr != "" {
				fmt.Fprintf(&b, ", error %q", s.ScrapeFirstErr)
			}
			b.WriteString(")")
		}
	}
	if g := s.Gzip; g != nil {
		fmt.Fprintf(&b, "; gzip scrape %.3fs, %.1f MB on the wire, complete %v", g.Seconds, float64(g.WireBytes)/1e6, g.Complete)
		if g.Error != "" {
			fmt.Fprintf(&b, " (error %q)", g.Error)
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
