// Package convert turns OTLP metrics into series in the store, with the names
// and labels contrib's prometheusexporter gives the same input.
package convert // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"

import (
	"bytes"
	"cmp"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/descriptors"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// Options are the naming and labelling settings of the exporter.
type Options struct {
	Namespace   string
	ConstLabels map[string]string
	// ResourceLabels selects the resource attributes that become labels;
	// nil for none.
	ResourceLabels *ResourceLabels
	// KeepIdentifyingResourceAttributes keeps service.name,
	// service.namespace and service.instance.id on target_info, beside the
	// job and instance made of them.
	KeepIdentifyingResourceAttributes bool
	WithoutScopeInfo                  bool
	WithSuffixes                      bool
	UTF8Allowed                       bool
	// Received, when set, is called after each resource of a batch that
	// has a job and an instance (one agent), with the newest point time of
	// the resource stored from the batch.
	Received func(r *store.Resource, newest int64)
	// Aggregator, when set, takes the metrics its rules match, in place of
	// storing them as each agent's series.
	Aggregator *aggregate.Aggregator
}

const (
	serviceName       = "service.name"
	serviceNamespace  = "service.namespace"
	serviceInstanceID = "service.instance.id"
)

// Converter writes OTLP batches into a store. It is safe for concurrent use.
type Converter struct {
	opts        Options
	store       *store.Store
	descs       *descriptors.Cache
	names       *names
	bounds      *boundsIntern
	constLabels []baseLabel
	// TargetInfoName is the name of the per-resource target_info family.
	TargetInfoName string
	now            func() int64
	agg            *aggregate.Aggregator
	rules          *aggregate.Rules

	workers sync.Pool
}

// New returns a converter writing into st; now is the store clock.
func New(opts Options, st *store.Store, descs *descriptors.Cache, now func() int64) *Converter {
	labelNamer := otlptranslator.LabelNamer{
		UTF8Allowed: opts.UTF8Allowed,
		// As contrib while its PermissiveLabelSanitization gate is off.
		PreserveMultipleUnderscores: true,
	}
	// otlptranslator prefixes names with the namespace as it is: one that is
	// not a valid name (my-ns) would make every name invalid.
	namespace := opts.Namespace
	if ns, err := labelNamer.Build(namespace); err == nil && namespace != "" && !opts.UTF8Allowed {
		namespace = ns
	}
	c := &Converter{
		opts:  opts,
		store: st,
		descs: descs,
		names: newNames(otlptranslator.MetricNamer{
			Namespace:          namespace,
			WithMetricSuffixes: opts.WithSuffixes,
			UTF8Allowed:        opts.UTF8Allowed,
		}, labelNamer),
		bounds:         newBoundsIntern(),
		TargetInfoName: otlptranslator.TargetInfoMetricName,
		now:            now,
		agg:            opts.Aggregator,
	}
	if c.agg != nil {
		c.rules = c.agg.Rules()
	}
	if opts.Namespace != "" {
		if ns, err := labelNamer.Build(opts.Namespace); err == nil {
			c.TargetInfoName = ns + "_" + c.TargetInfoName
		}
	}
	// A metric of that name would write a second target_info family.
	st.Reserve(c.TargetInfoName)
	for name, value := range opts.ConstLabels {
		c.constLabels = append(c.constLabels, baseLabel{name: name, value: promtext.AppendEscaped(nil, value)})
	}
	slices.SortFunc(c.constLabels, func(a, b baseLabel) int { return cmp.Compare(a.name, b.name) })
	c.workers.New = func() any { return &worker{c: c} }
	return c
}

// ConsumeMetrics stores every data point of md and reports what it did. It
// keeps nothing of md.
func (c *Converter) ConsumeMetrics(md pmetric.Metrics) Stats {
	w := c.workers.Get().(*worker)
	w.now = c.now()
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		rm := rms.At(i)
		agent := w.resource(rm.Resource().Attributes())
		w.newest = 0
		sms := rm.ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			sm := sms.At(j)
			w.scope(sm)
			ms := sm.Metrics()
			for k := 0; k < ms.Len(); k++ {
				w.metric(ms.At(k))
			}
		}
		if w.agg.table != nil {
			c.agg.Close(w.agg.table)
			w.agg.table = nil
		}
		if agent && w.newest > 0 && c.opts.Received != nil {
			c.opts.Received(w.res, w.newest)
		}
	}
	if w.deltas {
		c.store.NoteDeltas(w.now, w.newRun)
		w.deltas, w.newRun = false, false
	}
	out := w.stats
	if len(out.Conflicts) > 0 {
		out.Conflicts = slices.Clone(out.Conflicts)
	}
	w.stats.reset()
	w.last = nil
	c.workers.Put(w)
	return out
}

