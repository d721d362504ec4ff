package agentprometheusexporter

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/resourcetotelemetry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/featuregate"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
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
		assert.Equal(t, resourcetotelemetry.Settings{Included: []string{"host.name", "k8s.*"}, Excluded: []string{"k8s.pod.uid"}}, cfg.ResourceConstantLabels)
		assert.True(t, cfg.ResourceToTelemetryConversion.IsEmpty())
		assert.False(t, cfg.AddMetricSuffixes)
		require.True(t, cfg.QueueBatchConfig.HasValue(), "sending_queue is on")
		assert.Equal(t, 4, cfg.QueueBatchConfig.Get().NumConsumers)
		assert.Equal(t, exporterhelper.NewDefaultQueueConfig().QueueSize, cfg.QueueBatchConfig.Get().QueueSize, "unset queue keys take the defaults")
		assert.True(t, cfg.WithoutScopeInfo)
		assert.False(t, cfg.SendTimestamps)
		assert.True(t, cfg.EnableOpenMetrics)
		assert.Equal(t, NoUTF8EscapingWithSuffixes, cfg.TranslationStrategy)
		assert.Equal(t, 10, cfg.MaxSeries)
		assert.Equal(t, 5, cfg.MaxSeriesPerResource)
		assert.Equal(t, 7, cfg.MaxDescriptors)
		assert.Equal(t, ScrapeConfig{Timeout: 12 * time.Second, MaxConcurrent: 3, DrainTimeout: 7 * time.Second, GzipLevel: 6}, cfg.Scrape)
		assert.Equal(t, CardinalityConfig{Enabled: true, Path: "/debug/cardinality", Top: 50, ScanTimeout: 250 * time.Millisecond}, cfg.Cardinality)
		assert.Equal(t, FleetConfig{
			Enabled: true, Bind: "10.0.0.1:7947", Advertise: "10.0.0.2:7948",
			Join:          []string{"statsgate-gossip.observability.svc:7947", "10.0.0.3"},
			SecretKeyFile: "/etc/statsgate/fleet/key", ClaimInterval: 20 * time.Second, RejoinInterval: 5 * time.Second,
			HandoverTimeout: 3 * time.Second,
		}, cfg.Fleet)
		assert.Equal(t, []aggregate.RuleConfig{
			{Metrics: []string{"rpc.server.call.duration", "http.server.*"}, By: []string{"service.name", "rpc.method", "rpc.status_code"}},
			{Metrics: []string{"queue.depth"}, Without: []string{"service.instance.id", "k8s.pod.name"}, Gauge: "max"},
		}, cfg.Aggregate)
		assert.Equal(t, 11, cfg.MaxAggregateSources)
	})
	// testdata/gateway.yaml reads the peers from one environment variable,
	// as its listen addresses: a comma-separated list, or nothing to run alone.
	for _, tc := range []struct {
		env  string
		join []string
	}{
		{"10.0.0.1:7946,10.0.0.2:7946", []string{"10.0.0.1:7946", "10.0.0.2:7946"}},
		{"statsgate-gossip", []string{"statsgate-gossip"}},
		{"", []string{}},
	} {
		t.Run("fleet::join from an environment variable "+strconv.Quote(tc.env), func(t *testing.T) {
			// What the env provider resolves ${env:...} to: the variable's
			// value read as YAML, here a string.
			conf := confmap.NewFromStringMap(map[string]any{"fleet": map[string]any{"enabled": true, "join": tc.env}})
			cfg := createDefaultConfig().(*Config)
			require.NoError(t, cfg.Unmarshal(conf))
			require.NoError(t, cfg.Validate())
			assert.Equal(t, tc.join, cfg.Fleet.Join)
		})
	}
	t.Run("an aggregate rule with by and without is refused", func(t *testing.T) {
		_, err := loadConfig(t, "aggregate_by_and_without")
		require.ErrorContains(t, err, "aggregate[0]: by and without: set one of them, not both")
	})
	t.Run("misspelt nested key is rejected and named", func(t *testing.T) {
		_, err := loadConfig(t, "nested_misspelt")
		require.ErrorContains(t, err, "enabeld")
	})
	t.Run("every server setting decodes at the top level", func(t *testing.T) {
		cfg, err := loadConfig(t, "server_all")
		require.NoError(t, err)
		s := cfg.Server
		assert.Equal(t, 3*time.Second, s.NetAddr.DialerConfig.Timeout)
		require.True(t, s.TLS.HasValue())
		assert.Equal(t, "server.crt", s.TLS.Get().CertFile)
		assert.Equal(t, "ca.crt", s.TLS.Get().ClientCAFile)
		require.True(t, s.Auth.HasValue())
		assert.Equal(t, "bearertokenauth", s.Auth.Get().Config.AuthenticatorID.String())
		assert.Equal(t, []string{"token"}, s.Auth.Get().RequestParameters)
		require.True(t, s.CORS.HasValue())
		assert.Equal(t, []string{"https://example.com"}, s.CORS.Get().AllowedOrigins)
		assert.Equal(t, int64(1024), s.MaxRequestBodySize)
		assert.True(t, s.IncludeMetadata)
		assert.Equal(t, []string{"gzip"}, s.CompressionAlgorithms)
		assert.Equal(t, 7*time.Second, s.WriteTimeout)
		require.True(t, s.Keepalive.HasValue())
		assert.Equal(t, 8*time.Second, s.Keepalive.Get().IdleTimeout)
		require.Len(t, s.Middlewares, 1)
		assert.Equal(t, "headers_setter", s.Middlewares[0].ID.String())
	})
}

