package grpcstatsprocessor // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor"

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dedupe"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/metadata"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/methods"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/sink"
)

// grpcStatsProcessor implements processor.Metrics directly rather than through
// processorhelper: the helper walks every batch to count data points, and
// with no dialect configured a batch must be handed on without any walk.
type grpcStatsProcessor struct {
	next      consumer.Metrics
	telemetry *metadata.TelemetryBuilder
	now       func() int64

	dispatch dialect.Sink // nil: no dialect, batches pass untouched
	rank     map[dialect.Dialect]dedupe.Rank
	writer   *dialect.Writer
	dedupe   *dedupe.State  // nil: duplicates are kept
	guard    *methods.Guard // nil: every method is kept

	dialectOpts map[dialect.Dialect]metric.AddOption
	work        sync.Pool
}

var _ processor.Metrics = (*grpcStatsProcessor)(nil)

func newProcessor(set processor.Settings, cfg *Config, next consumer.Metrics) (*grpcStatsProcessor, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	p := &grpcStatsProcessor{
		next:        next,
		telemetry:   tb,
		now:         func() int64 { return time.Now().UnixNano() },
		rank:        map[dialect.Dialect]dedupe.Rank{},
		dialectOpts: map[dialect.Dialect]metric.AddOption{},
	}
	if cfg.Methods.MaxPerService > 0 {
		if p.guard, err = methods.New(cfg.Methods.MaxPerService, cfg.Methods.Allow, cfg.Target.Other()); err != nil {
			return nil, err
		}
	}
	p.writer = dialect.NewWriter(cfg.Target, dialect.Options{
		Drop:         cfg.DropAttributes,
		CommonBounds: cfg.HistogramBounds == BoundsCommon,
		Methods:      p.guard != nil,
		Status:       cfg.StatusAttribute.key(),
	})
	var sinks []dialect.Sink
	for i, d := range cfg.precedence() {
		s, err := dialect.New(d, cfg.Target)
		if err != nil {
			return nil, fmt.Errorf("sinks[%d]: %w", i, err)
		}
		sinks = append(sinks, s)
		p.rank[d] = dedupe.Rank(min(i, math.MaxInt8))
		p.dialectOpts[d] = metric.WithAttributeSet(attribute.NewSet(attribute.String("dialect", string(d))))
	}
	p.dispatch = sink.New(sinks)
	if cfg.Duplicates == DuplicatesDrop {
		p.dedupe = dedupe.New(int64(cfg.DuplicateWindow), cfg.MaxResources)
	}
	p.work.New = func() any { return newBatchWork(p) }
	return p, nil
}

func (p *grpcStatsProcessor) Start(context.Context, component.Host) error { return nil }

func (p *grpcStatsProcessor) Shutdown(context.Context) error {
	p.telemetry.Shutdown()
	return nil
}

func (p *grpcStatsProcessor) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: p.dispatch != nil}
}

// ConsumeMetrics rewrites the recognised metrics of the batch in one walk
// and hands it on.
func (p *grpcStatsProcessor) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	if p.dispatch == nil {
		return p.next.ConsumeMetrics(ctx, md)
	}
	w := p.work.Get().(*batchWork)
	now := p.now()
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		w.resource(rms.At(i), now)
	}
	w.record(ctx)
	p.work.Put(w)
	return p.next.ConsumeMetrics(ctx, md)
}

// found is a recognised metric of the resource being processed.
type found struct {
	scope, index int
	rule         *dialect.Rule
	rank         dedupe.Rank
	drop         bool
}

// batchWork is the scratch state of one batch, pooled.
type batchWork struct {
	p       *grpcStatsProcessor
	found   []found
	seen    dedupe.Seen
	service string
	rewrite *dialect.Rewriter

	// kept holds the method guard's verdict on each service's methods seen
	// in the batch, so that the guard (and its lock) is asked once per
	// distinct method; refused are the methods of the metric being
	// converted that the guard refuses, which collapses reports.
	kept      map[[2]string]bool
	refused   map[string]struct{}
	collapses func(method string) bool

	passed, collapsed  int64
	converted, dropped map[dialect.Dialect]int64
}

// keptLimit bounds the verdicts a batch remembers; a batch with more
// methods than that asks the guard again for some.
const keptLimit = 1 << 12

func newBatchWork(p *grpcStatsProcessor) *batchWork {
	w := &batchWork{
		p: p, converted: map[dialect.Dialect]int64{}, dropped: map[dialect.Dialect]int64{},
		kept: map[[2]string]bool{}, refused: map[string]struct{}{},
	}
	w.rewrite = p.writer.NewRewriter()
	w.collapses = func(method string) bool { _, ok := w.refused[method]; return ok }
	return w
}

// keeps is the method guard's verdict on a method of the current service,
// asked once per batch (or again, beyond keptLimit: verdicts do not change).
func (w *batchWork) keeps(method string) bool {
	key := [2]string{w.service, method}
	if kept, ok := w.kept[key]; ok {
		return kept
	}
	_, collapsed := w.p.guard.Method(w.service, method)
	if len(w.kept) < keptLimit {
		w.kept[key] = !collapsed
	}
	return !collapsed
}

