package dialect // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"

import (
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// otelgrpcScope is the instrumentation scope of otelgrpc.
const otelgrpcScope = "go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"

// semconvOwn are the keys current otelgrpc writes, plus the old ones that
// its rpc/dup mode adds to the new metrics.
var semconvOwn = keySet("rpc.method", "rpc.status_code", "rpc.response.status_code", "rpc.system.name", "error.type",
	"server.address", "server.port", "rpc.service", "rpc.system", "rpc.grpc.status_code", "rpc.connect_rpc.error_code")

type semconv struct {
	byName
	// unitBug converts otelgrpc v0.65.0's durations: unit "s", values in ms.
	unitBug map[string]*Rule
}

// newSemconv recognises the released RPC semantic conventions (otelgrpc
// ≥ v0.65). Converting them into the semconv target only cleans them up:
// rpc/dup's extra old keys, v0.65.0's CamelCase status and millisecond values.
func newSemconv() Sink {
	rule := func(c Concept, divisor float64) *Rule {
		return &Rule{Dialect: Semconv, Concept: c, Divisor: divisor, Own: semconvOwn, Read: readSemconv}
	}
	return &semconv{
		byName: byName{rules: map[string]named{
			"rpc.server.call.duration": {rule(ServerCallDuration, 1), pmetric.MetricTypeHistogram, "s"},
			"rpc.client.call.duration": {rule(ClientCallDuration, 1), pmetric.MetricTypeHistogram, "s"},
		}},
		unitBug: map[string]*Rule{
			"rpc.server.call.duration": rule(ServerCallDuration, 1000),
			"rpc.client.call.duration": rule(ClientCallDuration, 1000),
		},
	}
}

func (s *semconv) Recognize(scope pcommon.InstrumentationScope, m pmetric.Metric) *Rule {
	r := s.lookup(m)
	if r != nil && scope.Name() == otelgrpcScope && scope.Version() == "0.65.0" {
		return s.unitBug[m.Name()]
	}
	return r
}

// readSemconv reads the stable keys, those of semantic conventions
// v1.39–v1.43 and, for rpc/dup and older shapes, the legacy ones. A status
// under the stable key wins over the others. otelconnect ≤ v0.9 writes no
// status on a Connect call that succeeded (only rpc.connect_rpc.error_code
// on a failure): such a point's status is OK.
func readSemconv(attrs pcommon.Map, f *Facts) {
	stable, connectLegacy := false, false
	for k, v := range attrs.All() {
		switch k {
		case "rpc.method":
			if m := scalar(v); m == "_OTHER" {
				f.Other = true
			} else {
				f.Method = m
			}
		case "rpc.service":
			f.Service = scalar(v)
		case "rpc.status_code":
			f.Status, stable = StatusName(v), true
		case "rpc.response.status_code", "rpc.grpc.status_code", "rpc.connect_rpc.error_code":
			if !stable {
				f.Status = StatusName(v)
			}
		case "rpc.system.name":
			f.System = SystemName(scalar(v))
		case "rpc.system":
			s := scalar(v)
			connectLegacy = s == "connect_rpc"
			if f.System == "" {
				f.System = SystemName(s)
			}
		case "error.type":
			f.ErrorType = scalar(v)
		case "server.address", "net.peer.name":
			f.ServerAddress = scalar(v)
		case "server.port", "net.peer.port":
			f.ServerPort = portOf(v)
		}
	}
	if connectLegacy && f.Status == "" {
		f.Status = "OK"
	}
}

// portOf reads a port from an int, a whole double or a numeric string; a
// value outside 1–65535 is no port.
func portOf(v pcommon.Value) int64 {
	var p int64
	switch v.Type() {
	case pcommon.ValueTypeInt:
		p = v.Int()
	case pcommon.ValueTypeDouble:
		if d := v.Double(); d == math.Trunc(d) && d > 0 && d <= math.MaxUint16 {
			p = int64(d)
		}
	case pcommon.ValueTypeStr:
		for _, r := range v.Str() {
			if r < '0' || r > '9' || p > math.MaxUint16 {
				return 0
			}
			p = p*10 + int64(r-'0')
		}
	}
	if p < 1 || p > math.MaxUint16 {
		return 0
	}
	return p
}
