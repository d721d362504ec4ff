package fleet

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/statsgate/statsgate/internal/agentmanifest"
	"github.com/statsgate/statsgate/internal/testnet"
	"github.com/statsgate/statsgate/test/internal/proctest"
)

// haproxyOutput is what haproxy 2.6.12 wrote, with haproxyConfig, in front
// of three stand-in replicas whose health ports came up after it started,
// replica-2's OTLP port never: the load balancer's own probe found no server
// (<NOSRV>), :46710 went to replica-3 once replica-2 refused it, and the
// client port 46706 was used twice. (Its lines about the HTTP backends are
// left out.)
const haproxyOutput = `[WARNING]  (3880) : Server otlp_grpc/replica-1 is DOWN, reason: Layer4 connection problem, info: "Connection refused", check duration: 0ms. 2 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.
[WARNING]  (3880) : Server otlp_grpc/replica-2 is DOWN, reason: Layer4 connection problem, info: "Connection refused", check duration: 0ms. 1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.
[WARNING]  (3880) : Server otlp_grpc/replica-3 is DOWN, reason: Layer4 connection problem, info: "Connection refused", check duration: 0ms. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.
[ALERT]    (3880) : backend 'otlp_grpc' has no server available!
conn otlp_grpc 127.0.0.1:46702 otlp_grpc/<NOSRV> 1795656696.670 SC
[WARNING]  (3880) : Server otlp_grpc/replica-1 is UP, reason: Layer7 check passed, code: 200, check duration: 0ms. 1 active and 0 backup servers online. 0 sessions requeued, 0 total in queue.
[WARNING]  (3880) : Server otlp_grpc/replica-2 is UP, reason: Layer7 check passed, code: 200, check duration: 0ms. 2 active and 0 backup servers online. 0 sessions requeued, 0 total in queue.
[WARNING]  (3880) : Server otlp_grpc/replica-3 is UP, reason: Layer7 check passed, code: 200, check duration: 0ms. 3 active and 0 backup servers online. 0 sessions requeued, 0 total in queue.
conn otlp_grpc 127.0.0.1:46706 otlp_grpc/replica-1 1795656698.472 --
[WARNING]  (3880) : Server otlp_grpc/replica-2 is DOWN, reason: Health analyze, info: "Detected 1 consecutive errors, last one was: L4 unsuccessful connection". 2 active and 0 backup servers left. 1 sessions active, 0 requeued, 0 remaining in queue.
conn otlp_grpc 127.0.0.1:46710 otlp_grpc/replica-3 1795656698.473 --
[WARNING]  (3880) : Server otlp_grpc/replica-2 is UP, reason: Layer7 check passed, code: 200, check duration: 0ms. 3 active and 0 backup servers online. 0 sessions requeued, 0 total in queue.
conn otlp_grpc 127.0.0.1:46722 otlp_grpc/replica-1 1795656698.575 --
conn otlp_grpc 127.0.0.1:46730 otlp_grpc/replica-3 1795656698.676 --
[WARNING]  (3880) : Server otlp_grpc/replica-2 is DOWN, reason: Health analyze, info: "Detected 1 consecutive errors, last one was: L4 unsuccessful connection". 2 active and 0 backup servers left. 1 sessions active, 0 requeued, 0 remaining in queue.
conn otlp_grpc 127.0.0.1:46732 otlp_grpc/replica-1 1795656698.777 --
conn otlp_grpc 127.0.0.1:46706 otlp_grpc/replica-3 1795656698.878 --
[WARNING]  (3880) : Server otlp_grpc/replica-2 is UP, reason: Layer7 check passed, code: 200, check duration: 0ms. 3 active and 0 backup servers online. 0 sessions requeued, 0 total in queue.
`

func client(port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
}

func TestParseConnLog(t *testing.T) {
	conns, err := parseConnLog(strings.NewReader(haproxyOutput))
	require.NoError(t, err)
	conn := func(port uint16, server string, ms int64, state string) haproxyConn {
		return haproxyConn{frontend: "otlp_grpc", client: client(port), backend: "otlp_grpc", server: server, accepted: time.UnixMilli(ms), state: state}
	}
	assert.Equal(t, []haproxyConn{
		conn(46702, "<NOSRV>", 1795656696670, "SC"),
		conn(46706, "replica-1", 1795656698472, "--"),
		conn(46710, "replica-3", 1795656698473, "--"),
		conn(46722, "replica-1", 1795656698575, "--"),
		conn(46730, "replica-3", 1795656698676, "--"),
		conn(46732, "replica-1", 1795656698777, "--"),
		conn(46706, "replica-3", 1795656698878, "--"),
	}, conns)
}