// confmap stops checking unknown keys below a struct with a squashed
// confighttp.ServerConfig, and the server's own Unmarshal decodes with
// IgnoreUnused: a misspelt key must be named at every depth all the same.
func TestMisspeltKeysAreRejectedAtEveryDepth(t *testing.T) {
	tests := []struct{ name, key string }{
		{"misspelt", "endpiont"},
		{"nested_misspelt", "resource_to_telemetry_conversion::enabeld"},
		{"misspelt_scrape", "scrape::timeuot"},
		{"misspelt_cardinality", "cardinality::enabeld"},
		{"misspelt_tls", "tls::cert_fiel"},
		{"misspelt_tls_enabled", "tls::enabeld"},
		{"misspelt_auth", "auth::authenticatr"},
		{"misspelt_cors", "cors::allowed_origns"},
		{"misspelt_keepalive", "keepalive::idle_timout"},
		{"misspelt_dialer", "dialer::timout"},
		{"misspelt_middleware", "middlewares[0]::idd"},
		{"misspelt_fleet", "fleet::secret_key_fiel"},
		{"misspelt_aggregate", "aggregate[0]::bye"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			_, err := loadConfig(t, tt.name)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "has invalid keys: "+tt.key)
		})
	}
}

// aggregateRule sets one aggregate rule after a valid one, which the error
// must not name: the rules are named by their place.
func aggregateRule(r aggregate.RuleConfig) func(*Config) {
	return func(c *Config) {
		c.Aggregate = []aggregate.RuleConfig{{Metrics: []string{"ok"}, By: []string{"service.name"}}, r}
	}
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
		{"zero scrape gzip_level", func(c *Config) { c.Scrape.GzipLevel = 0 }, "scrape::gzip_level: must be 1 (fastest) to 9 (smallest), got 0"},
		{"scrape gzip_level above 9", func(c *Config) { c.Scrape.GzipLevel = 10 }, "scrape::gzip_level: must be 1 (fastest) to 9 (smallest), got 10"},
		{"invalid const label", func(c *Config) { c.ConstLabels = map[string]string{"bad\xff": "x"} }, `const_labels: "bad\xff" is not a valid label name`},
		{"empty const label", func(c *Config) { c.ConstLabels = map[string]string{"": "x"} }, `const_labels: "" is not a valid label name`},
		{"reserved const label", func(c *Config) { c.ConstLabels = map[string]string{"le": "x"} }, `const_labels: "le" is reserved by Prometheus`},
		{"reserved const label prefix", func(c *Config) { c.ConstLabels = map[string]string{"__meta": "x"} }, `const_labels: "__meta" is reserved by Prometheus`},
		{"relative cardinality path", func(c *Config) { c.Cardinality.Path = "cardinality" }, `cardinality::path: must begin with /, got "cardinality"`},
		{"cardinality on /metrics", func(c *Config) { c.Cardinality.Path = "/metrics" }, "cardinality::path: /metrics is the metrics endpoint"},
		{"cardinality path with a wildcard", func(c *Config) { c.Cardinality.Path = "/{x}" }, `cardinality::path: want a plain, clean path`},
		{"unclean cardinality path", func(c *Config) { c.Cardinality.Path = "/a/../b" }, `cardinality::path: want a plain, clean path`},
		{"cardinality path with a space", func(c *Config) { c.Cardinality.Path = "/a b" }, `cardinality::path: want a plain, clean path`},
		{"zero cardinality top", func(c *Config) { c.Cardinality.Top = 0 }, "cardinality::top: must be from 1 to 1000, got 0"},
		{"huge cardinality top", func(c *Config) { c.Cardinality.Top = 1001 }, "cardinality::top: must be from 1 to 1000, got 1001"},
		{"zero cardinality scan_timeout", func(c *Config) { c.Cardinality.ScanTimeout = 0 }, "cardinality::scan_timeout: must be positive"},
		{"fleet bind without a port", func(c *Config) { c.Fleet.Enabled, c.Fleet.Bind = true, "0.0.0.0" }, `fleet::bind: want host:port, got "0.0.0.0"`},
		{"fleet bind port out of range", func(c *Config) { c.Fleet.Enabled, c.Fleet.Bind = true, "0.0.0.0:70000" }, `fleet::bind: want host:port, got "0.0.0.0:70000": port "70000" is not a number from 0 to 65535`},
		{"fleet advertise without a port", func(c *Config) { c.Fleet.Enabled, c.Fleet.Advertise = true, "10.0.0.1" }, `fleet::advertise: want host:port`},
		{"empty fleet peer", func(c *Config) { c.Fleet.Enabled, c.Fleet.Join = true, []string{"a:7946", " "} }, "fleet::join[1]: must not be empty"},
		{"negative claim_interval", func(c *Config) { c.Fleet.Enabled, c.Fleet.ClaimInterval = true, -time.Second }, "fleet::claim_interval: must not be negative"},
		{"zero rejoin_interval", func(c *Config) { c.Fleet.Enabled, c.Fleet.RejoinInterval = true, 0 }, "fleet::rejoin_interval: must be positive"},
		{"negative handover_timeout", func(c *Config) { c.Fleet.Enabled, c.Fleet.HandoverTimeout = true, -time.Second }, "fleet::handover_timeout: must not be negative"},
		{"zero max_aggregate_sources", func(c *Config) { c.MaxAggregateSources = 0 }, "max_aggregate_sources: must be positive, got 0"},
		{"aggregate rule with by and without", aggregateRule(aggregate.RuleConfig{Metrics: []string{"m"}, By: []string{"a"}, Without: []string{"b"}}), "aggregate[0]: by and without: set one of them, not both"},
		{"aggregate rule with neither by nor without", aggregateRule(aggregate.RuleConfig{Metrics: []string{"m"}}), "aggregate[0]: by or without: set one of them"},
		{"aggregate rule without metrics", aggregateRule(aggregate.RuleConfig{By: []string{"a"}}), "aggregate[0]: metrics: must list at least one metric name or pattern"},
		{"aggregate rule with an empty metric", aggregateRule(aggregate.RuleConfig{Metrics: []string{"m", " "}, By: []string{"a"}}), "aggregate[0]: metrics[1]: must not be empty"},
		{"aggregate rule keeping the instance", aggregateRule(aggregate.RuleConfig{Metrics: []string{"m"}, By: []string{"service.name", "service.instance.id"}}), "aggregate[0]: by[1]: service.instance.id cannot be kept: an aggregated series has no instance of its own"},
		{"aggregate rule keeping the namespace alone", aggregateRule(aggregate.RuleConfig{Metrics: []string{"m"}, By: []string{"service.namespace"}}), "aggregate[0]: by: service.namespace is kept only as part of job: keep service.name too"},
		{"aggregate rule with an empty key", aggregateRule(aggregate.RuleConfig{Metrics: []string{"m"}, Without: []string{""}}), "aggregate[0]: without[0]: must not be empty"},
		{"aggregate rule with a key twice", aggregateRule(aggregate.RuleConfig{Metrics: []string{"m"}, By: []string{"a", "a"}}), `aggregate[0]: by[1]: "a" is listed twice`},
		{"aggregate rule with an unknown gauge function", aggregateRule(aggregate.RuleConfig{Metrics: []string{"m"}, By: []string{"a"}, Gauge: "avg"}), `aggregate[0]: gauge: unknown function "avg" (want sum, max or min)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			tt.modify(cfg)
			err := cfg.Validate()
			require.ErrorContains(t, err, strings.Replace(tt.wantErr, "aggregate[0]", "aggregate[1]", 1))
		})
	}
}

// Contrib's own README example for its prometheusexporter (v0.165.1),
// renamed, decodes with contrib's meaning: add_metric_suffixes is ignored
// since translation_strategy is set.
func TestContribReadmeExampleDecodes(t *testing.T) {
	cfg, err := loadConfig(t, "contrib_readme")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"label1": "value1", "another label": "spaced value"}, cfg.ConstLabels)
	assert.True(t, cfg.ResourceToTelemetryConversion.Enabled)
	assert.False(t, cfg.AddMetricSuffixes)
	withSuffixes, utf8Allowed := cfg.naming()
	assert.False(t, withSuffixes, "UnderscoreEscapingWithoutSuffixes")
	assert.False(t, utf8Allowed)
	assert.False(t, cfg.QueueBatchConfig.HasValue(), "no sending_queue: no queue")
}

func TestResourceLabelSettingsAreCheckedAsContribDoes(t *testing.T) {
	for name, want := range map[string]string{
		"resource_labels":           "resource_labels was replaced by contrib's resource_constant_labels: write its list under resource_constant_labels::included",
		"both_resource_settings":    "resource_constant_labels: cannot be used with resource_to_telemetry_conversion, its deprecated form",
		"legacy_in_constant_labels": "resource_constant_labels: enabled and exclude_service_attributes are not supported here; use included and excluded",
		"mixed_conversion":          "resource_to_telemetry_conversion: cannot configure both legacy enabled/exclude_service_attributes and included/excluded patterns",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadConfig(t, name)
			require.ErrorContains(t, err, want)
		})
	}
}

// setGate turns a feature gate on or off for one test, as --feature-gates does.
func setGate(t *testing.T, g *featuregate.Gate, on bool) {
	was := g.IsEnabled()
	require.NoError(t, featuregate.GlobalRegistry().Set(g.ID(), on))
	t.Cleanup(func() { require.NoError(t, featuregate.GlobalRegistry().Set(g.ID(), was)) })
}

func TestFeatureGatesOfContrib(t *testing.T) {
	t.Run("DisableResourceToTelemetryConversion refuses the deprecated section", func(t *testing.T) {
		setGate(t, disableResourceToTelemetryConversionGate, true)
		_, err := loadConfig(t, "contrib_readme")
		require.ErrorContains(t, err, "resource_to_telemetry_conversion: refused while the exporter.prometheus.DisableResourceToTelemetryConversion feature gate is on; use resource_constant_labels")
		_, err = loadConfig(t, "all")
		require.NoError(t, err, "resource_constant_labels is not affected")
	})
	t.Run("DisableAddMetricSuffixes on (its default) ignores add_metric_suffixes", func(t *testing.T) {
		require.True(t, disableAddMetricSuffixesGate.IsEnabled(), "beta: on by default, as in contrib")
		cfg := createDefaultConfig().(*Config)
		cfg.AddMetricSuffixes = false
		withSuffixes, _ := cfg.naming()
		assert.True(t, withSuffixes)
	})
	t.Run("DisableAddMetricSuffixes off honours add_metric_suffixes unless a strategy is set", func(t *testing.T) {
		setGate(t, disableAddMetricSuffixesGate, false)
		cfg := createDefaultConfig().(*Config)
		cfg.AddMetricSuffixes = false
		withSuffixes, _ := cfg.naming()
		assert.False(t, withSuffixes)
		cfg.TranslationStrategy = UnderscoreEscapingWithSuffixes
		withSuffixes, _ = cfg.naming()
		assert.True(t, withSuffixes, "translation_strategy wins")
	})
}
