package cardinality // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/cardinality"

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// Report is what the view serves, as JSON and as a page. The JSON schema is
// testdata/cardinality.schema.json of the exporter; the field comments
// below are its descriptions.
type Report struct {
	GeneratedAt time.Time `json:"generated_at"`
	// Seconds is how long the report took to build.
	Seconds float64 `json:"seconds"`
	// Top is how many resources and families the lists hold at most.
	Top    int     `json:"top"`
	Totals Totals  `json:"totals"`
	Limits []Limit `json:"limits"`
	// Aggregates are the aggregate rules, in configuration order; empty
	// without any.
	Aggregates []Aggregate `json:"aggregates"`
	// Resources are the top resources (agents) by series held; Refused the
	// top resources by series refused since they were first seen. The
	// gateway's own series, the groups of the aggregate rules, are no
	// agent's and are not listed.
	Resources []Resource `json:"resources"`
	Refused   []Resource `json:"refused"`
	// Families are the top families by series held.
	Families []Family `json:"families"`
	Activity Activity `json:"activity"`
	// Selection is the family or resource chosen with ?family= or
	// ?job=&instance=; without either, the family with the most series. Nil
	// when the store holds nothing or the choice names nothing held.
	Selection *Selection `json:"selection"`
	// Error says what was chosen that does not exist.
	Error string `json:"error,omitempty"`
}

// Totals count what the store holds.
type Totals struct {
	// Series counts every series held, the aggregate rules' groups too:
	// what max_series is checked against.
	Series int64 `json:"series"`
	// Resources counts the agents' resources holding series or seen within
	// metric_expiration.
	Resources int `json:"resources"`
	Families  int `json:"families"`
}

// Limit is one limit and how close the store is to it.
type Limit struct {
	Name  string  `json:"name"` // max_series, max_series_per_resource, max_descriptors or max_aggregate_sources
	Limit int64   `json:"limit"`
	Used  int64   `json:"used"`
	Ratio float64 `json:"ratio"` // used / limit
	// Resource is, for max_series_per_resource, the resource closest to it.
	Resource *ResourceRef `json:"resource,omitempty"`
}

// Aggregate is one aggregate rule: what it absorbs and what it serves.
type Aggregate struct {
	// Rule is the rule's place in the aggregate list.
	Rule    int      `json:"rule"`
	Metrics []string `json:"metrics"`
	// By or Without, whichever the rule sets (by: [] keeps nothing, and is
	// not the same as no by).
	By      []string `json:"by,omitzero"`
	Without []string `json:"without,omitzero"`
	// Sources counts the agents' series the rule absorbs: their state is
	// held, not the series. Series counts the aggregated series it serves.
	Sources int64 `json:"sources"`
	Series  int64 `json:"series"`
	// Reduction is Sources / Series: how many agents' series one served
	// series stands for; 0 while it serves none.
	Reduction float64 `json:"reduction"`
}

// ResourceRef names a resource: job and instance as its series carry them
// (empty when the agent sent no service.name or service.instance.id).
type ResourceRef struct {
	Job      string `json:"job"`
	Instance string `json:"instance"`
}

// Resource is one resource's series and refusals.
type Resource struct {
	ResourceRef
	Series int64 `json:"series"`
	// LimitRatio is Series / max_series_per_resource.
	LimitRatio float64 `json:"limit_ratio"`
	// Refused counts the resource's new series refused since it was first
	// seen, per limit.
	Refused Refused `json:"refused"`
}

// Family is one family's series.
type Family struct {
	Name string `json:"name"`
	Type string `json:"type"` // counter, gauge, histogram or summary
	// Series held: in all, or in a Selection's families, of that resource.
	Series int64 `json:"series"`
	// SeriesRatio is Series over all series held, or over the selected
	// resource's.
	SeriesRatio float64 `json:"series_ratio"`
	// Resources counts the resources holding series of the family.
	Resources int `json:"resources"`
}

// Activity is what happened to series over the last minutes.
type Activity struct {
	// Minutes are the last 15 minutes, oldest first, the current one last.
	Minutes []MinuteChange `json:"minutes"`
	// SinceStart counts since the exporter started.
	SinceStart Change `json:"since_start"`
}

// Selection is one family or one resource and the label names of its series.
type Selection struct {
	Family   *Family      `json:"family,omitempty"`
	Resource *ResourceRef `json:"resource,omitempty"`
	Series   int64        `json:"series"`
	// Families are the selected resource's families by its series in them.
	Families []Family `json:"families,omitempty"`
	// Resources are the selected family's resources by their series in it,
	// among the resources of the series scanned.
	Resources []ResourceShare `json:"resources,omitempty"`
	// Labels are the label names of the series scanned, by distinct values.
	Labels []Label `json:"labels"`
	Scan   Scan    `json:"scan"`
	// Suggestion is, for a family whose label explodes, the aggregate rule
	// that would sum the label away.
	Suggestion *Suggestion `json:"suggestion,omitempty"`
}

