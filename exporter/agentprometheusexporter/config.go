package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/resourcetotelemetry"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/cardinality"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/fleet"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/scrape"
	"github.com/statsgate/statsgate/internal/strictconfig"
)

// metricsPath is where the exposition is served, as Prometheus expects by default.
const metricsPath = "/metrics"

// defaultEndpoint is the port that OpenTelemetry Prometheus exporters
// conventionally serve on.
const defaultEndpoint = "localhost:9464"

// TranslationStrategy selects how OTLP names become Prometheus names; the
// values are those of contrib's prometheusexporter.
type TranslationStrategy string

const (
	UnderscoreEscapingWithSuffixes    TranslationStrategy = "UnderscoreEscapingWithSuffixes"
	UnderscoreEscapingWithoutSuffixes TranslationStrategy = "UnderscoreEscapingWithoutSuffixes"
	NoUTF8EscapingWithSuffixes        TranslationStrategy = "NoUTF8EscapingWithSuffixes"
	NoTranslation                     TranslationStrategy = "NoTranslation"
)

// naming is what the configuration asks of names: suffixes, and UTF-8
// left as it is. As contrib: translation_strategy when set; else suffixes
// unless add_metric_suffixes is false and the gate that deprecates it is
// off; UTF-8 escaped either way.
func (cfg *Config) naming() (withSuffixes, utf8Allowed bool) {
	if withSuffixes, utf8Allowed, ok := convert.StrategyNaming(string(cfg.TranslationStrategy)); ok {
		return withSuffixes, utf8Allowed
	}
	if disableAddMetricSuffixesGate.IsEnabled() {
		return true, false
	}
	return cfg.AddMetricSuffixes, false
}

// ScrapeConfig bounds how scrapes are served. Concurrent scrapes of the same
// format share one encoding whatever these are set to.
type ScrapeConfig struct {
	// Timeout bounds one scrape, from its arrival to its last byte; a
	// scraper's X-Prometheus-Scrape-Timeout-Seconds header lowers it. A scrape
	// that runs out is cut off, never answered with a partial body that looks
	// complete. 0 means no bound.
	Timeout time.Duration `mapstructure:"timeout"`
	// MaxConcurrent bounds the scrapes in flight (waiting for or reading an
	// encoding); one more is answered 503 at once.
	MaxConcurrent int `mapstructure:"max_concurrent"`
	// DrainTimeout bounds how long shutdown waits for every scraper to take
	// the deltas accumulated since its last scrape, which exist nowhere else.
	// 0 does not wait.
	DrainTimeout time.Duration `mapstructure:"drain_timeout"`
	// GzipLevel is the deflate level of gzip responses, 1 (fastest) to 9
	// (smallest). A gzip scrape is CPU-bound on every core: 1 keeps it
	// fastest, and a higher level trades scrape time for fewer bytes on the
	// wire (BenchmarkGzipLevels; BENCHMARKS.md, "Design measurements").
	GzipLevel int `mapstructure:"gzip_level"`
}

// CardinalityConfig sets up the cardinality view: which resources, families
// and label names hold the most series, how close the store is to its limits
// and whom they refuse, served on the /metrics server (same TLS and
// authenticator) as a page and as JSON.
type CardinalityConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Path is where the view is served.
	Path string `mapstructure:"path"`
	// Top is how many resources and families the view lists.
	Top int `mapstructure:"top"`
	// ScanTimeout bounds the count of a family's or resource's label values
	// for one request; a count cut short says how many series it read.
	ScanTimeout time.Duration `mapstructure:"scan_timeout"`
}

