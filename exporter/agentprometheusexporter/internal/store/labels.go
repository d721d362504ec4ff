package store // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"

import (
	"encoding/binary"
	"iter"
	"strings"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
)

// LabelNames is a set of label names, shared by every series that has
// those names: a series keeps its values only. The converter's descriptors
// (internal/descriptors), one per family and attribute keys, hold the sets,
// so a thousand agents sending the same metric share one.
//
// Names are as the converter renders them: escaped as text-format label
// values (escaping matters only when UTF-8 names are allowed), sorted,
// distinct. A set is never changed once made.
type LabelNames struct {
	Names []string
	// Plain says that every name is a legacy label name: every format and
	// escaping scheme writes the set as stored.
	Plain bool

	key  string // the names, each followed by '"': the set's identity
	hash uint64 // of key
	// underscored is key for the names as a scraper that does not take UTF-8
	// names gets them (promtext.UnderscoreLabelName), names that escape
	// alike once: sets of other names with the same underscored key may
	// write the same series (clash.go).
	underscored string
	// shared marks the labels (bit i for name i) whose values a set keeps
	// apart (LabelSet): the labels every series of a resource has alike
	// (job, instance, resource and scope labels). Not part of the identity:
	// two sets of the same names are the same set however they keep values.
	shared uint64
	// open is what the text formats write before each value: `name="` for
	// the first, `",name="` for the others, with the quote that ends the
	// value before.
	open []string
}

// NewLabelNames makes the set of names; names must be sorted and distinct.
// Its sets keep no value apart (LabelSet).
func NewLabelNames(names []string) *LabelNames { return NewSharedLabelNames(names, 0) }

// NewSharedLabelNames makes the set of names whose sets keep the values of
// the labels marked in shared (bit i for name i, names beyond the 64th
// never) apart, once for the series of a resource (LabelSet).
func NewSharedLabelNames(names []string, shared uint64) *LabelNames {
	if len(names) < 64 {
		shared &= 1<<len(names) - 1
	}
	n := &LabelNames{Names: names, Plain: true, open: make([]string, len(names)), shared: shared}
	var key strings.Builder
	for i, name := range names {
		key.WriteString(name)
		key.WriteByte('"')
		n.Plain = n.Plain && promtext.IsLegacyLabelName(name)
		n.open[i] = name + `="`
		if i > 0 {
			n.open[i] = `",` + n.open[i]
		}
	}
	n.key = key.String()
	n.hash = xxhash.Sum64String(n.key)
	n.underscored = n.key
	if !n.Plain {
		n.underscored = underscoredKey(names)
	}
	return n
}

// Same reports whether n and o are the same names: one set, or two sets
// made of the same names (a descriptor evicted and built again).
func (n *LabelNames) Same(o *LabelNames) bool { return n == o || n.key == o.key }

// Shared is the mask of the labels whose values the set's series share
// (NewSharedLabelNames).
func (n *LabelNames) Shared() uint64 { return n.shared }

// LabelSet is the labels of a series: its names and its values. values
// holds each value, escaped as in the text formats, after its length as a
// uvarint, in the order of the names (AppendValue). A label whose value is
// empty is absent, as in Prometheus: a point with an empty value has a set
// of fewer names.
//
// Lengths rather than the closing quotes the text formats write: a scrape
// writes every set as text, and finding where each value ends took more
// than a third of a text scrape's time (promtext.ClosingQuote per value,
// BenchmarkWriteText); a length byte is as small as the quote.
//
// The values of the labels the names mark shared (LabelNames.Shared) are
// in shared instead, alike: one string for the series of a resource, which
// would otherwise each hold a copy of its job, instance and resource labels.
// Cursor walks both in the order of the names.
type LabelSet struct {
	Names  *LabelNames
	shared *string // nil when the names mark no label shared
	values string
}

// NewLabelSet is the set of names with these values, as AppendValue (or
// OpenValue and CloseValue) writes them, none of them shared.
func NewLabelSet(names *LabelNames, values []byte) LabelSet {
	return LabelSet{Names: names, values: string(values)}
}

// Empty reports whether the set has no values.
func (s LabelSet) Empty() bool { return s.values == "" && deref(s.shared) == "" }

