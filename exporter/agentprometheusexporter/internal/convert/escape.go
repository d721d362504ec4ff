package convert // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"

import (
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
)

// appendRaw appends an attribute value as pcommon.Value.AsString renders it,
// unescaped; strings, ints and bools without allocating.
func appendRaw(b []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return append(b, v.Str()...)
	case pcommon.ValueTypeInt:
		return strconv.AppendInt(b, v.Int(), 10)
	case pcommon.ValueTypeBool:
		return strconv.AppendBool(b, v.Bool())
	default:
		return append(b, v.AsString()...)
	}
}

// appendValue appends an attribute value as pcommon.Value.AsString renders
// it, escaped; strings, ints and bools without allocating.
func appendValue(b []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return promtext.AppendEscaped(b, v.Str())
	case pcommon.ValueTypeInt:
		return strconv.AppendInt(b, v.Int(), 10)
	case pcommon.ValueTypeBool:
		return strconv.AppendBool(b, v.Bool())
	default:
		return promtext.AppendEscaped(b, v.AsString())
	}
}
