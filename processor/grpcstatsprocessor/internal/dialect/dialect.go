// Package dialect knows how each gRPC stats handler names, scales and
// labels RPC metrics, and the canonical forms they are rewritten into.
//
// Each dialect is a Sink: given a metric it says whether the metric is its
// own and, if so, which Rule converts it. The rules are data — target name,
// unit scale, which attribute keys the dialect owns and how to read the
// canonical facts (method, status, server) from them — so that the
// rewriting itself is one shared, allocation-free routine.
package dialect // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Dialect names a family of gRPC stats handlers.
type Dialect string

const (
	// GRPCNative is grpc-go's OpenTelemetry plugin (gRFC A66).
	GRPCNative Dialect = "grpc_native"
	// Semconv is otelgrpc ≥ v0.65 (semantic conventions ≥ 1.39).
	Semconv Dialect = "semconv"
	// SemconvLegacy is otelgrpc ≤ v0.64 (semantic conventions ≤ 1.37), and
	// the old-named metrics of otelgrpc's rpc/dup mode.
	SemconvLegacy Dialect = "semconv_legacy"
	// OpenCensus is go.opencensus.io's ocgrpc through the OpenCensus bridge.
	OpenCensus Dialect = "opencensus"
	// GRPCPrometheus is go-grpc-prometheus / go-grpc-middleware's
	// providers/prometheus, as the Prometheus receiver delivers it.
	GRPCPrometheus Dialect = "grpc_prometheus"
)

// All lists every dialect.
var All = []Dialect{GRPCNative, Semconv, SemconvLegacy, OpenCensus, GRPCPrometheus}

// Concept is what a metric measures, whatever its dialect.
type Concept uint8

const (
	ServerCallDuration Concept = iota
	ClientCallDuration
	ServerCallStarted
	NumConcepts
)

// client reports whether the concept is measured by the client.
func (c Concept) client() bool { return c == ClientCallDuration }

// Facts are what a point says about its call, read from any dialect.
type Facts struct {
	Service, Method string // Method alone when it is already fully qualified
	Other           bool   // the handler did not know the method
	Status          string // the status code name (UPPER_SNAKE), "" when the dialect has none
	ServerAddress   string
	ServerPort      int64
	Target          string // grpc.target, when the dialect has it
	// System is the stable rpc.system.name of the point ("grpc",
	// "connectrpc", "dubbo", ...), "" when the dialect does not say: its
	// handlers are gRPC's.
	System string
	// ErrorType is the point's own error.type, "" when it has none.
	ErrorType string
}

// Rule converts the metrics of one dialect and concept.
type Rule struct {
	Dialect Dialect
	Concept Concept
	// Divisor divides every value, sum, min, max, bound and exemplar (1000
	// for milliseconds). Division, not multiplication by 1e-3, so that each
	// result is the double nearest the exact quotient (5 ms is 0.005 s).
	Divisor float64
	// Own reports the attribute keys the dialect owns: they are read into
	// Facts and replaced by the target's keys. Other attributes stay.
	Own func(key string) bool
	// Read fills f from the point's attributes.
	Read func(attrs pcommon.Map, f *Facts)
}

// Sink recognises the metrics of a dialect. The rules it returns carry
// their dialect.
type Sink interface {
	// Names lists the metric names the sink may recognise.
	Names() []string
	// Recognize returns the rule converting m, or nil when m is not the
	// sink's (or has no true equivalent in the target).
	Recognize(scope pcommon.InstrumentationScope, m pmetric.Metric) *Rule
}

// New returns the sink of a dialect for a target, or an error for a dialect
// that is not one of All.
func New(d Dialect, t Target) (Sink, error) {
	switch d {
	case GRPCNative:
		return newGRPCNative(t), nil
	case Semconv:
		return newSemconv(), nil
	case SemconvLegacy:
		return newSemconvLegacy(), nil
	case OpenCensus:
		return newOpenCensus(t), nil
	case GRPCPrometheus:
		return newGRPCPrometheus(t), nil
	}
	return nil, fmt.Errorf("unknown dialect %q", d)
}

// byName is the common shape of a sink: a table from metric name to the
// rule, with a check of the metric's type and unit.
type byName struct {
	rules map[string]named
}

type named struct {
	rule *Rule
	typ  pmetric.MetricType
	unit string // required unit; "*" for any
}

func (s *byName) Names() []string {
	out := make([]string, 0, len(s.rules))
	for n := range s.rules {
		out = append(out, n)
	}
	return out
}

func (s *byName) lookup(m pmetric.Metric) *Rule {
	n, ok := s.rules[m.Name()]
	if !ok || m.Type() != n.typ || (n.unit != "*" && m.Unit() != n.unit) {
		return nil
	}
	if n.typ == pmetric.MetricTypeSum && !m.Sum().IsMonotonic() {
		return nil
	}
	return n.rule
}

func (s *byName) Recognize(_ pcommon.InstrumentationScope, m pmetric.Metric) *Rule {
	return s.lookup(m)
}

func keySet(keys ...string) func(string) bool {
	set := make(map[string]bool, len(keys))
	for _, k := range keys {
		set[k] = true
	}
	return func(k string) bool { return set[k] }
}