// FleetConfig makes the gateway a member of a fleet of replicas that tell
// each other which of them receives each agent (resource), so that an agent's
// series are held by the replica it exports to rather than by every replica
// it visited until metric_expiration (internal/fleet has the rule).
type FleetConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Bind is the host:port gossip listens on, UDP and TCP.
	Bind string `mapstructure:"bind"`
	// Advertise is the host:port other replicas reach this one at; empty
	// for the bind address, or the first private address when binding to
	// every interface.
	Advertise string `mapstructure:"advertise"`
	// Join lists peers as host:port (the bind port when left out); a host
	// name stands for every address it resolves to, so a Kubernetes
	// headless Service names the whole fleet. Empty: alone until a peer
	// joins this replica.
	Join []string `mapstructure:"join"`
	// SecretKeyFile holds the base64 of a 16, 24 or 32-byte AES key shared
	// by the fleet: gossip is encrypted and authenticated with it, and a
	// packet without it is dropped and counted.
	SecretKeyFile string `mapstructure:"secret_key_file"`
	// ClaimInterval damps the claims of a resource: a replica does not claim
	// back a resource it gave up less than this ago. 0 claims back on the
	// next batch.
	ClaimInterval time.Duration `mapstructure:"claim_interval"`
	// RejoinInterval is how often a replica that is alone joins its peers again.
	RejoinInterval time.Duration `mapstructure:"rejoin_interval"`
	// HandoverTimeout is how long a replica that begins to hold an agent
	// waits for what the previous holder counted of the agent's aggregated
	// series (aggregate) before counting them from its own first points.
	// 0 turns handovers off: a replica that takes an agent over always
	// counts it from its first points there.
	HandoverTimeout time.Duration `mapstructure:"handover_timeout"`
}