// baseLabel is a label every series of a resource and scope carries.
type baseLabel struct {
	name string
	// override is the resource attribute key under
	// resource_to_telemetry_conversion: a point attribute with the same key
	// gives way to it, as contrib copies resource attributes over point ones.
	override string
	value    []byte // escaped
}

// worker holds the scratch state of one ConsumeMetrics call.
type worker struct {
	c     *Converter
	stats Stats
	now   int64

	res          *store.Resource
	agent        bool        // the resource has a job and an instance
	resAttrs     pcommon.Map // the resource's attributes
	scopeMetrics pmetric.ScopeMetrics
	scopeSeed    uint64
	agg          aggregation
	resourceBase []baseLabel
	base         []baseLabel
	baseSig      uint64
	arena        []byte // backs the values of resourceBase and base

	keys  []string
	vals  []pcommon.Value
	pairs []labelPair
	key   []byte // the resource's store key: job, 0xff, instance
	// buf and tiNames are scratch for target_info's values and names;
	// tiSet is the set of the last names.
	buf     []byte
	tiNames []string
	tiSet   *store.LabelNames
	// names and values are the label set of the current point, as
	// store.LabelSet holds it; absent marks the labels of its descriptor
	// that the point leaves out.
	names  *store.LabelNames
	values []byte
	absent []byte
	put    store.Labels // handed to the store (pointLabels)
	tmpl   template
	id     descriptors.Identity
	last   *descriptors.Descriptor

	wr         store.Writer // the metric being written
	metricName string       // its OTLP name

	deltas bool // the batch accumulated deltas
	newRun bool // and began a run of them
	// newest is the newest point time stored from the current resource.
	newest int64
}

func isServiceAttribute(k string) bool {
	return k == serviceName || k == serviceNamespace || k == serviceInstanceID
}

// resource prepares the labels that come from the resource, and reports
// whether it is one agent: it has a job and an instance. It allocates
// nothing once the resource is known: job and instance are assembled in
// scratch bytes, and label values go into the arena.
func (w *worker) resource(attrs pcommon.Map) (agent bool) {
	// key = job, 0xff, instance; job is service.namespace/service.name.
	w.key = w.key[:0]
	name, hasJob := attrs.Get(serviceName)
	if hasJob {
		if ns, ok := attrs.Get(serviceNamespace); ok {
			w.key = append(appendRaw(w.key, ns), '/')
		}
		w.key = appendRaw(w.key, name)
	}
	w.key = validUTF8(w.key, 0)
	jobEnd := len(w.key)
	w.key = append(w.key, 0xff)
	id, hasInstance := attrs.Get(serviceInstanceID)
	if hasInstance {
		w.key = validUTF8(appendRaw(w.key, id), jobEnd+1)
	}
	job, instance := w.key[:jobEnd], w.key[jobEnd+1:]
	w.res = w.c.store.Resource(w.key, w.now)
	// As contrib: no target_info without a job and an instance, empty ones
	// included (all the resources of a job without instance ids share one
	// entry, and their target_info would be whichever came last).
	if len(job) > 0 && len(instance) > 0 {
		w.targetInfo(attrs, job, instance)
	}

	w.arena = w.arena[:0]
	w.resourceBase = w.resourceBase[:0]
	if hasJob {
		w.resourceBase = append(w.resourceBase, baseLabel{name: "job", value: w.arenaEscaped(job)})
	}
	if hasInstance {
		w.resourceBase = append(w.resourceBase, baseLabel{name: "instance", value: w.arenaEscaped(instance)})
	}
	if sel := w.c.opts.ResourceLabels; sel != nil {
		if names, ok := sel.Exact(); ok {
			for _, k := range names {
				if v, ok := attrs.Get(k); ok {
					w.resourceLabel(k, v)
				}
			}
		} else {
			for k, v := range attrs.All() {
				if sel.Match(k) {
					w.resourceLabel(k, v)
				}
			}
		}
	}
	w.resAttrs = attrs
	w.agent = hasJob && hasInstance && len(instance) > 0
	return w.agent
}

