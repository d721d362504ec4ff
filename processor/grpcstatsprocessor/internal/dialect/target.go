package dialect // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"

// Target names a canonical form.
type Target string

const (
	// TargetSemconv is what current otelgrpc (v0.72.0) emits by default.
	TargetSemconv Target = "semconv"
	// TargetGRPC is the gRFC A66 form of grpc-go's own plugin.
	TargetGRPC Target = "grpc"
)

// Dialect is the dialect that already speaks the target.
func (t Target) Dialect() Dialect {
	if t == TargetGRPC {
		return GRPCNative
	}
	return Semconv
}

// Name is the target's metric name for a concept.
func (t Target) Name(c Concept) string {
	switch {
	case t == TargetGRPC && c == ServerCallDuration:
		return "grpc.server.call.duration"
	case t == TargetGRPC && c == ClientCallDuration:
		return "grpc.client.call.duration"
	case t == TargetGRPC:
		return "grpc.server.call.started"
	case c == ClientCallDuration:
		return "rpc.client.call.duration"
	default:
		return "rpc.server.call.duration"
	}
}

// Unit is the target's unit for a concept.
func (t Target) Unit(c Concept) string {
	if c == ServerCallStarted {
		return "{call}"
	}
	return "s"
}

// Other is the method name the target uses for a method the handler did not
// know, and the method guard for methods beyond its bound.
func (t Target) Other() string {
	if t == TargetGRPC {
		return "other"
	}
	return "_OTHER"
}

// MethodKey is the attribute the target writes the method into.
func (t Target) MethodKey() string {
	if t == TargetGRPC {
		return "grpc.method"
	}
	return "rpc.method"
}
