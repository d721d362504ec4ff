package cardinality

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/resourcetotelemetry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.yaml.in/yaml/v3"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/descriptors"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

func TestDistinctIsExactThenEstimated(t *testing.T) {
	for _, n := range []int{0, 1, 999, exactLimit, exactLimit + 1, 50_000, 1_000_000} {
		var d distinct
		for i := range n {
			// Every value twice: duplicates must not count.
			d.add(xxhash.Sum64String(fmt.Sprint("v", i)))
			d.add(xxhash.Sum64String(fmt.Sprint("v", i)))
		}
		got, est := d.count()
		if n <= exactLimit {
			assert.Equal(t, int64(n), got, "%d values", n)
			assert.False(t, est)
			continue
		}
		assert.True(t, est, "%d values", n)
		assert.Greater(t, got, int64(exactLimit), "an estimate is never below the exact count it replaced")
		assert.InEpsilon(t, float64(n), float64(got), 0.03, "%d values: %d", n, got)
		assert.Len(t, d.regs, 1<<hllBits, "the sketch's size does not grow with the values")
	}
}

func TestTopKeepsTheFirstInOrder(t *testing.T) {
	items := []int{5, 3, 9, 1, 9, 7, 2, 8}
	desc := func(a, b int) int { return b - a }
	assert.Equal(t, []int{9, 9, 8}, top(items, 3, desc))
	assert.Equal(t, []int{9, 9, 8, 7, 5, 3, 2, 1}, top(items, 20, desc))
	assert.Equal(t, []int{5, 3, 9, 1, 9, 7, 2, 8}, items, "the input is left as it was")
	assert.Empty(t, top([]int(nil), 3, desc))
}

func TestSpreadOrderVisitsEveryChunkOnce(t *testing.T) {
	for n := range 300 {
		seen := make([]bool, n)
		for c := range spreadOrder(n) {
			require.False(t, seen[c], "n=%d visits %d twice", n, c)
			seen[c] = true
		}
		require.NotContains(t, seen, false, "n=%d", n)
	}
	// The first √n visits span the range.
	var first []int
	for c := range spreadOrder(1000) {
		if len(first) == 32 {
			break
		}
		first = append(first, c)
	}
	assert.Equal(t, 0, first[0])
	assert.Equal(t, 992, first[31])
}

func TestChangesKeepTheLastMinutes(t *testing.T) {
	var c Changes
	t0 := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	c.Record(t0, Change{Created: 5})
	c.Record(t0.Add(30*time.Second), Change{Refused: Refused{MaxSeries: 2}})
	c.Record(t0.Add(2*time.Minute), Change{Expired: 3})
	c.Record(t0.Add(2*time.Minute), Change{}) // nothing happened: nothing is taken

	minutes, since := c.Last(t0.Add(2*time.Minute + time.Second))
	require.Len(t, minutes, Minutes)
	assert.Equal(t, t0.Add(2*time.Minute), minutes[Minutes-1].Start)
	assert.Equal(t, Change{Expired: 3}, minutes[Minutes-1].Change)
	assert.Equal(t, Change{}, minutes[Minutes-2].Change)
	assert.Equal(t, Change{Created: 5, Refused: Refused{MaxSeries: 2}}, minutes[Minutes-3].Change)
	assert.Equal(t, Change{Created: 5, Expired: 3, Refused: Refused{MaxSeries: 2}}, since)

	// A quarter of an hour later the buckets have been reused or are
	// outside the window; the total since the start stays.
	c.Record(t0.Add(17*time.Minute), Change{Ended: 1})
	minutes, since = c.Last(t0.Add(17 * time.Minute))
	for _, m := range minutes[:Minutes-1] {
		assert.Equal(t, Change{}, m.Change, "%v", m.Start)
	}
	assert.Equal(t, Change{Ended: 1}, minutes[Minutes-1].Change)
	assert.Equal(t, int64(1), since.Ended)
}

func TestWantsJSON(t *testing.T) {
	for accept, want := range map[string]bool{
		"":                                  false,
		"*/*":                               false,
		"application/json":                  true,
		"application/json;q=0.5, text/html": false,
		"text/html;q=0.4, application/json": true,
		"application/*":                     false,
		"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8": false,
	} {
		r := httptest.NewRequest(http.MethodGet, "/cardinality", nil)
		r.Header.Set("Accept", accept)
		assert.Equal(t, want, wantsJSON(r), accept)
	}
}

