package fleet

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/internal/testnet"
	"github.com/statsgate/statsgate/test/internal/proctest"
)

// replicaHeader names, in OTLP/HTTP answers, the replica that served them:
// the HTTP agents keep it per export.
const replicaHeader = "X-Statsgate-Replica"

// loadBalancer is haproxy in front of the replicas, as the fleet's users run it.
type loadBalancer struct {
	// grpc balances OTLP/gRPC connections (TCP mode); an agent stays on its
	// replica until the connection ends (max_connection_age, a restart).
	grpc string
	// http balances every OTLP/HTTP request on its own (HTTP mode): each
	// export may land on another replica.
	http string
	// httpSticky keeps each client address on one replica (a stick table)
	// until that replica goes away, and does not hand it back when the
	// replica returns: what deltas need (store.Series.Shown).
	httpSticky string
	// socket is haproxy's runtime API.
	socket string
	// log is haproxy's output: its warnings, and a line per OTLP/gRPC
	// connection naming the replica it went to (connlog_test.go).
	log string
}

// haproxyConfig is the load balancer of the fleet. Health checks ask each
// replica's health_check extension every 500 ms; a replica that refuses a
// connection (stopped, killed) is marked down at once (observe layer4), so
// that its sticky clients move to one other replica rather than to a new one
// per request, and the request is tried again on another (redispatch).
// Each OTLP/gRPC connection is logged once it reaches a replica (logasap),
// so that a gRPC agent's exports can be put on the replica that took them.
// An HTTP agent's connection outlives the gap between two exports (keep-alive
// above the longest export interval): one closed as the next export arrives
// fails that export with EOF, and Go's client does not send a POST again.
func haproxyConfig(lb loadBalancer, replicas []*replica) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
  maxconn 4096
  stats socket %s mode 600 level admin
  log stdout format raw local0
defaults
  timeout connect 1s
  timeout client 1m
  timeout server 1m
  timeout http-request 10s
  timeout http-keep-alive 10s
  retries 3
  option redispatch
frontend otlp_grpc
  mode tcp
  bind %s
  log global
  option logasap
  log-format "%s"
  default_backend otlp_grpc
frontend otlp_http
  mode http
  bind %s
  default_backend otlp_http
frontend otlp_http_sticky
  mode http
  bind %s
  default_backend otlp_http_sticky
`, lb.socket, lb.grpc, connLogFormat, lb.http, lb.httpSticky)
	backend := func(name, mode, balance string, addr func(*replica) string) {
		fmt.Fprintf(&b, "backend %s\n  mode %s\n  balance %s\n  option httpchk GET /\n  http-check expect status 200\n", name, mode, balance)
		if mode == "http" {
			fmt.Fprintf(&b, "  http-response set-header %s %%[srv_name]\n", replicaHeader)
		}
		for _, r := range replicas {
			fmt.Fprintf(&b, "  server %s %s check port %s inter 500ms fall 1 rise 1 observe layer4 error-limit 1 on-error mark-down\n", r.name, addr(r), r.health[strings.LastIndexByte(r.health, ':')+1:])
		}
	}
	backend("otlp_grpc", "tcp", "roundrobin", func(r *replica) string { return r.otlpGRPC })
	backend("otlp_http", "http", "roundrobin", func(r *replica) string { return r.otlpHTTP })
	// Sticky: the client's replica is stored from each response, so that a
	// client whose replica went away stays on the one that answered it next
	// (with "stick on", haproxy keeps the entry of a replica that is down
	// and balances each request anew meanwhile).
	backend("otlp_http_sticky", "http", "roundrobin\n  stick-table type ip size 100k expire 30m\n  stick match src\n  stick store-response src", func(r *replica) string { return r.otlpHTTP })
	return b.String()
}

// startHAProxy runs haproxy in the foreground in front of the replicas.
func startHAProxy(t *testing.T, bin, dir string, replicas []*replica) loadBalancer {
	t.Helper()
	lb := loadBalancer{grpc: testnet.FreeEndpoint(t), http: testnet.FreeEndpoint(t), httpSticky: testnet.FreeEndpoint(t),
		socket: filepath.Join(dir, "haproxy.sock")}
	cfg := filepath.Join(dir, "haproxy.cfg")
	require.NoError(t, os.WriteFile(cfg, []byte(haproxyConfig(lb, replicas)), 0o600))
	out, err := proctest.Run(bin, "-c", "-f", cfg)
	require.NoError(t, err, "haproxy -c:\n%s", out)
	p := proctest.Start(t, dir, "haproxy", nil, bin, "-db", "-f", cfg)
	lb.log = p.Log
	proctest.Poll(t, 10*time.Second, "haproxy listening", func() error {
		if err := p.Running(); err != nil {
			return err
		}
		return dialable(lb.grpc, lb.http, lb.httpSticky)
	})
	return lb
}

// dialable reports an error unless every address accepts a connection.
func dialable(addrs ...string) error {
	for _, a := range addrs {
		c, err := net.DialTimeout("tcp", a, time.Second)
		if err != nil {
			return err
		}
		c.Close()
	}
	return nil
}

// backends are the load balancer's backends, each with every replica.
var backends = []string{"otlp_grpc", "otlp_http", "otlp_http_sticky"}

// takeOut marks a replica down in every backend through the runtime API, with
// its health checks paused: haproxy sends it no new connections or
// requests and moves its sticky clients elsewhere for good, as a rolling
// update does before it stops a replica (Kubernetes takes a terminating pod
// out of its Service's endpoints). Connections already open (gRPC) stay
// until the replica closes them.
func (lb loadBalancer) takeOut(t *testing.T, replica string) {
	t.Helper()
	lb.runtime(t, "disable health %s/"+replica, "set server %s/"+replica+" health down")
}

// putBack resumes a replica's health checks: it takes traffic once they pass.
func (lb loadBalancer) putBack(t *testing.T, replica string) {
	t.Helper()
	lb.runtime(t, "enable health %s/"+replica)
}

// runtime sends commands, each formatted with a backend's name, for every
// backend, and fails on any answer (haproxy answers nothing on success).
func (lb loadBalancer) runtime(t *testing.T, commands ...string) {
	t.Helper()
	for _, b := range backends {
		for _, cmd := range commands {
			c, err := net.DialTimeout("unix", lb.socket, time.Second)
			require.NoError(t, err)
			_, err = fmt.Fprintf(c, cmd+"\n", b)
			require.NoError(t, err)
			out, _ := io.ReadAll(c)
			c.Close()
			require.Empty(t, strings.TrimSpace(string(out)), "haproxy: "+cmd, b)
		}
	}
}