// ResourceShare is a resource's part of a family.
type ResourceShare struct {
	ResourceRef
	Series      int64   `json:"series"`
	SeriesRatio float64 `json:"series_ratio"` // of the family's series
}

// Label is one label name and its values among the series scanned.
type Label struct {
	Name string `json:"name"`
	// Distinct counts the label's values; exact up to 10000, a HyperLogLog
	// estimate (~1% error) beyond, when Estimated is set.
	Distinct  int64 `json:"distinct"`
	Estimated bool  `json:"estimated"`
	// Series counts the series scanned that carry the label.
	Series int64 `json:"series"`
	// Ratio is Distinct / Scan.Series: 1 for a label unique to each series.
	Ratio float64 `json:"ratio"`
	// Examples are the first few values seen, at most 80 bytes each.
	Examples []string `json:"examples"`

	stored string // the name as the store has it (escaped), for Origin
}

// Scan tells how much of a selection's series the label count read. The
// scan is bounded in time (scan_timeout); a family it could not read whole
// is read in chunks spread over all of it, so that the sample is not one
// agent's.
type Scan struct {
	Series   int64   `json:"series"`
	Complete bool    `json:"complete"`
	Seconds  float64 `json:"seconds"`
}

// Query is what a request asks for.
type Query struct {
	Top           int
	Family        string
	Job, Instance string
	Resource      bool // Job and Instance are set, possibly to ""
}

// build assembles the report of q.
func (v *View) build(q Query) Report {
	began := time.Now()
	now := v.opts.Now()
	maxSeries, maxPerResource := v.store.Limits()
	r := Report{GeneratedAt: now.UTC(), Top: q.Top, Limits: []Limit{}, Refused: []Resource{}}

	resources := v.store.Resources()
	stats := make([]store.ResourceStat, 0, len(resources))
	for _, res := range resources {
		// The groups of the aggregate rules are the gateway's own series:
		// they are in the totals' series and max_series, not among the agents.
		if s := res.Stat(); !s.Own {
			stats = append(stats, s)
		}
	}
	r.Totals.Resources = len(stats)
	bySeries := top(stats, q.Top, func(a, b store.ResourceStat) int {
		return cmp.Or(cmp.Compare(b.Series, a.Series),
			cmp.Compare(b.RefusedMaxSeries+b.RefusedPerResource, a.RefusedMaxSeries+a.RefusedPerResource),
			strings.Compare(a.Job, b.Job), strings.Compare(a.Instance, b.Instance))
	})
	r.Resources = make([]Resource, len(bySeries))
	for i, s := range bySeries {
		r.Resources[i] = resourceOf(s, maxPerResource)
	}
	refused := slices.DeleteFunc(stats, func(s store.ResourceStat) bool { return s.RefusedMaxSeries+s.RefusedPerResource == 0 })
	for _, s := range top(refused, q.Top, func(a, b store.ResourceStat) int {
		return cmp.Or(cmp.Compare(b.RefusedMaxSeries+b.RefusedPerResource, a.RefusedMaxSeries+a.RefusedPerResource),
			strings.Compare(a.Job, b.Job), strings.Compare(a.Instance, b.Instance))
	}) {
		r.Refused = append(r.Refused, resourceOf(s, maxPerResource))
	}

	families := v.store.Families()
	fstats := make([]store.FamilyStat, len(families))
	for i, f := range families {
		fstats[i] = f.Stat()
	}
	r.Totals.Families = len(fstats)
	r.Totals.Series = v.store.SeriesCount()
	fstats = top(fstats, q.Top, func(a, b store.FamilyStat) int {
		return cmp.Or(cmp.Compare(b.Series, a.Series), strings.Compare(a.Family.Name, b.Family.Name))
	})
	r.Families = make([]Family, len(fstats))
	for i, s := range fstats {
		r.Families[i] = familyOf(s.Family, int64(s.Series), r.Totals.Series, s.Resources)
	}

	r.Limits = append(r.Limits, limit("max_series", maxSeries, r.Totals.Series))
	perResource := limit("max_series_per_resource", maxPerResource, 0)
	if len(r.Resources) > 0 {
		perResource = limit("max_series_per_resource", maxPerResource, r.Resources[0].Series)
		perResource.Resource = &r.Resources[0].ResourceRef
	}
	r.Limits = append(r.Limits, perResource)
	if v.opts.MaxDescriptors > 0 && v.opts.Descriptors != nil {
		r.Limits = append(r.Limits, limit("max_descriptors", int64(v.opts.MaxDescriptors), int64(v.opts.Descriptors())))
	}
	r.Aggregates = []Aggregate{}
	if v.opts.Aggregates != nil {
		for _, a := range v.opts.Aggregates() {
			r.Aggregates = append(r.Aggregates, Aggregate{
				Rule: a.Rule, Metrics: a.Metrics, By: a.By, Without: a.Without,
				Sources: a.Sources, Series: a.Series, Reduction: ratio(a.Sources, a.Series),
			})
		}
		if v.opts.MaxAggregateSources > 0 && v.opts.AggregateSources != nil {
			r.Limits = append(r.Limits, limit("max_aggregate_sources", int64(v.opts.MaxAggregateSources), v.opts.AggregateSources()))
		}
	}

	r.Activity.Minutes, r.Activity.SinceStart = v.changes.Last(now)

	switch {
	case q.Resource:
		res := v.store.LookupResource(q.Job, q.Instance)
		// A rule's groups have a resource of their own, which an instance of
		// "\xff..." could name; it is no agent's.
		if res == nil || res.Stat().Own {
			r.Error = "no resource with job " + strconv.Quote(q.Job) + " and instance " + strconv.Quote(q.Instance)
			break
		}
		r.Selection = v.selectResource(res, families, q.Top, began)
	case q.Family != "":
		f := v.store.LookupFamily(q.Family)
		if f == nil {
			r.Error = "no family named " + strconv.Quote(q.Family)
			break
		}
		r.Selection = v.selectFamily(f, q.Top, began)
	case len(fstats) > 0 && fstats[0].Series > 0:
		r.Selection = v.selectFamily(fstats[0].Family, q.Top, began)
	}
	r.Seconds = time.Since(began).Seconds()
	return r
}

