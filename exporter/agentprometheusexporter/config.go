package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/confmap"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/strictconfig"
)

// defaultEndpoint is the port that OpenTelemetry Prometheus exporters
// conventionally serve on.
const defaultEndpoint = "localhost:9464"

// Config defines the configuration of the agentprometheus exporter.
type Config struct {
	// Server holds the HTTP server settings of the /metrics endpoint
	// (endpoint, TLS, auth, timeouts...), at the top level as in contrib's
	// prometheusexporter. It is a named field, not an embedded one: embedding
	// would promote confighttp.ServerConfig's Unmarshal onto Config and
	// replace this component's decoding with the server's.
	Server confighttp.ServerConfig `mapstructure:",squash"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var (
	_ component.Config    = (*Config)(nil)
	_ confmap.Unmarshaler = (*Config)(nil)
)

// Unmarshal decodes the configuration and rejects unknown keys, which confmap
// does not do by itself for a struct with a squashed confighttp.ServerConfig.
func (cfg *Config) Unmarshal(conf *confmap.Conf) error {
	if err := strictconfig.CheckKeys(conf, cfg); err != nil {
		return err
	}
	return conf.Unmarshal(cfg)
}

// Validate checks that the configuration is usable.
func (cfg *Config) Validate() error {
	var errs []error
	if cfg.Server.NetAddr.Endpoint == "" {
		errs = append(errs, errors.New("endpoint: must not be empty"))
	}
	return errors.Join(errs...)
}

func createDefaultConfig() component.Config {
	server := confighttp.NewDefaultServerConfig()
	server.NetAddr.Endpoint = defaultEndpoint
	return &Config{Server: server}
}
