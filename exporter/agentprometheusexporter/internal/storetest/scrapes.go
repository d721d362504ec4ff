package storetest

import (
	"math"

	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

var (
	// AllSchemes are the escaping schemes a scraper can ask for.
	AllSchemes = []model.EscapingScheme{model.NoEscaping, model.UnderscoreEscaping, model.DotsEscaping, model.ValueEncodingEscaping}
	// Releases show a new run of deltas (store.Series.Shown) in each of its steps.
	Releases = []struct {
		Name    string
		Release store.Release
	}{
		{"new runs held back", store.Release{}},
		{"new runs as zero", store.Release{Zero: math.MaxInt64}},
		{"new runs with value", store.Release{Zero: math.MaxInt64, Value: math.MaxInt64}},
	}
)
