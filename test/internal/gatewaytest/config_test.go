package gatewaytest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func TestConfigYAML(t *testing.T) {
	c := Config{
		Addrs:      Addrs{Health: "127.0.0.1:1", OTLP: "127.0.0.1:2", Metrics: "127.0.0.1:3", Telemetry: "127.0.0.1:4"},
		Pprof:      "127.0.0.1:5",
		Processors: true,
		Exporter:   map[string]any{"max_series": 10, "const_labels": map[string]any{"gateway": "a"}},
		Extensions: map[string]any{"bearertokenauth": map[string]any{"token": "t"}},
		LogLevel:   "debug",
	}
	var got map[string]any
	require.NoError(t, yaml.Unmarshal(c.YAML(t), &got))
	want := map[string]any{
		"extensions": map[string]any{
			"health_check":    map[string]any{"endpoint": "127.0.0.1:1"},
			"pprof":           map[string]any{"endpoint": "127.0.0.1:5"},
			"bearertokenauth": map[string]any{"token": "t"},
		},
		"receivers": map[string]any{"otlp": map[string]any{"protocols": map[string]any{"grpc": map[string]any{"endpoint": "127.0.0.1:2"}}}},
		"processors": map[string]any{
			"memory_limiter": map[string]any{"check_interval": "1s", "limit_percentage": 80, "spike_limit_percentage": 20},
			"grpcstats":      nil,
		},
		"exporters": map[string]any{"agentprometheus": map[string]any{
			"endpoint": "127.0.0.1:3", "max_series": 10, "const_labels": map[string]any{"gateway": "a"},
		}},
		"service": map[string]any{
			"extensions": []any{"bearertokenauth", "health_check", "pprof"},
			"pipelines": map[string]any{"metrics": map[string]any{
				"receivers": []any{"otlp"}, "processors": []any{"memory_limiter", "grpcstats"}, "exporters": []any{"agentprometheus"},
			}},
			"telemetry": map[string]any{
				"logs": map[string]any{"level": "debug"},
				"metrics": map[string]any{"readers": []any{map[string]any{"pull": map[string]any{"exporter": map[string]any{
					"prometheus": map[string]any{"host": "127.0.0.1", "port": 4},
				}}}}},
			},
		},
	}
	assert.Equal(t, want, got)

	var plain map[string]any
	require.NoError(t, yaml.Unmarshal(Config{Addrs: c.Addrs}.YAML(t), &plain))
	assert.NotContains(t, plain, "processors")
	assert.Equal(t, []any{"health_check"}, plain["service"].(map[string]any)["extensions"])
	assert.NotContains(t, plain["service"].(map[string]any)["telemetry"], "logs")
}
