package dialect // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// joinLimit, keyFlagsLimit and methodsLimit bound a rewriter's caches of
// joined service/method names, of attribute keys seen and of methods seen.
const (
	joinLimit     = 1 << 14
	keyFlagsLimit = 1 << 12
	methodsLimit  = 1 << 12
)

// CommonBounds are the latency bounds, in seconds, that the default layouts
// of every supported handler contain (otelgrpc old and new, grpc's plugin,
// ocgrpc, go-grpc-prometheus). Histograms re-bucketed onto them can be
// summed across dialects.
var CommonBounds = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 10}

// Writer rewrites recognised metrics into the target, in place.
type Writer struct {
	target  Target
	status  StatusKey
	drop    map[string]bool
	common  map[float64]bool // nil: histograms keep their bounds
	methods bool
}

// Options are what a Writer does besides renaming, rescaling and replacing
// the dialect's attributes.
type Options struct {
	// Drop are attributes removed from converted points.
	Drop []string
	// CommonBounds re-buckets histograms onto CommonBounds.
	CommonBounds bool
	// Methods records the distinct methods each Rewrite writes
	// (Rewriter.Methods), for the method guard.
	Methods bool
	// Status is where the semconv target writes the status code.
	Status StatusKey
}

// NewWriter returns a writer into t.
func NewWriter(t Target, o Options) *Writer {
	w := &Writer{target: t, status: o.Status, drop: map[string]bool{}, methods: o.Methods}
	for _, k := range o.Drop {
		w.drop[k] = true
	}
	if o.CommonBounds {
		w.common = map[float64]bool{}
		for _, b := range CommonBounds {
			w.common[b] = true
		}
	}
	return w
}

// Rewriter is one goroutine's use of a Writer: it holds the scratch state of
// the point being rewritten, so that rewriting allocates nothing of its own.
type Rewriter struct {
	w      *Writer
	rule   *Rule
	facts  Facts // of the current point; a local would escape through Rule.Read
	out    [8]kv // the target attributes of the current point
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

	// methods are the distinct methods the current Rewrite wrote, in order;
	// seen holds the Rewrite (epoch) in which each method was last noted,
	// so that it needs no clearing; last is the method of the previous
	// point, which is often the same.
	methods []string
	seen    map[string]uint64
	epoch   uint64
	last    string
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
	rw := &Rewriter{w: w, flags: map[*Rule]map[string]uint8{}, joins: map[[2]string]string{}, seen: map[string]uint64{}}
	rw.remove = rw.removeKey
	return rw
}

// Rewrite converts every point of m by r and returns how many it converted.
func (rw *Rewriter) Rewrite(m pmetric.Metric, r *Rule) (points int) {
	rw.methods, rw.last = rw.methods[:0], ""
	rw.epoch++
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
			rw.attributes(dp.Attributes())
		}
		return dps.Len()
	case pmetric.MetricTypeSum:
		dps := m.Sum().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			rw.attributes(dps.At(i).Attributes())
		}
		return dps.Len()
	}
	return 0
}

// Methods are the distinct methods the last Rewrite wrote (with Options.Methods),
// in the order of their first points: what the method guard has to judge.
// The slice is the rewriter's own until the next Rewrite.
func (rw *Rewriter) Methods() []string { return rw.methods }

// noteMethod adds method to Methods once per Rewrite.
func (rw *Rewriter) noteMethod(method string) {
	if method == rw.last {
		return
	}
	rw.last = method
	if rw.seen[method] == rw.epoch {
		return
	}
	if len(rw.seen) >= methodsLimit {
		// Forgetting costs at most a method listed twice, which the
		// guard judges the same both times.
		clear(rw.seen)
	}
	rw.seen[method] = rw.epoch
	rw.methods = append(rw.methods, method)
}

// Collapse writes the target's other method into the points of m, as the
// last Rewrite left them, whose method collapse reports, and returns how
// many it changed. It is for the method guard's rare refusals: it reads
// every point's method again.
func (rw *Rewriter) Collapse(m pmetric.Metric, collapse func(method string) bool) (points int) {
	t := rw.w.target
	key, other := t.MethodKey(), t.Other()
	one := func(attrs pcommon.Map) {
		if v, ok := attrs.Get(key); ok && v.Type() == pcommon.ValueTypeStr && collapse(v.Str()) {
			v.SetStr(other)
			points++
		}
	}
	switch m.Type() {
	case pmetric.MetricTypeHistogram:
		dps := m.Histogram().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			one(dps.At(i).Attributes())
		}
	case pmetric.MetricTypeSum:
		dps := m.Sum().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			one(dps.At(i).Attributes())
		}
	}
	return points
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
// value is left alone: pdata allocates for every value it sets. A point of
// an RPC system other than gRPC and Connect is left alone but for the
// system key (see foreign).
func (rw *Rewriter) attributes(attrs pcommon.Map) {
	rw.facts = Facts{}
	f := &rw.facts
	rw.rule.Read(attrs, f)
	if f.System == "" {
		f.System = SystemGRPC
	}
	t := rw.w.target
	if !converted(f.System) {
		if t == TargetSemconv {
			rw.foreign(attrs, f.System)
		}
		return
	}
	method := rw.qualify(f)
	if f.Other {
		method = t.Other()
	} else if rw.w.methods && method != "" {
		rw.noteMethod(method)
	}
	client := rw.rule.Concept.client()
	rw.n = 0
	if t == TargetGRPC {
		if method != "" {
			rw.str(t.MethodKey(), method)
		}
		if f.Status != "" && rw.rule.Concept != ServerCallStarted {
			rw.str("grpc.status", spellFor(SystemGRPC, f.Status))
		}
		if client && f.Target != "" {
			rw.str("grpc.target", f.Target)
		}
	} else {
		// error.type marks the calls that failed as the conventions
		// classify them (on the server only serverErrors), with the
		// point's own value when it has one (an exception type, say):
		// otelconnect v0.12 sets it on server NOT_FOUND, CANCELED, ...
		// too, which would count those as server failures.
		// An error.type that is the status code follows the status's
		// spelling (otelconnect v0.12 writes CANCELED over gRPC too).
		status := spellFor(f.System, f.Status)
		errorType := spellFor(f.System, f.ErrorType)
		if status != "" {
			switch {
			case !failed(status, client):
				errorType = ""
			case errorType == "":
				errorType = status
			}
		}
		if errorType != "" {
			rw.str("error.type", errorType)
		}
		if method != "" {
			rw.str(t.MethodKey(), method)
		}
		if status != "" {
			if rw.w.status != StatusOld {
				rw.str(statusKeyStable, status)
			}
			if rw.w.status != StatusStable {
				rw.str(statusKeyOld, status)
			}
		}
		rw.str("rpc.system.name", f.System)
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
}

// foreign handles a point of an RPC system the processor does not convert
// (Dubbo, JSON-RPC, ...): whose status codes it cannot read or classify.
// Its attributes stay as they are, but for the system itself, which the
// renamed metric carries under the stable key with the stable name
// (rpc.system="apache_dubbo" → rpc.system.name="dubbo").
func (rw *Rewriter) foreign(attrs pcommon.Map, system string) {
	if v, ok := attrs.Get("rpc.system.name"); !ok || v.Type() != pcommon.ValueTypeStr || v.Str() != system {
		attrs.PutStr("rpc.system.name", system)
	}
	attrs.Remove("rpc.system")
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
