package dialect // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"

import (
	"net"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// newGRPCNative recognises grpc-go's OpenTelemetry plugin (gRFC A66). Its
// attempt latency and per-call compressed sizes have no equivalent in the
// semantic conventions and pass through; so do its started counters, except
// into the grpc target, where they are the target's own.
func newGRPCNative(t Target) Sink {
	own := keySet("grpc.method", "grpc.status", "grpc.target")
	rule := func(c Concept) *Rule {
		return &Rule{Dialect: GRPCNative, Concept: c, Divisor: 1, Own: own, Read: readGRPCNative}
	}
	s := &byName{rules: map[string]named{
		"grpc.server.call.duration": {rule(ServerCallDuration), pmetric.MetricTypeHistogram, "s"},
		"grpc.client.call.duration": {rule(ClientCallDuration), pmetric.MetricTypeHistogram, "s"},
	}}
	if t == TargetGRPC {
		s.rules["grpc.server.call.started"] = named{rule(ServerCallStarted), pmetric.MetricTypeSum, "*"}
	}
	return s
}

func readGRPCNative(attrs pcommon.Map, f *Facts) {
	for k, v := range attrs.All() {
		switch k {
		case "grpc.method":
			if m := scalar(v); m == "other" {
				f.Other = true
			} else {
				f.Method = m
			}
		case "grpc.status":
			f.Status = StatusName(v)
		case "grpc.target":
			f.Target = scalar(v)
			f.ServerAddress, f.ServerPort = splitTarget(f.Target)
		}
	}
}

// splitTarget takes the server address and port out of a channel target
// such as "dns:///api.internal:443" or "passthrough:///10.0.0.1:50051".
func splitTarget(target string) (string, int64) {
	if i := strings.LastIndex(target, "/"); i >= 0 {
		target = target[i+1:]
	}
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return target, 0
	}
	p, err := strconv.ParseInt(port, 10, 64)
	if err != nil {
		return host, 0
	}
	return host, p
}