func TestFormats(t *testing.T) {
	assert.Equal(t, "0", formatCount(0))
	assert.Equal(t, "999", formatCount(int64(999)))
	assert.Equal(t, "1\u202f000", formatCount(1000))
	assert.Equal(t, "1\u202f234\u202f567", formatCount(int64(1234567)))
	assert.Equal(t, "-12\u202f345", formatCount(-12345))
	assert.Equal(t, "0%", formatPercent(0))
	assert.Equal(t, "<0.1%", formatPercent(0.0004))
	assert.Equal(t, "2.5%", formatPercent(0.025))
	assert.Equal(t, "100%", formatPercent(1))
	assert.Equal(t, "width:0.5%", string(barWidth(0.0001)), "a sliver for what is not nothing")
	assert.Equal(t, "width:100.0%", string(barWidth(math.Inf(1))))
	assert.Equal(t, "hot", heat(0.95))
	assert.Equal(t, "warm", heat(0.7))
	long := strings.Repeat("é", 60)
	assert.Equal(t, strings.Repeat("é", 40)+"…", example(long), "cut at 80 bytes, on a character")
	assert.Equal(t, `a"b`+"\n", example(`a\"b\n`), "unescaped")
}

// TestScanSpreadsOverTheFamily: a scan stopped early has read chunks from
// all over the family, not only its first agents.
func TestScanSpreadsOverTheFamily(t *testing.T) {
	st := store.New(1<<20, 1<<20, prommodel.Claims{})
	const agents, per = 40, store.ChunkSize
	var f *store.Family
	for a := range agents {
		res := st.Resource([]byte(fmt.Sprint("job\xffagent-", a)), 1)
		var w store.Writer
		require.True(t, st.Write(&w, "g", prommodel.KindGauge, "", "", res, 1))
		for i := range per {
			set, _ := storetest.ParseLabels(fmt.Sprintf(`instance="agent-%d",k="%d"`, a, i))
			w.Put(set.Labels())
		}
		f = w.Family()
		w.Close()
	}

	// A clock that moves 1 ms per look (the scan looks once as it begins,
	// then before each chunk): the deadline comes after a quarter of the chunks.
	clock := time.Unix(0, 0)
	tick := func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	sc := newScan(time.Unix(0, 0).Add((1+agents/4)*time.Millisecond+time.Millisecond/2), tick)
	require.False(t, sc.family(f, nil, true))
	labels, scan := sc.result()
	assert.Equal(t, int64(agents/4*per), scan.Series)
	var seen []int
	for res := range sc.resources {
		var a int
		_, err := fmt.Sscanf(res.Stat().Instance, "agent-%d", &a)
		require.NoError(t, err)
		seen = append(seen, a)
	}
	slices.Sort(seen)
	assert.Len(t, seen, agents/4)
	assert.Less(t, seen[0], agents/4)
	assert.Greater(t, seen[len(seen)-1], agents*3/4, "the sample reaches the last agents: %v", seen)
	assert.Equal(t, "k", labels[0].Name)
	assert.Equal(t, int64(per), labels[0].Distinct)

	// A whole scan reads everything once.
	sc = newScan(time.Now().Add(time.Hour), time.Now)
	require.True(t, sc.family(f, nil, true))
	_, scan = sc.result()
	assert.Equal(t, Scan{Series: agents * per, Complete: true, Seconds: scan.Seconds}, scan)

	// A scan past its deadline reads nothing more and says so.
	sc = newScan(time.Now().Add(-time.Second), time.Now)
	require.False(t, sc.family(f, nil, true))
	_, scan = sc.result()
	assert.False(t, scan.Complete)
	assert.Zero(t, scan.Series)
}

func TestAThirdReportAtOnceIsRefused(t *testing.T) {
	v := New(store.New(10, 10, prommodel.Claims{}), &Changes{}, Options{Top: 5, ScanTimeout: time.Second, Now: time.Now})
	for range maxConcurrent {
		v.slots <- struct{}{} // two reports being built
	}
	w := httptest.NewRecorder()
	v.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/cardinality", nil))
	assert.Equal(t, 503, w.Code)
	assert.Equal(t, "1", w.Header().Get("Retry-After"))

	<-v.slots
	w = httptest.NewRecorder()
	v.ServeHTTP(w, httptest.NewRequest(http.MethodHead, "/cardinality?format=json", nil))
	assert.Equal(t, 200, w.Code)
	assert.Zero(t, w.Body.Len(), "HEAD: headers only")
	assert.NotEmpty(t, w.Header().Get("Content-Length"))
}

