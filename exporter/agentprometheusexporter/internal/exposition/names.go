package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

import (
	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
)

// name is a metric name as the lines write it: the name itself when it is
// a legacy name, else quoted and escaped (`"my.metric"`), which the lines
// put inside the braces.
type name struct {
	text   []byte
	quoted bool
}

// familyNames are the names of one family's lines, rendered once per family
// and scrape into one reusable arena, never per series. They follow expfmt:
// model.EscapeMetricFamily escapes a name that is not a legacy one by the
// scrape's scheme, the encoders then add the suffixes and quote what is
// still not a legacy name (with escaping=allow-utf-8).
type familyNames struct {
	arena []byte
	// family names the HELP and TYPE lines; sample the samples without a
	// suffix (gauges, counters, summary quantiles).
	family, sample, bucket, sum, count, created name
	total                                       bool // a counter named with _total
}

// render sets the names of a family called raw. OpenMetrics names a
// counter's family without its _total suffix, and its _created sample too.
func (n *familyNames) render(raw string, kind prommodel.Kind, scheme model.EscapingScheme, om bool, memo *nameMemo) {
	base := memo.metricName(raw, scheme)
	n.arena = n.arena[:0]
	stem := base
	if kind == prommodel.KindCounter {
		stem, n.total = prommodel.CounterStem(base)
	}
	if om {
		n.family = n.name(stem, "")
	} else {
		n.family = n.name(base, "")
	}
	n.sample = n.name(base, "")
	for _, suffix := range kind.Suffixes() {
		switch suffix {
		case prommodel.SuffixBucket:
			n.bucket = n.name(base, suffix)
		case prommodel.SuffixSum:
			n.sum = n.name(base, suffix)
		case prommodel.SuffixCount:
			n.count = n.name(base, suffix)
		}
	}
	if om {
		n.created = n.name(stem, prommodel.SuffixCreated)
	}
}

// name renders base+suffix into the arena. Suffixes are legacy names of
// their own, so the whole is a legacy name when base is, or is empty.
func (n *familyNames) name(base, suffix string) name {
	start := len(n.arena)
	if model.LegacyValidation.IsValidMetricName(base) || base == "" && suffix != "" {
		n.arena = append(append(n.arena, base...), suffix...)
		return name{text: n.arena[start:len(n.arena):len(n.arena)]}
	}
	n.arena = append(n.arena, '"')
	n.arena = promtext.AppendEscaped(n.arena, base)
	n.arena = append(append(n.arena, suffix...), '"')
	return name{text: n.arena[start:len(n.arena):len(n.arena)], quoted: true}
}

// nameMemoLimit bounds the memo; a full memo starts over.
const nameMemoLimit = 4096

// nameMemo remembers metric and label names escaped by model.EscapeName,
// which allocates: a store with UTF-8 names scraped without
// escaping=allow-utf-8 escapes the same names at every scrape.
type nameMemo map[nameKey]string

type nameKey struct {
	name   string
	scheme model.EscapingScheme
	label  bool // a stored label name in underscore escaping (prommodel.UnderscoredName)
}

// escape is model.EscapeName(raw, scheme).
func (m *nameMemo) escape(raw string, scheme model.EscapingScheme) string {
	return m.get(nameKey{raw, scheme, false}, func() string { return model.EscapeName(raw, scheme) })
}

// metricName is a family name as expfmt escapes it for scheme
// (model.EscapeMetricFamily's rule): a legacy name as it is, any other by
// model.EscapeName.
func (m *nameMemo) metricName(raw string, scheme model.EscapingScheme) string {
	if scheme == model.NoEscaping || model.LegacyValidation.IsValidMetricName(raw) {
		return raw
	}
	return m.escape(raw, scheme)
}

// underscored is prommodel.UnderscoredName(stored).
func (m *nameMemo) underscored(stored string) string {
	return m.get(nameKey{stored, model.UnderscoreEscaping, true}, func() string { return prommodel.UnderscoredName(stored) })
}

func (m *nameMemo) get(key nameKey, build func() string) string {
	if s, ok := (*m)[key]; ok {
		return s
	}
	if *m == nil || len(*m) >= nameMemoLimit {
		*m = nameMemo{}
	}
	s := build()
	(*m)[key] = s
	return s
}
