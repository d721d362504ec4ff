package grpcstatsprocessor

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/metadata"
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
		assert.Equal(t, TargetSemconv, cfg.Target)
	})
	t.Run("grpc target", func(t *testing.T) {
		cfg, err := loadConfig(t, "grpc")
		require.NoError(t, err)
		assert.Equal(t, TargetGRPC, cfg.Target)
	})
	t.Run("misspelt key is rejected and named", func(t *testing.T) {
		_, err := loadConfig(t, "misspelt")
		require.ErrorContains(t, err, "traget")
	})
	t.Run("unknown target fails validation", func(t *testing.T) {
		_, err := loadConfig(t, "bad_target")
		require.ErrorContains(t, err, `target: unknown value "opencensus"`)
	})
}
