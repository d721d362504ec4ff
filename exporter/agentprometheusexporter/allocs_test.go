package agentprometheusexporter

import (
	"context"
	"io"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// TestUpdatingExistingSeriesDoesNotAllocate pins the ingest hot path: a
// batch whose series all exist is stored without a single allocation.
func TestUpdatingExistingSeriesDoesNotAllocate(t *testing.T) {
	if storetest.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	cfg := createDefaultConfig().(*Config)
	cfg.ResourceConstantLabels.Included = []string{"host.name", "cloud.region"}
	exp, err := newAgentPrometheusExporter(exportertest.NewNopSettings(metadata.Type), cfg, wallClock)
	require.NoError(t, err)
	md := storetest.AgentBatch(1, 100)
	require.NoError(t, exp.consumeMetrics(context.Background(), md))
	allocs := testing.AllocsPerRun(50, func() { _ = exp.consumeMetrics(context.Background(), md) })
	assert.Zero(t, allocs, "allocations per batch of %d points", md.DataPointCount())
}

// TestWarmWriterDoesNotAllocatePerSeries pins the scrape hot path: once their pools
// are warm, the direct writers write the gateway workload in every format
// and scheme, with legacy and with UTF-8 names, with a few allocations per
// scrape (the lists of families and of target_info series), none per
// series.
func TestWarmWriterDoesNotAllocatePerSeries(t *testing.T) {
	if storetest.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, strategy := range []TranslationStrategy{UnderscoreEscapingWithSuffixes, NoUTF8EscapingWithSuffixes} {
		cfg := createDefaultConfig().(*Config)
		cfg.ResourceConstantLabels.Included = []string{"host.name", "cloud.region"}
		cfg.TranslationStrategy = strategy
		exp, err := newAgentPrometheusExporter(exportertest.NewNopSettings(metadata.Type), cfg, wallClock)
		require.NoError(t, err)
		for a := range 20 {
			require.NoError(t, exp.consumeMetrics(context.Background(), storetest.AgentBatch(a, 20)))
		}
		opts := exp.encoder.Options
		for _, scheme := range []model.EscapingScheme{model.NoEscaping, model.UnderscoreEscaping, model.DotsEscaping, model.ValueEncodingEscaping} {
			for _, created := range []bool{false, true} {
				opts.CreatedSamples = created
				writers := map[string]func() error{
					"text": func() error {
						return exposition.Write(io.Discard, exp.store, exposition.Request{Format: exposition.Text, Options: opts, Escaping: scheme})
					},
					"openmetrics": func() error {
						return exposition.Write(io.Discard, exp.store, exposition.Request{Format: exposition.OpenMetrics, Options: opts, Escaping: scheme})
					},
				}
				for name, write := range writers {
					require.NoError(t, write())
					allocs := testing.AllocsPerRun(10, func() { _ = write() })
					assert.LessOrEqual(t, allocs, 4.0, "%s, %s, escaping=%s, created %v: allocations per scrape of %d series",
						strategy, name, scheme, created, exp.store.SeriesCount())
				}
			}
		}
	}
}
