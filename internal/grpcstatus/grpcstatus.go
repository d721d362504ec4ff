// Package grpcstatus names the gRPC status codes as the gRPC protocol spells
// them (OK, CANCELLED, ..., UNAUTHENTICATED), which is how gRFC A66 and the
// current RPC semantic conventions carry them and what the grpcstats
// processor writes. The processor, the demo agents and the benchmarks all
// name codes through this one table.
package grpcstatus // import "github.com/statsgate/statsgate/internal/grpcstatus"

// names are the names, indexed by code.
var names = [...]string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
	"UNAUTHENTICATED",
}

// Count is the number of codes gRPC defines: 0 to Count-1.
const Count = len(names)

// camel maps grpc-go's codes.Code.String() spellings, which otelgrpc
// v0.65.0 and go-grpc-prometheus write, onto the names. It differs from a
// mechanical conversion in one place: grpc-go spells code 1 "Canceled".
var camel = map[string]string{
	"OK": "OK", "Canceled": "CANCELLED", "Unknown": "UNKNOWN", "InvalidArgument": "INVALID_ARGUMENT",
	"DeadlineExceeded": "DEADLINE_EXCEEDED", "NotFound": "NOT_FOUND", "AlreadyExists": "ALREADY_EXISTS",
	"PermissionDenied": "PERMISSION_DENIED", "ResourceExhausted": "RESOURCE_EXHAUSTED",
	"FailedPrecondition": "FAILED_PRECONDITION", "Aborted": "ABORTED", "OutOfRange": "OUT_OF_RANGE",
	"Unimplemented": "UNIMPLEMENTED", "Internal": "INTERNAL", "Unavailable": "UNAVAILABLE",
	"DataLoss": "DATA_LOSS", "Unauthenticated": "UNAUTHENTICATED",
}

var known = func() map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}()

// Name returns the name of code c, and false for a code gRPC does not define.
func Name(c int64) (string, bool) {
	if c < 0 || c >= int64(len(names)) {
		return "", false
	}
	return names[c], true
}

// FromCamel returns the name of the code grpc-go spells s ("NotFound",
// "Canceled"), and false for any other string.
func FromCamel(s string) (string, bool) {
	n, ok := camel[s]
	return n, ok
}

// Known reports whether s is the name of a code.
func Known(s string) bool { return known[s] }
