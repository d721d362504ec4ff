package cardinality // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/cardinality"

import (
	"cmp"
	"iter"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

const (
	maxExamples    = 3
	maxExampleSize = 80
)

// scan counts the distinct values of each label name over label sets that
// it copies from the store a chunk at a time (store.Family.ScanChunk), and
// stops at its deadline.
type scan struct {
	now      func() time.Time // the wall clock; tests move their own
	deadline time.Time
	began    time.Time
	names    map[string]*labelCount
	// resources are those of the series read.
	resources map[*store.Resource]struct{}
	series    int64
	complete  bool

	labels []store.LabelSet
	res    []*store.Resource
}

type labelCount struct {
	name     string
	series   int64
	values   distinct
	examples []string
}

func newScan(deadline time.Time, now func() time.Time) *scan {
	return &scan{
		now: now, deadline: deadline, began: now(), complete: true,
		names: map[string]*labelCount{}, resources: map[*store.Resource]struct{}{},
	}
}

// family reads the series of f, only those of res when it is set. spread
// visits the chunks in an order that covers the whole family early, so that
// a scan cut short by the deadline still samples all of it. It returns
// false when the deadline came first.
func (sc *scan) family(f *store.Family, res *store.Resource, spread bool) bool {
	_, _, n := f.ScanChunk(0, nil, nil, nil)
	chunks := (n + store.ChunkSize - 1) / store.ChunkSize
	order := inOrder
	if spread {
		order = spreadOrder
	}
	for c := range order(chunks) {
		if sc.now().After(sc.deadline) {
			sc.complete = false
			return false
		}
		sc.labels, sc.res, _ = f.ScanChunk(c*store.ChunkSize, res, sc.labels[:0], sc.res[:0])
		for j, labels := range sc.labels {
			sc.add(labels)
			sc.resources[sc.res[j]] = struct{}{}
		}
	}
	return true
}

// inOrder yields 0..n-1.
func inOrder(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
}

// spreadOrder yields 0..n-1, each once, in passes of stride ⌈√n⌉: the first
// pass (0, s, 2s, ...) spans the whole range in √n steps, the next starts
// at 1, and so on.
func spreadOrder(n int) iter.Seq[int] {
	s := int(math.Ceil(math.Sqrt(float64(n))))
	return func(yield func(int) bool) {
		for offset := range s {
			for i := offset; i < n; i += s {
				if !yield(i) {
					return
				}
			}
		}
	}
}

// add counts the pairs of one label set.
func (sc *scan) add(labels store.LabelSet) {
	sc.series++
	for name, value := range labels.All() {
		lc := sc.names[name]
		if lc == nil {
			lc = &labelCount{name: name}
			sc.names[name] = lc
		}
		lc.series++
		before := len(lc.values.exact)
		lc.values.add(xxhash.Sum64String(value))
		if len(lc.examples) < maxExamples && len(lc.values.exact) > before {
			lc.examples = append(lc.examples, example(value))
		}
	}
}

// example is a value as a person reads it: unescaped, cut at
// maxExampleSize bytes on a character boundary.
func example(rendered string) string {
	v := string(promtext.AppendUnescaped(nil, rendered))
	if len(v) <= maxExampleSize {
		return v
	}
	cut := maxExampleSize
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut] + "…"
}

// result ranks the label names by distinct values.
func (sc *scan) result() ([]Label, Scan) {
	out := make([]Label, 0, len(sc.names))
	for _, lc := range sc.names {
		n, est := lc.values.count()
		if est {
			n = min(n, lc.series) // an estimate cannot know better than that
		}
		out = append(out, Label{
			Name: string(promtext.AppendUnescaped(nil, lc.name)), Distinct: n, Estimated: est,
			Series: lc.series, Ratio: ratio(n, sc.series), Examples: lc.examples, stored: lc.name,
		})
	}
	slices.SortFunc(out, func(a, b Label) int {
		return cmp.Or(cmp.Compare(b.Distinct, a.Distinct), strings.Compare(a.Name, b.Name))
	})
	return out, Scan{Series: sc.series, Complete: sc.complete, Seconds: sc.now().Sub(sc.began).Seconds()}
}
