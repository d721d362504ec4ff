package dialect // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"

import (
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

// joinLimit and keyFlagsLimit bound a rewriter's caches of joined
// service/method names and of attribute keys seen.
const (
	joinLimit     = 1 << 14
	keyFlagsLimit = 1 << 12
)

// CommonBounds are the latency bounds, in seconds, that the default layouts
// of every supported handler contain (otelgrpc old and new, grpc's plugin,
// ocgrpc, go-grpc-prometheus). Histograms re-bucketed onto them can be
// summed across dialects.
var CommonBounds = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 10}

// Writer rewrites recognised metrics into the target, in place.
type Writer struct {
	target Target
	drop   map[string]bool
	common map[float64]bool // nil: histograms keep their bounds

}

// NewWriter returns a writer into t that also removes the drop attributes
// from converted points and, with commonBounds, re-buckets histograms onto
// CommonBounds.
func NewWriter(t Target, drop []string, commonBounds bool) *Writer {
	w := &Writer{target: t, drop: map[string]bool{}}
	for _, k := range drop {
		w.drop[k] = true
	}
	if commonBounds {
		w.common = map[float64]bool{}
		for _, b := range CommonBounds {
			w.common[b] = true
		}
	}
	return w
}

// Guard maps a method onto the one to write (the method guard); it reports
// whether it collapsed the method.
type Guard func(method string) (string, bool)

// Rewriter is one goroutine's use of a Writer: it holds the scratch state of
// the point being rewritten, so that rewriting allocates nothing of its own.
type Rewriter struct {
	w      *Writer
	rule   *Rule
	facts  Facts // of the current point; a local would escape through Rule.Read
	out    [6]kv // the target attributes of the current point
	n      int
	remove func(string, pcommon.Value) bool // rw.removeKey, bound once
	bounds []float64                        // re-bucketing scratch
	counts []uint64

	// flags merges, per rule, the keys the rule owns and the drop list into
	// one lookup per attribute.
	flags     map[*Rule]map[string]uint8
	ruleFlags map[string]uint8
	// joins caches service/method joins without a lock (one rewriter per
	// goroutine); scaledFrom/scaledTo remember the last bound layout scaled.
	joins         map[[2]string]string
	scaledFrom    []float64
	scaledTo      []float64
	scaledDivisor float64
}

func (rw *Rewriter) sameBounds(b pcommon.Float64Slice) bool {
	if b.Len() != len(rw.scaledFrom) {
		return false
	}
	for i, v := range rw.scaledFrom {
		if b.At(i) != v {
			return false
		}
	}
	return true
}

const (
	flagDrop uint8 = 1 << iota
	flagOwn
)

type kv struct {
	key   string
	str   string
	num   int64
	isNum bool
}

// NewRewriter returns a rewriter for one goroutine.
func (w *Writer) NewRewriter() *Rewriter {
	rw := &Rewriter{w: w, flags: map[*Rule]map[string]uint8{}, joins: map[[2]string]string{}}
	rw.remove = rw.removeKey
	return rw
}

// Rewrite converts every point of m by r. It returns the points converted
// and how many methods the guard collapsed.
func (rw *Rewriter) Rewrite(m pmetric.Metric, r *Rule, guard Guard) (points, collapsed int) {
	rw.rule = r
	rw.ruleFlags = rw.flags[r]
	if rw.ruleFlags == nil {
		rw.ruleFlags = map[string]uint8{}
		for k := range rw.w.drop {
			rw.ruleFlags[k] |= flagDrop
		}
		rw.flags[r] = rw.ruleFlags
	}
	m.SetName(rw.w.target.Name(r.Concept))
	m.SetUnit(rw.w.target.Unit(r.Concept))
	switch m.Type() {
	case pmetric.MetricTypeHistogram:
		dps := m.Histogram().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			if r.Divisor != 1 {
				rw.scale(dp, r.Divisor)
			}
			if rw.w.common != nil {
				rw.rebucket(dp)
			}
			collapsed += rw.attributes(dp.Attributes(), guard)
		}
		return dps.Len(), collapsed
	case pmetric.MetricTypeSum:
		dps := m.Sum().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			collapsed += rw.attributes(dps.At(i).Attributes(), guard)
		}
		return dps.Len(), collapsed
	}
	return 0, 0
}

