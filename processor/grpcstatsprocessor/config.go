package grpcstatsprocessor // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor"

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gobwas/glob"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"

	"github.com/statsgate/statsgate/internal/strictconfig"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"
)

// Config defines the configuration of the grpcstats processor.
type Config struct {
	// Target is the canonical form: "semconv" (default) or "grpc".
	Target dialect.Target `mapstructure:"target"`
	// Sinks are the dialects to merge, highest precedence first. Absent means
	// every dialect, the target's own first; an empty list means none.
	Sinks []dialect.Dialect `mapstructure:"sinks"`
	// Duplicates is what becomes of a lower-precedence dialect's
	// measurements of calls another dialect reports: DuplicatesDrop
	// (default) or DuplicatesKeep.
	Duplicates Duplicates `mapstructure:"duplicates"`
	// DuplicateWindow is how long a resource's chosen dialect is remembered
	// across batches.
	DuplicateWindow time.Duration `mapstructure:"duplicate_window"`
	// MaxResources bounds the resources whose chosen dialects are remembered.
	MaxResources int `mapstructure:"max_resources"`
	// HistogramBounds is BoundsKeep (default) or BoundsCommon.
	HistogramBounds HistogramBounds `mapstructure:"histogram_bounds"`
	// Methods guards rpc.method cardinality.
	Methods MethodsConfig `mapstructure:"methods"`
	// DropAttributes are removed from converted points.
	DropAttributes []string `mapstructure:"drop_attributes"`
	// StatusAttribute is where the semconv target writes the status code:
	// StatusStable (default, rpc.status_code), StatusOld
	// (rpc.response.status_code) or StatusDup (both), as
	// OTEL_SEMCONV_STABILITY_OPT_IN's rpc, rpc/old and rpc/dup.
	StatusAttribute StatusAttribute `mapstructure:"status_attribute"`

	// noSinks records an explicit empty sinks list, which decodes like an
	// absent one: no dialect rather than all of them.
	noSinks bool

	// prevent unkeyed literal initialization
	_ struct{}
}

// MethodsConfig bounds the methods kept per service.
type MethodsConfig struct {
	// MaxPerService is how many distinct methods of one service (the
	// resource's service.name) are kept; further ones become the target's
	// "other" method. 0 disables the guard.
	MaxPerService int `mapstructure:"max_per_service"`
	// Allow lists method patterns that are always kept (glob, '*' matches
	// any run of characters, e.g. "grpc.health.v1.Health/*").
	Allow []string `mapstructure:"allow"`
}

// Duplicates is what the processor does with the measurements of a
// dialect that another dialect of higher precedence reports too.
type Duplicates string

const (
	// DuplicatesDrop drops the lower-precedence dialect's metric.
	DuplicatesDrop Duplicates = "drop"
	// DuplicatesKeep converts both.
	DuplicatesKeep Duplicates = "keep"
)

// HistogramBounds is what the processor does with the bounds of the
// histograms it converts.
type HistogramBounds string

const (
	// BoundsKeep keeps each histogram's bounds, scaled with the unit.
	BoundsKeep HistogramBounds = "keep"
	// BoundsCommon re-buckets each histogram losslessly onto the bounds it
	// shares with dialect.CommonBounds.
	BoundsCommon HistogramBounds = "common"
)

// StatusAttribute is where the semconv target writes the status code.
type StatusAttribute string

const (
	// StatusStable writes rpc.status_code, the stable conventions' key.
	StatusStable StatusAttribute = "stable"
	// StatusOld writes rpc.response.status_code, the key of semantic
	// conventions v1.39–v1.43 (otelgrpc ≤ v0.72, otelconnect v0.12).
	StatusOld StatusAttribute = "old"
	// StatusDup writes both, while dashboards move from one to the other.
	StatusDup StatusAttribute = "dup"
)

// key is the writer's setting for a.
func (a StatusAttribute) key() dialect.StatusKey {
	switch a {
	case StatusOld:
		return dialect.StatusOld
	case StatusDup:
		return dialect.StatusDup
	}
	return dialect.StatusStable
}

var (
	_ component.Config    = (*Config)(nil)
	_ confmap.Unmarshaler = (*Config)(nil)
)

