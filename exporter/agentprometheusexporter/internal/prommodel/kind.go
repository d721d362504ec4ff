package prommodel // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"

import "strings"

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

// The suffixes of a family's sample names, in every exposition format: the
// one place that knows them, for the writers (which render the names) and
// for the names a family claims (ExposedNames).
const (
	SuffixTotal   = "_total"
	SuffixBucket  = "_bucket"
	SuffixSum     = "_sum"
	SuffixCount   = "_count"
	SuffixCreated = "_created"
)

// Suffixes are the suffixes of the samples a family of kind k writes beside
// the ones named as the family is: a histogram's buckets, sum and count, a
// summary's sum and count.
func (k Kind) Suffixes() []string {
	switch k {
	case KindHistogram:
		return []string{SuffixBucket, SuffixSum, SuffixCount}
	case KindSummary:
		return []string{SuffixSum, SuffixCount}
	}
	return nil
}

// CounterStem is a counter's name without its _total suffix, and whether it
// had one: OpenMetrics names a counter's family, and its _created sample,
// after the stem.
func CounterStem(name string) (stem string, total bool) {
	return strings.CutSuffix(name, SuffixTotal)
}
