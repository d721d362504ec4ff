package gatewaytest

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/statsgate/statsgate/internal/testnet"
)

// Addrs are the listen addresses of a gateway under test.
type Addrs struct {
	Health    string // the health_check extension
	OTLP      string // the otlp receiver, gRPC
	Metrics   string // the agentprometheus exporter's /metrics
	Telemetry string // the collector's own metrics, on a Prometheus pull reader
}

// FreeAddrs are addresses nothing listens on (testnet.FreeEndpoint).
func FreeAddrs(t testing.TB) Addrs {
	t.Helper()
	return Addrs{Health: testnet.FreeEndpoint(t), OTLP: testnet.FreeEndpoint(t), Metrics: testnet.FreeEndpoint(t), Telemetry: testnet.FreeEndpoint(t)}
}

// All lists the addresses.
func (a Addrs) All() []string { return []string{a.Health, a.OTLP, a.Metrics, a.Telemetry} }

// Config is the collector config of a gateway under test: the otlp receiver
// (gRPC), the agentprometheus exporter in one metrics pipeline, the health
// check and the collector's own metrics, each on its address; the rest is
// what tests vary.
type Config struct {
	Addrs
	// Pprof, when set, adds the pprof extension on that address.
	Pprof string
	// Processors puts memory_limiter and grpcstats in front of the
	// exporter, as the default config (testdata/gateway.yaml) does.
	Processors bool
	// Exporter holds more settings of the exporter, as the config file
	// gives them (e.g. "metric_expiration": "5s").
	Exporter map[string]any
	// Extensions are more extensions by name, each enabled in the service.
	Extensions map[string]any
	// LogLevel is the collector's log level; "" keeps its default.
	LogLevel string
}

// YAML is the config file.
func (c Config) YAML(t testing.TB) []byte {
	t.Helper()
	exporter := map[string]any{"endpoint": c.Metrics}
	for k, v := range c.Exporter {
		exporter[k] = v
	}
	extensions := map[string]any{"health_check": map[string]any{"endpoint": c.Health}}
	if c.Pprof != "" {
		extensions["pprof"] = map[string]any{"endpoint": c.Pprof}
	}
	for name, ext := range c.Extensions {
		extensions[name] = ext
	}
	names := make([]string, 0, len(extensions))
	for name := range extensions {
		names = append(names, name)
	}
	slices.Sort(names)

	pipeline := map[string]any{"receivers": []string{"otlp"}, "exporters": []string{"agentprometheus"}}
	cfg := map[string]any{
		"extensions": extensions,
		"receivers": map[string]any{
			"otlp": map[string]any{"protocols": map[string]any{"grpc": map[string]any{"endpoint": c.OTLP}}},
		},
		"exporters": map[string]any{"agentprometheus": exporter},
	}
	if c.Processors {
		cfg["processors"] = map[string]any{
			"memory_limiter": map[string]any{"check_interval": "1s", "limit_percentage": 80, "spike_limit_percentage": 20},
			"grpcstats":      nil,
		}
		pipeline["processors"] = []string{"memory_limiter", "grpcstats"}
	}
	port, err := strconv.Atoi(PortOf(t, c.Telemetry))
	require.NoError(t, err)
	telemetry := map[string]any{
		"metrics": map[string]any{"readers": []any{map[string]any{"pull": map[string]any{"exporter": map[string]any{
			"prometheus": map[string]any{"host": "127.0.0.1", "port": port},
		}}}}},
	}
	if c.LogLevel != "" {
		telemetry["logs"] = map[string]any{"level": c.LogLevel}
	}
	cfg["service"] = map[string]any{
		"extensions": names,
		"pipelines":  map[string]any{"metrics": pipeline},
		"telemetry":  telemetry,
	}
	b, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	return b
}

// Write writes the config file to path.
func (c Config) Write(t testing.TB, path string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, c.YAML(t), 0o600))
}

// WriteTemp writes the config file into a directory of its own and returns
// its path.
func (c Config) WriteTemp(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	c.Write(t, path)
	return path
}
