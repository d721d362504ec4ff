package dialect // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"

import (
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/statsgate/statsgate/internal/grpcstatus"
)

// StatusName returns the canonical name of a status attribute: an int code
// (also as a whole double or a numeric string), a CamelCase name or an
// UPPER_SNAKE name. Any other string, number or bool is kept in its string
// form; a map, slice or bytes value is no status.
func StatusName(v pcommon.Value) string {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		if n, ok := grpcstatus.Name(v.Int()); ok {
			return n
		}
		return v.AsString()
	case pcommon.ValueTypeDouble:
		if d := v.Double(); d >= 0 && d < float64(grpcstatus.Count) && d == math.Trunc(d) {
			n, _ := grpcstatus.Name(int64(d))
			return n
		}
		return v.AsString()
	case pcommon.ValueTypeStr:
		s := v.Str()
		if grpcstatus.Known(s) {
			return s
		}
		if n, ok := grpcstatus.FromCamel(s); ok {
			return n
		}
		// Connect's lower-case names (otelconnect ≤ v0.9 writes them in
		// rpc.connect_rpc.error_code): "not_found", "canceled".
		if u, ok := fromConnect(s); ok {
			return u
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
			if n, ok := grpcstatus.Name(int64(c)); ok {
				return n
			}
		}
		return s
	default:
		return scalar(v)
	}
}

// fromConnect returns the upper-case name of a Connect error code spelt
// in lower case ("not_found" → NOT_FOUND, "canceled" → CANCELED, and the
// conventions' own example "cancelled" → CANCELLED), and false for any other
// string ("ok" included: Connect has no such error code).
func fromConnect(s string) (string, bool) {
	if s == "" || len(s) > len("failed_precondition") {
		return "", false
	}
	var buf [24]byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && c != '_' {
			return "", false
		}
		buf[i] = c - ('a' - 'A')
		if c == '_' {
			buf[i] = '_'
		}
	}
	u := string(buf[:len(s)])
	if u == "CANCELED" || (grpcstatus.Known(u) && u != "OK") {
		return u, true
	}
	return "", false
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