// A connection line that does not parse means the format changed: an
// error, not a connection less.
func TestParseConnLogRejectsAnotherFormat(t *testing.T) {
	for _, line := range []string{
		"conn otlp_grpc 127.0.0.1:46706 otlp_grpc/replica-1 --",
		"conn otlp_grpc 127.0.0.1:46706 replica-1 1795656698.472 --",
		"conn otlp_grpc 127.0.0.1:46706 otlp_grpc/replica-1 1795656698 --",
	} {
		_, err := parseConnLog(strings.NewReader(haproxyOutput + line + "\n"))
		assert.ErrorContains(t, err, "line 19", line)
	}
}

// at is a time after haproxy's accept time of ms.
func at(ms int64, after time.Duration) time.Time { return time.UnixMilli(ms).Add(after) }

func TestConnLogPutsExportsOnReplicas(t *testing.T) {
	conns, err := parseConnLog(strings.NewReader(haproxyOutput))
	require.NoError(t, err)
	m := agentmanifest.OTLP{Service: "fleet-grpc-delta", Protocol: "grpc", Agents: []agentmanifest.OTLPAgent{
		{InstanceID: "a-1", Exports: []agentmanifest.Export{
			{At: at(1795656698472, 40*time.Millisecond), Conn: "127.0.0.1:46706"},
			// Still the first connection from :46706, up to the second.
			{At: at(1795656698472, 405*time.Millisecond), Conn: "127.0.0.1:46706"},
			{At: at(1795656698473, 900*time.Microsecond), Conn: "127.0.0.1:46710"},
			// The second: accepted in the same millisecond as acknowledged.
			{At: at(1795656698878, 0), Conn: "127.0.0.1:46706"},
			{At: at(1795656698878, 10*time.Second), Conn: "127.0.0.1:46706"},
		}},
		{InstanceID: "a-2", Exports: []agentmanifest.Export{
			{At: at(1795656698575, time.Millisecond), Conn: "127.0.0.1:46722"},
			{At: at(1795656698676, time.Millisecond), Conn: "127.0.0.1:46730"},
			{At: at(1795656698777, time.Millisecond), Conn: "127.0.0.1:46732"},
		}},
	}}
	got, err := replicasOf(m, conns)
	require.NoError(t, err)
	assert.Equal(t, [][]string{
		{"replica-1", "replica-1", "replica-3", "replica-3", "replica-3"},
		{"replica-1", "replica-3", "replica-1"},
	}, got)
}

// An export whose connection the log does not tie to a replica is an error,
// never a guess.
func TestConnLogReportsExportsItCannotPlace(t *testing.T) {
	conns, err := parseConnLog(strings.NewReader(haproxyOutput))
	require.NoError(t, err)
	placed := agentmanifest.Export{At: at(1795656698575, time.Millisecond), Conn: "127.0.0.1:46722"}
	for name, c := range map[string]struct {
		e    agentmanifest.Export
		want string
	}{
		"no connection recorded":      {agentmanifest.Export{At: at(1795656698575, time.Millisecond)}, "recorded no connection"},
		"a client port never logged":  {agentmanifest.Export{At: at(1795656698575, time.Millisecond), Conn: "127.0.0.1:46723"}, "no connection from 127.0.0.1:46723"},
		"before its port's first use": {agentmanifest.Export{At: at(1795656698472, -time.Millisecond), Conn: "127.0.0.1:46706"}, "no connection from 127.0.0.1:46706 accepted by then"},
		"a connection no server took": {agentmanifest.Export{At: at(1795656696670, time.Second), Conn: "127.0.0.1:46702"}, "reached no server (SC)"},
	} {
		t.Run(name, func(t *testing.T) {
			m := agentmanifest.OTLP{Protocol: "grpc", Agents: []agentmanifest.OTLPAgent{{InstanceID: "a-1", Exports: []agentmanifest.Export{placed, c.e}}}}
			_, err := replicasOf(m, conns)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "1 of 2 exports not put on a replica")
			assert.Contains(t, err.Error(), "a-1 export 1 at ")
			assert.Contains(t, err.Error(), c.want)
		})
	}
	_, err = replicasOf(agentmanifest.OTLP{Service: "fleet-http-delta", Protocol: "http"}, conns)
	assert.ErrorContains(t, err, `over "http"`)
}

func TestSetGRPCReplicasFromTheLogFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "haproxy.log")
	require.NoError(t, os.WriteFile(path, []byte(haproxyOutput), 0o644))
	m := agentmanifest.OTLP{Protocol: "grpc", Agents: []agentmanifest.OTLPAgent{{InstanceID: "a-1", Exports: []agentmanifest.Export{
		{At: at(1795656698472, time.Millisecond), Conn: "127.0.0.1:46706"},
		{At: at(1795656698878, time.Millisecond), Conn: "127.0.0.1:46706"},
	}}}}
	require.NoError(t, setGRPCReplicas(&m, path))
	assert.Equal(t, "replica-1", m.Agents[0].Exports[0].Replica)
	assert.Equal(t, "replica-3", m.Agents[0].Exports[1].Replica)

	// Nothing is filled in when an export cannot be placed.
	m.Agents[0].Exports = append(m.Agents[0].Exports, agentmanifest.Export{At: at(1795656698878, time.Second)})
	m.Agents[0].Exports[0].Replica = ""
	require.Error(t, setGRPCReplicas(&m, path))
	assert.Empty(t, m.Agents[0].Exports[0].Replica)

	assert.Error(t, setGRPCReplicas(&m, filepath.Join(t.TempDir(), "missing.log")))
}

// requireHAProxy is the haproxy STATSGATE_HAPROXY names. The tests that run
// it need no distro, but run with the fleet's: without STATSGATE_BINARY (a
// plain go test ./...) they skip, and with it (make fleet) a missing haproxy
// fails them.
func requireHAProxy(t *testing.T) string {
	t.Helper()
	if os.Getenv("STATSGATE_BINARY") == "" {
		t.Skip("STATSGATE_BINARY is not set; run `make fleet`, which builds the distro and installs haproxy")
	}
	p := os.Getenv("STATSGATE_HAPROXY")
	require.NotEmpty(t, p, "STATSGATE_HAPROXY is not set; `make fleet` installs haproxy (Debian package haproxy) and sets it")
	fi, err := os.Stat(p)
	require.NoError(t, err, "STATSGATE_HAPROXY=%s", p)
	require.False(t, fi.IsDir(), "STATSGATE_HAPROXY=%s is a directory", p)
	return p
}

// The haproxy of the fleet, with its config, logs a line per connection
// that puts each on the replica that took it, as the replica tells the
// client: also when a client port is used again, and when a replica
// refuses the connection and haproxy hands it to another.
func TestConnLogOfRealHAProxy(t *testing.T) {
	bin := requireHAProxy(t)
	dir := t.TempDir()
	replicas := make([]*replica, 3)
	for i := range replicas {
		r := &replica{name: fmt.Sprintf("replica-%d", i+1), otlpGRPC: testnet.FreeEndpoint(t),
			otlpHTTP: testnet.FreeEndpoint(t), health: testnet.FreeEndpoint(t)}
		replicas[i] = r
		health, err := net.Listen("tcp", r.health)
		require.NoError(t, err)
		t.Cleanup(func() { health.Close() })
		go acceptAll(health, func(c net.Conn) {
			// A health check asks once; the status line is what it expects.
			_, _ = bufio.NewReader(c).ReadString('\n')
			_, _ = c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"))
		})
		if i == 1 {
			continue // refuses OTLP connections: haproxy redispatches them
		}
		otlp, err := net.Listen("tcp", r.otlpGRPC)
		require.NoError(t, err)
		t.Cleanup(func() { otlp.Close() })
		go acceptAll(otlp, func(c net.Conn) { _, _ = c.Write([]byte(r.name + "\n")) })
	}
	lb := startHAProxy(t, bin, dir, replicas)
	require.NotEmpty(t, lb.log)

	// Each connection an agent's export, acknowledged once the replica
	// said its name.
	var (
		exports []agentmanifest.Export
		want    []string
		reused  *net.TCPAddr
	)
	for i := range 7 {
		d := net.Dialer{Timeout: time.Second}
		if i == 6 {
			// The first connection's port again, to another replica.
			d.LocalAddr = reused
			lb.takeOut(t, want[0])
		}
		c, err := d.Dial("tcp", lb.grpc)
		require.NoError(t, err)
		require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
		name, err := bufio.NewReader(c).ReadString('\n')
		require.NoError(t, err, "connection %d", i)
		exports = append(exports, agentmanifest.Export{At: time.Now(), Conn: c.LocalAddr().String()})
		want = append(want, strings.TrimSpace(name))
		if i == 0 {
			reused = c.LocalAddr().(*net.TCPAddr)
		}
		// Closed with a reset, so that no TIME_WAIT keeps the port from
		// being used again.
		require.NoError(t, c.(*net.TCPConn).SetLinger(0))
		c.Close()
	}
	require.Equal(t, exports[0].Conn, exports[6].Conn)
	require.NotEqual(t, want[0], want[6])
	m := agentmanifest.OTLP{Protocol: "grpc", Agents: []agentmanifest.OTLPAgent{{InstanceID: "a-1", Exports: exports}}}
	got, err := grpcExportReplicas(m, lb.log)
	require.NoError(t, err, "haproxy's output:\n%s", proctest.Tail(lb.log, 40))
	assert.Equal(t, [][]string{want}, got)
	assert.NotContains(t, want, "replica-2")
}

