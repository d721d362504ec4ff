package agentprometheusexporter

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadatatest"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/scrape"
	"github.com/statsgate/statsgate/internal/testnet"
)

// bulkyBatch is n gauge series of one agent whose label values are 20 KiB
// each: an exposition of n×20 KiB, far more than socket buffers hold.
func bulkyBatch(agent, n int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "bulky")
	rm.Resource().Attributes().PutStr("service.instance.id", fmt.Sprint("agent-", agent))
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("bulky")
	g := m.SetEmptyGauge()
	pad := strings.Repeat("x", 20<<10)
	for i := range n {
		dp := g.DataPoints().AppendEmpty()
		dp.Attributes().PutStr("pad", fmt.Sprint(i, pad))
		dp.SetDoubleValue(float64(i))
	}
	return md
}

// stalledScrape sends a scrape and reads nothing, like a scraper that hung;
// its small receive buffer makes the server's writes block early.
func stalledScrape(t *testing.T, endpoint string, header string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", endpoint)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", metricsPath, endpoint, header)
	require.NoError(t, err)
	return conn
}

// scrapeCounts returns the scrapes counted per outcome.
func scrapeCounts(t *testing.T, tel *componenttest.Telemetry) map[string]int64 {
	return countsBy(t, tel, "otelcol_exporter_agentprometheus_scrapes", "outcome")
}

func parseText(t *testing.T, body string) int {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	return len(families)
}

func TestScrapesBeyondMaxConcurrentGet503AtOnce(t *testing.T) {
	tel := componenttest.NewTelemetry()
	te := startExporterWith(t, metadatatest.NewSettings(tel), func(c *Config) { c.Scrape.MaxConcurrent = 1 })
	te.consume(bulkyBatch(0, 1000))

	holder := stalledScrape(t, te.endpoint, "")
	require.Eventually(t, func() bool { return te.exp.handler.InFlight() == 1 }, 5*time.Second, time.Millisecond)

	start := time.Now()
	resp, err := http.Get("http://" + te.endpoint + metricsPath)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Less(t, time.Since(start), time.Second, "a refused scrape must not wait")
	assert.Equal(t, int64(1), scrapeCounts(t, tel)["refused"])

	// Once the stalled scrape is gone, scrapes are served again.
	holder.Close()
	require.Eventually(t, func() bool { return te.exp.handler.InFlight() == 0 }, 10*time.Second, 5*time.Millisecond)
	body, _ := te.scrapeRaw("")
	assert.Equal(t, 2, parseText(t, body), "target_info and bulky")
}

func TestAStalledScraperBlocksNeitherIngestionNorOtherScrapes(t *testing.T) {
	tel := componenttest.NewTelemetry()
	set := metadatatest.NewSettings(tel)
	core, logs := observer.New(zapcore.DebugLevel)
	set.Logger = zap.New(core)
	// The scrape timeout is far off: only the stall bound can cut the
	// scraper off in time.
	te := startExporterWith(t, set, func(c *Config) { c.Scrape.Timeout = 30 * time.Second })
	te.consume(bulkyBatch(0, 1000))
	stalled := stalledScrape(t, te.endpoint, "")
	require.Eventually(t, func() bool { return te.exp.handler.InFlight() == 1 }, 5*time.Second, time.Millisecond)
	stalledAt := time.Now()

	// Ingestion goes on, including new series.
	for i := range 20 {
		start := time.Now()
		te.consume(bulkyBatch(1+i, 10))
		assert.Less(t, time.Since(start), time.Second, "ingestion waited for the stalled scrape")
	}
	// Other scrapes are served whole, both formats, while it stalls. Go's
	// client asks for gzip, an encoding of its own; a scrape without
	// compression waits for the stalled scraper's encoding, at most scrape.MaxStall.
	for _, tt := range []struct {
		accept, acceptEncoding string
		within                 time.Duration
	}{
		{"text/plain;version=0.0.4", "", 3 * time.Second},
		{"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", "", 3 * time.Second},
		{"text/plain;version=0.0.4", "identity", scrape.MaxStall + 3*time.Second},
	} {
		start := time.Now()
		body, header := scrapeWith(t, te.endpoint, tt.accept, tt.acceptEncoding)
		assert.Less(t, time.Since(start), tt.within, "a scrape waited for the stalled one")
		dec := expfmt.NewDecoder(strings.NewReader(body), expfmt.ResponseFormat(header))
		series := 0
		for {
			var mf dto.MetricFamily
			if err := dec.Decode(&mf); errors.Is(err, io.EOF) {
				break
			} else {
				require.NoError(t, err)
			}
			series += len(mf.GetMetric())
		}
		assert.Equal(t, 1000+20*10+21, series, "every series and the target_info of 21 agents")
	}

	// The stalled scraper is cut off after scrape.MaxStall, long before its
	// timeout: its handler ends, freeing its slot and its connection.
	require.Eventually(t, func() bool {
		return scrapeCounts(t, tel)["too_slow"] == 1 && te.exp.handler.InFlight() == 0
	}, 10*time.Second, 10*time.Millisecond, "the stalled scraper was not cut off: %v", scrapeCounts(t, tel))
	assert.Zero(t, scrapeCounts(t, tel)["timeout"])
	cut := logs.FilterMessage("Scrape cut off").All()
	require.Len(t, cut, 1)
	assert.Less(t, cut[0].Time.Sub(stalledAt), scrape.MaxStall+2*time.Second, "cut off %v after it stalled", cut[0].Time.Sub(stalledAt))

	// The connection closes without the final chunk, so the scraper cannot
	// take what it got for a whole response.
	require.NoError(t, stalled.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(stalled), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	_, err = io.Copy(io.Discard, resp.Body)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

// scrapeWith fetches /metrics with the given Accept and Accept-Encoding
// headers; without the latter Go's client asks for gzip and unpacks it.
func scrapeWith(t *testing.T, endpoint, accept, acceptEncoding string) (string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+endpoint+metricsPath, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", accept)
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body), resp.Header
}

func TestTheScrapersTimeoutHeaderCutsTheScrape(t *testing.T) {
	tel := componenttest.NewTelemetry()
	te := startExporterWith(t, metadatatest.NewSettings(tel), nil)
	te.consume(bulkyBatch(0, 1000))

	start := time.Now()
	conn := stalledScrape(t, te.endpoint, "X-Prometheus-Scrape-Timeout-Seconds: 0.5\r\n")
	require.Eventually(t, func() bool { return scrapeCounts(t, tel)["timeout"] == 1 }, 10*time.Second, 10*time.Millisecond)
	assert.Less(t, time.Since(start), 5*time.Second)

	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "a timed-out scrape must not look complete")
}

