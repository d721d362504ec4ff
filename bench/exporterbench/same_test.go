package exporterbench

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/bench/internal/workload"
)

// TestSameSeries checks, on small instances of each workload, that both
// exporters serve the same families, types, label sets and values, so that
// the benchmarks compare the same work.
func TestSameSeries(t *testing.T) {
	small := workload.Gateway
	small.SeriesPerFamily = 20
	shapes := map[string]workload.Shape{"gateway": small}
	for _, c := range seedCases {
		shapes[fmt.Sprintf("seed %d+%d", c.base, c.extra)] = workload.Seed(c.base, c.extra)
	}
	for name, s := range shapes {
		t.Run(name, func(t *testing.T) {
			const agents = 3
			got := map[string][]string{}
			for _, exp := range exporterNames {
				in := start(t, exp, settings{})
				in.load(t, s, agents, 0)
				var b strings.Builder
				if _, err := in.scrape(textFormat, "identity", &b); err != nil {
					t.Fatal(err)
				}
				in.shutdown(t)
				lines, samples, err := normalise(b.String())
				if err != nil {
					t.Fatalf("%s: %v", exp, err)
				}
				if want := textSamples(s, agents); samples != want {
					t.Errorf("%s: %d samples, want %d", exp, samples, want)
				}
				got[exp] = lines
			}
			if d := diffLines(got[ours], got[contrib]); d != "" {
				t.Errorf("ours and contrib differ:\n%s", d)
			}
		})
	}
}

// normalise turns a text exposition into sorted lines, one per sample:
// family, type, name, sorted labels, value; plus one per family for HELP.
func normalise(text string) (lines []string, samples int, err error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, 0, err
	}
	var out []string
	for name, f := range fams {
		out = append(out, fmt.Sprintf("%s HELP %q", name, f.GetHelp()))
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				if l.GetValue() != "" {
					ls = append(ls, l.GetName()+"="+l.GetValue())
				}
			}
			slices.Sort(ls)
			labels := strings.Join(ls, ",")
			add := func(sample string, v float64) {
				out = append(out, fmt.Sprintf("%s %s %s{%s} %v", name, f.GetType(), sample, labels, v))
				samples++
			}
			switch f.GetType() {
			case dto.MetricType_GAUGE:
				add(name, m.GetGauge().GetValue())
			case dto.MetricType_COUNTER:
				add(name, m.GetCounter().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, bk := range h.GetBucket() {
					add(fmt.Sprintf("%s_bucket[le=%v]", name, bk.GetUpperBound()), float64(bk.GetCumulativeCount()))
				}
				add(name+"_sum", h.GetSampleSum())
				add(name+"_count", float64(h.GetSampleCount()))
			default:
				add(name+"?", 0)
			}
		}
	}
	slices.Sort(out)
	return out, samples, nil
}

func diffLines(a, b []string) string {
	inA := map[string]bool{}
	for _, l := range a {
		inA[l] = true
	}
	inB := map[string]bool{}
	for _, l := range b {
		inB[l] = true
	}
	var d []string
	for _, l := range a {
		if !inB[l] {
			d = append(d, "only in ours:    "+l)
		}
	}
	for _, l := range b {
		if !inA[l] {
			d = append(d, "only in contrib: "+l)
		}
	}
	if len(d) > 20 {
		d = append(d[:20], fmt.Sprintf("... %d more", len(d)-20))
	}
	return strings.Join(d, "\n")
}