// aggregating is a store whose converter aggregates by rules, with the
// descriptor cache the view's Origin reads and the view, as the exporter
// wires them; agents send at its clock.
type aggregating struct {
	st   *store.Store
	conv *convert.Converter
	agg  *aggregate.Aggregator
	view *View
	now  time.Time
}

func newAggregating(t *testing.T, maxPerResource, maxSources int, rules ...aggregate.RuleConfig) *aggregating {
	t.Helper()
	compiled, err := aggregate.Compile(rules, convert.Glob)
	require.NoError(t, err)
	descs, err := descriptors.NewCache(10_000)
	require.NoError(t, err)
	g := &aggregating{st: store.New(1_000_000, maxPerResource, prommodel.Claims{}), now: time.Unix(1_700_000_000, 0)}
	g.agg = aggregate.New(aggregate.Config{Rules: compiled, MaxSources: maxSources, MaxSourcesPerTable: maxSources, Expiration: 5 * time.Minute}, g.st)
	g.conv = convert.New(convert.Options{
		ConstLabels:      map[string]string{},
		ResourceLabels:   convert.NewResourceLabels(resourcetotelemetry.Settings{Included: []string{"host.name"}}),
		WithoutScopeInfo: true,
		WithSuffixes:     true,
		Aggregator:       g.agg,
	}, g.st, descs, func() int64 { return g.now.UnixNano() })
	g.view = New(g.st, &Changes{}, Options{
		Top: 1000, ScanTimeout: time.Hour, Now: time.Now,
		Aggregates: func() []AggregateStat {
			var out []AggregateStat
			for _, r := range g.agg.Rules().All() {
				s := AggregateStat{Rule: r.Index, Metrics: r.Config.Metrics, By: r.Config.By, Without: r.Config.Without, Sources: r.Sources()}
				if res := g.st.LookupKey(aggregate.ResourceKey(r)); res != nil {
					s.Series = res.SeriesCount()
				}
				out = append(out, s)
			}
			return out
		},
		MaxAggregateSources: maxSources,
		AggregateSources:    g.agg.Sources,
		Origin:              descs.Origin,
	})
	return g
}

// agent sends one export of api agent a: requests with a request.id of
// its own (the flood, one series per agent), temperature of 5 sensors,
// queue.depth of 3 queues and sessions with a session.id of its own; its
// host.name is a label of every series.
func (g *aggregating) agent(a int) {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	_ = rm.Resource().Attributes().FromRaw(map[string]any{
		"service.name": "api", "service.instance.id": fmt.Sprintf("a-%03d", a), "host.name": fmt.Sprintf("h-%03d", a),
	})
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	at := pcommon.NewTimestampFromTime(g.now)
	m := ms.AppendEmpty()
	m.SetName("requests")
	m.SetEmptySum().SetIsMonotonic(true)
	m.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := m.Sum().DataPoints().AppendEmpty()
	dp.SetStartTimestamp(pcommon.NewTimestampFromTime(g.now.Add(-time.Minute)))
	dp.SetTimestamp(at)
	dp.SetIntValue(1)
	dp.Attributes().PutStr("request.id", fmt.Sprint("req-", a))
	dp.Attributes().PutStr("method", "get")
	for _, gauge := range []struct {
		name, key string
		values    []string
	}{
		{"temperature", "sensor", []string{"s0", "s1", "s2", "s3", "s4"}},
		{"queue.depth", "queue", []string{"q0", "q1", "q2"}},
		{"sessions", "session.id", []string{fmt.Sprint("session-", a)}},
	} {
		m := ms.AppendEmpty()
		m.SetName(gauge.name)
		dps := m.SetEmptyGauge().DataPoints()
		for i, v := range gauge.values {
			dp := dps.AppendEmpty()
			dp.SetTimestamp(at)
			dp.SetDoubleValue(float64(i))
			dp.Attributes().PutStr(gauge.key, v)
		}
	}
	g.conv.ConsumeMetrics(md)
}