// scale divides a histogram point's values by d. The points of a metric
// share their bounds, so the last layout scaled is reused: a compare and a
// copy instead of a division per bound.
func (rw *Rewriter) scale(dp pmetric.HistogramDataPoint, d float64) {
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
	if rw.sameBounds(bounds) && rw.scaledDivisor == d {
		bounds.FromRaw(rw.scaledTo)
	} else {
		rw.scaledFrom = append(rw.scaledFrom[:0], bounds.AsRaw()...)
		rw.scaledTo = rw.scaledTo[:0]
		for _, b := range rw.scaledFrom {
			rw.scaledTo = append(rw.scaledTo, b/d)
		}
		rw.scaledDivisor = d
		bounds.FromRaw(rw.scaledTo)
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

// rebucket keeps only the bounds in CommonBounds, each bucket's count the
// exact sum of the old buckets it now covers: lossless for those bounds. A
// point whose layout shares none of them, or is malformed (a count per
// bound plus one, bounds strictly increasing), is left alone: merging the
// buckets of a malformed layout would make up a distribution.
func (rw *Rewriter) rebucket(dp pmetric.HistogramDataPoint) {
	bounds, counts := dp.ExplicitBounds(), dp.BucketCounts()
	if counts.Len() != bounds.Len()+1 {
		return
	}
	for i := 1; i < bounds.Len(); i++ {
		if !(bounds.At(i-1) < bounds.At(i)) {
			return
		}
	}
	rw.bounds, rw.counts = rw.bounds[:0], rw.counts[:0]
	var acc uint64
	for i := 0; i < bounds.Len(); i++ {
		acc += counts.At(i)
		if b := bounds.At(i); rw.w.common[b] {
			rw.bounds = append(rw.bounds, b)
			rw.counts = append(rw.counts, acc)
			acc = 0
		}
	}
	if len(rw.bounds) == 0 || len(rw.bounds) == bounds.Len() {
		return
	}
	rw.counts = append(rw.counts, acc+counts.At(bounds.Len()))
	bounds.FromRaw(rw.bounds)
	counts.FromRaw(rw.counts)
}

func (rw *Rewriter) str(key, value string) { rw.out[rw.n] = kv{key: key, str: value}; rw.n++ }
func (rw *Rewriter) num(key string, v int64) {
	rw.out[rw.n] = kv{key: key, num: v, isNum: true}
	rw.n++
}

// attributes replaces the dialect's keys by the target's, keeping any other
// attribute but the drop list. A target key that already holds the right
// value is left alone: pdata allocates for every value it sets.
func (rw *Rewriter) attributes(attrs pcommon.Map, guard Guard) (collapsed int) {
	rw.facts = Facts{}
	f := &rw.facts
	rw.rule.Read(attrs, f)
	method := rw.qualify(f)
	t := rw.w.target
	if f.Other {
		method = t.Other()
	} else if guard != nil && method != "" {
		var c bool
		if method, c = guard(method); c {
			collapsed = 1
		}
	}
	client := rw.rule.Concept.client()
	rw.n = 0
	if t == TargetGRPC {
		if method != "" {
			rw.str("grpc.method", method)
		}
		if f.Status != "" && rw.rule.Concept != ServerCallStarted {
			rw.str("grpc.status", f.Status)
		}
		if client && f.Target != "" {
			rw.str("grpc.target", f.Target)
		}
	} else {
		if client && f.Status != "" && f.Status != "OK" {
			rw.str("error.type", f.Status)
		}
		if method != "" {
			rw.str("rpc.method", method)
		}
		if f.Status != "" {
			rw.str("rpc.response.status_code", f.Status)
		}
		rw.str("rpc.system.name", "grpc")
		if client && f.ServerAddress != "" {
			rw.str("server.address", f.ServerAddress)
		}
		if client && f.ServerPort != 0 {
			rw.num("server.port", f.ServerPort)
		}
	}
	attrs.RemoveIf(rw.remove)
	for _, o := range rw.out[:rw.n] {
		v, ok := attrs.Get(o.key)
		switch {
		case o.isNum && !(ok && v.Type() == pcommon.ValueTypeInt && v.Int() == o.num):
			attrs.PutInt(o.key, o.num)
		case !o.isNum && !(ok && v.Type() == pcommon.ValueTypeStr && v.Str() == o.str):
			attrs.PutStr(o.key, o.str)
		}
	}
	return collapsed
}

// removeKey removes dropped attributes, and the dialect's own keys that the
// target does not write.
func (rw *Rewriter) removeKey(k string, _ pcommon.Value) bool {
	f, ok := rw.ruleFlags[k]
	if !ok {
		// First sight of this key for the rule: classify it once.
		if rw.rule.Own(k) {
			f = flagOwn
		}
		if len(rw.ruleFlags) < keyFlagsLimit {
			rw.ruleFlags[k] = f
		}
	}
	if f&flagDrop != 0 {
		return true
	}
	if f&flagOwn == 0 {
		return false
	}
	for _, o := range rw.out[:rw.n] {
		if o.key == k {
			return false
		}
	}
	return true
}

// qualify returns the fully qualified method, joining service and short
// method once per pair (cached: the join would allocate per point).
func (rw *Rewriter) qualify(f *Facts) string {
	if f.Service == "" || f.Method == "" || containsSlash(f.Method) {
		return f.Method
	}
	key := [2]string{f.Service, f.Method}
	if j, ok := rw.joins[key]; ok {
		return j
	}
	j := f.Service + "/" + f.Method
	if len(rw.joins) < joinLimit {
		rw.joins[key] = j
	}
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
