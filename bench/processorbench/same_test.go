package processorbench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/internal/grpcstatstest"
)

// TestSameWork states what each processor does to the benchmark batches, so
// that the numbers compare known work: ours writes the canonical form;
// metricstransform renames and scales, and maps the status only when it is
// a decimal string.
func TestSameWork(t *testing.T) {
	canonical := canonicalStatus(t)
	scaledBounds := make([]float64, len(grpcstatstest.LegacyBounds))
	for i, b := range grpcstatstest.LegacyBounds {
		scaledBounds[i] = b / 1000
	}

	for _, strCode := range []bool{false, true} {
		t.Run(fmt.Sprintf("strcode=%v", strCode), func(t *testing.T) {
			batch := grpcstatstest.LegacyBatch(batchPoints, strCode)

			t.Run("ours", func(t *testing.T) {
				for _, name := range []string{"ours-1sink", "ours-2sinks", "ours-5sinks"} {
					h := process(t, name, batch)
					m := onlyMetric(t, h)
					if m.Name() != "rpc.server.call.duration" || m.Unit() != "s" {
						t.Fatalf("%s: got %q unit %q, want rpc.server.call.duration unit s", name, m.Name(), m.Unit())
					}
					forEachPoint(t, m, func(i int, dp pmetric.HistogramDataPoint) {
						status := canonical[i%len(canonical)]
						want := map[string]any{
							"rpc.method":      fmt.Sprint("shop.Cart/Method", i%grpcstatstest.Methods),
							"rpc.status_code": status,
							"rpc.system.name": "grpc",
							"tenant":          fmt.Sprint("t", i/100),
						}
						if status == "UNKNOWN" { // the one server error among StatusCodes
							want["error.type"] = status
						}
						checkPoint(t, name, i, dp, want, scaledBounds)
					})
				}
			})

			t.Run(metricstransform, func(t *testing.T) {
				m := onlyMetric(t, process(t, metricstransform, batch))
				// No operation sets the unit.
				if m.Name() != "rpc.server.call.duration" || m.Unit() != "ms" {
					t.Fatalf("got %q unit %q, want rpc.server.call.duration unit ms", m.Name(), m.Unit())
				}
				forEachPoint(t, m, func(i int, dp pmetric.HistogramDataPoint) {
					var status any = canonical[i%len(canonical)]
					if !strCode {
						// value_actions compare Value.Str(), "" for an int:
						// the key is renamed, the code is not mapped.
						status = grpcstatstest.StatusCodes[i%len(grpcstatstest.StatusCodes)]
					}
					want := map[string]any{
						"rpc.method":      fmt.Sprint("Method", i%grpcstatstest.Methods),
						"rpc.service":     "shop.Cart",
						"rpc.status_code": status,
						"rpc.system.name": "grpc",
						"tenant":          fmt.Sprint("t", i/100),
					}
					checkPoint(t, metricstransform, i, dp, want, scaledBounds)
				})
			})
		})
	}

	t.Run("passthrough", func(t *testing.T) {
		batch := grpcstatstest.UnrelatedBatch(batchPoints)
		for _, name := range []string{"ours-0sinks", "ours-5sinks", metricstransform} {
			got := process(t, name, batch)
			if !sameMetrics(t, got, batch) {
				t.Errorf("%s changed a batch of unrelated metrics", name)
			}
		}
	})

	t.Run("ours-0sinks", func(t *testing.T) {
		batch := grpcstatstest.LegacyBatch(batchPoints, false)
		if got := process(t, "ours-0sinks", batch); !sameMetrics(t, got, batch) {
			t.Error("ours with no sinks changed the batch")
		}
	})
}

// sameMetrics reports whether two batches have the same content.
func sameMetrics(t *testing.T, a, b pmetric.Metrics) bool {
	t.Helper()
	var m pmetric.ProtoMarshaler
	pa, err := m.MarshalMetrics(a)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := m.MarshalMetrics(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(pa, pb)
}

// canonicalStatus lists the names of the legacy batches' status codes, in
// their order, as the canonical form writes them.
func canonicalStatus(t *testing.T) []string {
	t.Helper()
	names := []string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "NOT_FOUND"}
	if want := []int64{0, 1, 2, 3, 5}; !slices.Equal(grpcstatstest.StatusCodes, want) {
		t.Fatalf("the legacy batches cycle through codes %v; canonicalStatus names %v", grpcstatstest.StatusCodes, want)
	}
	return names
}

// process hands a copy of batch to the named processor and returns what it
// passed on.
func process(t *testing.T, name string, batch pmetric.Metrics) pmetric.Metrics {
	t.Helper()
	sink := new(consumertest.MetricsSink)
	p := newProcessor(t, name, sink)
	md := pmetric.NewMetrics()
	batch.CopyTo(md)
	if err := p.ConsumeMetrics(context.Background(), md); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	all := sink.AllMetrics()
	if len(all) != 1 {
		t.Fatalf("%s: passed on %d batches, want 1", name, len(all))
	}
	return all[0]
}

func onlyMetric(t *testing.T, md pmetric.Metrics) pmetric.Metric {
	t.Helper()
	if md.ResourceMetrics().Len() != 1 || md.ResourceMetrics().At(0).ScopeMetrics().Len() != 1 ||
		md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().Len() != 1 {
		t.Fatalf("want one resource, scope and metric, got %d data points in total", md.DataPointCount())
	}
	return md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0)
}

func forEachPoint(t *testing.T, m pmetric.Metric, f func(int, pmetric.HistogramDataPoint)) {
	t.Helper()
	if m.Type() != pmetric.MetricTypeHistogram {
		t.Fatalf("%s is a %v, want a histogram", m.Name(), m.Type())
	}
	dps := m.Histogram().DataPoints()
	if dps.Len() != batchPoints {
		t.Fatalf("%s has %d points, want %d", m.Name(), dps.Len(), batchPoints)
	}
	for i := range dps.Len() {
		f(i, dps.At(i))
	}
}

// checkPoint compares a converted point's attributes (values and types),
// sum and bounds with what was expected; it stops the test at the first
// mismatch.
func checkPoint(t *testing.T, name string, i int, dp pmetric.HistogramDataPoint, want map[string]any, bounds []float64) {
	t.Helper()
	attrs := pcommon.NewMap()
	if err := attrs.FromRaw(want); err != nil {
		t.Fatal(err)
	}
	if !dp.Attributes().Equal(attrs) {
		t.Fatalf("%s: point %d has attributes %v, want %v", name, i, dp.Attributes().AsRaw(), want)
	}
	if math.Abs(dp.Sum()-0.012) > 1e-15 || dp.Count() != 3 {
		t.Fatalf("%s: point %d has sum %v count %d, want 0.012 and 3", name, i, dp.Sum(), dp.Count())
	}
	if got := dp.ExplicitBounds().AsRaw(); !slices.Equal(got, bounds) {
		t.Fatalf("%s: point %d has bounds %v, want %v", name, i, got, bounds)
	}
}
