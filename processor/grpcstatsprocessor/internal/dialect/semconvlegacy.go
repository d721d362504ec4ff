package dialect // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"

import "go.opentelemetry.io/collector/pdata/pmetric"

// newSemconvLegacy recognises otelgrpc ≤ v0.64 and otelconnect ≤ v0.9
// (semantic conventions ≤ 1.37): durations in milliseconds, rpc.service +
// short rpc.method, integer gRPC status or lower-case Connect error code.
// It also reads the old-named metrics of rpc/dup mode, which carry the new
// keys. Per-message sizes and message counts have no equivalent and pass
// through.
func newSemconvLegacy() Sink {
	own := keySet("rpc.method", "rpc.service", "rpc.system", "rpc.grpc.status_code",
		"rpc.connect_rpc.error_code", "rpc.status_code", "rpc.response.status_code", "rpc.system.name", "error.type",
		"net.peer.name", "net.peer.port", "server.address", "server.port")
	rule := func(c Concept) *Rule {
		return &Rule{Dialect: SemconvLegacy, Concept: c, Divisor: 1000, Own: own, Read: readSemconv}
	}
	return &byName{rules: map[string]named{
		"rpc.server.duration": {rule(ServerCallDuration), pmetric.MetricTypeHistogram, "ms"},
		"rpc.client.duration": {rule(ClientCallDuration), pmetric.MetricTypeHistogram, "ms"},
	}}
}
