package dialect // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"

// RPC systems, as the stable semantic conventions name them in
// rpc.system.name. Only these two are converted: their status codes are the
// same sixteen codes, which the processor knows how to read and classify.
const (
	SystemGRPC    = "grpc"
	SystemConnect = "connectrpc"
)

// SystemName returns the stable name of an rpc.system or rpc.system.name
// value: the experimental conventions' "connect_rpc" and "apache_dubbo" are
// "connectrpc" and "dubbo"; any other value is kept as it is.
func SystemName(s string) string {
	switch s {
	case "connect_rpc":
		return SystemConnect
	case "apache_dubbo":
		return "dubbo"
	}
	return s
}

// converted reports whether the processor converts the points of system s
// (a stable name).
func converted(s string) bool { return s == SystemGRPC || s == SystemConnect }

// StatusKey is where the semconv target writes the status code.
type StatusKey uint8

const (
	// StatusStable writes rpc.status_code (the stable conventions).
	StatusStable StatusKey = iota
	// StatusOld writes rpc.response.status_code (semantic conventions
	// v1.39–v1.43, what otelgrpc v0.72.0 and otelconnect v0.12.0 write).
	StatusOld
	// StatusDup writes both, for a migration.
	StatusDup
)

// Status attribute keys of the semantic conventions.
const (
	statusKeyStable = "rpc.status_code"
	statusKeyOld    = "rpc.response.status_code"
)

// serverErrors are the status codes that make a server call failed: the
// semantic conventions' list for gRPC, and for Connect (in Connect's
// lower-case spelling there, the same codes).
var serverErrors = map[string]bool{
	"UNKNOWN": true, "DEADLINE_EXCEEDED": true, "UNIMPLEMENTED": true,
	"INTERNAL": true, "UNAVAILABLE": true, "DATA_LOSS": true,
}

// failed reports whether a call that ended with status failed, as the
// semantic conventions classify it: on the client every status but OK, on
// the server only serverErrors.
func failed(status string, client bool) bool {
	if client {
		return status != "OK"
	}
	return serverErrors[status]
}

// spellFor returns status as system spells it: gRPC's code 1 is CANCELLED,
// Connect's is canceled (CANCELED in the upper case the conventions'
// examples and otelconnect use). Every other code is spelt alike.
func spellFor(system, status string) string {
	switch {
	case system == SystemConnect && status == "CANCELLED":
		return "CANCELED"
	case system != SystemConnect && status == "CANCELED":
		return "CANCELLED"
	}
	return status
}