func acceptAll(l net.Listener, handle func(net.Conn)) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			handle(c)
		}()
	}
}

// standIn is a replica's OTLP/gRPC receiver that keeps which exports it
// took, by agent and the time of their points; it ends each connection
// after a second or so, as the fleet's replicas do (max_connection_age).
type standIn struct {
	pmetricotlp.UnimplementedGRPCServer
	name string

	mu   sync.Mutex
	took map[string]bool // instance id and point time
}

func exportKey(instance string, point time.Time) string {
	return fmt.Sprintf("%s %d", instance, point.UnixNano())
}

func (s *standIn) Export(_ context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rms := req.Metrics().ResourceMetrics()
	for i := range rms.Len() {
		id, _ := rms.At(i).Resource().Attributes().Get("service.instance.id")
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				if ms.At(k).Name() != "fleet.operations" {
					continue
				}
				dps := ms.At(k).Sum().DataPoints()
				for l := range dps.Len() {
					s.took[exportKey(id.Str(), dps.At(l).Timestamp().AsTime())] = true
				}
			}
		}
	}
	return pmetricotlp.NewExportResponse(), nil
}

func (s *standIn) tookExport(instance string, point time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.took[exportKey(instance, point)]
}

// cmd/otlpagent's gRPC agents, through the fleet's haproxy, to replicas
// that end their connections every second: every acknowledged export is put
// on the replica that took it.
func TestConnLogPutsAgentExportsOnTheReplicasThatTookThem(t *testing.T) {
	bin := requireHAProxy(t)
	dir := t.TempDir()
	replicas := make([]*replica, 3)
	standIns := make([]*standIn, len(replicas))
	for i := range replicas {
		r := &replica{name: fmt.Sprintf("replica-%d", i+1), otlpGRPC: testnet.FreeEndpoint(t),
			otlpHTTP: testnet.FreeEndpoint(t), health: testnet.FreeEndpoint(t)}
		replicas[i] = r
		health, err := net.Listen("tcp", r.health)
		require.NoError(t, err)
		t.Cleanup(func() { health.Close() })
		go acceptAll(health, func(c net.Conn) {
			_, _ = bufio.NewReader(c).ReadString('\n')
			_, _ = c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"))
		})
		l, err := net.Listen("tcp", r.otlpGRPC)
		require.NoError(t, err)
		standIns[i] = &standIn{name: r.name, took: map[string]bool{}}
		srv := grpc.NewServer(grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: time.Second, MaxConnectionAgeGrace: time.Second}))
		pmetricotlp.RegisterGRPCServer(srv, standIns[i])
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(srv.Stop)
	}
	lb := startHAProxy(t, bin, dir, replicas)

	agent := proctest.GoBuild(t, "../..", "./cmd/otlpagent", dir)
	manifest := filepath.Join(dir, "agents.json")
	p := proctest.Start(t, dir, "otlpagent", nil, agent, "--endpoint", lb.grpc, "--protocol", "grpc",
		"--temporality", "delta", "--agents", "2", "--instance-prefix", "agent", "--export-interval", "200ms",
		"--duration", "5s", "--manifest", manifest)
	require.NoError(t, p.Wait(60*time.Second), proctest.Tail(p.Log, 30))
	var m agentmanifest.OTLP
	require.NoError(t, agentmanifest.Read(manifest, &m))
	require.NoError(t, setGRPCReplicas(&m, lb.log), "haproxy's output:\n%s", proctest.Tail(lb.log, 40))

	for _, a := range m.Agents {
		require.GreaterOrEqual(t, len(a.Exports), 10, a.InstanceID)
		conns, replicasUsed := map[string]bool{}, map[string]bool{}
		for j, e := range a.Exports {
			conns[e.Conn], replicasUsed[e.Replica] = true, true
			if e.Point.IsZero() {
				// A delta export of an interval without measurements
				// carries no point for a stand-in to know it by.
				continue
			}
			var took []string
			for _, s := range standIns {
				if s.tookExport(a.InstanceID, e.Point) {
					took = append(took, s.name)
				}
			}
			assert.Equal(t, []string{e.Replica}, took, "%s export %d over %s", a.InstanceID, j, e.Conn)
		}
		// The connections ended every second: the agent reconnected, and
		// the balancer sent it to another replica.
		assert.Greater(t, len(conns), 2, "%s: connections", a.InstanceID)
		assert.Greater(t, len(replicasUsed), 1, "%s: replicas", a.InstanceID)
		t.Logf("%s: %d exports over %d connections to %d replicas", a.InstanceID, len(a.Exports), len(conns), len(replicasUsed))
	}
}
