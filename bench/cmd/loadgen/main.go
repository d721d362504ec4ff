// Command loadgen is the load generator of the end-to-end benchmark
// (bench/e2e.sh). It plays A agents × F metric families × S series per family
// (bench/internal/workload, the load bench/exporterbench feeds in process)
// into a collector over OTLP/gRPC, one request per agent, then scrapes the
// collector's Prometheus endpoint over HTTP and reports scrape latency, body
// size, sample count, completeness of the body and the collector's memory.
//
//	loadgen -agents 10 -families 10 -series 100 \
//	    -otlp 127.0.0.1:4317 -metrics-url http://127.0.0.1:9464/metrics \
//	    -scrapes 5 -pid 12345 -name agentprometheus
//
// It prints one JSON line on stdout (the machine-readable summary) and one
// human-readable line on stderr. Every loop is bounded by a count and by the
// -timeout deadline; only the given endpoints are contacted.
package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/statsgate/statsgate/bench/internal/workload"
)

type options struct {
	name          string
	agents        int
	families      int
	series        int
	otlpEndpoint  string
	metricsURL    string
	scrapes       int
	gzipScrape    bool
	concurrency   int
	timeout       time.Duration
	scrapeTimeout time.Duration
	pid           int
}

func main() {
	var o options
	var freePorts int
	var table string
	flag.StringVar(&o.name, "name", "", "label of this run in the output (e.g. the exporter's name)")
	flag.IntVar(&o.agents, "agents", 10, "number of agents (A): one resource and one OTLP request each")
	flag.IntVar(&o.families, "families", 10, "metric families per agent (F): 40% gauges, 30% counters, 30% histograms (workload.Mix)")
	flag.IntVar(&o.series, "series", 100, "series per family per agent (S)")
	flag.StringVar(&o.otlpEndpoint, "otlp", "127.0.0.1:4317", "OTLP/gRPC endpoint of the collector (host:port)")
	flag.StringVar(&o.metricsURL, "metrics-url", "http://127.0.0.1:9464/metrics", "Prometheus endpoint of the collector")
	flag.IntVar(&o.scrapes, "scrapes", 5, "number of plain-text (identity) scrapes")
	flag.BoolVar(&o.gzipScrape, "gzip", true, "also do one scrape with Accept-Encoding: gzip")
	flag.IntVar(&o.concurrency, "concurrency", 8, "OTLP requests in flight at most")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound on the whole run (send and scrapes)")
	flag.DurationVar(&o.scrapeTimeout, "scrape-timeout", 2*time.Minute, "bound on one scrape")
	flag.IntVar(&o.pid, "pid", 0, "pid of the collector, for VmRSS/VmHWM from /proc/<pid>/status (0: not reported)")
	flag.IntVar(&freePorts, "free-ports", 0, "print this many free loopback TCP ports and exit (helper for scripts)")
	flag.StringVar(&table, "table", "", "print the JSON summaries in this file (one per line) as a markdown table and exit")
	flag.Parse()

	if table != "" {
		if err := writeTable(os.Stdout, table); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(1)
		}
		return
	}

	if freePorts > 0 {
		if err := printFreePorts(freePorts); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(1)
		}
		return
	}
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		flag.Usage()
		os.Exit(2)
	}

	sum, err := run(o)
	if sum != nil {
		line, jerr := json.Marshal(sum)
		if jerr != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", jerr)
			os.Exit(1)
		}
		fmt.Println(string(line))
		fmt.Fprintln(os.Stderr, sum.human())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func (o options) validate() error {
	var errs []error
	if o.agents <= 0 || o.families <= 0 || o.series <= 0 {
		errs = append(errs, errors.New("-agents, -families and -series must be positive"))
	}
	if o.scrapes < 0 || o.scrapes > 1000 {
		errs = append(errs, errors.New("-scrapes must be within [0, 1000]"))
	}
	if o.concurrency <= 0 || o.concurrency > 256 {
		errs = append(errs, errors.New("-concurrency must be within [1, 256]"))
	}
	if o.timeout <= 0 || o.scrapeTimeout <= 0 {
		errs = append(errs, errors.New("-timeout and -scrape-timeout must be positive"))
	}
	if !strings.HasPrefix(o.metricsURL, "http://") && !strings.HasPrefix(o.metricsURL, "https://") {
		errs = append(errs, fmt.Errorf("-metrics-url %q is not an http(s) URL", o.metricsURL))
	}
	return errors.Join(errs...)
}

// printFreePorts asks the kernel for n distinct free ports on 127.0.0.1.
func printFreePorts(n int) error {
	if n > 64 {
		return errors.New("-free-ports: at most 64")
	}
	ports := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer l.Close()
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	fmt.Println(strings.Join(ports, " "))
	return nil
}

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

