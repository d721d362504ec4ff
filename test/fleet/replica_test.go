package fleet

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/internal/testnet"
	"github.com/statsgate/statsgate/test/internal/gatewaytest"
	"github.com/statsgate/statsgate/test/internal/proctest"
)

// defaultConfig is the configuration the gateway ships with: the fleet runs
// it unchanged, with only the listen addresses moved by the environment
// variables it reads and, where a test says so, --set overrides.
const defaultConfig = "../../testdata/gateway.yaml"

// tools are the real components the fleet runs, installed by `make fleet`.
type tools struct{ gateway, prometheus, haproxy string }

func requireTools(t *testing.T, needHAProxy bool) tools {
	t.Helper()
	bin := os.Getenv("STATSGATE_BINARY")
	if bin == "" {
		t.Skip("STATSGATE_BINARY is not set; run `make fleet`, which builds the distro and installs Prometheus 3 and haproxy")
	}
	// With the binary set the caller meant to run this test: a missing tool fails it.
	find := func(env string) string {
		p := os.Getenv(env)
		require.NotEmpty(t, p, "%s is not set; `make fleet` sets it", env)
		fi, err := os.Stat(p)
		require.NoError(t, err, "%s=%s", env, p)
		require.False(t, fi.IsDir(), "%s=%s is a directory", env, p)
		return p
	}
	tl := tools{gateway: bin, prometheus: find("STATSGATE_PROMETHEUS3")}
	if needHAProxy {
		tl.haproxy = find("STATSGATE_HAPROXY")
	}
	return tl
}

// replica is one gateway of the fleet: its addresses stay the same across
// restarts, as a pod's do behind a Service.
type replica struct {
	name                        string
	otlpGRPC, otlpHTTP, metrics string
	health, telemetry           string
	// gossip is the fleet's memberlist address (UDP and TCP).
	gossip   string
	bin, dir string
	sets     []string
	// env is added to the replica's environment: the fleet settings.
	env    []string
	proc   *proctest.Proc
	starts int
}

func newReplica(t *testing.T, name, bin, dir string, sets ...string) *replica {
	return &replica{
		name: name, bin: bin, dir: dir, sets: sets,
		otlpGRPC: testnet.FreeEndpoint(t), otlpHTTP: testnet.FreeEndpoint(t), metrics: testnet.FreeEndpoint(t),
		health: testnet.FreeEndpoint(t), telemetry: testnet.FreeEndpoint(t), gossip: testnet.FreeEndpoint(t),
	}
}

// formFleet makes the replicas one fleet through the default config's
// environment variables: each joins the others' gossip addresses, with a
// shared key. Without it each replica runs alone, as the config's default.
func formFleet(t *testing.T, dir string, replicas []*replica) {
	t.Helper()
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	keyFile := filepath.Join(dir, "fleet.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600))
	for _, r := range replicas {
		var peers []string
		for _, o := range replicas {
			if o != r {
				peers = append(peers, o.gossip)
			}
		}
		r.env = []string{
			"STATSGATE_FLEET_ENABLED=true",
			"STATSGATE_FLEET_BIND=" + r.gossip,
			"STATSGATE_FLEET_JOIN=" + strings.Join(peers, ","),
			"STATSGATE_FLEET_SECRET_KEY_FILE=" + keyFile,
		}
	}
}

// start runs the replica and waits for its health check.
func (r *replica) start(t *testing.T) {
	t.Helper()
	r.starts++
	cfg, err := filepath.Abs(defaultConfig)
	require.NoError(t, err)
	args := []string{"--config", cfg}
	for _, s := range r.sets {
		args = append(args, "--set="+s)
	}
	r.proc = proctest.Start(t, r.dir, r.name, append([]string{
		"STATSGATE_OTLP_GRPC_ENDPOINT=" + r.otlpGRPC,
		"STATSGATE_OTLP_HTTP_ENDPOINT=" + r.otlpHTTP,
		"STATSGATE_METRICS_ENDPOINT=" + r.metrics,
		"STATSGATE_HEALTH_ENDPOINT=" + r.health,
		"STATSGATE_TELEMETRY_PORT=" + gatewaytest.PortOf(t, r.telemetry),
	}, r.env...), r.bin, args...)
	proctest.Poll(t, 30*time.Second, r.name+" healthy", func() error {
		return errors.Join(r.proc.Running(), ok200("http://"+r.health+"/"))
	})
}

// stop ends the replica with SIGTERM, as a rolling update does.
func (r *replica) stop(t *testing.T) {
	t.Helper()
	r.proc.Stop(t)
}

// kill ends the replica with SIGKILL: nothing it held is handed on.
func (r *replica) kill() { r.proc.Kill() }

func ok200(url string) error {
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %d", url, resp.StatusCode)
	}
	return nil
}
