package agentprometheusexporter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
)

// TestUpdatingExistingSeriesDoesNotAllocate pins the ingest hot path: a
// batch whose series all exist is stored without a single allocation.
func TestUpdatingExistingSeriesDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	cfg := createDefaultConfig().(*Config)
	cfg.ResourceLabels = []string{"host.name", "cloud.region"}
	exp, err := newAgentPrometheusExporter(exportertest.NewNopSettings(metadata.Type), cfg, wallClock)
	require.NoError(t, err)
	md := agentBatch(1, 100)
	require.NoError(t, exp.consumeMetrics(context.Background(), md))
	allocs := testing.AllocsPerRun(50, func() { _ = exp.consumeMetrics(context.Background(), md) })
	assert.Zero(t, allocs, "allocations per batch of %d points", md.DataPointCount())
}
