// Package sink builds the dispatch over the configured dialects once, at
// start, as grpc-go's combined stats handler does:
//
//   - no dialect: nil — the processor hands batches on without a walk;
//   - one dialect: that dialect's sink, called directly;
//   - several: one combined sink that finds the candidate by metric name in
//     a table built once, so a batch is walked once whatever the number of
//     dialects, and an unrelated metric costs one map lookup.
package sink // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/sink"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"
)

// New returns the dispatch over sinks, or nil for none.
func New(sinks []dialect.Sink) dialect.Sink {
	switch len(sinks) {
	case 0:
		return nil
	case 1:
		return sinks[0]
	default:
		return newCombined(sinks)
	}
}

// combined dispatches to the sink that may recognise a metric's name.
type combined struct {
	byName map[string]dialect.Sink
	names  []string
}

func newCombined(sinks []dialect.Sink) *combined {
	c := &combined{byName: map[string]dialect.Sink{}}
	for _, s := range sinks {
		for _, n := range s.Names() {
			// Dialects do not share metric names; should one ever, the first
			// (highest precedence) keeps it.
			if _, taken := c.byName[n]; !taken {
				c.byName[n] = s
				c.names = append(c.names, n)
			}
		}
	}
	return c
}

func (c *combined) Names() []string { return c.names }

func (c *combined) Recognize(scope pcommon.InstrumentationScope, m pmetric.Metric) *dialect.Rule {
	if s, ok := c.byName[m.Name()]; ok {
		return s.Recognize(scope, m)
	}
	return nil
}
