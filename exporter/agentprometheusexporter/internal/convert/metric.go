package convert // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"

import (
	"math"

	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// maxConflictNames bounds the family names one call reports for logging.
const maxConflictNames = 4

// metric stores the points of one metric under its family's lock.
func (w *worker) metric(m pmetric.Metric) {
	kind, typ, points, ok := w.classify(m)
	if !ok {
		return
	}
	name, err := w.c.names.metric(m.Name(), m.Unit(), typ)
	if err != nil {
		w.stats.drop(InvalidName, points)
		return
	}
	w.metricName = m.Name()
	if rule := w.c.rules.Match(m.Name()); rule != nil {
		w.aggregateMetric(rule, m, kind, name, points)
		return
	}
	if !w.c.store.Write(&w.wr, name, kind, m.Description(), m.Unit(), w.res, w.now) {
		w.conflict(name, points)
		return
	}
	defer w.wr.Close()
	f := w.wr.Family()
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		dps := m.Gauge().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			w.number(f, dps.At(i), false)
		}
	case pmetric.MetricTypeSum:
		dps := m.Sum().DataPoints()
		delta := m.Sum().AggregationTemporality() == pmetric.AggregationTemporalityDelta
		for i := 0; i < dps.Len(); i++ {
			w.number(f, dps.At(i), delta)
		}
	case pmetric.MetricTypeHistogram:
		dps := m.Histogram().DataPoints()
		delta := m.Histogram().AggregationTemporality() == pmetric.AggregationTemporalityDelta
		for i := 0; i < dps.Len(); i++ {
			w.histogram(f, dps.At(i), delta)
		}
	case pmetric.MetricTypeExponentialHistogram:
		dps := m.ExponentialHistogram().DataPoints()
		delta := m.ExponentialHistogram().AggregationTemporality() == pmetric.AggregationTemporalityDelta
		for i := 0; i < dps.Len(); i++ {
			w.native(f, dps.At(i), delta)
		}
	case pmetric.MetricTypeSummary:
		dps := m.Summary().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			w.summary(f, dps.At(i))
		}
	}
}

// classify maps a metric onto a Prometheus type, or drops (and counts) the
// metrics Prometheus cannot represent, as contrib does.
func (w *worker) classify(m pmetric.Metric) (kind prommodel.Kind, typ otlptranslator.MetricType, points int, ok bool) {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		// Also a gauge the Prometheus receiver made from an untyped metric:
		// contrib's exposition types it gauge too.
		kind, typ, points = prommodel.KindGauge, otlptranslator.MetricTypeGauge, m.Gauge().DataPoints().Len()
	case pmetric.MetricTypeSum:
		sum := m.Sum()
		points = sum.DataPoints().Len()
		switch {
		case sum.AggregationTemporality() == pmetric.AggregationTemporalityUnspecified,
			sum.AggregationTemporality() == pmetric.AggregationTemporalityDelta && !sum.IsMonotonic():
			w.stats.drop(UnsupportedTemporality, points)
			return kind, typ, points, false
		case sum.IsMonotonic():
			kind, typ = prommodel.KindCounter, otlptranslator.MetricTypeMonotonicCounter
		default:
			kind, typ = prommodel.KindGauge, otlptranslator.MetricTypeNonMonotonicCounter
		}
	case pmetric.MetricTypeHistogram:
		kind, typ, points = prommodel.KindHistogram, otlptranslator.MetricTypeHistogram, m.Histogram().DataPoints().Len()
		if m.Histogram().AggregationTemporality() == pmetric.AggregationTemporalityUnspecified {
			w.stats.drop(UnsupportedTemporality, points)
			return kind, typ, points, false
		}
	case pmetric.MetricTypeExponentialHistogram:
		kind, typ, points = prommodel.KindHistogram, otlptranslator.MetricTypeExponentialHistogram, m.ExponentialHistogram().DataPoints().Len()
		if m.ExponentialHistogram().AggregationTemporality() == pmetric.AggregationTemporalityUnspecified {
			w.stats.drop(UnsupportedTemporality, points)
			return kind, typ, points, false
		}
	case pmetric.MetricTypeSummary:
		kind, typ, points = prommodel.KindSummary, otlptranslator.MetricTypeSummary, m.Summary().DataPoints().Len()
	default:
		return kind, typ, 0, false
	}
	return kind, typ, points, true
}

// conflict drops the points of a metric whose family conflicts with another.
func (w *worker) conflict(name string, points int) {
	w.stats.drop(TypeConflict, points)
	if len(w.stats.Conflicts) < maxConflictNames {
		w.stats.Conflicts = append(w.stats.Conflicts, name)
	}
}

// upsert finds or creates the series of the point's labels at the next
// position, counting what happened.
func (w *worker) upsert() (*store.Series, store.Outcome) {
	s, outcome := w.wr.Put(w.pointLabels())
	switch outcome {
	case store.Created:
		w.stats.Created++
	case store.Updated:
		w.stats.Updated++
	default:
		w.refused(outcome)
	}
	return s, outcome
}

