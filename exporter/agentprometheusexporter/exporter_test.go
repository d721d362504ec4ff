package agentprometheusexporter

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
	"github.com/statsgate/statsgate/internal/testnet"
)

func newTestExporter(t *testing.T, endpoint string) exporter.Metrics {
	t.Helper()
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Server.NetAddr.Endpoint = endpoint
	exp, err := NewFactory().CreateMetrics(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	return exp
}

func scrapeStatus(t *testing.T, endpoint string) int {
	t.Helper()
	resp, err := http.Get("http://" + endpoint + metricsPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	return resp.StatusCode
}

func TestLifecycleReleasesPort(t *testing.T) {
	endpoint := testnet.FreeEndpoint(t)
	ctx := context.Background()
	host := componenttest.NewNopHost()

	first := newTestExporter(t, endpoint)
	require.NoError(t, first.Start(ctx, host))
	assert.Equal(t, http.StatusOK, scrapeStatus(t, endpoint))
	require.NoError(t, first.Shutdown(ctx))

	// The port is free again as soon as Shutdown returns.
	ln, err := net.Listen("tcp", endpoint)
	require.NoError(t, err, "port still bound after Shutdown")
	require.NoError(t, ln.Close())

	// The same instance starts again, and so does a new one on the same port.
	require.NoError(t, first.Start(ctx, host))
	assert.Equal(t, http.StatusOK, scrapeStatus(t, endpoint))
	require.NoError(t, first.Shutdown(ctx))

	second := newTestExporter(t, endpoint)
	require.NoError(t, second.Start(ctx, host))
	assert.Equal(t, http.StatusOK, scrapeStatus(t, endpoint))
	require.NoError(t, second.Shutdown(ctx))
}

func TestStartFailsWhenPortIsTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()

	exp := newTestExporter(t, ln.Addr().String())
	require.Error(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, exp.Shutdown(context.Background()))
}

func TestShutdownWithoutStart(t *testing.T) {
	exp := newTestExporter(t, testnet.FreeEndpoint(t))
	require.NoError(t, exp.Shutdown(context.Background()))
}
