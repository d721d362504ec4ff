package workload

import (
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

func TestMix(t *testing.T) {
	for _, tt := range []struct {
		families                     int
		gauges, counters, histograms int
	}{
		{10, 4, 3, 3},
		{20, 8, 6, 6},
		{1, 1, 0, 0},
		{5, 4, 1, 0},
		{8, 4, 3, 1},
		{13, 7, 3, 3},
	} {
		s := Mix(tt.families, 7)
		if s.Gauges != tt.gauges || s.Counters != tt.counters || s.Histograms != tt.histograms {
			t.Errorf("Mix(%d): %d gauges, %d counters, %d histograms; want %d, %d, %d",
				tt.families, s.Gauges, s.Counters, s.Histograms, tt.gauges, tt.counters, tt.histograms)
		}
	}
}

// TestBatchIsWhatTheShapeSays builds the batches and counts what they hold:
// the figures the reports give are the batches' own.
func TestBatchIsWhatTheShapeSays(t *testing.T) {
	var total uint64
	for _, c := range bucketCounts {
		total += c
	}
	if total != histogramCount || len(bucketCounts) != len(Bounds)+1 {
		t.Fatalf("bucket counts %v: sum %d and %d buckets, want %d and %d", bucketCounts, total, len(bucketCounts), histogramCount, len(Bounds)+1)
	}
	for name, s := range map[string]Shape{"gateway": Gateway, "seed 4+10": Seed(4, 10), "seed 2+5": Seed(2, 5)} {
		t.Run(name, func(t *testing.T) {
			md := s.Batch(AgentName(3), 0, 1, 2)
			if n := md.DataPointCount(); n != s.SeriesPerAgent() {
				t.Errorf("%d points, SeriesPerAgent says %d", n, s.SeriesPerAgent())
			}
			rm := md.ResourceMetrics().At(0)
			if got := keys(rm.Resource().Attributes()); !slices.Equal(got, s.resourceKeys()) {
				t.Errorf("resource keys %v, want %v", got, s.resourceKeys())
			}
			ms := rm.ScopeMetrics().At(0).Metrics()
			samples := 0
			for i := range ms.Len() {
				m := ms.At(i)
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					samples += m.Gauge().DataPoints().Len()
					checkKeys(t, s, m.Gauge().DataPoints().At(0).Attributes())
				case pmetric.MetricTypeSum:
					samples += m.Sum().DataPoints().Len()
					checkKeys(t, s, m.Sum().DataPoints().At(0).Attributes())
				case pmetric.MetricTypeHistogram:
					dp := m.Histogram().DataPoints().At(0)
					samples += m.Histogram().DataPoints().Len() * (dp.ExplicitBounds().Len() + 1 + 2)
					checkKeys(t, s, dp.Attributes())
				}
			}
			if samples != s.Samples() {
				t.Errorf("%d text samples, Samples says %d", samples, s.Samples())
			}
		})
	}
}

func TestNewGenerationsAreNewSeries(t *testing.T) {
	route := func(gen int) string {
		md := Gateway.Batch(AgentName(0), gen, 1, 2)
		v, _ := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0).Attributes().Get("route")
		return v.Str()
	}
	if route(0) == route(1) || route(1) == route(2) {
		t.Errorf("routes of generations 0, 1, 2: %q, %q, %q", route(0), route(1), route(2))
	}
}

func TestDescribe(t *testing.T) {
	want := "Each agent is one resource (`cloud.region`, `host.name`, `service.instance.id`, `service.name`, " +
		"`service.namespace`) sending the same 10 families: 4 gauges, 3 monotonic cumulative counters and " +
		"3 cumulative histograms with 10 bounds, 100 series per family, each series with 4 point attributes " +
		"(`code`, `method`, `region`, `route`, in that order): 1000 OTLP series and 4600 text samples per agent, " +
		"and its `target_info`."
	if got := Gateway.Describe(); got != want {
		t.Errorf("Gateway.Describe():\n got %s\nwant %s", got, want)
	}
	if got := Seed(2, 5).Describe(); !strings.Contains(got, "100 families: 100 gauges, 1 series per family") {
		t.Errorf("Seed(2, 5).Describe(): %s", got)
	}
}

func keys(m pcommon.Map) []string {
	var out []string
	for k := range m.All() {
		out = append(out, k)
	}
	return out
}

func checkKeys(t *testing.T, s Shape, attrs pcommon.Map) {
	t.Helper()
	if got := keys(attrs); !slices.Equal(got, s.pointKeys()) {
		t.Fatalf("point keys %v, want %v", got, s.pointKeys())
	}
}