// refused counts a new series a store limit refused.
func (w *worker) refused(outcome store.Outcome) {
	switch outcome {
	case store.RefusedMaxSeries:
		w.stats.drop(RefusedMaxSeries, 1)
	case store.RefusedMaxSeriesPerResource:
		w.stats.drop(RefusedMaxSeriesPerResource, 1)
	case store.RefusedLabelClash:
		w.stats.drop(LabelClash, 1)
	}
}

// skip passes over a point that is not stored, keeping the position hints
// of the following points aligned.
func (w *worker) skip(r Reason) {
	w.wr.Skip()
	w.stats.drop(r, 1)
}

// point is what the typed handlers share: drop a point with a value that
// is not valid (its handler says), resolve labels, honour NoRecordedValue,
// find the series and reject out-of-order points — for a delta also one as
// old as the stored point, which was counted already (a retried batch). It
// returns the series to write, or nil, and whether the series existed
// before this point (a delta can only accumulate onto one that did).
func (w *worker) point(f *store.Family, valid bool, attrs pcommon.Map, flags pmetric.DataPointFlags, ts pcommon.Timestamp, delta bool) (s *store.Series, existed bool) {
	if !valid && !flags.NoRecordedValue() {
		w.skip(Invalid)
		return nil, false
	}
	if !w.labels(f, attrs) {
		w.skip(InvalidName)
		return nil, false
	}
	if flags.NoRecordedValue() {
		// The series ended: remove it alone, not the rest of the metric.
		if w.wr.Delete(w.pointLabels()) {
			w.stats.Removed++
		}
		return nil, false
	}
	s, outcome := w.upsert()
	existed = outcome == store.Updated
	if s != nil && existed && (int64(ts) < s.Timestamp || delta && int64(ts) == s.Timestamp) {
		w.stats.Updated--
		w.stats.drop(OutOfOrder, 1)
		return nil, true
	}
	if s != nil {
		w.newest = max(w.newest, int64(ts))
	}
	return s, existed
}

// run records where the series' values begin after a point: a delta that
// does not continue the stored run begins a new one on this gateway, which
// scrapes expose as zero first (see store.Series.Held). Call before the
// point's values are stored; start and ts are the run's start and the point's time.
func (w *worker) run(s *store.Series, delta, continued bool, start, ts int64) {
	s.Delta = delta
	switch {
	case !delta:
		s.RunStarted = 0
	case !continued:
		s.RunStarted = 0
		if store.CanHold(start, ts) {
			s.RunStarted, w.newRun = w.now, true
		}
	}
	w.deltas = w.deltas || delta
}

func numberValue(dp pmetric.NumberDataPoint) float64 {
	if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
		return float64(dp.IntValue())
	}
	return dp.DoubleValue()
}

// number stores a gauge or sum point; an aligned delta adds to the stored
// cumulative value, any other delta starts it again.
func (w *worker) number(f *store.Family, dp pmetric.NumberDataPoint, delta bool) {
	v := numberValue(dp)
	valid := validNumber(f.Kind == prommodel.KindCounter, v, delta, dp.StartTimestamp()) && timesFit(dp.StartTimestamp(), dp.Timestamp())
	s, existed := w.point(f, valid, dp.Attributes(), dp.Flags(), dp.Timestamp(), delta)
	if s == nil {
		return
	}
	start := int64(dp.StartTimestamp())
	continued := delta && existed && start == s.Timestamp
	if continued {
		v += s.Value
		start = s.Start
	}
	w.run(s, delta, continued, start, int64(dp.Timestamp()))
	s.Value, s.Start, s.Timestamp = v, start, int64(dp.Timestamp())
	if f.Kind == prommodel.KindCounter {
		s.SetExemplars(w.exemplars(s.Exemplars(), dp.Exemplars()))
	}
}

// validNumber reports whether a value can be stored. A counter starts at 0
// and never decreases: a negative or NaN value, or delta, is not one
// (OpenMetrics forbids both). A delta without a start time cannot be placed
// after the previous point: whether to add or start again is a guess.
// timesFit reports whether a point's times fit the store's int64
// nanoseconds: an OTLP time past 2262 would wrap negative.
func timesFit(start, ts pcommon.Timestamp) bool { return start <= math.MaxInt64 && ts <= math.MaxInt64 }

func validNumber(counter bool, v float64, delta bool, start pcommon.Timestamp) bool {
	if counter && !(v >= 0) {
		return false
	}
	return !delta || start != 0
}

func (w *worker) summary(f *store.Family, dp pmetric.SummaryDataPoint) {
	s, _ := w.point(f, timesFit(dp.StartTimestamp(), dp.Timestamp()), dp.Attributes(), dp.Flags(), dp.Timestamp(), false)
	if s == nil {
		return
	}
	qs := dp.QuantileValues()
	quantiles := s.Quantiles()[:0]
	for i := 0; i < qs.Len(); i++ {
		quantiles = append(quantiles, store.Quantile{Quantile: qs.At(i).Quantile(), Value: qs.At(i).Value()})
	}
	s.SetQuantiles(quantiles)
	s.Value, s.Count, s.Start, s.Timestamp = dp.Sum(), dp.Count(), int64(dp.StartTimestamp()), int64(dp.Timestamp())
}
