package store // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"

// Series is the latest state of one exposed series. Fields are written by
// ingestion under the family's write lock and read by scrapes under its read lock.
//
// Its fields are laid out to fill the 128-byte size class: what few series
// have (exponential buckets, quantiles, exemplars) is kept apart, and the
// hash of the labels is computed again when the series is removed.
type Series struct {
	// Labels is the series' identity in its family: its label names,
	// shared with the other series of those names, and its own values.
	Labels   LabelSet
	Resource *Resource
	born     uint64 // the store's birth number of the series (Store.Horizon)
	updated  int64  // store clock at the last update, unix nanoseconds

	Timestamp int64 // point time, unix nanoseconds
	Start     int64 // point start time (the created timestamp), 0 when unknown

	// RunStarted is the store clock at which this gateway began the series'
	// current run of accumulated deltas; 0 when it holds no deltas. Scrapes
	// show a new run only in steps (see Shown).
	RunStarted int64

	Value float64 // gauge or counter value; the sum of a histogram or summary
	Count uint64  // observations of a histogram or summary

	Histogram *Histogram // explicit-bucket histograms
	rare      *rare

	index   int32 // position in its family
	member  int32 // position among its resource's members
	removed bool  // taken out of its family; position hints must not reuse it
	// Delta says that the series accumulates deltas: its value exists
	// nowhere else until every scraper has taken it.
	Delta bool
}

// rare holds what few series have.
type rare struct {
	native    *NativeHistogram
	quantiles []Quantile
	exemplars []Exemplar
}

// Native is the series' exponential histogram, nil for any other kind.
func (s *Series) Native() *NativeHistogram {
	if s.rare == nil {
		return nil
	}
	return s.rare.native
}

// Quantiles are a summary's quantiles.
func (s *Series) Quantiles() []Quantile {
	if s.rare == nil {
		return nil
	}
	return s.rare.quantiles
}

// Exemplars are the series' exemplars, in the order of their point.
func (s *Series) Exemplars() []Exemplar {
	if s.rare == nil {
		return nil
	}
	return s.rare.exemplars
}

// SetNative sets the exponential histogram; nil removes it.
func (s *Series) SetNative(n *NativeHistogram) {
	if n != nil || s.rare != nil {
		s.rareOnes().native = n
	}
}

// SetQuantiles sets a summary's quantiles; the series keeps q.
func (s *Series) SetQuantiles(q []Quantile) {
	if q != nil || s.rare != nil {
		s.rareOnes().quantiles = q
	}
}

// SetExemplars sets the exemplars; the series keeps e.
func (s *Series) SetExemplars(e []Exemplar) {
	if e != nil || s.rare != nil {
		s.rareOnes().exemplars = e
	}
}

func (s *Series) rareOnes() *rare {
	if s.rare == nil {
		s.rare = &rare{}
	}
	return s.rare
}

// hash is the hash its family indexes the series by (hashSet).
func (s *Series) hash() uint32 { return s.Labels.hash() }

// Histogram holds cumulative bucket counts for the shared Bounds.
type Histogram struct {
	Bounds     *Bounds
	Cumulative []uint64 // one per bound; the +Inf bucket is Series.Count
}

// Bounds are the sorted, distinct upper bounds of a histogram's buckets with
// their text rendering, shared by every series that uses the same bounds.
type Bounds struct {
	Values []float64
	Text   []string
}

// NativeHistogram is an exponential histogram in Prometheus' native layout.
type NativeHistogram struct {
	Schema        int32
	ZeroThreshold float64
	ZeroCount     uint64
	Positive      Buckets
	Negative      Buckets
}

// Buckets are dense bucket counts starting at index Offset (Prometheus' index,
// i.e. OTLP's offset + 1).
type Buckets struct {
	Offset int32
	Counts []uint64
}

// Quantile is one quantile of a summary.
type Quantile struct {
	Quantile float64
	Value    float64
}

// Exemplar is one exemplar. Its labels are its trace and span ids, of one
// of the few sets ExemplarNames returns.
type Exemplar struct {
	Labels    LabelSet
	Value     float64
	Timestamp int64
}

// The label names an exemplar may have, shared by every exemplar.
var (
	noExemplarNames   = NewLabelNames(nil)
	spanIDNames       = NewLabelNames([]string{"span_id"})
	traceIDNames      = NewLabelNames([]string{"trace_id"})
	spanAndTraceNames = NewLabelNames([]string{"span_id", "trace_id"})
)

// ExemplarNames is the set of an exemplar's label names: span_id when it
// has a span id, trace_id when it has a trace id.
func ExemplarNames(span, trace bool) *LabelNames {
	switch {
	case span && trace:
		return spanAndTraceNames
	case span:
		return spanIDNames
	case trace:
		return traceIDNames
	}
	return noExemplarNames
}

// heldOffset places the zero of a new run just after the run's start: the
// previous run of the series, perhaps on another gateway, ended with a sample
// at exactly that instant (a delta starts where the one before it ended).
const heldOffset = int64(1e6) // 1 ms, the resolution of exposition timestamps

// Release says how far every scraper has seen the runs of deltas that began
// on this gateway, in store clock: a run that began by Value is shown with
// its value, one that began by Zero as its zero, a later one not at all.
// Horizon, when set, is the Store.Horizon when the scrape began: a series
// created since is left to the next scrape, so that a series written,
// swept and sent again during one scrape is not written twice by it.
type Release struct {
	Zero, Value int64
	Horizon     uint64
}

// Shown is how a scrape shows a series.
type Shown uint8

const (
	ShowValue Shown = iota
	ShowZero
	ShowNothing
)

// Shown tells how a scrape under release r shows s.
//
// A run of deltas that begins here continues the series' total from another
// gateway, or starts it again after a gap, from zero. Prometheus notices a
// new run only when its value is below the last one it stored, and the first
// delta of a run can be as large as a whole previous run (an agent that moved
// twice in a row): that run would vanish from increase(). So every scraper
// is shown the run's zero first, then its value. Before the zero, every
// scraper gets one scrape without the series: the previous run's last value,
// on the gateway the agent left, has the older timestamp, and Prometheus
// refuses it once it has stored anything newer, such as the zero.
func (s *Series) Shown(r Release) Shown {
	switch {
	case r.Horizon != 0 && s.born >= r.Horizon:
		return ShowNothing
	case s.RunStarted == 0 || s.RunStarted <= r.Value:
		return ShowValue
	case s.RunStarted <= r.Zero:
		return ShowZero
	default:
		return ShowNothing
	}
}

// HeldTimestamp is the timestamp of a new run's zero, in unix nanoseconds.
func (s *Series) HeldTimestamp() int64 { return s.Start + heldOffset }

// CanHold reports whether a run of deltas from start to ts leaves room for
// its zero before its first value at millisecond resolution.
func CanHold(start, ts int64) bool { return ts-start >= 2*heldOffset }
