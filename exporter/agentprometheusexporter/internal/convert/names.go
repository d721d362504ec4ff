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

// names caches otlptranslator's metric and label names: translation
// allocates and runs per metric and per new label set otherwise.
type names struct {
	metricNamer otlptranslator.MetricNamer
	labelNamer  otlptranslator.LabelNamer

	mu      sync.RWMutex
	metrics map[metricKey]translated
	labels  map[string]translated
}

func newNames(metricNamer otlptranslator.MetricNamer, labelNamer otlptranslator.LabelNamer) *names {
	return &names{
		metricNamer: metricNamer,
		labelNamer:  labelNamer,
		metrics:     map[metricKey]translated{},
		labels:      map[string]translated{},
	}
}

func (n *names) metric(name, unit string, typ otlptranslator.MetricType) (string, error) {
	key := metricKey{name, unit, typ}
	n.mu.RLock()
	t, ok := n.metrics[key]
	n.mu.RUnlock()
	if ok {
		return t.name, t.err
	}
	t.name, t.err = n.metricNamer.Build(otlptranslator.Metric{Name: name, Unit: unit, Type: typ})
	n.mu.Lock()
	if len(n.metrics) >= nameCacheLimit {
		clear(n.metrics)
	}
	n.metrics[key] = t
	n.mu.Unlock()
	return t.name, t.err
}

func (n *names) label(key string) (string, error) {
	n.mu.RLock()
	t, ok := n.labels[key]
	n.mu.RUnlock()
	if ok {
		return t.name, t.err
	}
	t.name, t.err = n.labelNamer.Build(key)
	n.mu.Lock()
	if len(n.labels) >= nameCacheLimit {
		clear(n.labels)
	}
	n.labels[key] = t
	n.mu.Unlock()
	return t.name, t.err
}
