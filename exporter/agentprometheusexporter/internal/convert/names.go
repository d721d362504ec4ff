package convert // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"

import (
	"sync"

	"github.com/prometheus/otlptranslator"
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

func (n *names) metric(name, unit string, typ otlptranslator.MetricType) (string, error) {
	return n.metrics.get(metricKey{name, unit, typ}, func() (string, error) {
		return n.metricNamer.Build(otlptranslator.Metric{Name: name, Unit: unit, Type: typ})
	})
}

func (n *names) label(key string) (string, error) {
	return n.labels.get(key, func() (string, error) { return n.labelNamer.Build(key) })
}
