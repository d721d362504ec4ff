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
// target, read as gRPC's name syntax (scheme:[//authority/]endpoint) defines
// it: the address is the endpoint, not the authority, which names the
// resolver's own server.
//
//	dns:///api.internal:443            api.internal, 443
//	dns://8.8.8.8/api.internal:443     api.internal, 443 (8.8.8.8 resolves)
//	passthrough:///127.0.0.1:50051     127.0.0.1, 50051
//	api.internal:443                   api.internal, 443 (no scheme: dns)
//	unix:///run/x.sock, unix:/run/x.sock  /run/x.sock, no port (a socket path)
//	unix-abstract:grpc                 grpc, no port
//	zk://zookeeper:2181/my-service     my-service, no port (zookeeper:2181 resolves)
//	other                              nothing: A66 writes "other" for a
//	                                   target whose scheme it does not report
func splitTarget(target string) (string, int64) {
	if target == "" || target == "other" {
		return "", 0
	}
	endpoint, socket := target, false
	if i := strings.IndexByte(target, ':'); i > 0 {
		scheme, rest := target[:i], target[i+1:]
		hasAuthority := strings.HasPrefix(rest, "//")
		if hasAuthority {
			// scheme://authority/endpoint: any scheme.
			rest = rest[2:]
			j := strings.IndexByte(rest, '/')
			if j < 0 {
				return "", 0 // an authority and no endpoint
			}
			rest = rest[j+1:]
		}
		switch scheme {
		case "unix":
			endpoint, socket = rest, true
			if hasAuthority {
				endpoint = "/" + rest // unix:///run/x.sock: the path is absolute
			}
		case "unix-abstract":
			endpoint, socket = rest, true
		case "ipv4", "ipv6":
			endpoint, _, _ = strings.Cut(rest, ",") // a list: the first address
		case "dns", "passthrough":
			endpoint = rest
		default:
			if hasAuthority {
				endpoint = rest
			}
			// otherwise host:port without a scheme, which gRPC resolves
			// with dns
		}
	}
	if endpoint == "" {
		return "", 0
	}
	if socket {
		return endpoint, 0
	}
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		return strings.TrimSuffix(strings.TrimPrefix(endpoint, "["), "]"), 0
	}
	p, err := strconv.ParseInt(port, 10, 64)
	if err != nil || p < 1 || p > 65535 {
		return host, 0
	}
	return host, p
}
