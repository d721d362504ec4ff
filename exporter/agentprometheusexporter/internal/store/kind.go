package store // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"

// Kind is the Prometheus type of a family.
type Kind uint8

const (
	KindGauge Kind = iota
	KindCounter
	KindHistogram
	KindSummary
)

// String returns the type as the text format's TYPE line spells it.
func (k Kind) String() string {
	switch k {
	case KindGauge:
		return "gauge"
	case KindCounter:
		return "counter"
	case KindHistogram:
		return "histogram"
	default:
		return "summary"
	}
}
