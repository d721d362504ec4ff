package processorbench

import (
	"context"
	"strconv"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/metricstransformprocessor"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/statsgate/statsgate/internal/grpcstatus"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor"
)

// batchPoints is the number of data points (or metrics) per batch: large
// enough that stopping and starting the timer around each copy is
// negligible next to the processing of one batch.
const batchPoints = 2000

// sinkSets are our processor's configurations by name: the dialects to
// merge, as in the in-package benchmarks.
var sinkSets = map[string][]any{
	"ours-0sinks": {},
	"ours-1sink":  {"semconv_legacy"},
	"ours-2sinks": {"semconv", "semconv_legacy"},
	"ours-5sinks": {"semconv", "grpc_native", "semconv_legacy", "opencensus", "grpc_prometheus"},
}

const metricstransform = "metricstransform"

// oursConfig is our processor's configuration with the given sinks and the
// method guard off (it is measured on its own in the in-package benchmarks).
func oursConfig(sinks []any) map[string]any {
	return map[string]any{
		"sinks":   sinks,
		"methods": map[string]any{"max_per_service": 0},
	}
}

// metricstransformConfig makes metricstransform do as much of the
// semconv_legacy conversion as it can:
//
//   - rename rpc.server.duration to rpc.server.call.duration;
//   - multiply sum, min, max, bounds and exemplars by 0.001 (ms → s);
//   - rename rpc.grpc.status_code to rpc.status_code, mapping each
//     code to its name. value_actions compare the attribute's Str(), which
//     is "" for an int attribute, so the integer codes otelgrpc writes keep
//     their int values; only decimal-string codes are mapped;
//   - rename rpc.system to rpc.system.name.
//
// It cannot set the unit (it stays "ms"), join rpc.service and the short
// rpc.method into "pkg.Service/Method" and remove rpc.service, add error.type
// to the failed calls, recognise the other dialects, or drop a second
// dialect's duplicate measurements: it does less work per point than ours.
func metricstransformConfig() map[string]any {
	valueActions := make([]any, grpcstatus.Count)
	for code := range valueActions {
		name, _ := grpcstatus.Name(int64(code))
		valueActions[code] = map[string]any{"value": strconv.Itoa(code), "new_value": name}
	}
	return map[string]any{
		"transforms": []any{map[string]any{
			"include":    "rpc.server.duration",
			"match_type": "strict",
			"action":     "update",
			"new_name":   "rpc.server.call.duration",
			"operations": []any{
				map[string]any{"action": "experimental_scale_value", "experimental_scale": 0.001},
				map[string]any{
					"action":        "update_label",
					"label":         "rpc.grpc.status_code",
					"new_label":     "rpc.status_code",
					"value_actions": valueActions,
				},
				map[string]any{"action": "update_label", "label": "rpc.system", "new_label": "rpc.system.name"},
			},
		}},
	}
}

// newProcessor creates and starts the named processor (a sinkSets key or
// metricstransform) in front of next. It is shut down when tb ends.
func newProcessor(tb testing.TB, name string, next consumer.Metrics) processor.Metrics {
	tb.Helper()
	var (
		f processor.Factory
		m map[string]any
	)
	if name == metricstransform {
		f, m = metricstransformprocessor.NewFactory(), metricstransformConfig()
	} else {
		sinks, ok := sinkSets[name]
		if !ok {
			tb.Fatalf("unknown processor %q", name)
		}
		f, m = grpcstatsprocessor.NewFactory(), oursConfig(sinks)
	}
	cfg := f.CreateDefaultConfig()
	if err := confmap.NewFromStringMap(m).Unmarshal(cfg); err != nil {
		tb.Fatalf("%s: decoding config: %v", name, err)
	}
	if v, ok := cfg.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			tb.Fatalf("%s: invalid config: %v", name, err)
		}
	}
	p, err := f.CreateMetrics(context.Background(), processortest.NewNopSettings(f.Type()), cfg, next)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	if err := p.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		tb.Fatalf("%s: start: %v", name, err)
	}
	tb.Cleanup(func() {
		if err := p.Shutdown(context.Background()); err != nil {
			tb.Errorf("%s: shutdown: %v", name, err)
		}
	})
	return p
}
