package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/statsgate/statsgate/bench/internal/promscrape"
)

// scrapeAll makes o.scrapes rounds of scrapes, each round one scrape per
// profile in order, within ctx, and records them in s. Rounds rather than
// one profile after the other: a burst of load on a shared machine then
// spreads over the profiles instead of landing on one.
func scrapeAll(ctx context.Context, o options, s *summary) {
	client := &http.Client{Transport: &http.Transport{
		// The requests set Accept-Encoding themselves; never decompress behind our back.
		DisableCompression: true,
		MaxIdleConns:       1,
		IdleConnTimeout:    30 * time.Second,
		// Large responses: read in big chunks.
		ReadBufferSize: 64 << 10,
	}}
	defer client.CloseIdleConnections()

	s.Formats = make([]formatSummary, len(o.profiles))
	for i, p := range o.profiles {
		s.Formats[i] = formatSummary{Profile: p.Name, Accept: p.Accept, AcceptEncoding: p.AcceptEncoding, Statuses: map[string]int{}}
	}
	var buf buffers
	for range o.scrapes {
		for i, p := range o.profiles {
			if ctx.Err() != nil {
				s.TimedOut = true
				break
			}
			s.Formats[i].add(scrape(ctx, client, o, p, &buf))
			s.Scrapes++
		}
	}
	s.Complete = s.Scrapes > 0
	for _, f := range s.Formats {
		s.Complete = s.Complete && f.Scrapes == o.scrapes && f.Complete
	}
}

// buffers hold a response as received and decompressed. They are reused
// from one scrape to the next, so that after the first scrapes a response
// is read into memory already there, as Prometheus reuses its buffers.
type buffers struct{ wire, body bytes.Buffer }

// scrape asks for the exposition as p does, reads the whole response, then,
// untimed, decompresses it and counts its samples with the parser
// Prometheus picks for the served Content-Type.
func scrape(ctx context.Context, client *http.Client, o options, p promscrape.Profile, buf *buffers) scrapeResult {
	var r scrapeResult
	ctx, cancel := context.WithTimeout(ctx, o.scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.metricsURL, http.NoBody)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	req.Header.Set("Accept", p.Accept)
	req.Header.Set("Accept-Encoding", p.AcceptEncoding)

	buf.wire.Reset()
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		r.Seconds = time.Since(start).Seconds()
		r.Error = err.Error()
		return r
	}
	_, err = buf.wire.ReadFrom(resp.Body)
	r.Seconds = time.Since(start).Seconds()
	resp.Body.Close()
	r.Status = resp.StatusCode
	r.ContentType = resp.Header.Get("Content-Type")
	r.ContentEncoding = resp.Header.Get("Content-Encoding")
	r.WireBytes = int64(buf.wire.Len())
	if err != nil {
		r.Error = err.Error()
		return r
	}
	if r.Status != http.StatusOK {
		return r
	}

	decodeStart := time.Now()
	defer func() { r.DecodeSeconds = time.Since(decodeStart).Seconds() }()
	body, err := decompress(r.ContentEncoding, buf)
	r.BodyBytes = int64(len(body))
	if err != nil {
		r.ParseError = err.Error()
		return r
	}
	c, err := promscrape.Count(body, r.ContentType)
	r.Samples, r.TargetInfo, r.NativeHistograms, r.Families = c.Samples, c.TargetInfo, c.NativeHistograms, c.Families
	if err != nil {
		r.ParseError = err.Error()
		return r
	}
	// Complete: exactly the expected samples apart from target_info (at
	// most one per agent), and no native histogram where the load has none.
	r.Complete = r.Samples == expectedSamples(o) && r.TargetInfo <= int64(o.agents) && r.NativeHistograms == 0
	return r
}

// decompress returns the body of the response in buf.wire.
func decompress(contentEncoding string, buf *buffers) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(contentEncoding)) {
	case "", "identity":
		return buf.wire.Bytes(), nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(buf.wire.Bytes()))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		buf.body.Reset()
		if _, err := buf.body.ReadFrom(zr); err != nil {
			return buf.body.Bytes(), fmt.Errorf("gzip: %w", err)
		}
		return buf.body.Bytes(), nil
	}
	return nil, fmt.Errorf("Content-Encoding %q, which this client did not ask for", contentEncoding)
}
