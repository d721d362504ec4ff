package grpcstatsprocessor

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"
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
	t.Run("defaults merge every dialect into semconv, semconv first", func(t *testing.T) {
		cfg, err := loadConfig(t, "")
		require.NoError(t, err)
		assert.Equal(t, dialect.TargetSemconv, cfg.Target)
		assert.Equal(t, []dialect.Dialect{dialect.Semconv, dialect.GRPCNative, dialect.SemconvLegacy, dialect.OpenCensus, dialect.GRPCPrometheus}, cfg.precedence())
		assert.Equal(t, DuplicatesDrop, cfg.Duplicates)
		assert.Equal(t, 2*time.Minute, cfg.DuplicateWindow)
		assert.Equal(t, 100, cfg.Methods.MaxPerService)
		assert.Equal(t, StatusStable, cfg.StatusAttribute, "the stable rpc.status_code only")
	})
	t.Run("status_attribute dup writes both status keys", func(t *testing.T) {
		cfg, err := loadConfig(t, "status_dup")
		require.NoError(t, err)
		assert.Equal(t, StatusDup, cfg.StatusAttribute)
		assert.Equal(t, dialect.StatusDup, cfg.StatusAttribute.key())
	})
	t.Run("grpc target puts grpc_native first", func(t *testing.T) {
		cfg, err := loadConfig(t, "grpc")
		require.NoError(t, err)
		assert.Equal(t, dialect.GRPCNative, cfg.precedence()[0])
	})
	t.Run("every option decodes", func(t *testing.T) {
		cfg, err := loadConfig(t, "all")
		require.NoError(t, err)
		assert.Equal(t, []dialect.Dialect{dialect.OpenCensus, dialect.GRPCNative}, cfg.precedence())
		assert.Equal(t, DuplicatesKeep, cfg.Duplicates)
		assert.Equal(t, 5*time.Minute, cfg.DuplicateWindow)
		assert.Equal(t, 10, cfg.MaxResources)
		assert.Equal(t, MethodsConfig{MaxPerService: 7, Allow: []string{"grpc.health.v1.Health/*"}}, cfg.Methods)
		assert.Equal(t, []string{"peer.ip"}, cfg.DropAttributes)
	})
	t.Run("an empty sinks list means no dialect", func(t *testing.T) {
		cfg, err := loadConfig(t, "none")
		require.NoError(t, err)
		assert.Empty(t, cfg.precedence())
	})
	t.Run("misspelt key is rejected and named", func(t *testing.T) {
		_, err := loadConfig(t, "misspelt")
		require.ErrorContains(t, err, "has invalid keys: traget")
	})
	t.Run("misspelt nested key is rejected and named with its path", func(t *testing.T) {
		_, err := loadConfig(t, "misspelt_methods")
		require.ErrorContains(t, err, "has invalid keys: methods::max_per_servce")
	})
	t.Run("unknown target fails validation", func(t *testing.T) {
		_, err := loadConfig(t, "bad_target")
		require.ErrorContains(t, err, `target: unknown value "opencensus"`)
	})
}

func TestValidateNamesTheOption(t *testing.T) {
	tests := []struct {
		name    string
		modify  func(*Config)
		wantErr string
	}{
		{"unknown dialect", func(c *Config) { c.Sinks = []dialect.Dialect{"zipkin"} }, `sinks[0]: unknown dialect "zipkin"`},
		{"repeated dialect", func(c *Config) { c.Sinks = []dialect.Dialect{dialect.Semconv, dialect.Semconv} }, `sinks[1]: dialect "semconv" is listed twice`},
		{"bad duplicates", func(c *Config) { c.Duplicates = "merge" }, `duplicates: unknown value "merge"`},
		{"zero window", func(c *Config) { c.DuplicateWindow = 0 }, "duplicate_window: must be positive"},
		{"zero max_resources", func(c *Config) { c.MaxResources = 0 }, "max_resources: must be positive"},
		{"unknown bounds", func(c *Config) { c.HistogramBounds = "shared" }, `histogram_bounds: unknown value "shared"`},
		{"negative methods", func(c *Config) { c.Methods.MaxPerService = -1 }, "methods::max_per_service: must not be negative"},
		{"bad allow pattern", func(c *Config) { c.Methods.Allow = []string{"[unclosed"} }, `methods::allow[0]: invalid pattern "[unclosed"`},
		{"unknown status attribute", func(c *Config) { c.StatusAttribute = "rpc/dup" }, `status_attribute: unknown value "rpc/dup" (want "stable", "old" or "dup")`},
		{"status attribute for the grpc target", func(c *Config) { c.Target, c.StatusAttribute = dialect.TargetGRPC, StatusOld }, `status_attribute: "old" applies only to target "semconv"`},
		{"empty drop attribute", func(c *Config) { c.DropAttributes = []string{""} }, "drop_attributes[0]: must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			tt.modify(cfg)
			require.ErrorContains(t, cfg.Validate(), tt.wantErr)
		})
	}
}
