package main

import (
	"compress/gzip"
	"context"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// scrapeAll makes o.scrapes plain-text scrapes and the gzip one, within
// ctx, and records them in s: the last plain scrape stands for the body,
// completeness must hold for all.
func scrapeAll(ctx context.Context, o options, s *summary) {
	client := &http.Client{Transport: &http.Transport{
		// The requests set Accept-Encoding themselves; never decompress behind our back.
		DisableCompression: true,
		MaxIdleConns:       1,
		IdleConnTimeout:    30 * time.Second,
	}}
	defer client.CloseIdleConnections()

	var durations []float64
	for i := 0; i < o.scrapes; i++ {
		if ctx.Err() != nil {
			s.TimedOut = true
			break
		}
		r := scrape(ctx, client, o, false)
		s.Runs = append(s.Runs, r)
		s.Statuses[strconv.Itoa(r.Status)]++
		if r.Error != "" && s.ScrapeFirstErr == "" {
			s.ScrapeFirstErr = r.Error
		}
		if r.Complete {
			s.CompleteCount++
		}
		durations = append(durations, r.Seconds)
	}
	s.Scrapes = len(s.Runs)
	if n := len(s.Runs); n > 0 {
		last := s.Runs[n-1]
		s.BodyBytes, s.Samples, s.TargetInfo, s.FamiliesServed = last.BodyBytes, last.Samples, last.TargetInfo, last.Families
		s.EndsNewline = last.EndsNewline
		s.Complete = s.CompleteCount == n
		sort.Float64s(durations)
		s.ScrapeMin, s.ScrapeMax = durations[0], durations[n-1]
		s.ScrapeP50 = percentile(durations, 0.50)
		s.ScrapeP99 = percentile(durations, 0.99)
	}
	if o.gzipScrape && ctx.Err() == nil {
		r := scrape(ctx, client, o, true)
		s.Gzip = &r
	}
}

// percentile returns the nearest-rank percentile of sorted values (with few
// values, p99 is the maximum).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p*float64(len(sorted)))) - 1
	rank = max(0, min(rank, len(sorted)-1))
	return sorted[rank]
}

// countingReader counts the bytes read through it (the bytes on the wire).
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// scrape reads the whole exposition once, in the text format, plain or
// gzip-compressed, and checks that it is complete.
func scrape(ctx context.Context, client *http.Client, o options, gz bool) scrapeResult {
	r := scrapeResult{Encoding: "identity"}
	if gz {
		r.Encoding = "gzip"
	}
	ctx, cancel := context.WithTimeout(ctx, o.scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.metricsURL, nil)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	req.Header.Set("Accept-Encoding", r.Encoding)

	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		r.Seconds = time.Since(start).Seconds()
		r.Error = err.Error()
		return r
	}
	defer resp.Body.Close()
	r.Status = resp.StatusCode

	wire := &countingReader{r: resp.Body}
	var body io.Reader = wire
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(wire)
		if err != nil {
			r.Seconds = time.Since(start).Seconds()
			r.WireBytes = wire.n
			r.Error = "gzip: " + err.Error()
			return r
		}
		defer zr.Close()
		body = zr
	} else if gz {
		r.Encoding = "gzip requested, identity served"
	}
	c := newExpoCounter()
	_, err = io.Copy(c, body)
	r.Seconds = time.Since(start).Seconds()
	r.WireBytes = wire.n
	r.BodyBytes = c.bytes
	r.Samples = c.samples
	r.TargetInfo = c.targetInfo
	r.Families = c.types
	r.EndsNewline = c.endsWithNewline()
	r.PartialLine = c.partialLine()
	if err != nil {
		r.Error = err.Error()
	}
	// Complete: a 200, read to the end without error, ending with a newline,
	// with exactly the expected samples apart from target_info (at most one
	// per agent).
	r.Complete = r.Status == http.StatusOK && err == nil && r.EndsNewline && !r.PartialLine &&
		r.Samples-r.TargetInfo == expectedSamples(o) && r.TargetInfo <= int64(o.agents)
	return r
}
