package conformance

import (
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The normaliser must see what the comparison relies on; these tests pin it
// on hand-written expositions.

func TestParseTextAndDiff(t *testing.T) {
	ref := `# HELP h Latency.
# TYPE h histogram
h_bucket{a="1",le="0.5"} 1
h_bucket{a="1",le="+Inf"} 2
h_sum{a="1"} 3
h_count{a="1"} 2
# HELP g Gauge.
# TYPE g gauge
g{b="x"} NaN
g{b="y"} -Inf 1700000000000
`
	got := strings.Replace(ref, `le="0.5"} 1`, `le="0.5"} 2`, 1)
	got = strings.Replace(got, "# HELP g Gauge.", "# HELP g Other.", 1)

	a, err := parseText(ref)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseText(got)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(a, a, "x", "y", true); d != "" {
		t.Errorf("an exposition differs from itself (NaN must equal NaN):\n%s", d)
	}
	d := diff(a, b, "ref", "got", false)
	for _, want := range []string{
		`only in ref:      h | histogram | h_bucket | {"a"="1","le"="0.5"} | 1`,
		`only in got:      h | histogram | h_bucket | {"a"="1","le"="0.5"} | 2`,
		`HELP of g differs: ref "Gauge.", got "Other."`,
	} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	if strings.Contains(d, "ts=") {
		t.Errorf("timestamps compared although not asked for:\n%s", d)
	}
}

func TestParseTextRejectsDuplicateLe(t *testing.T) {
	_, err := parseText(`# TYPE h histogram
h_bucket{le="attr",le="1"} 1
h_bucket{le="attr",le="+Inf"} 1
h_sum{le="attr"} 1
h_count{le="attr"} 1
`)
	if err == nil {
		t.Fatal("duplicate le labels parsed")
	}
}

func TestParseOpenMetrics(t *testing.T) {
	raw := `# HELP c With exemplar.
# TYPE c counter
c_total{a="q\"x\\y"} 9.0 # {trace_id="4bf9",span_id="00f0"} 1.0 1.74083046e+09
c_created{a="q\"x\\y"} 1.7e+09
# TYPE s summary
s{quantile="0.5"} 1.0
s_sum 3.0
s_count 2
# EOF
`
	e, err := parseOpenMetrics(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.samples) != 5 {
		t.Fatalf("got %d samples, want 5", len(e.samples))
	}
	want := `c | counter | c_total | {"a"="q\"x\\y"} | 9 | exemplar {"span_id"="00f0","trace_id"="4bf9"} 1 1.74083046e+09`
	if got := e.samples[0].key(false); got != want {
		t.Errorf("sample key\n got %s\nwant %s", got, want)
	}
	if got := e.samples[1].key(false); got != `c | counter | c_created | {"a"="q\"x\\y"} | 1.7e+09` {
		t.Errorf("the _created sample is not kept as written: %s", got)
	}

	for name, bad := range map[string]string{
		"no EOF":           "# TYPE g gauge\ng 1\n",
		"outside family":   "# TYPE g gauge\nother 1\n# EOF\n",
		"duplicate label":  "# TYPE g gauge\ng{a=\"1\",a=\"2\"} 1\n# EOF\n",
		"bad value":        "# TYPE g gauge\ng one\n# EOF\n",
		"unknown metadata": "# FOO g\n# EOF\n",
	} {
		if _, err := parseOpenMetrics(bad); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func TestParseTextKeepsEverySampleLine(t *testing.T) {
	e, err := parseText(`# TYPE h histogram
h_bucket{le="NaN"} 2
h_bucket{le="1"} 3
h_bucket{le="+Inf"} 6
h_sum 20
h_count 10
# TYPE s summary
s{quantile="NaN"} 1
s_sum 1
s_count 1
# TYPE g gauge
g{empty=""} 1
`)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range e.samples {
		keys = append(keys, s.key(false))
	}
	for _, want := range []string{
		`h | histogram | h_bucket | {"le"="NaN"} | 2`,
		`s | summary | s | {"quantile"="NaN"} | 1`,
		`g | gauge | g | {"empty"=""} | 1`,
	} {
		if !slices.Contains(keys, want) {
			t.Errorf("%s missing from:\n%s", want, strings.Join(keys, "\n"))
		}
	}
	// expfmt keeps the last of two _sum lines: a sample line lost.
	if _, err := parseText("# TYPE s summary\ns_sum 1\ns_sum 2\ns_count 1\n"); err == nil {
		t.Error("a sample line the parser dropped went unnoticed")
	}
}

func TestParseProtobuf(t *testing.T) {
	created := timestamppb.New(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	lp := func(name, value string) *dto.LabelPair {
		return &dto.LabelPair{Name: proto.String(name), Value: proto.String(value)}
	}
	fams := []*dto.MetricFamily{{
		Name: proto.String("c_total"), Help: proto.String("Counter."), Type: dto.MetricType_COUNTER.Enum(),
		Metric: []*dto.Metric{{
			Label: []*dto.LabelPair{lp("b", "2"), lp("a", "")},
			Counter: &dto.Counter{Value: proto.Float64(9), CreatedTimestamp: created, Exemplar: &dto.Exemplar{
				Label: []*dto.LabelPair{lp("trace_id", "4bf9"), lp("span_id", "00f0")}, Value: proto.Float64(1), Timestamp: created,
			}},
		}},
	}, {
		Name: proto.String("h"), Type: dto.MetricType_HISTOGRAM.Enum(),
		Metric: []*dto.Metric{{Histogram: &dto.Histogram{
			SampleCount: proto.Uint64(3), SampleSum: proto.Float64(1.5),
			Bucket: []*dto.Bucket{{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(1)}},
		}}},
	}, {
		Name: proto.String("n"), Type: dto.MetricType_HISTOGRAM.Enum(),
		Metric: []*dto.Metric{{Histogram: &dto.Histogram{
			SampleCount: proto.Uint64(8), SampleSum: proto.Float64(3.25), Schema: proto.Int32(2),
			ZeroThreshold: proto.Float64(1e-128), ZeroCount: proto.Uint64(1),
			PositiveSpan:  []*dto.BucketSpan{{Offset: proto.Int32(-2), Length: proto.Uint32(3)}},
			PositiveDelta: []int64{1, 1, 1},
		}}},
	}}
	var b strings.Builder
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeProtoDelim))
	for _, mf := range fams {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	e, err := parseProtobuf(expfmt.NewFormat(expfmt.TypeProtoDelim))(b.String())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range e.samples {
		keys = append(keys, s.key(false))
	}
	want := []string{
		`c_total | counter | c_total | {"a"="","b"="2"} | 9 | created=2025-03-01T12:00:00Z | exemplar {"span_id"="00f0","trace_id"="4bf9"} 1 2025-03-01T12:00:00Z`,
		`h | histogram | h_bucket | {"le"="1"} | 1`,
		`h | histogram | h_bucket | {"le"="+Inf"} | 3`,
		`h | histogram | h_sum | {} | 1.5`,
		`h | histogram | h_count | {} | 3`,
		`n | histogram | n | {} | 8 | native sum=3.25 schema=2 zero_threshold=1e-128 zero_count=1 negative=[] {} positive=[-2:3] {1 2 3}`,
	}
	if !slices.Equal(keys, want) {
		t.Errorf("samples\n%s\nwant\n%s", strings.Join(keys, "\n"), strings.Join(want, "\n"))
	}
	if e.help["c_total"] != "Counter." {
		t.Errorf("HELP %q", e.help["c_total"])
	}
	if _, err := parseProtobuf(expfmt.NewFormat(expfmt.TypeProtoDelim))(b.String() + b.String()); err == nil {
		t.Error("a family written twice parsed")
	}
}

// TestDifferencesMustShow: a difference that no longer holds on either side
// fails instead of matching silently.
func TestDifferencesMustShow(t *testing.T) {
	parse := func(raw string) *exposition {
		e, err := parseText(raw)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	const (
		withEmpty    = "# TYPE g gauge\ng{a=\"\",b=\"1\"} 1\n"
		withoutEmpty = "# TYPE g gauge\ng{b=\"1\"} 1\n"
		negative     = "# TYPE c counter\nc{v=\"-1\"} -1\n"
	)
	for _, tc := range []struct {
		name          string
		d             difference
		contrib, ours string
		holds         bool
	}{
		{"empty labels as stated", emptyLabelsLeftOut, withEmpty, withoutEmpty, true},
		{"contrib leaves empty labels out too", emptyLabelsLeftOut, withoutEmpty, withoutEmpty, false},
		{"ours writes empty labels", emptyLabelsLeftOut, withEmpty, withEmpty, false},
		{"negative counter as stated", onlyContrib("", labelIs("c", "v", "-1")), negative, "", true},
		{"ours serves the negative counter", onlyContrib("", labelIs("c", "v", "-1")), negative, negative, false},
		{"contrib drops it too", onlyContrib("", labelIs("c", "v", "-1")), "", "", false},
	} {
		err := tc.d.apply(parse(tc.contrib), parse(tc.ours))
		if holds := err == nil; holds != tc.holds {
			t.Errorf("%s: apply returned %v", tc.name, err)
		}
	}
}