// resourceLabel adds a resource attribute to the labels of the resource's
// series. As contrib, which copies it onto each point, it replaces a point
// attribute of the same key.
func (w *worker) resourceLabel(k string, v pcommon.Value) {
	if name, err := w.c.names.label(k); err == nil {
		w.resourceBase = append(w.resourceBase, baseLabel{name: name, override: k, value: w.arenaValue(v)})
	}
}

// validUTF8 replaces invalid UTF-8 in b[from:] by U+FFFD. Valid UTF-8 never
// holds 0xff, the separator of job and instance in a resource key: without
// the repair two agents could share one key.
func validUTF8(b []byte, from int) []byte {
	if utf8.Valid(b[from:]) {
		return b
	}
	return append(b[:from], bytes.ToValidUTF8(b[from:], []byte("\uFFFD"))...)
}

// arenaValue and arenaEscaped append an escaped label value to the arena
// and return it.
func (w *worker) arenaValue(v pcommon.Value) []byte {
	start := len(w.arena)
	w.arena = appendValue(w.arena, v)
	return w.arena[start:len(w.arena):len(w.arena)]
}

func (w *worker) arenaEscaped(raw []byte) []byte {
	start := len(w.arena)
	w.arena = promtext.AppendEscaped(w.arena, raw)
	return w.arena[start:len(w.arena):len(w.arena)]
}

// scope completes the base labels with the scope's and the constant ones.
func (w *worker) scope(sm pmetric.ScopeMetrics) {
	// Values appended to the arena from here on are the scope's; the
	// resource's stay in place below them.
	w.base = append(w.base[:0], w.resourceBase...)
	if !w.c.opts.WithoutScopeInfo {
		scope := sm.Scope()
		for k, v := range scope.Attributes().All() {
			if k == "name" || k == "version" || k == "schema_url" {
				continue
			}
			if name, err := w.c.names.label("otel_scope_" + k); err == nil {
				w.base = append(w.base, baseLabel{name: name, value: w.arenaValue(v)})
			}
		}
		for _, l := range [...]struct{ name, value string }{
			{"otel_scope_name", scope.Name()},
			{"otel_scope_version", scope.Version()},
			{"otel_scope_schema_url", sm.SchemaUrl()},
		} {
			start := len(w.arena)
			w.arena = promtext.AppendEscaped(w.arena, l.value)
			w.base = append(w.base, baseLabel{name: l.name, value: w.arena[start:len(w.arena):len(w.arena)]})
		}
	}
	w.base = append(w.base, w.c.constLabels...)

	w.baseSig = baseSignature(w.base)
	w.last = nil // base values changed: the template must be compiled again
	w.scopeMetrics = sm
	if w.c.agg != nil {
		w.scopeSeed = scopeSeed(sm)
	}
}

// baseSignature identifies the names of a set of base labels, and which
// of them override point attributes.
func baseSignature(base []baseLabel) uint64 {
	var d xxhash.Digest
	d.Reset()
	for _, b := range base {
		_, _ = d.WriteString(b.name)
		_, _ = d.Write([]byte{0xff})
		_, _ = d.WriteString(b.override)
		_, _ = d.Write([]byte{0xfe})
	}
	return d.Sum64()
}

// scopeSeed identifies a scope among a resource's, for the sources of the
// metrics it holds: its name, version, schema URL and attributes.
func scopeSeed(sm pmetric.ScopeMetrics) uint64 {
	var d xxhash.Digest
	d.Reset()
	scope := sm.Scope()
	for _, s := range [...]string{scope.Name(), scope.Version(), sm.SchemaUrl()} {
		_, _ = d.WriteString(s)
		_, _ = d.Write([]byte{0xff})
	}
	var attrs uint64
	for k, v := range scope.Attributes().All() {
		attrs += xxhash.Sum64String(k + "\xff" + v.AsString())
	}
	return d.Sum64() ^ attrs
}