// Labels is the set as a Writer takes it: for tests and tools that store a
// set they read.
func (s LabelSet) Labels() *Labels {
	return &Labels{Names: s.Names, Shared: s.shared, Own: []byte(s.values)}
}

// Labels is a point's label set as a Writer is given it: Own holds the
// values that the series keeps as its own, Shared those of the labels Names marks
// shared, one string the caller keeps for every point that has them, and
// which the series it creates keep as it is.
type Labels struct {
	Names  *LabelNames
	Shared *string
	Own    []byte
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Cursor walks the values of a set in the order of its names.
type Cursor struct {
	from [2]string // the own values left, then the shared ones
	mask uint64    // bit 0: the next value is shared
}

// Cursor returns a cursor at the set's first value.
func (s LabelSet) Cursor() Cursor { return newCursor(s.Names, deref(s.shared), s.values) }

func newCursor(names *LabelNames, shared, own string) Cursor {
	return Cursor{[2]string{own, shared}, names.shared}
}

// Next returns the next value, escaped as stored; ok is false at the end
// or when the values are not as AppendValue writes them. A value of fewer
// than 128 bytes is read here, any other by nextValue: the writers call
// Next once per label of every series they write.
func (c *Cursor) Next() (value string, ok bool) {
	k := c.mask & 1
	c.mask >>= 1
	v := c.from[k]
	if v != "" && v[0] < 0x80 && 1+int(v[0]) <= len(v) {
		end := 1 + int(v[0])
		c.from[k] = v[end:]
		return v[1:end], true
	}
	value, c.from[k], ok = nextValue(v)
	return value, ok
}

// nextEncoded is the next value's encoded bytes: its length, then itself.
func (c *Cursor) nextEncoded() (encoded string, ok bool) {
	k := c.mask & 1
	c.mask >>= 1
	v := c.from[k]
	_, rest, ok := nextValue(v)
	if !ok {
		return "", false
	}
	c.from[k] = rest
	return v[:len(v)-len(rest)], true
}

// done reports whether the cursor has read every value.
func (c *Cursor) done() bool { return c.from[0] == "" && c.from[1] == "" }

// OpenValue begins a value of a set's Values at the end of b; append the
// escaped value, then CloseValue(b, at).
func OpenValue(b []byte) (out []byte, at int) { return append(b, 0), len(b) }

// CloseValue ends the value opened at at: it writes its length, moving the
// value along when the length takes more than one byte.
func CloseValue(b []byte, at int) []byte {
	n := len(b) - at - 1
	if n < 0x80 {
		b[at] = byte(n)
		return b
	}
	size := varintSize(uint64(n))
	b = append(b, make([]byte, size-1)...)
	copy(b[at+size:], b[at+1:at+1+n])
	binary.PutUvarint(b[at:at+size], uint64(n))
	return b
}

// AppendValue appends one escaped value of a set's Values.
func AppendValue(b []byte, escaped string) []byte {
	b = binary.AppendUvarint(b, uint64(len(escaped)))
	return append(b, escaped...)
}

func varintSize(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// nextValue splits the first value off a set's Values; ok is false at the
// end, or when values is not as AppendValue writes them. Callers walk Names
// alongside.
func nextValue(values string) (value, rest string, ok bool) {
	if values != "" && values[0] < 0x80 {
		end := 1 + int(values[0])
		if end > len(values) {
			return "", "", false
		}
		return values[1:end], values[end:], true
	}
	var lenBytes [binary.MaxVarintLen64]byte
	n, size := binary.Uvarint(lenBytes[:copy(lenBytes[:], values)])
	if size <= 0 || n > uint64(len(values)-size) {
		return "", "", false
	}
	end := size + int(n)
	return values[size:end], values[end:], true
}

// hashSet is the hash of a set by its content, folded to 32 bits: the key
// of a family's index, whose entries then take half the room of 64-bit
// keys. The rare sets whose folded hashes collide go to the overflow map.
// It is the hash of the values laid end to end in the order of the names,
// however the set keeps them (LabelSet.Shared).
func hashSet(names *LabelNames, shared, own string) uint32 {
	if names.shared == 0 {
		return collide(fold(xxhash.Sum64String(own) ^ names.hash))
	}
	var d xxhash.Digest
	d.Reset()
	c := newCursor(names, shared, own)
	for range names.Names {
		encoded, ok := c.nextEncoded()
		if !ok {
			break
		}
		_, _ = d.WriteString(encoded)
	}
	return collide(fold(d.Sum64() ^ names.hash))
}

func (l *Labels) hash() uint32 {
	return hashSet(l.Names, deref(l.Shared), unsafe.String(unsafe.SliceData(l.Own), len(l.Own)))
}

func (s *LabelSet) hash() uint32 { return hashSet(s.Names, deref(s.shared), s.values) }

func fold(h uint64) uint32 { return uint32(h ^ h>>32) }

// allCollideForTests makes every set hash alike, so that tests reach the
// paths of colliding sets. Never set outside tests.
var allCollideForTests bool

func collide(h uint32) uint32 {
	if allCollideForTests {
		return 42
	}
	return h
}

// is reports whether s is the set l.
func (s *LabelSet) is(l *Labels) bool {
	if s.Names == l.Names {
		return s.values == string(l.Own) && (s.shared == l.Shared || deref(s.shared) == deref(l.Shared))
	}
	if !s.Names.Same(l.Names) {
		return false
	}
	// The same names, their values kept apart otherwise: value by value.
	a := s.Cursor()
	b := newCursor(l.Names, deref(l.Shared), unsafe.String(unsafe.SliceData(l.Own), len(l.Own)))
	for range s.Names.Names {
		x, okx := a.Next()
		y, oky := b.Next()
		if okx != oky || x != y {
			return false
		}
	}
	return a.done() && b.done()
}

// AppendText appends the set as the text formats write it, without braces:
// `a="x",b="y"`. It is the hot path of every text scrape, once per series:
// it reads the values as Cursor.Next does, without a call to Next per value
// (BenchmarkAppendText).
func (s LabelSet) AppendText(b []byte) []byte {
	from := [2]string{s.values, deref(s.shared)}
	mask := s.Names.shared
	for i, open := range s.Names.open {
		k := mask & 1
		mask >>= 1
		value, rest, ok := nextValue(from[k])
		if !ok {
			if i == 0 {
				return b
			}
			break // not made by the store: ends the set
		}
		from[k] = rest
		b = append(b, open...)
		b = append(b, value...)
	}
	if len(s.Names.open) > 0 {
		b = append(b, '"')
	}
	return b
}

// All yields the pairs of the set, name and value, both escaped as they are
// stored; promtext.AppendUnescaped undoes the escaping.
func (s LabelSet) All() iter.Seq2[string, string] {
	return func(yield func(name, value string) bool) {
		c := s.Cursor()
		for _, name := range s.Names.Names {
			value, ok := c.Next()
			if !ok || !yield(name, value) {
				return
			}
		}
	}
}

// CompareSets orders sets pair by pair, name then value as stored, a set
// before the longer sets it begins: the order of target_info's series in
// every format, found without writing the sets.
func CompareSets(a, b LabelSet) int {
	ac, bc := a.Cursor(), b.Cursor()
	for i := 0; ; i++ {
		an, bn := i < len(a.Names.Names), i < len(b.Names.Names)
		switch {
		case !an && !bn:
			return 0
		case !an:
			return -1
		case !bn:
			return 1
		}
		if c := strings.Compare(a.Names.Names[i], b.Names.Names[i]); c != 0 {
			return c
		}
		x, _ := ac.Next()
		y, _ := bc.Next()
		if c := strings.Compare(x, y); c != 0 {
			return c
		}
	}
}

// Text is AppendText as a string.
func (s LabelSet) Text() string { return string(s.AppendText(nil)) }

// overflowKey is a set as a map key, by content.
type overflowKey struct{ names, values string }

func (s *LabelSet) overflowKey() overflowKey {
	return overflowKey{s.Names.key, logicalValues(s.Names, deref(s.shared), s.values)}
}

func (l *Labels) overflowKey() overflowKey {
	return overflowKey{l.Names.key, logicalValues(l.Names, deref(l.Shared), string(l.Own))}
}

// logicalValues lays a set's values end to end in the order of its names.
func logicalValues(names *LabelNames, shared, own string) string {
	if names.shared == 0 {
		return own
	}
	var b strings.Builder
	c := newCursor(names, shared, own)
	for range names.Names {
		encoded, ok := c.nextEncoded()
		if !ok {
			break
		}
		b.WriteString(encoded)
	}
	return b.String()
}
