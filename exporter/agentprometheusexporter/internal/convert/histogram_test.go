package convert

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestBoundsAreRenderedAsTheTextFormatWritesThem(t *testing.T) {
	bounds := pcommon.NewFloat64Slice()
	bounds.FromRaw([]float64{math.Copysign(0, -1), math.Inf(-1), 0.25, 1, 1e6, 1234567, math.NaN(), math.Inf(1)})
	b := newBoundsIntern().get(bounds)
	// -0 is written as 0, as expfmt writes every zero; NaN and +Inf are no bounds.
	assert.Equal(t, []string{"-Inf", "0", "0.25", "1", "1e+06", "1.234567e+06"}, b.Text)
}
