//go:generate go tool -modfile=../../internal/tools/go.mod mdatagen metadata.yaml

// Package grpcstatsprocessor merges the RPC metrics that the several gRPC
// stats handlers of a service emit (grpc-go's OpenTelemetry plugin, otelgrpc,
// OpenCensus, go-grpc-prometheus) into one canonical set, in one pass.
package grpcstatsprocessor // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor"
