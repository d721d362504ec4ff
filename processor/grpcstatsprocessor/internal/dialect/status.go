package dialect // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"

import (
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// codeNames are the gRPC status code names as A66 and current semantic
// conventions write them, indexed by code.
var codeNames = [...]string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
	"UNAUTHENTICATED",
}

// camelNames maps grpc-go's codes.Code.String() spellings (used by otelgrpc
// v0.65.0 and go-grpc-prometheus) onto the canonical names.
var camelNames = map[string]string{
	"OK": "OK", "Canceled": "CANCELLED", "Unknown": "UNKNOWN", "InvalidArgument": "INVALID_ARGUMENT",
	"DeadlineExceeded": "DEADLINE_EXCEEDED", "NotFound": "NOT_FOUND", "AlreadyExists": "ALREADY_EXISTS",
	"PermissionDenied": "PERMISSION_DENIED", "ResourceExhausted": "RESOURCE_EXHAUSTED",
	"FailedPrecondition": "FAILED_PRECONDITION", "Aborted": "ABORTED", "OutOfRange": "OUT_OF_RANGE",
	"Unimplemented": "UNIMPLEMENTED", "Internal": "INTERNAL", "Unavailable": "UNAVAILABLE",
	"DataLoss": "DATA_LOSS", "Unauthenticated": "UNAUTHENTICATED",
}

var canonical = func() map[string]bool {
	m := make(map[string]bool, len(codeNames))
	for _, n := range codeNames {
		m[n] = true
	}
	return m
}()

// StatusName returns the canonical name of a status attribute: an int code
// (also as a whole double or a numeric string), a CamelCase name or an
// UPPER_SNAKE name. Any other string, number or bool is kept in its string
// form; a map, slice or bytes value is no status.
func StatusName(v pcommon.Value) string {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		if c := v.Int(); c >= 0 && c < int64(len(codeNames)) {
			return codeNames[c]
		}
		return v.AsString()
	case pcommon.ValueTypeDouble:
		if d := v.Double(); d >= 0 && d < float64(len(codeNames)) && d == math.Trunc(d) {
			return codeNames[int(d)]
		}
		return v.AsString()
	case pcommon.ValueTypeStr:
		s := v.Str()
		if canonical[s] {
			return s
		}
		if n, ok := camelNames[s]; ok {
			return n
		}
		// A numeric string, as some bridges write codes.
		if len(s) <= 2 {
			c := 0
			for _, r := range s {
				if r < '0' || r > '9' {
					return s
				}
				c = c*10 + int(r-'0')
			}
			if c < len(codeNames) {
				return codeNames[c]
			}
		}
		return s
	default:
		return scalar(v)
	}
}

// scalar returns a string attribute as it is and a number or bool in its
// string form; a map, slice or bytes value is no value. Handlers write
// strings, but a bridge or an agent's processors may change their types:
// reading those as empty would drop the fact with the dialect's key.
func scalar(v pcommon.Value) string {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return v.Str()
	case pcommon.ValueTypeInt, pcommon.ValueTypeDouble, pcommon.ValueTypeBool:
		return v.AsString()
	default:
		return ""
	}
}
