// Command capacity measures what one collector replica carries: it sends a
// workload over OTLP/gRPC for a while, as fast as the collector takes it,
// and reports the points it acknowledged per second and per CPU-second of
// the collector process (from /proc/<pid>/stat), and the collector's memory.
//
//	capacity -otlp 127.0.0.1:4317 -pid 1234 -workload gateway -agents 100 -duration 20s
//
// The gateway workload is bench/internal/workload's (every agent's batch
// updates the same 1000 series each time); the grpc workload is otelgrpc
// v0.64's rpc.server.duration in milliseconds with integer status codes
// (internal/grpcstatstest), which the grpcstats processor rewrites point by
// point. With -once it sends every agent's batch once and exits: to load a
// number of series and read the memory they take.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/statsgate/statsgate/bench/internal/workload"
	"github.com/statsgate/statsgate/internal/grpcstatstest"
)

// clockTicks is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on Linux for every architecture that matters here).
const clockTicks = 100

type options struct {
	otlp        string
	pid         int
	workload    string
	agents      int
	points      int
	duration    time.Duration
	concurrency int
	once        bool
	name        string
}

// Result is what one run measured.
type Result struct {
	Name             string  `json:"name"`
	Workload         string  `json:"workload"`
	Agents           int     `json:"agents"`
	PointsPerRequest int     `json:"points_per_request"`
	Seconds          float64 `json:"seconds"`
	Points           int64   `json:"points"`
	PointsPerSecond  float64 `json:"points_per_second"`
	CPUSeconds       float64 `json:"collector_cpu_seconds"`
	PointsPerCPUSec  float64 `json:"points_per_cpu_second"`
	RSSMiB           float64 `json:"collector_rss_mib"`
	Failed           int64   `json:"failed_requests"`
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("capacity: ")
	var o options
	flag.StringVar(&o.otlp, "otlp", "127.0.0.1:4317", "OTLP/gRPC endpoint of the collector")
	flag.IntVar(&o.pid, "pid", 0, "pid of the collector, for its CPU time and memory (required)")
	flag.StringVar(&o.workload, "workload", "gateway", "gateway (1000 series per agent of gauges, counters, histograms) or grpc (otelgrpc v0.64 durations)")
	flag.IntVar(&o.agents, "agents", 100, "agents, one resource and one request each per round")
	flag.IntVar(&o.points, "points", 1000, "points per request of the grpc workload")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "how long to send")
	flag.IntVar(&o.concurrency, "concurrency", 4, "requests in flight at most")
	flag.BoolVar(&o.once, "once", false, "send every agent's batch once and exit")
	flag.StringVar(&o.name, "name", "", "label of this run in the output")
	flag.Parse()
	if o.pid == 0 {
		log.Fatal("-pid is required")
	}
	r, err := run(o)
	if err != nil {
		log.Fatal(err)
	}
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
}

// batch returns agent a's request for round gen.
func (o options) batch(a, gen int, start, ts pcommon.Timestamp) pmetric.Metrics {
	if o.workload == "gateway" {
		return workload.Gateway.Batch(workload.AgentName(a), 0, start, ts)
	}
	md := grpcstatstest.LegacyBatch(o.points, false)
	rm := md.ResourceMetrics().At(0)
	rm.Resource().Attributes().PutStr("service.instance.id", workload.AgentName(a))
	dps := rm.ScopeMetrics().At(0).Metrics().At(0).Histogram().DataPoints()
	for i := 0; i < dps.Len(); i++ {
		dps.At(i).SetStartTimestamp(start)
		dps.At(i).SetTimestamp(ts)
		dps.At(i).SetCount(uint64(3 + gen))
	}
	return md
}

func (o options) pointsPerRequest() int {
	if o.workload == "gateway" {
		return workload.Gateway.SeriesPerAgent()
	}
	return o.points
}

func run(o options) (Result, error) {
	if o.workload != "gateway" && o.workload != "grpc" {
		return Result{}, fmt.Errorf("-workload: %q is neither gateway nor grpc", o.workload)
	}
	conn, err := grpc.NewClient(o.otlp, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return Result{}, err
	}
	defer conn.Close()
	client := pmetricotlp.NewGRPCClient(conn)

	ctx := context.Background()
	if !o.once {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	cpu0, err := cpuSeconds(o.pid)
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	startTS := pcommon.NewTimestampFromTime(start.Add(-time.Minute))

	type job struct{ agent, gen int }
	jobs := make(chan job)
	var points, failed atomic.Int64
	var wg sync.WaitGroup
	for range o.concurrency {
		wg.Go(func() {
			for j := range jobs {
				ts := pcommon.NewTimestampFromTime(time.Now())
				req := pmetricotlp.NewExportRequestFromMetrics(o.batch(j.agent, j.gen, startTS, ts))
				callCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_, err := client.Export(callCtx, req, grpc.WaitForReady(true))
				cancel()
				if err != nil {
					failed.Add(1)
					continue
				}
				points.Add(int64(req.Metrics().DataPointCount()))
			}
		})
	}
send:
	for gen := 0; ; gen++ {
		for a := range o.agents {
			select {
			case <-ctx.Done():
				break send
			case jobs <- job{a, gen}:
			}
		}
		if o.once {
			break
		}
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	cpu1, err := cpuSeconds(o.pid)
	if err != nil {
		return Result{}, err
	}
	rss, err := rssMiB(o.pid)
	if err != nil {
		return Result{}, err
	}
	r := Result{
		Name: o.name, Workload: o.workload, Agents: o.agents, PointsPerRequest: o.pointsPerRequest(),
		Seconds: elapsed, Points: points.Load(), PointsPerSecond: float64(points.Load()) / elapsed,
		CPUSeconds: cpu1 - cpu0, RSSMiB: rss, Failed: failed.Load(),
	}
	if r.CPUSeconds > 0 {
		r.PointsPerCPUSec = float64(r.Points) / r.CPUSeconds
	}
	if r.Failed > 0 {
		return r, fmt.Errorf("%d requests failed", r.Failed)
	}
	return r, nil
}

// cpuSeconds is the user and system CPU time of a process so far.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields count from after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc/<pid>/stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, errors.New("short /proc/<pid>/stat")
	}
	utime, err1 := strconv.ParseFloat(f[11], 64) // field 14
	stime, err2 := strconv.ParseFloat(f[12], 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return (utime + stime) / clockTicks, nil
}

// rssMiB is a process's resident memory now.
func rssMiB(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, errors.New("no VmRSS")
}
