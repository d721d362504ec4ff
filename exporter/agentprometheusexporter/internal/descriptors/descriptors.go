// Package descriptors caches how a family's series labels are built from a
// data point, keyed by the family's identity and the label NAMES — never the
// values — so that a thousand agents sending the same families share one
// descriptor per family instead of a thousand.
//
// A Descriptor plays the part a prometheus.Desc plays in a collector: it is
// the per-(family, label names) work done once — sanitising names with
// otlptranslator, ordering them, merging collisions, pre-rendering each
// `name="` prefix — so that a data point only has to append its values.
package descriptors // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/descriptors"

import (
	"slices"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
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
	// Prefix opens a label, e.g. `job="`; empty when the value joins the
	// previous label's value with ';' because both names sanitise to the
	// same label name.
	Prefix string
	// Open is Prefix with a leading comma, for templates that write every
	// label as `,name="value"`.
	Open string
	// Source is the index of the point attribute that supplies the value, or
	// -(i+1) for base label i.
	Source int
}

// Descriptor is the rendering plan of a label set.
type Descriptor struct {
	Identity
	Steps []Step
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

// Stats returns the lookups that hit and missed and the evictions so far.
func (c *Cache) Stats() (hits, misses, evictions int64) {
	return c.hits.Load(), c.misses.Load(), c.evictions.Load()
}
