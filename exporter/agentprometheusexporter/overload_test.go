package agentprometheusexporter

import (
	"bufio"
	"context"
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
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadatatest"
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
	require.Eventually(t, func() bool { return te.exp.inflight.Load() == 1 }, 5*time.Second, time.Millisecond)

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
	require.Eventually(t, func() bool { return te.exp.inflight.Load() == 0 }, 10*time.Second, 5*time.Millisecond)
	body, _ := te.scrapeRaw("")
	assert.Equal(t, 2, parseText(t, body), "target_info and bulky")
}

func TestAStalledScraperBlocksNeitherIngestionNorOtherScrapes(t *testing.T) {
	tel := componenttest.NewTelemetry()
	te := startExporterWith(t, metadatatest.NewSettings(tel), func(c *Config) { c.Scrape.Timeout = 3 * time.Second })
	te.consume(bulkyBatch(0, 1000))
	stalled := stalledScrape(t, te.endpoint, "")
	require.Eventually(t, func() bool { return te.exp.inflight.Load() == 1 }, 5*time.Second, time.Millisecond)

	// Ingestion goes on, including new series.
	for i := range 20 {
		start := time.Now()
		te.consume(bulkyBatch(1+i, 10))
		assert.Less(t, time.Since(start), time.Second, "ingestion waited for the stalled scrape")
	}
	// Other scrapes are served whole, both formats, while it stalls.
	for _, accept := range []string{"text/plain;version=0.0.4", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"} {
		start := time.Now()
		body, header := te.scrapeRaw(accept)
		assert.Less(t, time.Since(start), 3*time.Second, "a scrape waited for the stalled one")
		dec := expfmt.NewDecoder(strings.NewReader(body), expfmt.ResponseFormat(header))
		series := 0
		for {
			var mf dto.MetricFamily
			if err := dec.Decode(&mf); err == io.EOF {
				break
			} else {
				require.NoError(t, err)
			}
			series += len(mf.GetMetric())
		}
		assert.Equal(t, 1000+20*10+21, series, "every series and the target_info of 21 agents")
	}

	// The stalled scraper is cut off: the connection closes without the
	// final chunk, so it cannot take what it got for a whole response.
	require.NoError(t, stalled.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(stalled), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	_, err = io.Copy(io.Discard, resp.Body)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Eventually(t, func() bool {
		c := scrapeCounts(t, tel)
		return c["too_slow"]+c["timeout"] == 1
	}, 10*time.Second, 10*time.Millisecond)
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

func TestShutdownCutsOffAStalledScrape(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Server.NetAddr.Endpoint = freeEndpoint(t)
	cfg.Server.WriteTimeout = 0 // nothing but shutdown would end the scrape
	cfg.Scrape.Timeout = 0
	exp, err := newAgentPrometheusExporter(exportertest.NewNopSettings(metadata.Type), cfg, newFakeClock().clock())
	require.NoError(t, err)
	require.NoError(t, exp.start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, exp.consumeMetrics(context.Background(), bulkyBatch(0, 1000)))
	stalledScrape(t, cfg.Server.NetAddr.Endpoint, "")
	require.Eventually(t, func() bool { return exp.inflight.Load() == 1 }, 5*time.Second, time.Millisecond)

	start := time.Now()
	require.NoError(t, exp.shutdown(context.Background()))
	assert.Less(t, time.Since(start), shutdownGrace+2*time.Second, "shutdown waited for the stalled scrape")
	ln, err := net.Listen("tcp", cfg.Server.NetAddr.Endpoint)
	require.NoError(t, err, "the port is released")
	ln.Close()
}
