package dialect // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"

import (
	"net"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// newGRPCNative recognises grpc-go's OpenTelemetry plugin (gRFC A66). Its
// attempt latency and per-call compressed sizes have no equivalent in the
// semantic conventions and pass through; so do its started counters, except
// into the grpc target, where they are the target's own.
func newGRPCNative(t Target) Sink {
	own := keySet("grpc.method", "grpc.status", "grpc.target")
	rule := func(c Concept) *Rule {
		return &Rule{Dialect: GRPCNative, Concept: c, Divisor: 1, Own: own, Read: readGRPCNative}
	}
	s := &byName{rules: map[string]named{
		"grpc.server.call.duration": {rule(ServerCallDuration), pmetric.MetricTypeHistogram, "s"},
		"grpc.client.call.duration": {rule(ClientCallDuration), pmetric.MetricTypeHistogram, "s"},
	}}
	if t == TargetGRPC {
		s.rules["grpc.server.call.started"] = named{rule(ServerCallStarted), pmetric.MetricTypeSum, "*"}
	}
	return s
}

func readGRPCNative(attrs pcommon.Map, f *Facts) {
	for k, v := range attrs.All() {
		switch k {
		case "grpc.method":
			if m := scalar(v); m == "other" {
				f.Other = true
			} else {
				f.Method = m
			}
		case "grpc.status":
			f.Status = StatusName(v)
		case "grpc.target":
			f.Target = scalar(v)
			f.ServerAddress, f.ServerPort = splitTarget(f.Target)
		}
	}
}

// splitTarget returns the server.address and server.port of a channel
// target as the semantic conventions' gRPC page does (grpc.md, server.address,
// whose examples the tests pin): host and port where the target names them —
// no scheme (gRPC's default, dns), dns (its authority is the resolver's DNS
// server, not the server) or passthrough — the socket path of a unix target,
// and otherwise, when no low-cardinality server name can be read from it,
// the entire target without a port.
//
//	grpc.io:50051                       grpc.io, 50051
//	dns://1.2.3.4/grpc.io:50051         grpc.io, 50051
//	passthrough:///127.0.0.1:50051      127.0.0.1, 50051
//	unix:///run/containerd/containerd.sock  /run/containerd/containerd.sock, no port
//	zk://zookeeper:2181/my-server       zk://zookeeper:2181/my-server, no port
//	ipv4:198.51.100.123:50051,198.51.100.124:50051  the same, no port
//
// "other" is no target but what A66 writes for one whose scheme it does not
// report: it gives no server.address.
func splitTarget(target string) (string, int64) {
	if target == "" || target == "other" {
		return "", 0
	}
	if scheme, rest, ok := strings.Cut(target, ":"); ok {
		switch scheme {
		case "unix": // unix:path, unix://absolute_path
			if path := strings.TrimPrefix(rest, "//"); path != "" {
				return path, 0
			}
			return target, 0
		case "dns", "passthrough": // scheme:endpoint, scheme://authority/endpoint
			endpoint := rest
			if strings.HasPrefix(rest, "//") {
				if _, endpoint, ok = strings.Cut(rest[2:], "/"); !ok {
					return target, 0
				}
			}
			return hostPort(endpoint, target)
		}
	}
	if strings.Contains(target, "/") {
		return target, 0 // another resolver's scheme://authority/endpoint
	}
	return hostPort(target, target)
}

// hostPort splits host[:port]; what is neither a host nor a host and port
// is the entire target, without a port.
func hostPort(endpoint, target string) (string, int64) {
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		switch {
		case strings.HasPrefix(endpoint, "[") && strings.HasSuffix(endpoint, "]"):
			return endpoint[1 : len(endpoint)-1], 0 // an IPv6 literal without a port
		case endpoint != "" && !strings.Contains(endpoint, ":"):
			return endpoint, 0 // a host without a port
		}
		return target, 0
	}
	p, err := strconv.ParseInt(port, 10, 64)
	if err != nil || host == "" {
		return target, 0
	}
	if p < 1 || p > 65535 {
		return host, 0
	}
	return host, p
}
