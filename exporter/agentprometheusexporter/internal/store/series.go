package store // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"

// Series is the latest state of one exposed series. Fields are written by
// ingestion under the family's write lock and read by scrapes under its read lock.
type Series struct {
	// Labels is the rendered, escaped, name-sorted label set without braces,
	// e.g. `instance="a",job="b"`; it is the series' identity in its family.
	Labels   string
	hash     uint64
	index    int32
	removed  bool // taken out of its family; position hints must not reuse it
	Resource *Resource

	updated int64 // store clock at the last update, unix nanoseconds

	Timestamp int64 // point time, unix nanoseconds
	Start     int64 // point start time (the created timestamp), 0 when unknown

	Value float64 // gauge or counter value; the sum of a histogram or summary
	Count uint64  // observations of a histogram or summary

	Histogram *Histogram       // explicit-bucket histograms
	Native    *NativeHistogram // exponential histograms
	Quantiles []Quantile       // summaries
	Exemplars []Exemplar
}

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

// Exemplar is one exemplar; Labels is rendered like Series.Labels.
type Exemplar struct {
	Labels    string
	Value     float64
	Timestamp int64
}
