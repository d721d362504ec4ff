// Package descriptors caches how a family's series labels are built from a
// data point, keyed by the family's identity and the label NAMES — never the
// values — so that a thousand agents sending the same families share one
// descriptor per family instead of a thousand.
//
// A Descriptor plays the part a prometheus.Desc plays in a collector: it is
// the per-(family, label names) work done once — sanitising names with
// otlptranslator, ordering them, merging collisions — and it holds the set
// of label names that its series share, so that a data point only has to
// append its values and a series stores nothing else.
package descriptors // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/descriptors"

import (
	"slices"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// Identity is what a descriptor is keyed by.
type Identity struct {
	Family  string
	Kind    uint8
	Unit    string
	Help    string
	BaseSig uint64   // signature of the base (resource, scope, const) label names
	Keys    []string // the data point's attribute keys, in the point's order
}

func (id *Identity) equal(o *Identity) bool {
	return id.Family == o.Family && id.Kind == o.Kind && id.Unit == o.Unit && id.Help == o.Help &&
		id.BaseSig == o.BaseSig && slices.Equal(id.Keys, o.Keys)
}

// Step appends one label value while rendering a label set.
type Step struct {
	// Label is the index of the label, in Names, that the value belongs to.
	Label int
	// Joined says that the value joins the previous step's with ';' in one
	// label: both names sanitise to the same label name.
	Joined bool
	// Source is the index of the point attribute that supplies the value, or
	// -(i+1) for base label i.
	Source int
}

// Descriptor is the rendering plan of a label set.
type Descriptor struct {
	Identity
	// Metric is the OTLP name of the metric it was first made for (several
	// may share a family); for the cardinality view.
	Metric string
	Steps  []Step
	// Names are the label names of the set, which the series of the
	// descriptor share (store.LabelNames).
	Names *store.LabelNames

	mu sync.Mutex
	// reduced holds the sets of fewer names, for points that leave labels
	// empty, by their absent labels (see Reduced).
	reduced map[string]*store.LabelNames
}

// maxReduced bounds the reduced sets a descriptor keeps; further ones are
// made for each point that needs them.
const maxReduced = 64

// Reduced returns the names left when the labels marked in absent are left
// out: absent holds one byte per label of Names, nonzero for an absent one.
// Prometheus treats an empty label as an absent one, so a point with an
// empty value belongs to the series without that label.
func (d *Descriptor) Reduced(absent []byte) *store.LabelNames {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n, ok := d.reduced[string(absent)]; ok {
		return n
	}
	names := make([]string, 0, len(d.Names.Names))
	var shared uint64
	for i, name := range d.Names.Names {
		if absent[i] == 0 {
			if i < 64 && len(names) < 64 && d.Names.Shared()&(1<<i) != 0 {
				shared |= 1 << len(names)
			}
			names = append(names, name)
		}
	}
	n := store.NewSharedLabelNames(names, shared)
	if len(d.reduced) < maxReduced {
		if d.reduced == nil {
			d.reduced = map[string]*store.LabelNames{}
		}
		d.reduced[string(absent)] = n
	}
	return n
}

// Cache is an LRU-bounded descriptor cache.
type Cache struct {
	lru                     *lru.Cache[uint64, *Descriptor]
	hits, misses, evictions atomic.Int64
}

// NewCache returns a cache holding at most size descriptors.
func NewCache(size int) (*Cache, error) {
	c := &Cache{}
	l, err := lru.NewWithEvict(size, func(uint64, *Descriptor) { c.evictions.Add(1) })
	if err != nil {
		return nil, err
	}
	c.lru = l
	return c, nil
}

// Get returns the descriptor of id under hash, or nil. A hash shared by two
// identities counts as a miss; Add then replaces the older entry.
func (c *Cache) Get(hash uint64, id *Identity) *Descriptor {
	if d, ok := c.lru.Get(hash); ok && d.Identity.equal(id) {
		c.hits.Add(1)
		return d
	}
	c.misses.Add(1)
	return nil
}

// Add stores d under hash.
func (c *Cache) Add(hash uint64, d *Descriptor) { c.lru.Add(hash, d) }

// Len is the number of cached descriptors.
func (c *Cache) Len() int { return c.lru.Len() }

// Origin returns the OTLP metric name and point attribute key that label
// of family was made from, as a cached descriptor has it: the cardinality
// view suggests the aggregate rule that sums the label away in the names
// the agents send. ok is false when no cached descriptor has it.
func (c *Cache) Origin(family, label string) (metric, key string, ok bool) {
	for _, d := range c.lru.Values() {
		if d.Family != family {
			continue
		}
		for _, st := range d.Steps {
			if st.Source >= 0 && d.Names.Names[st.Label] == label {
				return d.Metric, d.Keys[st.Source], true
			}
		}
	}
	return "", "", false
}

// Stats returns the lookups that hit and missed and the evictions so far.
func (c *Cache) Stats() (hits, misses, evictions int64) {
	return c.hits.Load(), c.misses.Load(), c.evictions.Load()
}