func resourceOf(s store.ResourceStat, maxPerResource int64) Resource {
	return Resource{
		ResourceRef: ResourceRef{Job: s.Job, Instance: s.Instance},
		Series:      s.Series,
		LimitRatio:  ratio(s.Series, maxPerResource),
		Refused:     Refused{MaxSeries: s.RefusedMaxSeries, MaxSeriesPerResource: s.RefusedPerResource},
	}
}

func familyOf(f *store.Family, series, of int64, resources int) Family {
	return Family{Name: f.Name, Type: f.Kind.String(), Series: series, SeriesRatio: ratio(series, of), Resources: resources}
}

func limit(name string, l, used int64) Limit {
	return Limit{Name: name, Limit: l, Used: used, Ratio: ratio(used, l)}
}

func ratio(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// selectFamily counts the label values of a family's series and the
// resources they belong to.
func (v *View) selectFamily(f *store.Family, n int, began time.Time) *Selection {
	st := f.Stat()
	sel := &Selection{Series: int64(st.Series), Resources: []ResourceShare{}}
	fam := familyOf(f, int64(st.Series), v.store.SeriesCount(), st.Resources)
	sel.Family = &fam
	sc := newScan(began.Add(v.opts.ScanTimeout), time.Now)
	sc.family(f, nil, true)
	sel.Labels, sel.Scan = sc.result()

	// The ranking is among the agents met; their counts are exact. A family
	// that a rule's groups are part of is already aggregated: its rule is
	// what to change, not one more to suggest.
	shares := make([]ResourceShare, 0, len(sc.resources))
	aggregated := false
	for res := range sc.resources {
		s := res.Stat()
		if s.Own {
			aggregated = true
			continue
		}
		held := int64(f.HeldBy(res))
		shares = append(shares, ResourceShare{ResourceRef: ResourceRef{Job: s.Job, Instance: s.Instance}, Series: held, SeriesRatio: ratio(held, sel.Series)})
	}
	sel.Resources = top(shares, n, func(a, b ResourceShare) int {
		return cmp.Or(cmp.Compare(b.Series, a.Series), strings.Compare(a.Job, b.Job), strings.Compare(a.Instance, b.Instance))
	})
	if !aggregated {
		sel.Suggestion = v.suggest(f.Name, sel.Labels)
	}
	return sel
}

// selectResource lists a resource's families and counts the label values
// of its series.
func (v *View) selectResource(res *store.Resource, families []*store.Family, n int, began time.Time) *Selection {
	s := res.Stat()
	sel := &Selection{Resource: &ResourceRef{Job: s.Job, Instance: s.Instance}, Series: s.Series, Families: []Family{}}
	type held struct {
		f *store.Family
		n int
	}
	var its []held
	for _, f := range families {
		if n := f.HeldBy(res); n > 0 {
			its = append(its, held{f, n})
		}
	}
	slices.SortFunc(its, func(a, b held) int { return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.f.Name, b.f.Name)) })
	for i, h := range its {
		if i < n {
			sel.Families = append(sel.Families, familyOf(h.f, int64(h.n), s.Series, h.f.Stat().Resources))
		}
	}
	sc := newScan(began.Add(v.opts.ScanTimeout), time.Now)
	for _, h := range its {
		if !sc.family(h.f, res, false) {
			break
		}
	}
	sel.Labels, sel.Scan = sc.result()
	return sel
}

// top returns the first n items in the order of cmp, sorting only those.
func top[T any](items []T, n int, cmp func(a, b T) int) []T {
	if len(items) <= n {
		out := slices.Clone(items)
		slices.SortFunc(out, cmp)
		return out
	}
	best := make([]T, 0, n+1)
	for _, it := range items {
		if len(best) == n && cmp(it, best[n-1]) >= 0 {
			continue
		}
		i, _ := slices.BinarySearchFunc(best, it, cmp)
		best = slices.Insert(best, i, it)
		if len(best) > n {
			best = best[:n]
		}
	}
	return best
}
