package conformance

import (
	"strings"
	"testing"
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
	ignoreCreated(e)
	if len(e.samples) != 4 {
		t.Errorf("_created sample kept: %d samples", len(e.samples))
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