// Config defines the configuration of the agentprometheus exporter.
type Config struct {
	// Server holds the HTTP server settings of the /metrics endpoint
	// (endpoint, TLS, auth, timeouts...), at the top level as in contrib's
	// prometheusexporter. It is a named field, not an embedded one: embedding
	// would promote confighttp.ServerConfig's Unmarshal onto Config and
	// replace this component's decoding with the server's.
	Server confighttp.ServerConfig `mapstructure:",squash"`

	// Namespace prefixes every metric name.
	Namespace string `mapstructure:"namespace"`
	// ConstLabels are added to every series.
	ConstLabels map[string]string `mapstructure:"const_labels"`
	// SendTimestamps exposes each point's own timestamp. It is what keeps
	// Prometheus exact when an agent's exports move between gateways: the
	// older copy a gateway still serves is refused as out of order instead
	// of being read as a counter reset.
	SendTimestamps bool `mapstructure:"send_timestamps"`
	// MetricExpiration removes series not updated for this long.
	MetricExpiration time.Duration `mapstructure:"metric_expiration"`
	// ResourceConstantLabels selects, by wildcard patterns, the resource
	// attributes that become labels on every series of their resource; the
	// type and its meaning are contrib's.
	ResourceConstantLabels resourcetotelemetry.Settings `mapstructure:"resource_constant_labels"`
	// ResourceToTelemetryConversion is contrib's deprecated form of the same:
	// enabled turns every resource attribute into a label.
	ResourceToTelemetryConversion resourcetotelemetry.Settings `mapstructure:"resource_to_telemetry_conversion"`
	// EnableOpenMetrics allows the OpenMetrics format when a scraper asks for it.
	EnableOpenMetrics bool `mapstructure:"enable_open_metrics"`
	// EnableOpenMetricsCreatedSamples adds the `_created` samples of counters,
	// histograms and summaries to OpenMetrics scrapes. Off by default, as in
	// client_golang: Prometheus stores each as a series of its own.
	EnableOpenMetricsCreatedSamples bool `mapstructure:"enable_open_metrics_created_samples"`
	// WithoutScopeInfo leaves out the otel_scope_* labels.
	WithoutScopeInfo bool `mapstructure:"without_scope_info"`
	// TranslationStrategy chooses name escaping and suffixes. Empty:
	// UnderscoreEscapingWithSuffixes, or without suffixes when
	// add_metric_suffixes says so and its feature gate lets it.
	TranslationStrategy TranslationStrategy `mapstructure:"translation_strategy"`
	// AddMetricSuffixes is contrib's deprecated switch for the suffixes;
	// ignored when translation_strategy is set, or while the
	// exporter.prometheusexporter.DisableAddMetricSuffixes gate is on (its
	// default), as in contrib.
	AddMetricSuffixes bool `mapstructure:"add_metric_suffixes"`

	// QueueBatchConfig is the collector's sending queue (exporterhelper),
	// off unless configured: with it, a batch is accepted before it is
	// stored, and a full queue refuses batches.
	QueueBatchConfig configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`

	// MaxSeries bounds the series held in all; a new series beyond it is refused.
	MaxSeries int `mapstructure:"max_series"`
	// MaxSeriesPerResource bounds the series of one resource (job, instance).
	MaxSeriesPerResource int `mapstructure:"max_series_per_resource"`
	// MaxDescriptors bounds the descriptor cache.
	MaxDescriptors int `mapstructure:"max_descriptors"`

	// Scrape bounds the work and time of serving /metrics.
	Scrape ScrapeConfig `mapstructure:"scrape"`

	// Cardinality serves the cardinality view next to /metrics.
	Cardinality CardinalityConfig `mapstructure:"cardinality"`

	// Fleet makes the gateway one of a fleet of replicas that divide the agents.
	Fleet FleetConfig `mapstructure:"fleet"`

	// Aggregate sums the series of every agent into groups by chosen
	// labels: the metrics a rule matches are served as their groups rather
	// than as each agent's series (internal/aggregate).
	Aggregate []aggregate.RuleConfig `mapstructure:"aggregate"`
	// MaxAggregateSources bounds the agents' series (sources) whose latest
	// points the aggregate rules keep; a new one beyond it is refused.
	MaxAggregateSources int `mapstructure:"max_aggregate_sources"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var (
	_ component.Config    = (*Config)(nil)
	_ confmap.Unmarshaler = (*Config)(nil)
)

// Unmarshal decodes the configuration and rejects unknown keys at any depth,
// which confmap does not do by itself for a struct with a squashed
// confighttp.ServerConfig (see internal/strictconfig).
func (cfg *Config) Unmarshal(conf *confmap.Conf) error {
	if conf.IsSet("resource_labels") {
		return errors.New("resource_labels was replaced by contrib's resource_constant_labels: write its list under resource_constant_labels::included (which also takes wildcards)")
	}
	if err := strictconfig.CheckKeys(conf, cfg); err != nil {
		return err
	}
	return conf.Unmarshal(cfg)
}

// Validate checks that the configuration is usable; each error names its option.
func (cfg *Config) Validate() error {
	var errs []error
	if cfg.Server.NetAddr.Endpoint == "" {
		errs = append(errs, errors.New("endpoint: must not be empty"))
	}
	if cfg.MetricExpiration <= 0 {
		errs = append(errs, fmt.Errorf("metric_expiration: must be positive, got %v", cfg.MetricExpiration))
	}
	switch cfg.TranslationStrategy {
	case "", UnderscoreEscapingWithSuffixes, UnderscoreEscapingWithoutSuffixes, NoUTF8EscapingWithSuffixes, NoTranslation:
	default:
		errs = append(errs, fmt.Errorf("translation_strategy: unknown value %q (want one of %s, %s, %s, %s)", cfg.TranslationStrategy,
			UnderscoreEscapingWithSuffixes, UnderscoreEscapingWithoutSuffixes, NoUTF8EscapingWithSuffixes, NoTranslation))
	}
	errs = append(errs, cfg.validateResourceLabels()...)
	if cfg.MaxSeries <= 0 {
		errs = append(errs, fmt.Errorf("max_series: must be positive, got %d", cfg.MaxSeries))
	}
	if cfg.MaxSeriesPerResource <= 0 {
		errs = append(errs, fmt.Errorf("max_series_per_resource: must be positive, got %d", cfg.MaxSeriesPerResource))
	}
	if cfg.MaxDescriptors <= 0 {
		errs = append(errs, fmt.Errorf("max_descriptors: must be positive, got %d", cfg.MaxDescriptors))
	}
	if cfg.Scrape.Timeout < 0 {
		errs = append(errs, fmt.Errorf("scrape::timeout: must not be negative, got %v", cfg.Scrape.Timeout))
	}
	if cfg.Scrape.DrainTimeout < 0 {
		errs = append(errs, fmt.Errorf("scrape::drain_timeout: must not be negative, got %v", cfg.Scrape.DrainTimeout))
	}
	if cfg.Scrape.MaxConcurrent <= 0 {
		errs = append(errs, fmt.Errorf("scrape::max_concurrent: must be positive, got %d", cfg.Scrape.MaxConcurrent))
	}
	if cfg.Scrape.GzipLevel < 1 || cfg.Scrape.GzipLevel > 9 {
		errs = append(errs, fmt.Errorf("scrape::gzip_level: must be 1 (fastest) to 9 (smallest), got %d", cfg.Scrape.GzipLevel))
	}
	errs = append(errs, cfg.Cardinality.validate()...)
	errs = append(errs, cfg.Fleet.validate()...)
	errs = append(errs, cfg.validateAggregate()...)
	for name := range cfg.ConstLabels {
		switch {
		case name == "" || !utf8.ValidString(name):
			errs = append(errs, fmt.Errorf("const_labels: %q is not a valid label name", name))
		case name == "le" || name == "quantile" || strings.HasPrefix(name, "__"):
			errs = append(errs, fmt.Errorf("const_labels: %q is reserved by Prometheus (le, quantile and names starting with __)", name))
		}
	}
	return errors.Join(errs...)
}

// validateResourceLabels checks the two resource label settings as contrib
// does, with contrib's rules for using them together.
func (cfg *Config) validateResourceLabels() []error {
	rcl, r2t := &cfg.ResourceConstantLabels, &cfg.ResourceToTelemetryConversion
	var errs []error
	if rcl.Enabled || rcl.ExcludeServiceAttributes {
		errs = append(errs, errors.New("resource_constant_labels: enabled and exclude_service_attributes are not supported here; use included and excluded"))
	}
	switch {
	case disableResourceToTelemetryConversionGate.IsEnabled() && !r2t.IsEmpty():
		errs = append(errs, fmt.Errorf("resource_to_telemetry_conversion: refused while the %s feature gate is on; use resource_constant_labels", disableResourceToTelemetryConversionGate.ID()))
	case !r2t.IsEmpty() && !rcl.IsEmpty():
		errs = append(errs, errors.New("resource_constant_labels: cannot be used with resource_to_telemetry_conversion, its deprecated form; keep one"))
	}
	if err := r2t.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("resource_to_telemetry_conversion: %w", err))
	}
	if err := rcl.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("resource_constant_labels: %w", err))
	}
	return errs
}

