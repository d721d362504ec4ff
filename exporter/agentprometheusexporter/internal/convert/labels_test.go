package convert_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// labelsOf is the label sets of family name, sorted.
func labelsOf(t *testing.T, st *storetest.Store, name string) []string {
	t.Helper()
	series := st.Series(name)
	require.NotNil(t, series, "no family %s among %v", name, st.FamilyNames())
	return slices.Sorted(maps.Keys(series))
}

// TestLabels checks the label set of a point: attributes sanitised (every
// character outside [a-zA-Z0-9_] becomes '_', a leading digit gets key_),
// sorted by name, non-string values rendered as the attribute
// specification says (JSON for slices and maps, base64 for bytes), names
// that sanitise alike joined with ';' in the order of the original keys,
// empty values absent, job and instance made of service.namespace/
// service.name and service.instance.id, and the resource attributes that
// ResourceLabels selects, which win over point attributes of the same key.
func TestLabels(t *testing.T) {
	tests := []struct {
		name           string
		naming         storetest.Naming
		resource       map[string]any
		resourceLabels []string
		attrs          map[string]any
		want           string
	}{
		{
			name:  "attributes sanitised and sorted",
			attrs: map[string]any{"http.route": "/a", "http.method": "GET", "code": "200"},
			want:  `code="200",http_method="GET",http_route="/a",` + agentLabels,
		},
		{
			name:   "names kept with UTF-8",
			naming: storetest.NoUTF8EscapingWithSuffixes,
			attrs:  map[string]any{"http.method": "GET", "a.b": "x", "a_b": "y"},
			want:   `a.b="x",a_b="y",http.method="GET",` + agentLabels,
		},
		{
			name: "non-string values",
			attrs: map[string]any{
				"int": 42, "bool": true, "double": 1.5, "big": 1e21,
				"slice": []any{"a", 1}, "map": map[string]any{"k": "v"}, "bytes": []byte("hi"),
			},
			want: `big="1e+21",bool="true",bytes="aGk=",double="1.5",instance="i-1",int="42",job="api",` +
				`map="{\"k\":\"v\"}",slice="[\"a\",1]"`,
		},
		{
			name:  "names that sanitise alike joined in key order",
			attrs: map[string]any{"a_b": "3", "a.b": "2", "a-b": "1", "z": "z"},
			want:  `a_b="1;2;3",` + agentLabels + `,z="z"`,
		},
		{
			name:  "leading digit",
			attrs: map[string]any{"1st": "x"},
			want:  agentLabels + `,key_1st="x"`,
		},
		{
			name:  "empty value is no label",
			attrs: map[string]any{"empty": "", "k": "v"},
			want:  agentLabels + `,k="v"`,
		},
		{
			name:  "values escaped as the text format writes them",
			attrs: map[string]any{"q": "a\"b\\c\nd"},
			want:  agentLabels + `,q="a\"b\\c\nd"`,
		},
		{
			name:     "job of namespace and name",
			resource: map[string]any{"service.namespace": "shop", "service.name": "api", "service.instance.id": "i-1"},
			want:     `instance="i-1",job="shop/api"`,
		},
		{
			name:     "no instance without service.instance.id",
			resource: map[string]any{"service.name": "api", "host.name": "h1"},
			want:     `job="api"`,
		},
		{
			name:     "neither without service attributes",
			resource: map[string]any{"host.name": "h1"},
			attrs:    map[string]any{"k": "v"},
			want:     `k="v"`,
		},
		{
			name:     "instance of an int",
			resource: map[string]any{"service.name": "api", "service.instance.id": 7},
			want:     `instance="7",job="api"`,
		},
		{
			name:           "selected resource attributes",
			resource:       map[string]any{"service.name": "api", "service.instance.id": "i-1", "host.name": "h1", "cloud.region": "eu", "os.type": "linux"},
			resourceLabels: []string{"host.name", "cloud.region", "absent"},
			attrs:          map[string]any{"k": "v"},
			want:           `cloud_region="eu",host_name="h1",` + agentLabels + `,k="v"`,
		},
		{
			name:           "a resource attribute wins over the point's",
			resource:       map[string]any{"service.name": "api", "service.instance.id": "i-1", "host.name": "h1"},
			resourceLabels: []string{"host.name"},
			attrs:          map[string]any{"host.name": "from-point"},
			want:           `host_name="h1",` + agentLabels,
		},
		{
			name:           "a selected service attribute",
			resourceLabels: []string{"service.name"},
			want:           agentLabels + `,service_name="api"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.naming == (storetest.Naming{}) {
				tt.naming = storetest.UnderscoreEscapingWithSuffixes
			}
			if tt.resource == nil {
				tt.resource = agent()
			}
			st := storetest.New(t, storetest.Options{Naming: tt.naming, ResourceLabels: tt.resourceLabels, WithoutScopeInfo: true})
			stats := st.Consume(batch(tt.resource, gauge("g", "", pt{attrs: tt.attrs, end: 1, v: 1})))
			assert.Equal(t, [convert.NumReasons]int64{}, stats.Dropped)
			assert.Equal(t, []string{tt.want}, labelsOf(t, st, "g"))
		})
	}
}

// TestLabelsTheExpositionWrites: le on a histogram and quantile on a
// summary would clash with the labels the exposition adds, and become
// exported_le and exported_quantile, as Prometheus renames them; on other
// kinds they stay.
func TestLabelsTheExpositionWrites(t *testing.T) {
	attrs := map[string]any{"le": "x", "quantile": "y"}
	summary := func(ms pmetric.MetricSlice) {
		m := ms.AppendEmpty()
		m.SetName("s")
		dp := m.SetEmptySummary().DataPoints().AppendEmpty()
		putAll(dp.Attributes(), attrs)
		dp.SetTimestamp(at(1))
	}
	st := newStore(t, storetest.UnderscoreEscapingWithoutSuffixes)
	st.Consume(batch(agent(),
		gauge("g", "", pt{attrs: attrs, end: 1}),
		histogram("h", "", pmetric.AggregationTemporalityCumulative, hp{attrs: attrs, end: 1}),
		summary))
	assert.Equal(t, []string{agentLabels + `,le="x",quantile="y"`}, labelsOf(t, st, "g"))
	assert.Equal(t, []string{`exported_le="x",` + agentLabels + `,quantile="y"`}, labelsOf(t, st, "h"))
	assert.Equal(t, []string{`exported_quantile="y",` + agentLabels + `,le="x"`}, labelsOf(t, st, "s"))
}

// scoped is a batch of the agent with one scope holding a gauge g.
func scoped(name, version, schemaURL string, attrs map[string]any) pmetric.Metrics {
	md := batch(agent())
	sm := md.ResourceMetrics().At(0).ScopeMetrics().At(0)
	sm.Scope().SetName(name)
	sm.Scope().SetVersion(version)
	sm.SetSchemaUrl(schemaURL)
	putAll(sm.Scope().Attributes(), attrs)
	gauge("g", "", pt{end: 1, v: 1})(sm.Metrics())
	return md
}

// TestScopeLabels: by default every series carries otel_scope_name and
// otel_scope_version (and the schema URL and scope attributes as
// otel_scope_*); empty ones are no labels; WithoutScopeInfo leaves them all
// out, and two scopes' points of one label set are then one series.
func TestScopeLabels(t *testing.T) {
	tests := []struct {
		name    string
		without bool
		md      pmetric.Metrics
		want    string
	}{
		{"name and version", false, scoped("io.lib", "1.2", "", nil),
			agentLabels + `,otel_scope_name="io.lib",otel_scope_version="1.2"`},
		{"schema URL and attributes", false, scoped("io.lib", "", "https://example.com/1.0", map[string]any{"lib.mode": "fast"}),
			agentLabels + `,otel_scope_lib_mode="fast",otel_scope_name="io.lib",otel_scope_schema_url="https://example.com/1.0"`},
		{"empty scope", false, scoped("", "", "", nil), agentLabels},
		{"without scope info", true, scoped("io.lib", "1.2", "https://example.com/1.0", map[string]any{"lib.mode": "fast"}), agentLabels},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := storetest.New(t, storetest.Options{WithoutScopeInfo: tt.without})
			st.Consume(tt.md)
			assert.Equal(t, []string{tt.want}, labelsOf(t, st, "g"))
		})
	}

	twoScopes := func() pmetric.Metrics {
		md := scoped("a", "", "", nil)
		scoped("b", "", "", nil).ResourceMetrics().At(0).ScopeMetrics().MoveAndAppendTo(md.ResourceMetrics().At(0).ScopeMetrics())
		return md
	}
	st := storetest.New(t, storetest.Options{})
	stats := st.Consume(twoScopes())
	assert.Equal(t, int64(2), stats.Created)
	assert.Equal(t, []string{agentLabels + `,otel_scope_name="a"`, agentLabels + `,otel_scope_name="b"`}, labelsOf(t, st, "g"))

	st = storetest.New(t, storetest.Options{WithoutScopeInfo: true})
	stats = st.Consume(twoScopes())
	assert.Equal(t, []int64{1, 1}, []int64{stats.Created, stats.Updated}, "the second scope's point updates the first's series")
	assert.Equal(t, []string{agentLabels}, labelsOf(t, st, "g"))
}

// TestTargetInfo: a resource with a job and an instance has one
// target_info of its other attributes, sanitised, with job and instance,
// as contrib writes it; attributes that sanitise alike are joined with ';'
// in attribute order, as contrib joins them. A resource without
// service.name or service.instance.id has none, and so has one without
// series.
func TestTargetInfo(t *testing.T) {
	st := storetest.New(t, storetest.Options{})
	md := pmetric.NewMetrics()
	add := func(attrs func(pcommon.Map), stored bool) {
		rm := md.ResourceMetrics().AppendEmpty()
		attrs(rm.Resource().Attributes())
		p := pt{end: 1, v: 1}
		if !stored {
			p.v = -1 // a negative counter is not stored
		}
		counter("c", "", p)(rm.ScopeMetrics().AppendEmpty().Metrics())
	}
	add(func(m pcommon.Map) {
		m.PutStr("service.namespace", "shop")
		m.PutStr("service.name", "api")
		m.PutStr("service.instance.id", "i-1")
		m.PutStr("host.name", "h1")
		m.PutStr("a_b", "first")
		m.PutStr("a.b", "second")
		m.PutInt("cpu.count", 4)
	}, true)
	add(func(m pcommon.Map) { // identifying attributes only
		m.PutStr("service.name", "web")
		m.PutStr("service.instance.id", "i-2")
	}, true)
	add(func(m pcommon.Map) { // no instance
		m.PutStr("service.name", "batch")
		m.PutStr("host.name", "h3")
	}, true)
	add(func(m pcommon.Map) { // no job
		m.PutStr("service.instance.id", "i-4")
		m.PutStr("host.name", "h4")
	}, true)
	add(func(m pcommon.Map) { // an empty instance, as contrib: none
		m.PutStr("service.name", "api")
		m.PutStr("service.instance.id", "")
		m.PutStr("host.name", "h6")
	}, true)
	add(func(m pcommon.Map) { // an empty job, as contrib: none
		m.PutStr("service.name", "")
		m.PutStr("service.instance.id", "i-7")
		m.PutStr("host.name", "h7")
	}, true)
	add(func(m pcommon.Map) { // no series
		m.PutStr("service.name", "idle")
		m.PutStr("service.instance.id", "i-5")
		m.PutStr("host.name", "h5")
	}, false)
	stats := st.Consume(md)
	assert.Equal(t, int64(6), stats.Created)

	var got []string
	for _, ti := range st.TargetInfos() {
		got = append(got, ti.Labels.Text())
		assert.Equal(t, st.Now(), ti.Updated, "target_info is as recent as its resource's batch")
	}
	assert.Equal(t, []string{
		`a_b="first;second",cpu_count="4",host_name="h1",instance="i-1",job="shop/api"`,
		`instance="i-2",job="web"`,
	}, got)
	assert.Equal(t, "target_info", st.Conv.TargetInfoName)
}

// TestTargetInfoNameIsNoFamily: a metric named target_info would write the
// family the exposition writes itself: it is refused as a type conflict.
func TestTargetInfoNameIsNoFamily(t *testing.T) {
	st := newStore(t, storetest.UnderscoreEscapingWithSuffixes)
	stats := st.Consume(batch(agent(), gauge("target_info", "", pt{end: 1, v: 5}), gauge("g", "", pt{end: 1, v: 1})))
	assert.Equal(t, dropped(map[convert.Reason]int64{convert.TypeConflict: 1}), stats.Dropped)
	assert.Equal(t, []string{"g"}, st.FamilyNames())
	assert.Equal(t, prommodel.KindGauge, st.Families()[0].Kind)
}
