package grpcstatsprocessor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/metadata"
)

// fuzzConfigs are the configurations every input runs through: both
// targets with duplicates dropped, and one keeping duplicates and
// re-bucketing, under which no point may be lost.
func fuzzConfigs() []*Config {
	semconv := createDefaultConfig().(*Config)
	grpc := createDefaultConfig().(*Config)
	grpc.Target = dialect.TargetGRPC
	grpc.Methods.MaxPerService = 2
	keep := createDefaultConfig().(*Config)
	keep.Duplicates = DuplicatesKeep
	keep.HistogramBounds = BoundsCommon
	return []*Config{semconv, grpc, keep}
}

// FuzzProcessOTLP runs arbitrary OTLP metrics through the processor: it
// must not panic, hands every batch on, and its output must marshal and
// unmarshal back to the same bytes (valid pdata). It never adds metrics or
// points, keeps the points of the metrics no dialect recognises (they pass
// untouched), keeps at least one point when the input held recognised
// ones (duplicates dropped keep the best dialect's), and with duplicates
// kept loses none. Each input goes through twice, so that the duplicate
// state and the method guard see it again.
func FuzzProcessOTLP(f *testing.F) {
	fixtures, err := filepath.Glob(filepath.Join("testdata", "fixtures", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	var seeds []pmetric.Metrics
	for _, path := range fixtures {
		if filepath.Ext(path[:len(path)-len(".json")]) == ".manifest" {
			continue
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(raw)
		if err != nil {
			f.Fatalf("%s: %v", path, err)
		}
		seeds = append(seeds, md)
	}
	for _, row := range procRows() {
		seeds = append(seeds, procBatch(row))
	}
	recognisedSeeds := make([]int, len(fuzzConfigs()))
	for _, md := range seeds {
		b, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		for i, cfg := range fuzzConfigs() {
			if recognised, _ := countPoints(f, cfg, md); recognised > 0 {
				recognisedSeeds[i]++
			}
		}
	}
	// Without seeds of recognised points, the checks below that need them
	// would hold for want of input.
	for i, n := range recognisedSeeds {
		if n == 0 {
			f.Fatalf("config %d: no seed holds points it recognises", i)
		}
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(data)
		if err != nil {
			t.Skip("not OTLP")
		}
		for i, cfg := range fuzzConfigs() {
			recognised, passed := countPoints(t, cfg, in)
			sink := new(consumertest.MetricsSink)
			p, err := NewFactory().CreateMetrics(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, sink)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := p.ConsumeMetrics(context.Background(), cloneMetrics(in)); err != nil {
					t.Fatal(err)
				}
			}
			if n := len(sink.AllMetrics()); n != 2 {
				t.Fatalf("config %d: %d batches handed on of 2", i, n)
			}
			for _, out := range sink.AllMetrics() {
				b, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(out)
				if err != nil {
					t.Fatalf("config %d: output does not marshal: %v", i, err)
				}
				back, err := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(b)
				if err != nil {
					t.Fatalf("config %d: output does not unmarshal: %v", i, err)
				}
				if again, _ := (&pmetric.ProtoMarshaler{}).MarshalMetrics(back); !bytes.Equal(b, again) {
					t.Fatalf("config %d: output changes in a marshal round trip", i)
				}
				if out.MetricCount() > in.MetricCount() || out.DataPointCount() > in.DataPointCount() {
					t.Fatalf("config %d: %d metrics, %d points out of %d, %d", i, out.MetricCount(), out.DataPointCount(), in.MetricCount(), in.DataPointCount())
				}
				// Only recognised metrics are dropped, and never all of those
				// of a concept: the best dialect's stay.
				least := passed
				if recognised > 0 {
					least++
				}
				if out.DataPointCount() < least {
					t.Fatalf("config %d: %d points out of %d, %d of them in metrics no dialect recognises and %d recognised",
						i, out.DataPointCount(), in.DataPointCount(), passed, recognised)
				}
				if cfg.Duplicates == DuplicatesKeep && (out.MetricCount() != in.MetricCount() || out.DataPointCount() != in.DataPointCount()) {
					t.Fatalf("config %d keeps duplicates, yet %d metrics, %d points out of %d, %d", i, out.MetricCount(), out.DataPointCount(), in.MetricCount(), in.DataPointCount())
				}
			}
			if err := p.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// countPoints counts the points of md in metrics that one of cfg's dialects
// recognises, and in the others.
func countPoints(tb testing.TB, cfg *Config, md pmetric.Metrics) (recognised, passed int) {
	var sinks []dialect.Sink
	for _, d := range cfg.precedence() {
		s, err := dialect.New(d, cfg.Target)
		if err != nil {
			tb.Fatal(err)
		}
		sinks = append(sinks, s)
	}
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				recognisedBy := false
				for _, s := range sinks {
					recognisedBy = recognisedBy || s.Recognize(sm.Scope(), m) != nil
				}
				if recognisedBy {
					recognised += pointCount(m)
				} else {
					passed += pointCount(m)
				}
			}
		}
	}
	return recognised, passed
}