func (g *aggregating) report(t *testing.T, query string) Report {
	t.Helper()
	w := httptest.NewRecorder()
	g.view.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/cardinality?format=json&"+query, nil))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var r Report
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &r))
	return r
}

// TestTheViewOfAggregateRules: 200 agents whose temperatures a rule sums by
// sensor and whose sessions another keeps by session; the rules' groups are
// the gateway's own series, counted in the series and against max_series
// but not as resources; requests, one series per agent with a request.id of
// its own, gets the rule that sums it away; sessions, already aggregated,
// does not.
func TestTheViewOfAggregateRules(t *testing.T) {
	const agents, perResource = 200, 150
	// Each agent holds 4 series (requests, 3 queues); the sessions rule's
	// resource would hold 200 groups, and max_series_per_resource refuses 50.
	g := newAggregating(t, perResource, 2000,
		aggregate.RuleConfig{Metrics: []string{"temperature"}, By: []string{"service.name", "sensor"}},
		aggregate.RuleConfig{Metrics: []string{"spans.*"}, Without: []string{"span.id"}},
		aggregate.RuleConfig{Metrics: []string{"sessions"}, By: []string{"session.id"}})
	for a := range agents {
		g.agent(a)
	}
	r := g.report(t, "")

	assert.Equal(t, []Aggregate{
		{Rule: 0, Metrics: []string{"temperature"}, By: []string{"service.name", "sensor"}, Sources: agents * 5, Series: 5, Reduction: agents},
		{Rule: 1, Metrics: []string{"spans.*"}, Without: []string{"span.id"}}, // serving nothing: no reduction
		{Rule: 2, Metrics: []string{"sessions"}, By: []string{"session.id"}, Sources: perResource, Series: perResource, Reduction: 1},
	}, r.Aggregates, "the refused groups' sources are not held")
	assert.Equal(t, Limit{Name: "max_aggregate_sources", Limit: 2000, Used: agents*5 + perResource, Ratio: float64(agents*5+perResource) / 2000},
		r.Limits[len(r.Limits)-1])

	// The groups are in the series, not among the resources.
	assert.Equal(t, int64(agents*4+5+perResource), r.Totals.Series)
	assert.Equal(t, g.st.SeriesCount(), r.Totals.Series)
	assert.Equal(t, agents, r.Totals.Resources)
	require.Len(t, r.Resources, agents)
	for _, res := range r.Resources {
		assert.Equal(t, "api", res.Job)
		assert.Equal(t, int64(4), res.Series, res.Instance)
	}
	assert.Empty(t, r.Refused, "the sessions rule was refused groups; no agent was refused anything")
	fullest := r.Limits[1]
	assert.Equal(t, "max_series_per_resource", fullest.Name)
	assert.Equal(t, int64(4), fullest.Used, "not the sessions rule's %d", perResource)
	require.NotNil(t, fullest.Resource)
	assert.Equal(t, "api", fullest.Resource.Job, "the fullest is an agent")

	// requests: host_name, instance and request_id tie at 200 values, one
	// per series; host_name is a resource label and instance the agent's,
	// request_id an attribute a rule can sum away.
	sel := g.report(t, "family=requests_total").Selection
	require.NotNil(t, sel)
	require.GreaterOrEqual(t, len(sel.Labels), 3)
	assert.Equal(t, []string{"host_name", "instance", "request_id"}, []string{sel.Labels[0].Name, sel.Labels[1].Name, sel.Labels[2].Name})
	require.NotNil(t, sel.Suggestion)
	assert.Equal(t, Suggestion{Label: "request_id", Metric: "requests", Key: "request.id",
		YAML: "aggregate:\n  - metrics: [requests]\n    without: [request.id]\n"}, *sel.Suggestion)

	// queue_depth: 600 series, 200 hosts and agents, 3 queues: calm.
	sel = g.report(t, "family=queue_depth").Selection
	require.NotNil(t, sel)
	assert.Equal(t, int64(agents*3), sel.Series)
	assert.Nil(t, sel.Suggestion)
	// sessions: the rule's groups, a value of session_id each, already
	// aggregated: its rule is what to change. No agent in it.
	sel = g.report(t, "family=sessions").Selection
	require.NotNil(t, sel)
	require.NotEmpty(t, sel.Labels)
	assert.Equal(t, Label{Name: "session_id", Distinct: perResource, Series: perResource, Ratio: 1}, Label{
		Name: sel.Labels[0].Name, Distinct: sel.Labels[0].Distinct, Series: sel.Labels[0].Series, Ratio: sel.Labels[0].Ratio})
	assert.Nil(t, sel.Suggestion)
	assert.Empty(t, sel.Resources, "the groups are no agent's")
	// A resource: no suggestion, and the rule's resource cannot be chosen.
	sel = g.report(t, "job=api&instance=a-007").Selection
	require.NotNil(t, sel)
	assert.Nil(t, sel.Suggestion)
	w := httptest.NewRecorder()
	g.view.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/cardinality?format=json&job=&instance=%FF%00%00", nil))
	assert.Equal(t, http.StatusNotFound, w.Code)

	// The page: the rules' table, the limit, the rule to paste.
	w = httptest.NewRecorder()
	g.view.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/cardinality?family=requests_total", nil))
	require.Equal(t, http.StatusOK, w.Code)
	page := w.Body.String()
	assert.Contains(t, page, `<section id="aggregates">`)
	assert.Contains(t, page, `<td class="n" data-v="200">200×</td>`)
	assert.Contains(t, page, `<td class="n" data-v="0">–</td>`)
	assert.Contains(t, page, `<td class="n" data-v="1">1.0×</td>`)
	assert.Contains(t, page, `without: <code>span.id</code>`)
	assert.Contains(t, page, `<code>max_aggregate_sources</code>`)
	assert.Contains(t, page, "<pre id=\"suggestion-yaml\">aggregate:\n  - metrics: [requests]\n    without: [request.id]\n</pre>")
}