// Unmarshal decodes the configuration, rejecting unknown keys at any depth
// with their paths, and notes an explicit `sinks: []`.
func (cfg *Config) Unmarshal(conf *confmap.Conf) error {
	if err := strictconfig.CheckKeys(conf, cfg); err != nil {
		return err
	}
	if err := conf.Unmarshal(cfg); err != nil {
		return err
	}
	cfg.noSinks = conf.IsSet("sinks") && len(cfg.Sinks) == 0
	return nil
}

// Validate checks that the configuration is usable; each error names its option.
func (cfg *Config) Validate() error {
	var errs []error
	switch cfg.Target {
	case dialect.TargetSemconv, dialect.TargetGRPC:
	default:
		errs = append(errs, fmt.Errorf("target: unknown value %q (want %q or %q)", cfg.Target, dialect.TargetSemconv, dialect.TargetGRPC))
	}
	seen := map[dialect.Dialect]bool{}
	for i, d := range cfg.Sinks {
		switch {
		case !slices.Contains(dialect.All, d):
			errs = append(errs, fmt.Errorf("sinks[%d]: unknown dialect %q (known: %s)", i, d, joinDialects(dialect.All)))
		case seen[d]:
			errs = append(errs, fmt.Errorf("sinks[%d]: dialect %q is listed twice", i, d))
		}
		seen[d] = true
	}
	switch cfg.Duplicates {
	case DuplicatesDrop, DuplicatesKeep:
	default:
		errs = append(errs, fmt.Errorf("duplicates: unknown value %q (want %q or %q)", cfg.Duplicates, DuplicatesDrop, DuplicatesKeep))
	}
	if cfg.DuplicateWindow <= 0 {
		errs = append(errs, fmt.Errorf("duplicate_window: must be positive, got %v", cfg.DuplicateWindow))
	}
	if cfg.MaxResources <= 0 {
		errs = append(errs, fmt.Errorf("max_resources: must be positive, got %d", cfg.MaxResources))
	}
	switch cfg.HistogramBounds {
	case BoundsKeep, BoundsCommon:
	default:
		errs = append(errs, fmt.Errorf("histogram_bounds: unknown value %q (want %q or %q)", cfg.HistogramBounds, BoundsKeep, BoundsCommon))
	}
	if cfg.Methods.MaxPerService < 0 {
		errs = append(errs, fmt.Errorf("methods::max_per_service: must not be negative, got %d", cfg.Methods.MaxPerService))
	}
	for i, p := range cfg.Methods.Allow {
		if _, err := glob.Compile(p); err != nil || p == "" {
			errs = append(errs, fmt.Errorf("methods::allow[%d]: invalid pattern %q", i, p))
		}
	}
	switch cfg.StatusAttribute {
	case StatusStable:
	case StatusOld, StatusDup:
		if cfg.Target != dialect.TargetSemconv {
			errs = append(errs, fmt.Errorf("status_attribute: %q applies only to target %q (target %q writes grpc.status)", cfg.StatusAttribute, dialect.TargetSemconv, cfg.Target))
		}
	default:
		errs = append(errs, fmt.Errorf("status_attribute: unknown value %q (want %q, %q or %q)", cfg.StatusAttribute, StatusStable, StatusOld, StatusDup))
	}
	for i, a := range cfg.DropAttributes {
		if a == "" {
			errs = append(errs, fmt.Errorf("drop_attributes[%d]: must not be empty", i))
		}
	}
	return errors.Join(errs...)
}

func joinDialects(ds []dialect.Dialect) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = string(d)
	}
	return strings.Join(s, ", ")
}

// precedence returns the configured sinks, or every dialect with the
// target's own first when the option is absent.
func (cfg *Config) precedence() []dialect.Dialect {
	if len(cfg.Sinks) > 0 || cfg.noSinks {
		return cfg.Sinks
	}
	own := cfg.Target.Dialect()
	out := []dialect.Dialect{own}
	for _, d := range dialect.All {
		if d != own {
			out = append(out, d)
		}
	}
	return out
}

func createDefaultConfig() component.Config {
	return &Config{
		Target:          dialect.TargetSemconv,
		Duplicates:      DuplicatesDrop,
		DuplicateWindow: 2 * time.Minute,
		MaxResources:    100_000,
		HistogramBounds: BoundsKeep,
		Methods:         MethodsConfig{MaxPerService: 100},
		DropAttributes:  []string{"net.sock.peer.addr", "net.sock.peer.port", "network.peer.address", "network.peer.port"},
		StatusAttribute: StatusStable,
	}
}