func TestConcurrentScrapesShareEncodings(t *testing.T) {
	tel := componenttest.NewTelemetry()
	te := startExporterWith(t, metadatatest.NewSettings(tel), nil)
	te.consume(bulkyBatch(0, 500))

	const scrapers = 8
	bodies := make([]string, scrapers)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range scrapers {
		wg.Go(func() {
			<-gate
			bodies[i], _ = te.scrapeRaw("")
		})
	}
	close(gate)
	wg.Wait()
	for _, b := range bodies {
		assert.Equal(t, bodies[0], b)
	}
	assert.Equal(t, 2, parseText(t, bodies[0]), "target_info and bulky")
	c := scrapeCounts(t, tel)
	assert.Equal(t, int64(scrapers), c["served"]+c["shared"])
	assert.Positive(t, c["shared"], "no scrape shared an encoding: %v", c)
}

// slowScrape sends a scrape and reads it at about rate bytes a second, like
// a scraper on a slow link: never stalled, but far from done for a while.
func slowScrape(t *testing.T, endpoint string, rate int) {
	t.Helper()
	conn, err := net.Dial("tcp", endpoint)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", metricsPath, endpoint)
	require.NoError(t, err)
	// Keep the client's buffers from taking the whole response at once.
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(64<<10))
	go func() {
		const tick = 10 * time.Millisecond
		buf := make([]byte, rate/int(time.Second/tick))
		for {
			if _, err := io.ReadFull(conn, buf); err != nil {
				return
			}
			time.Sleep(tick)
		}
	}()
}

func TestShutdownCutsOffASlowScrape(t *testing.T) {
	tel := componenttest.NewTelemetry()
	cfg := createDefaultConfig().(*Config)
	cfg.Server.NetAddr.Endpoint = testnet.FreeEndpoint(t)
	cfg.Server.WriteTimeout = 0 // nothing but shutdown would end the scrape
	cfg.Scrape.Timeout = 0
	exp, err := newAgentPrometheusExporter(metadatatest.NewSettings(tel), cfg, newFakeClock().clock())
	require.NoError(t, err)
	require.NoError(t, exp.start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, exp.consumeMetrics(context.Background(), bulkyBatch(0, 1000)))
	// 20 MiB at 2 MiB/s: it reads on through the shutdown's grace period,
	// each write well within scrape.MaxStall.
	slowScrape(t, cfg.Server.NetAddr.Endpoint, 2<<20)
	require.Eventually(t, func() bool { return exp.handler.InFlight() == 1 }, 5*time.Second, time.Millisecond)

	start := time.Now()
	require.NoError(t, exp.shutdown(context.Background()))
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, shutdownGrace-500*time.Millisecond, "the scrape in flight did not get its grace period: %v", scrapeCounts(t, tel))
	assert.Less(t, took, shutdownGrace+2*time.Second, "shutdown waited for the slow scrape")
	assert.Zero(t, scrapeCounts(t, tel)["too_slow"], "a scraper reading steadily was taken for a stalled one")
	ln, err := net.Listen("tcp", cfg.Server.NetAddr.Endpoint)
	require.NoError(t, err, "the port is released")
	ln.Close()
}
