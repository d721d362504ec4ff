package convert // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"

import (
	"cmp"
	"slices"

	"github.com/cespare/xxhash/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/descriptors"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// labels renders the values of a point of family f into w.values, with
// their names in w.names, and returns false when an attribute name cannot
// be translated.
//
// The hot path is the memo: consecutive points of a metric nearly always have
// the same attribute keys, so the previous descriptor is checked first with a
// few string comparisons; the LRU is consulted only when the keys change.
// The descriptor's template for the current scope then renders the point
// with one copy per run of base values. The names come from the descriptor:
// a series keeps only its values.
func (w *worker) labels(f *store.Family, attrs pcommon.Map) bool {
	d := w.last
	if d != nil && (d.Family != f.Name || d.BaseSig != w.baseSig || len(d.Keys) != attrs.Len()) {
		d = nil
	}
	// Collect the values, and the keys only once they differ from the memo's.
	w.vals, w.keys = w.vals[:0], w.keys[:0]
	for k, v := range attrs.All() {
		i := len(w.vals)
		w.vals = append(w.vals, v)
		if d != nil && d.Keys[i] != k {
			w.keys = append(w.keys, d.Keys[:i]...)
			d = nil
		}
		if d == nil {
			w.keys = append(w.keys, k)
		}
	}
	if d == nil {
		if d = w.descriptor(f); d == nil {
			return false
		}
		w.last = d
		w.tmpl.compile(d, w.base)
	}
	var absent bool
	if w.tmpl.ok {
		// The names without the scope's empty base labels come with the
		// template; only an empty attribute asks the descriptor.
		w.names = w.tmpl.names
		w.values, w.absent, absent = w.tmpl.render(w.values[:0], w.vals, w.absent)
	} else {
		w.names = d.Names
		w.values, absent = w.render(w.values[:0], d)
	}
	if absent {
		w.names = d.Reduced(w.absent)
	}
	return true
}

// pointLabels is the current point's label set as the store takes it.
func (w *worker) pointLabels() *store.Labels {
	w.put = store.Labels{Names: w.names, Own: w.values}
	if w.names.Shared() != 0 {
		w.put.Shared = w.tmpl.shared
	}
	return &w.put
}

// template is a descriptor's values with the current scope's base label
// values filled in: runs of base values are literal bytes between the slots
// of the point attributes. Every value is written after its length
// (store.LabelSet).
type template struct {
	ok     bool // false when collisions involve point attributes: render() then
	pieces []piece
	arena  []byte
	group  []byte // scratch for one label's value
	// shared holds the values of the labels the names mark shared, one
	// string for every point rendered with the template (and every series
	// created from them); sharedBuf is where they are rendered.
	shared    *string
	sharedBuf []byte
	// absent marks the labels whose base values are empty, per label of the
	// descriptor's names; any says that one is, and names are the names
	// without them.
	absent []byte
	any    bool
	names  *store.LabelNames
}

type piece struct {
	lit   []byte // literal run of base values; nil for an attribute slot
	label int    // label of an attribute slot
	attr  int    // index of the point attribute
}

func (t *template) compile(d *descriptors.Descriptor, base []baseLabel) {
	t.ok, t.pieces, t.arena, t.any = true, t.pieces[:0], t.arena[:0], false
	t.sharedBuf = t.sharedBuf[:0]
	sharedMask := d.Names.Shared()
	t.absent = append(t.absent[:0], make([]byte, len(d.Names.Names))...)
	litStart := -1
	flush := func() {
		if litStart >= 0 && litStart < len(t.arena) {
			t.pieces = append(t.pieces, piece{lit: t.arena[litStart:len(t.arena):len(t.arena)]})
		}
		litStart = -1
	}
	for i := 0; i < len(d.Steps); i++ {
		st := d.Steps[i]
		joined := i+1 < len(d.Steps) && d.Steps[i+1].Joined
		if st.Source >= 0 {
			if joined {
				t.ok = false
				return
			}
			flush()
			t.pieces = append(t.pieces, piece{label: st.Label, attr: st.Source})
			continue
		}
		// A base label, possibly joined with further base labels.
		group := append(t.group[:0], base[-st.Source-1].value...)
		for i+1 < len(d.Steps) && d.Steps[i+1].Joined {
			i++
			if d.Steps[i].Source >= 0 {
				t.ok = false
				return
			}
			group = append(append(group, promtext.Separator), base[-d.Steps[i].Source-1].value...)
		}
		t.group = group
		if len(group) == 0 {
			t.absent[st.Label], t.any = 1, true // an empty label is an absent one
			continue
		}
		if st.Label < 64 && sharedMask&(1<<st.Label) != 0 {
			flush()
			var at int
			t.sharedBuf, at = store.OpenValue(t.sharedBuf)
			t.sharedBuf = store.CloseValue(append(t.sharedBuf, group...), at)
			continue
		}
		if litStart < 0 {
			litStart = len(t.arena)
		}
		var at int
		t.arena, at = store.OpenValue(t.arena)
		t.arena = store.CloseValue(append(t.arena, group...), at)
	}
	flush()
	t.names = d.Names
	if t.any {
		t.names = d.Reduced(t.absent)
	}
	switch {
	case len(t.sharedBuf) == 0:
		t.shared = nil
	case t.shared == nil || *t.shared != string(t.sharedBuf):
		shared := string(t.sharedBuf)
		t.shared = &shared
	}
}

// render appends the values of a point; absent is scratch for the labels
// left out, which it returns, and any says whether an attribute is among
// them (the template's names already leave out its empty base labels).
func (t *template) render(b []byte, vals []pcommon.Value, absent []byte) (out, absentOut []byte, any bool) {
	for i := range t.pieces {
		p := &t.pieces[i]
		if p.lit != nil {
			b = append(b, p.lit...)
			continue
		}
		var at int
		b, at = store.OpenValue(b)
		b = appendValue(b, vals[p.attr])
		if len(b) == at+1 {
			b = b[:at]
			if !any {
				absent, any = append(absent[:0], t.absent...), true
			}
			absent[p.label] = 1 // an empty label is an absent one
			continue
		}
		b = store.CloseValue(b, at)
	}
	return b, absent, any
}

// render appends the values of a point step by step, the values of steps
// that share a label joined by ';'; a label whose value is empty is marked
// in w.absent, as Prometheus treats an empty label as an absent one.
func (w *worker) render(b []byte, d *descriptors.Descriptor) (out []byte, absent bool) {
	w.absent = append(w.absent[:0], make([]byte, len(d.Names.Names))...)
	label, at := -1, 0
	for _, st := range d.Steps {
		if st.Joined {
			b = append(b, promtext.Separator)
		} else {
			b, absent = closeValue(b, w.absent, label, at, absent)
			label = st.Label
			b, at = store.OpenValue(b)
		}
		if st.Source >= 0 {
			b = appendValue(b, w.vals[st.Source])
		} else {
			b = append(b, w.base[-st.Source-1].value...)
		}
	}
	b, absent = closeValue(b, w.absent, label, at, absent)
	return b, absent
}

// closeValue ends the value of label opened at at: with its length, or
// taken out and marked absent when it is empty.
func closeValue(b, absentLabels []byte, label, at int, absent bool) ([]byte, bool) {
	switch {
	case label < 0:
		return b, absent
	case len(b) == at+1:
		absentLabels[label] = 1
		return b[:at], true
	default:
		return store.CloseValue(b, at), absent
	}
}

// descriptor finds or builds the descriptor of the current keys.
func (w *worker) descriptor(f *store.Family) *descriptors.Descriptor {
	w.id = descriptors.Identity{
		Family: f.Name, Kind: uint8(f.Kind), Unit: f.Unit, Help: f.Help,
		BaseSig: w.baseSig, Keys: w.keys,
	}
	var d xxhash.Digest
	d.Reset()
	_, _ = d.WriteString(f.Name)
	_, _ = d.Write([]byte{0xff, uint8(f.Kind)})
	_, _ = d.WriteString(f.Unit)
	_, _ = d.Write([]byte{0xff})
	_, _ = d.WriteString(f.Help)
	_, _ = d.Write([]byte{0xff})
	for _, k := range w.keys {
		_, _ = d.WriteString(k)
		_, _ = d.Write([]byte{0xff})
	}
	hash := d.Sum64() ^ w.baseSig
	if desc := w.c.descs.Get(hash, &w.id); desc != nil {
		return desc
	}
	desc := w.buildDescriptor(f)
	if desc != nil {
		w.c.descs.Add(hash, desc)
	}
	return desc
}

// exported renames the labels the exposition writes itself — the bucket
// and quantile labels, the metric name — to Prometheus' exported_ form: a
// series with two of them does not parse. Point attributes, resource
// attributes (resource_to_telemetry_conversion) and const labels alike.
func exported(name string, kind prommodel.Kind) string {
	if (name == "le" && kind == prommodel.KindHistogram) || (name == "quantile" && kind == prommodel.KindSummary) || name == "__name__" {
		return "exported_" + name
	}
	return name
}

type planned struct {
	name   string
	key    string // original attribute key, orders colliding point attributes
	source int
}

// buildDescriptor sanitises the names, orders the labels by name and joins
// the values of names that collide after sanitisation with ';' — point
// attributes first, by original key, then the base labels in their order.
func (w *worker) buildDescriptor(f *store.Family) *descriptors.Descriptor {
	var overridden map[string]bool
	for _, b := range w.base {
		if b.override != "" {
			if overridden == nil {
				overridden = map[string]bool{}
			}
			overridden[b.override] = true
		}
	}
	plan := make([]planned, 0, len(w.keys)+len(w.base))
	for i, k := range w.keys {
		if overridden[k] {
			continue
		}
		name, err := w.c.names.label(k)
		if err != nil {
			return nil
		}
		plan = append(plan, planned{name: exported(name, f.Kind), key: k, source: i})
	}
	slices.SortFunc(plan, func(a, b planned) int { return cmp.Compare(a.key, b.key) })
	for i, b := range w.base {
		plan = append(plan, planned{name: exported(b.name, f.Kind), source: -(i + 1)})
	}
	slices.SortStableFunc(plan, func(a, b planned) int { return cmp.Compare(a.name, b.name) })

	desc := &descriptors.Descriptor{Identity: w.id, Metric: w.metricName, Steps: make([]descriptors.Step, len(plan))}
	desc.Keys = slices.Clone(w.keys)
	var names []string
	for i, p := range plan {
		joined := i > 0 && plan[i-1].name == p.name
		if !joined {
			names = append(names, p.name)
		}
		desc.Steps[i] = descriptors.Step{Label: len(names) - 1, Joined: joined, Source: p.source}
	}
	desc.Names = store.NewSharedLabelNames(names, sharedLabels(desc.Steps))
	return desc
}

// sharedLabels marks the labels whose values come from base labels alone:
// every series of a resource and scope has them alike, and the template
// renders them once (store.LabelSet.Shared). None when a point attribute
// shares a label with another name, which the template does not render.
func sharedLabels(steps []descriptors.Step) uint64 {
	var shared, attrs uint64
	for i, st := range steps {
		if st.Label >= 64 {
			continue
		}
		bit := uint64(1) << st.Label
		if st.Source >= 0 {
			if st.Joined || i+1 < len(steps) && steps[i+1].Joined {
				return 0
			}
			attrs |= bit
		} else {
			shared |= bit
		}
	}
	return shared &^ attrs
}

// targetInfo sets the target_info labels of the current resource: every
// attribute but the three that make job and instance, sanitised, colliding
// names joined with ';' in attribute order, then job and instance, which win
// over attributes that sanitise to the same names. A label whose value is
// empty is left out, as in every other set.
func (w *worker) targetInfo(attrs pcommon.Map, job, instance []byte) {
	w.pairs = w.pairs[:0]
	for k, v := range attrs.All() {
		if isServiceAttribute(k) && !w.c.opts.KeepIdentifyingResourceAttributes {
			continue
		}
		if name, err := w.c.names.label(k); err == nil && name != "job" && name != "instance" {
			w.pairs = append(w.pairs, labelPair{name: name, value: v})
		}
	}
	w.pairs = append(w.pairs, labelPair{name: "instance", raw: instance}, labelPair{name: "job", raw: job})
	slices.SortStableFunc(w.pairs, func(a, b labelPair) int { return cmp.Compare(a.name, b.name) })
	w.tiNames, w.buf = w.tiNames[:0], w.buf[:0]
	at := -1
	for i, p := range w.pairs {
		if i > 0 && w.pairs[i-1].name == p.name {
			w.buf = append(w.buf, promtext.Separator)
		} else {
			w.closeTargetInfoValue(at)
			w.tiNames = append(w.tiNames, p.name)
			w.buf, at = store.OpenValue(w.buf)
		}
		if p.raw != nil {
			w.buf = promtext.AppendEscaped(w.buf, p.raw)
		} else {
			w.buf = appendValue(w.buf, p.value)
		}
	}
	w.closeTargetInfoValue(at)
	w.res.SetTargetInfo(w.targetInfoNames(), w.buf)
}

// closeTargetInfoValue ends the value opened at at: with its length, or
// taken out with its name when it is empty.
func (w *worker) closeTargetInfoValue(at int) {
	switch {
	case at < 0:
	case len(w.buf) == at+1:
		w.buf = w.buf[:at]
		w.tiNames = w.tiNames[:len(w.tiNames)-1]
	default:
		w.buf = store.CloseValue(w.buf, at)
	}
}

// targetInfoNames is the set of w.tiNames: the resource's own when its
// names are unchanged, else the worker's last, else a new one. Agents of a
// fleet mostly have the same resource attributes, so most share a set.
func (w *worker) targetInfoNames() *store.LabelNames {
	if ti, ok := w.res.TargetInfo(); ok && slices.Equal(ti.Names.Names, w.tiNames) {
		return ti.Names
	}
	if w.tiSet == nil || !slices.Equal(w.tiSet.Names, w.tiNames) {
		w.tiSet = store.NewLabelNames(slices.Clone(w.tiNames))
	}
	return w.tiSet
}

// labelPair is a target_info label: an attribute value, or raw bytes.
type labelPair struct {
	name  string
	value pcommon.Value
	raw   []byte
}
