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
}