func run(o options) (*summary, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	s := &summary{
		Name:            o.name,
		Agents:          o.agents,
		Families:        o.families,
		SeriesPerFamily: o.series,
		OTLPSeries:      o.agents * o.families * o.series,
		ExpectedSamples: expectedSamples(o),
		Statuses:        map[string]int{},
	}

	if err := send(ctx, o, s); err != nil {
		s.TimedOut = ctx.Err() != nil
		return s, err
	}
	if o.pid > 0 {
		if rss, _, err := procMemory(o.pid); err == nil {
			s.RSSMiBAfterSend = rss
		}
	}

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
		// The last scrape stands for the body; completeness must hold for all.
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
	if ctx.Err() != nil {
		s.TimedOut = true
	}
	if o.pid > 0 {
		rss, hwm, err := procMemory(o.pid)
		if err != nil {
			return s, err
		}
		s.RSSMiB, s.HWMMiB = rss, hwm
	}
	if s.Scrapes == 0 && o.scrapes > 0 {
		return s, errors.New("no scrape was made before the deadline")
	}
	return s, nil
}

// shape is what each agent sends.
func (o options) shape() workload.Shape { return workload.Mix(o.families, o.series) }

// expectedSamples is the number of sample lines a complete text exposition
// has for this load, target_info apart.
func expectedSamples(o options) int64 {
	return int64(o.shape().Samples()) * int64(o.agents)
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

// send plays every agent's request with at most o.concurrency in flight.
func send(ctx context.Context, o options, s *summary) error {
	conn, err := grpc.NewClient(o.otlpEndpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("otlp client: %w", err)
	}
	defer conn.Close()
	client := pmetricotlp.NewGRPCClient(conn)

	start := time.Now()
	startTS := pcommon.NewTimestampFromTime(start.Add(-time.Minute))
	nowTS := pcommon.NewTimestampFromTime(start)

	shape := o.shape()
	agents := make(chan int)
	var (
		failed   atomic.Int64
		retries  atomic.Int64
		rejected atomic.Int64
		wire     atomic.Int64
		errOnce  sync.Once
		firstErr error
		wg       sync.WaitGroup
	)
	for range min(o.concurrency, o.agents) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range agents {
				req := pmetricotlp.NewExportRequestFromMetrics(shape.Batch(workload.AgentName(a), 0, startTS, nowTS))
				wire.Add(int64((&pmetric.ProtoMarshaler{}).MetricsSize(req.Metrics())))
				resp, tries, err := exportWithRetry(ctx, client, req)
				retries.Add(int64(tries - 1))
				if err != nil {
					failed.Add(1)
					errOnce.Do(func() { firstErr = fmt.Errorf("agent %d: %w", a, err) })
					continue
				}
				rejected.Add(resp.PartialSuccess().RejectedDataPoints())
			}
		}()
	}
feed:
	for a := 0; a < o.agents; a++ {
		select {
		case agents <- a:
		case <-ctx.Done():
			break feed
		}
	}
	close(agents)
	wg.Wait()

	s.SendSeconds = time.Since(start).Seconds()
	s.SendRequests = o.agents
	s.SendFailed = int(failed.Load())
	s.SendRetries = retries.Load()
	s.RejectedPoints = rejected.Load()
	s.SendWireBytes = wire.Load()
	if firstErr != nil {
		s.SendFirstError = firstErr.Error()
	}
	if ctx.Err() != nil {
		return fmt.Errorf("send: %w", ctx.Err())
	}
	if s.SendFailed == o.agents {
		return fmt.Errorf("send: every request failed: %w", firstErr)
	}
	return nil
}

// exportWithRetry sends one request, retrying a few times when the collector
// refuses it for now (memory_limiter, start-up), within the run's deadline.
func exportWithRetry(ctx context.Context, client pmetricotlp.GRPCClient, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, int, error) {
	const maxTries = 5
	backoff := 200 * time.Millisecond
	var lastErr error
	for try := 1; try <= maxTries; try++ {
		callCtx, cancel := context.WithTimeout(ctx, time.Minute)
		resp, err := client.Export(callCtx, req, grpc.WaitForReady(true))
		cancel()
		if err == nil {
			return resp, try, nil
		}
		lastErr = err
		switch status.Code(err) {
		case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded:
		default:
			return resp, try, err
		}
		if try == maxTries {
			break
		}
		select {
		case <-time.After(backoff):
			backoff *= 2
		case <-ctx.Done():
			return resp, try, lastErr
		}
	}
	return pmetricotlp.NewExportResponse(), maxTries, lastErr
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

// procMemory reads VmRSS and VmHWM (MiB) from /proc/<pid>/status.
func procMemory(pid int) (rss, hwm float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	var gotRSS, gotHWM bool
	for _, line := range strings.Split(string(b), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		fields := strings.Fields(val)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, 0, fmt.Errorf("/proc/%d/status: unexpected %s line %q", pid, key, line)
		}
		kb, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, 0, err
		}
		if key == "VmRSS" {
			rss, gotRSS = kb/1024, true
		} else {
			hwm, gotHWM = kb/1024, true
		}
	}
	if !gotRSS || !gotHWM {
		return 0, 0, fmt.Errorf("/proc/%d/status: no VmRSS/VmHWM", pid)
	}
	return rss, hwm, nil
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
