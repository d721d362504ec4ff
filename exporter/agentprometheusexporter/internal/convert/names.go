package convert // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/prometheus/otlptranslator"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
)

// nameCacheLimit bounds each name cache; a full cache starts over, which only
// costs re-translating the names in use.
const nameCacheLimit = 1 << 16

type metricKey struct {
	name, unit string
	typ        otlptranslator.MetricType
}

type translated struct {
	name string
	err  error
}

// cache memoises a translation: otlptranslator allocates and would run per
// metric and per new label set otherwise.
type cache[K comparable] struct {
	mu sync.RWMutex
	m  map[K]translated
}

func (c *cache[K]) get(key K, build func() (string, error)) (string, error) {
	c.mu.RLock()
	t, ok := c.m[key]
	c.mu.RUnlock()
	if ok {
		return t.name, t.err
	}
	t.name, t.err = build()
	c.mu.Lock()
	if c.m == nil || len(c.m) >= nameCacheLimit {
		c.m = map[K]translated{}
	}
	c.m[key] = t
	c.mu.Unlock()
	return t.name, t.err
}

// names translates metric and label names with otlptranslator, cached.
type names struct {
	metricNamer otlptranslator.MetricNamer
	labelNamer  otlptranslator.LabelNamer
	metrics     cache[metricKey]
	labels      cache[string]
}

func newNames(metricNamer otlptranslator.MetricNamer, labelNamer otlptranslator.LabelNamer) *names {
	return &names{metricNamer: metricNamer, labelNamer: labelNamer}
}

var errEmptyName = errors.New("metric name is empty")

// metric translates a metric name. With UTF-8 allowed, otlptranslator keeps
// the name as it is: an empty one is refused, and invalid UTF-8 (which
// protobuf cannot carry) is replaced by U+FFFD.
func (n *names) metric(name, unit string, typ otlptranslator.MetricType) (string, error) {
	return n.metrics.get(metricKey{name, unit, typ}, func() (string, error) {
		if name == "" {
			return "", errEmptyName
		}
		out, err := n.metricNamer.Build(otlptranslator.Metric{Name: name, Unit: unit, Type: typ})
		if err != nil || !n.metricNamer.UTF8Allowed {
			return out, err
		}
		return strings.ToValidUTF8(out, "\uFFFD"), nil
	})
}

// label translates an attribute key into a label name as rendered in a
// label set. __name__ is the exposition's own (a series with such a label
// does not parse) and is kept as exported___name__, as Prometheus renames
// clashing labels. With UTF-8 allowed, otlptranslator keeps the key as it
// is, so the rendered name is escaped like a value: a quote, backslash or
// newline in it cannot break the label set. A ':' becomes '_': expfmt's
// text and OpenMetrics encoders leave a label name unquoted when it is a
// valid metric name, and a:b="x" parses nowhere; a name of underscores only
// ("_:") is then refused, as otlptranslator refuses "__".
func (n *names) label(key string) (string, error) {
	return n.labels.get(key, func() (string, error) {
		name, err := n.labelNamer.Build(key)
		switch {
		case err != nil:
			return "", err
		case name == "__name__":
			return promtext.ExportedNameLabel, nil
		case n.labelNamer.UTF8Allowed:
			name = strings.ReplaceAll(name, ":", "_")
			if strings.Trim(name, "_") == "" {
				// As otlptranslator refuses a key of underscores only.
				return "", fmt.Errorf("label name %q is only underscores once ':' is '_'", key)
			}
			return string(promtext.AppendEscaped(nil, name)), nil
		}
		return name, nil
	})
}

// StrategyNaming is what a translation_strategy (contrib's values) asks of
// names: suffixes, and UTF-8 left as it is; ok is false for another value.
func StrategyNaming(strategy string) (withSuffixes, utf8Allowed, ok bool) {
	switch strategy {
	case "UnderscoreEscapingWithSuffixes":
		return true, false, true
	case "UnderscoreEscapingWithoutSuffixes":
		return false, false, true
	case "NoUTF8EscapingWithSuffixes":
		return true, true, true
	case "NoTranslation":
		return false, true, true
	}
	return false, false, false
}
