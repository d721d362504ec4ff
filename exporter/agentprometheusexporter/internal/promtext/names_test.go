package promtext

import (
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
)

func TestIsLegacyLabelNameIsPrometheusRule(t *testing.T) {
	names := []string{"", "a", "_", "a1", "1a", "a:b", "a.b", "café", "A_Z_09", "__name__", "é"}
	for c := range 256 {
		names = append(names, string(rune(c)), "a"+string(rune(c)), string([]byte{byte(c)}), "a"+string([]byte{byte(c)}))
	}
	for _, n := range names {
		assert.Equal(t, model.LegacyValidation.IsValidLabelName(n), IsLegacyLabelName(n), "%q", n)
	}
}
