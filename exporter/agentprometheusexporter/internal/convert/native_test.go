package convert

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

func otlpBuckets(offset int32, counts ...uint64) pmetric.ExponentialHistogramDataPointBuckets {
	b := pmetric.NewExponentialHistogramDataPointBuckets()
	b.SetOffset(offset)
	b.BucketCounts().FromRaw(counts)
	return b
}

func TestFromOTLP(t *testing.T) {
	tests := []struct {
		name   string
		in     pmetric.ExponentialHistogramDataPointBuckets
		down   int32
		expect store.Buckets
	}{
		{"index shifts by one", otlpBuckets(-2, 1, 2, 3), 0, store.Buckets{Offset: -1, Counts: []uint64{1, 2, 3}}},
		{"downscale by one merges pairs", otlpBuckets(0, 1, 2, 3, 4), 1, store.Buckets{Offset: 1, Counts: []uint64{3, 7}}},
		{"downscale of an odd start", otlpBuckets(1, 1, 2, 3), 1, store.Buckets{Offset: 1, Counts: []uint64{1, 5}}},
		{"negative indices floor", otlpBuckets(-3, 1, 1, 1), 1, store.Buckets{Offset: -1, Counts: []uint64{1, 2}}},
		{"empty", otlpBuckets(5), 0, store.Buckets{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.expect, fromOTLP(tt.in, tt.down))
		})
	}
}

func TestDownscaleMatchesFromOTLP(t *testing.T) {
	in := otlpBuckets(-5, 1, 2, 3, 4, 5, 6, 7)
	for down := int32(0); down < 4; down++ {
		assert.Equal(t, fromOTLP(in, down), downscale(fromOTLP(in, 0), down), "down=%d", down)
	}
}

func TestAddBuckets(t *testing.T) {
	a := store.Buckets{Offset: 1, Counts: []uint64{1, 1}}
	b := store.Buckets{Offset: 2, Counts: []uint64{2, 2, 2}}
	assert.Equal(t, store.Buckets{Offset: 1, Counts: []uint64{1, 3, 2, 2}}, addBuckets(a, b))
	assert.Equal(t, a, addBuckets(a, store.Buckets{}))
	assert.Equal(t, b, addBuckets(store.Buckets{}, b))
}
