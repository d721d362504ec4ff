package dialect // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"

import (
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

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

// joinLimit bounds the cache of joined service/method names.
const joinLimit = 1 << 14

// Writer rewrites recognised metrics into the target, in place.
type Writer struct {
	target Target
	drop   map[string]bool

	mu    sync.RWMutex
	joins map[[2]string]string
}

// NewWriter returns a writer into t that also removes the drop attributes
// from converted points.
func NewWriter(t Target, drop []string) *Writer {
	w := &Writer{target: t, drop: map[string]bool{}, joins: map[[2]string]string{}}
	for _, k := range drop {
		w.drop[k] = true
	}
	return w
}

// Guard maps a method onto the one to write (the method guard); it reports
// whether it collapsed the method.
type Guard func(method string) (string, bool)

// Rewrite converts every point of m by r. It returns the points converted
// and how many methods the guard collapsed.
func (w *Writer) Rewrite(m pmetric.Metric, r *Rule, guard Guard) (points, collapsed int) {
	m.SetName(w.target.Name(r.Concept))
	m.SetUnit(w.target.Unit(r.Concept))
	switch m.Type() {
	case pmetric.MetricTypeHistogram:
		dps := m.Histogram().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			if r.Divisor != 1 {
				scaleHistogram(dp, r.Divisor)
			}
			collapsed += w.attributes(dp.Attributes(), r, guard)
		}
		return dps.Len(), collapsed
	case pmetric.MetricTypeSum:
		dps := m.Sum().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			collapsed += w.attributes(dps.At(i).Attributes(), r, guard)
		}
		return dps.Len(), collapsed
	}
	return 0, 0
}

func scaleHistogram(dp pmetric.HistogramDataPoint, d float64) {
	if dp.HasSum() {
		dp.SetSum(dp.Sum() / d)
	}
	if dp.HasMin() {
		dp.SetMin(dp.Min() / d)
	}
	if dp.HasMax() {
		dp.SetMax(dp.Max() / d)
	}
	bounds := dp.ExplicitBounds()
	for i := 0; i < bounds.Len(); i++ {
		bounds.SetAt(i, bounds.At(i)/d)
	}
	exemplars := dp.Exemplars()
	for i := 0; i < exemplars.Len(); i++ {
		e := exemplars.At(i)
		if e.ValueType() == pmetric.ExemplarValueTypeInt {
			e.SetDoubleValue(float64(e.IntValue()) / d)
		} else {
			e.SetDoubleValue(e.DoubleValue() / d)
		}
	}
}

// attributes replaces the dialect's keys by the target's, keeping any other
// attribute but the drop list. Keys are written in sorted order, as the
// OpenTelemetry SDK writes them.
func (w *Writer) attributes(attrs pcommon.Map, r *Rule, guard Guard) (collapsed int) {
	var f Facts
	r.Read(attrs, &f)
	attrs.RemoveIf(func(k string, _ pcommon.Value) bool { return r.Own(k) || w.drop[k] })

	method := w.qualify(&f)
	if f.Other {
		method = w.target.Other()
	} else if guard != nil && method != "" {
		var c bool
		if method, c = guard(method); c {
			collapsed = 1
		}
	}
	client := r.Concept.client()
	if w.target == TargetGRPC {
		if method != "" {
			attrs.PutStr("grpc.method", method)
		}
		if f.Status != "" && r.Concept != ServerCallStarted {
			attrs.PutStr("grpc.status", f.Status)
		}
		if client && f.Target != "" {
			attrs.PutStr("grpc.target", f.Target)
		}
		return collapsed
	}
	if client && f.Status != "" && f.Status != "OK" {
		attrs.PutStr("error.type", f.Status)
	}
	if method != "" {
		attrs.PutStr("rpc.method", method)
	}
	if f.Status != "" {
		attrs.PutStr("rpc.response.status_code", f.Status)
	}
	attrs.PutStr("rpc.system.name", "grpc")
	if client && f.ServerAddress != "" {
		attrs.PutStr("server.address", f.ServerAddress)
	}
	if client && f.ServerPort != 0 {
		attrs.PutInt("server.port", f.ServerPort)
	}
	return collapsed
}

// qualify returns the fully qualified method, joining service and short
// method once per pair (cached: the join would allocate per point).
func (w *Writer) qualify(f *Facts) string {
	if f.Service == "" || f.Method == "" || containsSlash(f.Method) {
		return f.Method
	}
	key := [2]string{f.Service, f.Method}
	w.mu.RLock()
	j, ok := w.joins[key]
	w.mu.RUnlock()
	if ok {
		return j
	}
	j = f.Service + "/" + f.Method
	w.mu.Lock()
	if len(w.joins) < joinLimit {
		w.joins[key] = j
	}
	w.mu.Unlock()
	return j
}

func containsSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}
