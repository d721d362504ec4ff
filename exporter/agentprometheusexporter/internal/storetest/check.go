package storetest

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// CheckFamilies checks what expfmt's parsers leave to their callers: a
// series written twice, a label name twice in a series, histograms whose
// buckets disagree with their count, counters that are negative or NaN.
func CheckFamilies(families map[string]*dto.MetricFamily) error {
	for name, mf := range families {
		seen := map[string]bool{}
		for _, m := range mf.GetMetric() {
			var key strings.Builder
			names := map[string]bool{}
			for _, l := range m.GetLabel() {
				if names[l.GetName()] {
					return fmt.Errorf("%s: label %q twice in one series", name, l.GetName())
				}
				names[l.GetName()] = true
				key.WriteString(l.GetName() + "\xff" + l.GetValue() + "\xfe")
			}
			if seen[key.String()] {
				return fmt.Errorf("%s: series %v is written twice", name, m.GetLabel())
			}
			seen[key.String()] = true
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				if v := m.GetCounter().GetValue(); !(v >= 0) {
					return fmt.Errorf("%s: counter value %v", name, v)
				}
			case dto.MetricType_HISTOGRAM:
				if err := checkHistogram(m.GetHistogram()); err != nil {
					return fmt.Errorf("%s %v: %w", name, m.GetLabel(), err)
				}
			}
		}
	}
	return nil
}

// checkHistogram checks what Prometheus needs of a histogram: classic
// buckets with increasing bounds and non-decreasing counts that do not
// exceed the count (the +Inf bucket equal to it), and native buckets that
// add up to the count (at most the count when the sum is NaN).
func checkHistogram(h *dto.Histogram) error {
	prevBound, prevCount := math.Inf(-1), uint64(0)
	for i, b := range h.GetBucket() {
		ub, c := b.GetUpperBound(), b.GetCumulativeCount()
		switch {
		case math.IsNaN(ub) || (i > 0 && ub <= prevBound):
			return fmt.Errorf("bucket bound %v after %v", ub, prevBound)
		case c < prevCount:
			return fmt.Errorf("bucket le=%v count %d below the previous %d", ub, c, prevCount)
		case c > h.GetSampleCount():
			return fmt.Errorf("bucket le=%v count %d above the count %d", ub, c, h.GetSampleCount())
		case math.IsInf(ub, 1) && c != h.GetSampleCount():
			return fmt.Errorf("+Inf bucket %d is not the count %d", c, h.GetSampleCount())
		}
		prevBound, prevCount = ub, c
	}
	if h.Schema == nil {
		return nil
	}
	total := h.GetZeroCount()
	for _, deltas := range [][]int64{h.GetPositiveDelta(), h.GetNegativeDelta()} {
		var c int64
		for _, d := range deltas {
			if c += d; c < 0 {
				return fmt.Errorf("negative native bucket count %d", c)
			}
			total += uint64(c)
		}
	}
	if total > h.GetSampleCount() || (total != h.GetSampleCount() && !math.IsNaN(h.GetSampleSum())) {
		return fmt.Errorf("native buckets hold %d observations, the count is %d", total, h.GetSampleCount())
	}
	return nil
}

// DecodeText decodes a text exposition as Prometheus would with UTF-8 names
// allowed (a superset of what every scheme writes).
func DecodeText(body []byte) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(bytes.NewReader(body))
}

// FirstDifference shows the first line where two expositions differ.
func FirstDifference(got, want []byte) string {
	a, b := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\ngot:  %q\nwant: %q", i+1, x, y)
		}
	}
	return "same bytes"
}
