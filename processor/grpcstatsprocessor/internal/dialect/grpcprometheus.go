package dialect // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// newGRPCPrometheus recognises go-grpc-prometheus and go-grpc-middleware's
// providers/prometheus as the Prometheus receiver delivers them: handling
// time histograms in seconds (no unit set, no status), and the started
// counter, which is the grpc target's own. The handled counters and message
// counts have no equivalent and pass through.
func newGRPCPrometheus(t Target) Sink {
	own := keySet("grpc_service", "grpc_method", "grpc_type", "grpc_code")
	rule := func(c Concept) *Rule {
		return &Rule{Dialect: GRPCPrometheus, Concept: c, Divisor: 1, Own: own, Read: readGRPCPrometheus}
	}
	s := &byName{rules: map[string]named{
		"grpc_server_handling_seconds": {rule(ServerCallDuration), pmetric.MetricTypeHistogram, "*"},
		"grpc_client_handling_seconds": {rule(ClientCallDuration), pmetric.MetricTypeHistogram, "*"},
	}}
	if t == TargetGRPC {
		s.rules["grpc_server_started_total"] = named{rule(ServerCallStarted), pmetric.MetricTypeSum, "*"}
	}
	return s
}

func readGRPCPrometheus(attrs pcommon.Map, f *Facts) {
	for k, v := range attrs.All() {
		switch k {
		case "grpc_service":
			f.Service = scalar(v)
		case "grpc_method":
			f.Method = scalar(v)
		case "grpc_code":
			f.Status = StatusName(v)
		}
	}
}
