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

func TestPlainNames(t *testing.T) {
	for labels, plain := range map[string]bool{
		``:                             true,
		`a="x"`:                        true,
		`a="x",b_2="y\"z",c="\\"`:      true,
		`a="",b="\\\""`:                true,
		`http.route="x"`:               false,
		`a="x",caf\"é="y"`:             false,
		`1a="x"`:                       false,
		`a:b="x"`:                      false,
		`a="unterminated`:              false,
		`a="x",`:                       false,
		`a="x"b="y"`:                   false,
		`a=x`:                          false,
		`a="x\",b="y"`:                 false,
		`code="200",method="GET"`:      true,
		`a="v",__name__="not checked"`: true,
	} {
		assert.Equal(t, plain, PlainNames(labels), labels)
	}
}
