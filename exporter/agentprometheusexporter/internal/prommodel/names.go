package prommodel // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"

import "github.com/prometheus/common/model"

// Claims says which formats' names a family takes besides its own (see
// ExposedNames): a clash that exists only in OpenMetrics, such as a counter
// x_total next to a gauge x, drops nothing when OpenMetrics is never served.
type Claims struct {
	OpenMetrics    bool // OpenMetrics may be served
	CreatedSamples bool // and it carries _created samples
}

// ExposedNames lists the names a family takes in the text and OpenMetrics
// expositions c allows: its TYPE names and sample names, for the name as
// scraped with underscore escaping (where "a.b" and "a_b" become one name).
// expfmt's parser, which promtool uses, attributes a sample to a histogram
// or summary by these suffixes, and OpenMetrics types a counter by its name
// without "_total" and writes its samples with it: two families sharing any
// of these names make the exposition fail to parse.
func ExposedNames(name string, kind Kind, c Claims) []string {
	name = model.EscapeName(name, model.UnderscoreEscaping)
	names := []string{name}
	for _, suffix := range kind.Suffixes() {
		names = append(names, name+suffix)
	}
	stem := name
	if kind == KindCounter && c.OpenMetrics {
		var total bool
		if stem, total = CounterStem(name); total {
			names = append(names, stem)
		} else {
			names = append(names, name+SuffixTotal)
		}
	}
	if kind != KindGauge && c.OpenMetrics && c.CreatedSamples {
		names = append(names, stem+SuffixCreated)
	}
	return names
}