// resource finds the recognised metrics of one resource, decides which
// dialect keeps each concept, then converts or drops them.
func (w *batchWork) resource(rm pmetric.ResourceMetrics, now int64) {
	p := w.p
	w.found = w.found[:0]
	w.seen.Clear()
	sms := rm.ScopeMetrics()
	for j := 0; j < sms.Len(); j++ {
		sm := sms.At(j)
		scope := sm.Scope()
		ms := sm.Metrics()
		for k := 0; k < ms.Len(); k++ {
			m := ms.At(k)
			r := p.dispatch.Recognize(scope, m)
			if r == nil {
				w.passed += int64(pointCount(m))
				continue
			}
			rank := p.rank[r.Dialect]
			w.found = append(w.found, found{scope: j, index: k, rule: r, rank: rank})
			// A metric without points reports no calls: it must not make
			// another dialect's points for the same calls duplicates.
			if pointCount(m) > 0 {
				w.seen.Note(r.Concept, rank)
			}
		}
	}
	if len(w.found) == 0 {
		return
	}
	attrs := rm.Resource().Attributes()
	if p.dedupe != nil {
		p.dedupe.Merge(resourceKey(attrs), &w.seen, now)
	}
	w.service = ""
	if v, ok := attrs.Get("service.name"); ok {
		w.service = v.Str()
	}
	drops := false
	for i := range w.found {
		f := &w.found[i]
		m := sms.At(f.scope).Metrics().At(f.index)
		if p.dedupe != nil && f.rank > w.seen[f.rule.Concept] {
			f.drop, drops = true, true
			w.dropped[f.rule.Dialect] += int64(pointCount(m))
			continue
		}
		w.converted[f.rule.Dialect] += int64(w.rewrite.Rewrite(m, f.rule))
		if p.guard != nil {
			w.guardMethods(m)
		}
	}
	if drops {
		w.removeDropped(sms)
	}
}

// guardMethods asks the method guard about each method the rewriter wrote
// into m, once per method and service in the batch, and writes the other
// method into the points of those it refuses.
func (w *batchWork) guardMethods(m pmetric.Metric) {
	for _, method := range w.rewrite.Methods() {
		if !w.keeps(method) {
			w.refused[method] = struct{}{}
		}
	}
	if len(w.refused) > 0 {
		w.collapsed += int64(w.rewrite.Collapse(m, w.collapses))
		clear(w.refused)
	}
}

// removeDropped removes the metrics marked drop; found is in scope, then
// metric order.
func (w *batchWork) removeDropped(sms pmetric.ScopeMetricsSlice) {
	for i := 0; i < len(w.found); {
		scope, j := w.found[i].scope, i
		for j < len(w.found) && w.found[j].scope == scope {
			j++
		}
		group, g, index := w.found[i:j], 0, 0
		sms.At(scope).Metrics().RemoveIf(func(pmetric.Metric) bool {
			drop := false
			if g < len(group) && group[g].index == index {
				drop = group[g].drop
				g++
			}
			index++
			return drop
		})
		i = j
	}
}

// record reports the batch's counts and resets them.
func (w *batchWork) record(ctx context.Context) {
	t := w.p.telemetry
	if w.passed > 0 {
		t.ProcessorGrpcstatsPointsPassedThrough.Add(ctx, w.passed)
	}
	if w.collapsed > 0 {
		t.ProcessorGrpcstatsMethodsCollapsed.Add(ctx, w.collapsed)
	}
	for d, n := range w.converted {
		if n > 0 {
			t.ProcessorGrpcstatsPointsConverted.Add(ctx, n, w.p.dialectOpts[d])
			w.converted[d] = 0
		}
	}
	for d, n := range w.dropped {
		if n > 0 {
			t.ProcessorGrpcstatsDuplicatesDropped.Add(ctx, n, w.p.dialectOpts[d])
			w.dropped[d] = 0
		}
	}
	w.passed, w.collapsed = 0, 0
	clear(w.kept)
}

func pointCount(m pmetric.Metric) int {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints().Len()
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints().Len()
	case pmetric.MetricTypeHistogram:
		return m.Histogram().DataPoints().Len()
	case pmetric.MetricTypeExponentialHistogram:
		return m.ExponentialHistogram().DataPoints().Len()
	case pmetric.MetricTypeSummary:
		return m.Summary().DataPoints().Len()
	}
	return 0
}

// resourceKey identifies a resource for the duplicate state.
func resourceKey(attrs pcommon.Map) uint64 {
	var d xxhash.Digest
	d.Reset()
	var num [8]byte
	for k, v := range attrs.All() {
		_, _ = d.WriteString(k)
		_, _ = d.Write([]byte{0xff, byte(v.Type())})
		switch v.Type() {
		case pcommon.ValueTypeStr:
			_, _ = d.WriteString(v.Str())
		case pcommon.ValueTypeInt:
			n := uint64(v.Int())
			for i := range num {
				num[i] = byte(n >> (8 * i))
			}
			_, _ = d.Write(num[:])
		default:
			_, _ = d.WriteString(v.AsString())
		}
		_, _ = d.Write([]byte{0xfe})
	}
	return d.Sum64()
}
