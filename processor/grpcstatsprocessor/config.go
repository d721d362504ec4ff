package grpcstatsprocessor // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor"

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"
)

// Target names the canonical form that recognised RPC metrics are rewritten into.
type Target string

const (
	// TargetSemconv is the released OpenTelemetry RPC semantic conventions, as
	// current otelgrpc emits them (rpc.server.call.duration in seconds, ...).
	TargetSemconv Target = "semconv"
	// TargetGRPC is the gRFC A66 naming of grpc-go's own OpenTelemetry plugin
	// (grpc.server.call.duration, grpc.method, grpc.status, ...).
	TargetGRPC Target = "grpc"
)

// Config defines the configuration of the grpcstats processor.
type Config struct {
	// Target is the canonical form: "semconv" (default) or "grpc".
	Target Target `mapstructure:"target"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

// Validate checks that the configuration is usable.
func (cfg *Config) Validate() error {
	var errs []error
	switch cfg.Target {
	case TargetSemconv, TargetGRPC:
	default:
		errs = append(errs, fmt.Errorf("target: unknown value %q (want %q or %q)", cfg.Target, TargetSemconv, TargetGRPC))
	}
	return errors.Join(errs...)
}

func createDefaultConfig() component.Config {
	return &Config{Target: TargetSemconv}
}
