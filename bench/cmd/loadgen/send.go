package main

import (
	"context"
	"fmt"
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
