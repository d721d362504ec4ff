package dialect // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// newOpenCensus recognises ocgrpc's default views through the OpenCensus
// bridge. Its server latency carries no status (the view has none), so the
// converted points have none either. Its client round-trip latency measures
// attempts, not calls, and its per-RPC byte counts are uncompressed: those
// pass through.
func newOpenCensus(t Target) Sink {
	own := keySet("grpc_server_method", "grpc_server_status", "grpc_client_method", "grpc_client_status")
	rule := func(c Concept, divisor float64) *Rule {
		return &Rule{Dialect: OpenCensus, Concept: c, Divisor: divisor, Own: own, Read: readOpenCensus}
	}
	s := &byName{rules: map[string]named{
		"grpc.io/server/server_latency": {rule(ServerCallDuration, 1000), pmetric.MetricTypeHistogram, "ms"},
	}}
	if t == TargetGRPC {
		s.rules["grpc.io/server/started_rpcs"] = named{rule(ServerCallStarted, 1), pmetric.MetricTypeSum, "*"}
	}
	return s
}

func readOpenCensus(attrs pcommon.Map, f *Facts) {
	for k, v := range attrs.All() {
		switch k {
		case "grpc_server_method", "grpc_client_method":
			f.Method = scalar(v)
		case "grpc_server_status", "grpc_client_status":
			f.Status = StatusName(v)
		}
	}
}
