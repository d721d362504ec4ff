package agentprometheusexporter

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
)

func loadConfig(t *testing.T, name string) (*Config, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	if err := sub.Unmarshal(cfg); err != nil {
		return nil, err
	}
	return cfg, confmap.Validate(cfg)
}

func TestLoadConfig(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		cfg, err := loadConfig(t, "")
		require.NoError(t, err)
		assert.Equal(t, NewFactory().CreateDefaultConfig(), cfg)
		assert.Equal(t, "localhost:9464", cfg.Server.NetAddr.Endpoint)
	})
	t.Run("server settings decode at the top level", func(t *testing.T) {
		cfg, err := loadConfig(t, "custom")
		require.NoError(t, err)
		assert.Equal(t, "0.0.0.0:19464", cfg.Server.NetAddr.Endpoint)
		assert.Equal(t, 2*time.Minute, cfg.Server.WriteTimeout)
	})
	t.Run("misspelt key is rejected and named", func(t *testing.T) {
		_, err := loadConfig(t, "misspelt")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "endpiont")
	})
	t.Run("empty endpoint fails validation", func(t *testing.T) {
		_, err := loadConfig(t, "empty_endpoint")
		require.ErrorContains(t, err, "endpoint")
	})
	t.Run("every option decodes", func(t *testing.T) {
		cfg, err := loadConfig(t, "all")
		require.NoError(t, err)
		assert.Equal(t, "gw", cfg.Namespace)
		assert.Equal(t, map[string]string{"region": "eu"}, cfg.ConstLabels)
		assert.Equal(t, 10*time.Minute, cfg.MetricExpiration)
		assert.Equal(t, ResourceToTelemetryConversion{Enabled: true, ExcludeServiceAttributes: true}, cfg.ResourceToTelemetryConversion)
		assert.Equal(t, []string{"host.name", "k8s.cluster.name"}, cfg.ResourceLabels)
		assert.True(t, cfg.WithoutScopeInfo)
		assert.False(t, cfg.SendTimestamps)
		assert.True(t, cfg.EnableOpenMetrics)
		assert.Equal(t, NoUTF8EscapingWithSuffixes, cfg.TranslationStrategy)
		assert.Equal(t, 10, cfg.MaxSeries)
		assert.Equal(t, 5, cfg.MaxSeriesPerResource)
		assert.Equal(t, 7, cfg.MaxDescriptors)
		assert.Equal(t, ScrapeConfig{Timeout: 12 * time.Second, MaxConcurrent: 3, DrainTimeout: 7 * time.Second}, cfg.Scrape)
	})
	t.Run("misspelt nested key is rejected and named", func(t *testing.T) {
		_, err := loadConfig(t, "nested_misspelt")
		require.ErrorContains(t, err, "enabeld")
	})
}

func TestValidateNamesTheOption(t *testing.T) {
	tests := []struct {
		name    string
		modify  func(*Config)
		wantErr string
	}{
		{"zero expiration", func(c *Config) { c.MetricExpiration = 0 }, "metric_expiration: must be positive"},
		{"unknown strategy", func(c *Config) { c.TranslationStrategy = "Underscores" }, `translation_strategy: unknown value "Underscores"`},
		{"zero max_series", func(c *Config) { c.MaxSeries = 0 }, "max_series: must be positive"},
		{"negative max_series_per_resource", func(c *Config) { c.MaxSeriesPerResource = -1 }, "max_series_per_resource: must be positive"},
		{"zero max_descriptors", func(c *Config) { c.MaxDescriptors = 0 }, "max_descriptors: must be positive"},
		{"negative scrape timeout", func(c *Config) { c.Scrape.Timeout = -time.Second }, "scrape::timeout: must not be negative"},
		{"zero scrape max_concurrent", func(c *Config) { c.Scrape.MaxConcurrent = 0 }, "scrape::max_concurrent: must be positive"},
		{"invalid const label", func(c *Config) { c.ConstLabels = map[string]string{"bad-name": "x"} }, `const_labels: "bad-name" is not a valid Prometheus label name`},
		{"reserved const label", func(c *Config) { c.ConstLabels = map[string]string{"le": "x"} }, `const_labels: "le" is reserved by Prometheus`},
		{"reserved const label prefix", func(c *Config) { c.ConstLabels = map[string]string{"__meta": "x"} }, `const_labels: "__meta" is reserved by Prometheus`},
		{"empty resource label", func(c *Config) { c.ResourceLabels = []string{"host.name", ""} }, "resource_labels[1]: must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			tt.modify(cfg)
			require.ErrorContains(t, cfg.Validate(), tt.wantErr)
		})
	}
}
