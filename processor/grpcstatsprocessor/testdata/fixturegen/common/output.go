package common

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Normalize sorts scopes (by name, version), metrics (by name) and data
// points (by their attributes) so that regenerating a fixture only changes
// values and timestamps. Nothing else is altered.
func Normalize(md pmetric.Metrics) {
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		sms.Sort(func(a, b pmetric.ScopeMetrics) bool {
			if a.Scope().Name() != b.Scope().Name() {
				return a.Scope().Name() < b.Scope().Name()
			}
			return a.Scope().Version() < b.Scope().Version()
		})
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			ms.Sort(func(a, b pmetric.Metric) bool { return a.Name() < b.Name() })
			for k := 0; k < ms.Len(); k++ {
				sortDataPoints(ms.At(k))
			}
		}
	}
}

func sortDataPoints(m pmetric.Metric) {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		m.Gauge().DataPoints().Sort(func(a, b pmetric.NumberDataPoint) bool { return attrKey(a.Attributes()) < attrKey(b.Attributes()) })
	case pmetric.MetricTypeSum:
		m.Sum().DataPoints().Sort(func(a, b pmetric.NumberDataPoint) bool { return attrKey(a.Attributes()) < attrKey(b.Attributes()) })
	case pmetric.MetricTypeHistogram:
		m.Histogram().DataPoints().Sort(func(a, b pmetric.HistogramDataPoint) bool { return attrKey(a.Attributes()) < attrKey(b.Attributes()) })
	case pmetric.MetricTypeExponentialHistogram:
		m.ExponentialHistogram().DataPoints().Sort(func(a, b pmetric.ExponentialHistogramDataPoint) bool {
			return attrKey(a.Attributes()) < attrKey(b.Attributes())
		})
	case pmetric.MetricTypeSummary:
		m.Summary().DataPoints().Sort(func(a, b pmetric.SummaryDataPoint) bool { return attrKey(a.Attributes()) < attrKey(b.Attributes()) })
	}
}

func attrKey(attrs pcommon.Map) string {
	parts := make([]string, 0, attrs.Len())
	attrs.Range(func(k string, v pcommon.Value) bool {
		parts = append(parts, k+"="+v.AsString())
		return true
	})
	sort.Strings(parts)
	return strings.Join(parts, "\x00")
}

// WriteFixture writes <dir>/<name>.json (pmetric.JSONMarshaler output,
// indented) and <dir>/<name>.manifest.json.
func WriteFixture(dir, name string, md pmetric.Metrics, m Manifest) error {
	raw, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
	if err != nil {
		return fmt.Errorf("marshal metrics: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return fmt.Errorf("indent metrics: %w", err)
	}
	buf.WriteByte('\n')
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), buf.Bytes(), 0o644); err != nil {
		return err
	}
	man, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("marshal manifest: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, name+".manifest.json"), append(man, '\n'), 0o644)
}

// PrintSummary writes, per scope and metric, the type, unit, number of data
// points and the attribute keys seen.
func PrintSummary(w io.Writer, name string, md pmetric.Metrics) {
	fmt.Fprintf(w, "== %s: %d resource(s), %d metric(s), %d data point(s)\n",
		name, md.ResourceMetrics().Len(), md.MetricCount(), md.DataPointCount())
	lastScope := ""
	forEachMetric(md, func(sm pmetric.ScopeMetrics, m pmetric.Metric) {
		scope := sm.Scope().Name() + "@" + sm.Scope().Version()
		if scope != lastScope {
			fmt.Fprintf(w, "  scope %s\n", scope)
			lastScope = scope
		}
		n, keys := pointsAndKeys(m)
		fmt.Fprintf(w, "    %-55s %-20s unit=%-6q points=%-3d attrs=%s\n", m.Name(), m.Type(), m.Unit(), n, strings.Join(keys, ","))
	})
}

func pointsAndKeys(m pmetric.Metric) (int, []string) {
	seen := map[string]bool{}
	add := func(attrs pcommon.Map) {
		attrs.Range(func(k string, _ pcommon.Value) bool {
			seen[k] = true
			return true
		})
	}
	n := 0
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		dps := m.Gauge().DataPoints()
		n = dps.Len()
		for i := 0; i < n; i++ {
			add(dps.At(i).Attributes())
		}
	case pmetric.MetricTypeSum:
		dps := m.Sum().DataPoints()
		n = dps.Len()
		for i := 0; i < n; i++ {
			add(dps.At(i).Attributes())
		}
	case pmetric.MetricTypeHistogram:
		dps := m.Histogram().DataPoints()
		n = dps.Len()
		for i := 0; i < n; i++ {
			add(dps.At(i).Attributes())
		}
	case pmetric.MetricTypeExponentialHistogram:
		dps := m.ExponentialHistogram().DataPoints()
		n = dps.Len()
		for i := 0; i < n; i++ {
			add(dps.At(i).Attributes())
		}
	case pmetric.MetricTypeSummary:
		dps := m.Summary().DataPoints()
		n = dps.Len()
		for i := 0; i < n; i++ {
			add(dps.At(i).Attributes())
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return n, keys
}