// resourceLabels is the resource label setting in force: as contrib,
// resource_constant_labels, else the deprecated conversion.
func (cfg *Config) resourceLabels() resourcetotelemetry.Settings {
	if cfg.ResourceConstantLabels.IsEmpty() && !disableResourceToTelemetryConversionGate.IsEnabled() {
		return cfg.ResourceToTelemetryConversion
	}
	return cfg.ResourceConstantLabels
}

func createDefaultConfig() component.Config {
	server := confighttp.NewDefaultServerConfig()
	server.NetAddr.Endpoint = defaultEndpoint
	// As contrib: the queue and its batching take their defaults when
	// sending_queue is set, and are off when it is not.
	queue := exporterhelper.NewDefaultQueueConfig()
	queue.Batch = configoptional.Default(*queue.Batch.GetOrInsertDefault())
	return &Config{
		QueueBatchConfig:     configoptional.Default(queue),
		Server:               server,
		ConstLabels:          map[string]string{},
		SendTimestamps:       true,
		MetricExpiration:     5 * time.Minute,
		AddMetricSuffixes:    true,
		MaxSeries:            1_000_000,
		MaxSeriesPerResource: 50_000,
		MaxDescriptors:       10_000,
		// As max_series: a source's state is a quarter of a series' memory.
		MaxAggregateSources: 1_000_000,
		Scrape: ScrapeConfig{
			// As confighttp's default write timeout.
			Timeout:       30 * time.Second,
			MaxConcurrent: 16,
			// As Kubernetes' default termination grace period.
			DrainTimeout: 30 * time.Second,
			GzipLevel:    scrape.DefaultGzipLevel,
		},
		Cardinality: CardinalityConfig{
			Path:        "/cardinality",
			Top:         20,
			ScanTimeout: 100 * time.Millisecond,
		},
		Fleet: FleetConfig{
			// memberlist's port, as Consul, Mimir and Loki use it.
			Bind: "0.0.0.0:7946",
			// An agent balanced per request changes hands about 4 times a
			// minute; a gRPC agent moves once per max_connection_age (2m in
			// testdata/gateway.yaml) and is claimed at once.
			ClaimInterval:  15 * time.Second,
			RejoinInterval: 10 * time.Second,
			// Well above a claim's gossip and a handover's round trip
			// (~0.1-1 s): the first counts of an agent that moves are
			// counted this much later, never lost.
			HandoverTimeout: 5 * time.Second,
		},
	}
}

