package dialect

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// semconvServer is a semconv server duration with one point per method.
func semconvServer(t *testing.T, methods ...string) pmetric.Metric {
	t.Helper()
	m := pmetric.NewMetric()
	m.SetName("rpc.server.call.duration")
	m.SetUnit("s")
	dps := m.SetEmptyHistogram().DataPoints()
	for _, method := range methods {
		require.NoError(t, dps.AppendEmpty().Attributes().FromRaw(map[string]any{"rpc.method": method, "rpc.response.status_code": "OK"}))
	}
	return m
}

func TestRewriterListsEachMethodOnce(t *testing.T) {
	rw := NewWriter(TargetSemconv, Options{Methods: true}).NewRewriter()
	r := mustNew(t, Semconv, TargetSemconv).Recognize(pcommon.NewInstrumentationScope(), semconvServer(t))
	require.NotNil(t, r)

	assert.Equal(t, 7, rw.Rewrite(semconvServer(t, "s/A", "s/B", "s/A", "_OTHER", "s/A", "s/C", "s/B"), r))
	assert.Equal(t, []string{"s/A", "s/B", "s/C"}, rw.Methods(), "in order, once each, the handler's unknown method left out")
	rw.Rewrite(semconvServer(t, "s/B", "s/B"), r)
	assert.Equal(t, []string{"s/B"}, rw.Methods(), "per Rewrite")

	off := NewWriter(TargetSemconv, Options{}).NewRewriter()
	off.Rewrite(semconvServer(t, "s/A"), r)
	assert.Empty(t, off.Methods(), "not recorded without Options.Methods")
}

func TestCollapseOnlyTheRefusedMethods(t *testing.T) {
	for _, target := range []Target{TargetSemconv, TargetGRPC} {
		rw := NewWriter(target, Options{Methods: true}).NewRewriter()
		m := semconvServer(t, "s/A", "s/B", "_OTHER", "s/B")
		r := mustNew(t, Semconv, target).Recognize(pcommon.NewInstrumentationScope(), m)
		rw.Rewrite(m, r)
		n := rw.Collapse(m, func(method string) bool { return method == "s/B" })
		assert.Equal(t, 2, n)
		var got []string
		dps := m.Histogram().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			v, _ := dps.At(i).Attributes().Get(target.MethodKey())
			got = append(got, v.Str())
		}
		assert.Equal(t, []string{"s/A", target.Other(), target.Other(), target.Other()}, got, target)
	}
}