// TestNoSuggestionBelowTheThreshold: a label of a value per series, in a
// family of fewer series than explodingDistinct, and a label of a value per
// two series and a half, in a large one, are not suggested; nor are job and
// instance, whatever Origin says.
func TestNoSuggestionBelowTheThreshold(t *testing.T) {
	origin := func(family, label string) (string, string, bool) { return "m", label, true }
	v := New(store.New(10, 10, prommodel.Claims{}), &Changes{}, Options{Origin: origin})
	label := func(name string, distinct, series int64) Label {
		return Label{Name: name, Distinct: distinct, Ratio: ratio(distinct, series), stored: name}
	}
	assert.Nil(t, v.suggest("f", []Label{label("id", explodingDistinct-1, explodingDistinct-1)}))
	assert.Nil(t, v.suggest("f", []Label{label("id", 400, 1000), label("k", 3, 1000)}))
	assert.Nil(t, v.suggest("f", []Label{label("instance", 1000, 1000), label("job", 1000, 1000)}))
	s := v.suggest("f", []Label{label("instance", 1000, 2000), label("id", 1000, 2000)})
	require.NotNil(t, s, "at the threshold")
	assert.Equal(t, "id", s.Label)
}

// TestSuggestedYAMLReadsBack: whatever the names, the block is YAML that
// reads back as the rule.
func TestSuggestedYAMLReadsBack(t *testing.T) {
	for _, names := range [][2]string{
		{"rpc.server.call.duration", "user.id"},
		{"http/requests-total", "_k"},
		{"a b: c # d", "[x], {y}"},
		{`q"uote\`, "tab\there\nnewline"},
		{"true", "null"},
		{"1e3", "~"},
		{"ünïcode", "ключ"},
		{"*", "-"},
	} {
		var got struct {
			Aggregate []aggregate.RuleConfig `yaml:"aggregate"`
		}
		text := ruleYAML(names[0], names[1])
		require.NoError(t, yaml.Unmarshal([]byte(text), &got), text)
		assert.Equal(t, []aggregate.RuleConfig{{Metrics: []string{names[0]}, Without: []string{names[1]}}}, got.Aggregate, text)
	}
	assert.Equal(t, "aggregate:\n  - metrics: [rpc.server.call.duration]\n    without: [user.id]\n", ruleYAML("rpc.server.call.duration", "user.id"))
}

func TestFormatReduction(t *testing.T) {
	assert.Equal(t, "–", formatReduction(0))
	assert.Equal(t, "1.0×", formatReduction(1))
	assert.Equal(t, "2.5×", formatReduction(2.5))
	assert.Equal(t, "120×", formatReduction(120.4))
	assert.Equal(t, "1\u202f500×", formatReduction(1500))
}