// validateAggregate checks each rule, naming it by its place in the list.
func (cfg *Config) validateAggregate() []error {
	var errs []error
	for i, r := range cfg.Aggregate {
		if err := r.Check(); err != nil {
			errs = append(errs, fmt.Errorf("aggregate[%d]: %w", i, err))
			continue
		}
		for j, m := range r.Metrics {
			if _, err := convert.Glob(m); err != nil {
				errs = append(errs, fmt.Errorf("aggregate[%d]::metrics[%d]: %q: %w", i, j, m, err))
			}
		}
	}
	if cfg.MaxAggregateSources <= 0 {
		errs = append(errs, fmt.Errorf("max_aggregate_sources: must be positive, got %d", cfg.MaxAggregateSources))
	}
	return errs
}

func (c FleetConfig) validate() []error {
	if !c.Enabled {
		return nil
	}
	var errs []error
	if _, _, err := fleet.SplitHostPort(c.Bind); err != nil {
		errs = append(errs, fmt.Errorf("fleet::bind: want host:port, got %q: %w", c.Bind, err))
	}
	if c.Advertise != "" {
		if _, _, err := fleet.SplitHostPort(c.Advertise); err != nil {
			errs = append(errs, fmt.Errorf("fleet::advertise: want host:port, got %q: %w", c.Advertise, err))
		}
	}
	for i, peer := range c.Join {
		if strings.TrimSpace(peer) == "" {
			errs = append(errs, fmt.Errorf("fleet::join[%d]: must not be empty", i))
		}
	}
	if c.ClaimInterval < 0 {
		errs = append(errs, fmt.Errorf("fleet::claim_interval: must not be negative, got %v", c.ClaimInterval))
	}
	if c.RejoinInterval <= 0 {
		errs = append(errs, fmt.Errorf("fleet::rejoin_interval: must be positive, got %v", c.RejoinInterval))
	}
	if c.HandoverTimeout < 0 {
		errs = append(errs, fmt.Errorf("fleet::handover_timeout: must not be negative, got %v", c.HandoverTimeout))
	}
	return errs
}

func (c CardinalityConfig) validate() []error {
	var errs []error
	switch {
	case !strings.HasPrefix(c.Path, "/"):
		errs = append(errs, fmt.Errorf("cardinality::path: must begin with /, got %q", c.Path))
	case c.Path == metricsPath:
		errs = append(errs, fmt.Errorf("cardinality::path: %s is the metrics endpoint", metricsPath))
	case path.Clean(c.Path) != c.Path || strings.ContainsAny(c.Path, "{} \t\n?#%"):
		// The path becomes an http.ServeMux pattern, which reads braces as wildcards.
		errs = append(errs, fmt.Errorf("cardinality::path: want a plain, clean path such as /cardinality, got %q", c.Path))
	}
	if c.Top < 1 || c.Top > cardinality.MaxTop {
		errs = append(errs, fmt.Errorf("cardinality::top: must be from 1 to %d, got %d", cardinality.MaxTop, c.Top))
	}
	if c.ScanTimeout <= 0 {
		errs = append(errs, fmt.Errorf("cardinality::scan_timeout: must be positive, got %v", c.ScanTimeout))
	}
	return errs
}
