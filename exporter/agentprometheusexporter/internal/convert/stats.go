package convert // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"

// Reason says why a data point was not stored.
type Reason uint8

const (
	// TypeConflict: the family already exists with another type, or a name
	// it would write is another family's (x_count of a histogram x).
	TypeConflict Reason = iota
	// InvalidName: the metric or an attribute name cannot be translated.
	InvalidName
	// Invalid: the point cannot be represented or contradicts itself (an
	// exponential histogram scale below -4, buckets that do not add up to
	// the count, a negative counter, a delta without a start time).
	Invalid
	// UnsupportedTemporality: unspecified temporality, or a non-monotonic delta sum.
	UnsupportedTemporality
	// OutOfOrder: older than the point already stored for the series.
	OutOfOrder
	// LabelClash: a new series that a scraper without UTF-8 names would get
	// as another's, its names escaped to underscores ({a.b="x"} next to
	// {a_b="x"}); the first series keeps the labels.
	LabelClash
	// NotAggregatable: a summary or a non-monotonic sum that an aggregate
	// rule matches: neither adds up across agents into anything meant.
	NotAggregatable
	// BoundsMismatch: a histogram whose bucket bounds are not its
	// aggregate group's.
	BoundsMismatch
	// MaxSources: a new source of an aggregate beyond the sources held
	// (max_aggregate_sources, or max_series_per_resource for one agent).
	MaxSources
	// Overflow: an aggregate's count would pass 2^53, beyond which float64
	// does not count one by one.
	Overflow
	// RefusedMaxSeries and RefusedMaxSeriesPerResource: a new series over a limit.
	RefusedMaxSeries
	RefusedMaxSeriesPerResource
	NumReasons
)

// String is the reason as self-telemetry labels it.
func (r Reason) String() string {
	switch r {
	case TypeConflict:
		return "type_conflict"
	case InvalidName:
		return "invalid_name"
	case Invalid:
		return "invalid"
	case UnsupportedTemporality:
		return "unsupported_temporality"
	case OutOfOrder:
		return "out_of_order"
	case LabelClash:
		return "label_clash"
	case NotAggregatable:
		return "not_aggregatable"
	case BoundsMismatch:
		return "bounds_mismatch"
	case MaxSources:
		return "max_sources"
	case Overflow:
		return "overflow"
	case RefusedMaxSeries:
		return "max_series"
	case RefusedMaxSeriesPerResource:
		return "max_series_per_resource"
	default:
		return "unknown"
	}
}

// Stats counts what one ConsumeMetrics call did.
type Stats struct {
	Created, Updated, Removed int64
	// Aggregated counts the points an aggregate rule took.
	Aggregated int64
	Dropped    [NumReasons]int64
	// Conflicts names a few families whose points were dropped for a type
	// conflict, for a rate-limited log line.
	Conflicts []string
}

func (s *Stats) drop(r Reason, n int) { s.Dropped[r] += int64(n) }

func (s *Stats) reset() {
	conflicts := s.Conflicts[:0]
	*s = Stats{Conflicts: conflicts}
}
