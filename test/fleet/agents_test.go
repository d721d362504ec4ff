package fleet

import (
	"fmt"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/internal/agentmanifest"
	"github.com/statsgate/statsgate/test/internal/proctest"
)

// exportInterval is how often the agents of the fleet export, unless a
// group says otherwise.
const exportInterval = time.Second

// otlpGroup is one cmd/otlpagent process: agents of one protocol and
// temporality, behind one of the load balancer's frontends.
type otlpGroup struct {
	name        string // the agents' service.name, their job in Prometheus
	protocol    string
	temporality string
	endpoint    string
	// every is the group's export interval, exportInterval when zero.
	every    time.Duration
	proc     *proctest.Proc
	manifest string
}

func (g *otlpGroup) start(t *testing.T, bin, dir string, agents int) {
	g.manifest = filepath.Join(dir, g.name+".json")
	if g.every == 0 {
		g.every = exportInterval
	}
	args := []string{
		"--endpoint", g.endpoint, "--protocol", g.protocol, "--temporality", g.temporality,
		"--agents", strconv.Itoa(agents), "--service", g.name, "--instance-prefix", g.name,
		"--export-interval", g.every.String(), "--record-interval", "50ms",
		"--manifest", g.manifest,
	}
	if g.protocol == "http" {
		args = append(args, "--replica-header", replicaHeader)
	}
	g.proc = proctest.Start(t, dir, g.name, nil, bin, args...)
}

// stop ends the agents, which flush their last export and write their manifest.
func (g *otlpGroup) stop(t *testing.T) agentmanifest.OTLP {
	t.Helper()
	require.NoError(t, g.proc.Signal(syscall.SIGTERM))
	require.NoError(t, g.proc.Wait(60*time.Second), "%s:\n%s", g.name, proctest.Tail(g.proc.Log, 30))
	var m agentmanifest.OTLP
	require.NoError(t, agentmanifest.Read(g.manifest, &m))
	return m
}

// grpcAgents is cmd/grpcagent: gRPC services with both otelgrpc and grpc-go's
// OpenTelemetry plugin registered, making calls until stopped.
type grpcAgents struct {
	proc     *proctest.Proc
	manifest string
}

const grpcService = "fleet-grpc"

func startGRPCAgents(t *testing.T, bin, dir, endpoint string, agents int) *grpcAgents {
	g := &grpcAgents{manifest: filepath.Join(dir, "grpcagent.json")}
	g.proc = proctest.Start(t, dir, "grpcagent", nil, bin,
		"--gateway", endpoint, "--agents", strconv.Itoa(agents), "--rounds", "0",
		"--calls", "ok=6,not_found=2,unimplemented=1", "--interval", "100ms",
		"--export-interval", exportInterval.String(), "--service", grpcService,
		"--instance-prefix", grpcService, "--manifest", g.manifest)
	return g
}

func (g *grpcAgents) stop(t *testing.T) agentmanifest.GRPC {
	t.Helper()
	require.NoError(t, g.proc.Signal(syscall.SIGTERM))
	require.NoError(t, g.proc.Wait(60*time.Second), "grpcagent:\n%s", proctest.Tail(g.proc.Log, 30))
	var m agentmanifest.GRPC
	require.NoError(t, agentmanifest.Read(g.manifest, &m))
	return m
}

// cumulativeBuckets turns an agent's per-bucket counts into the le buckets
// Prometheus stores, keyed by the le label.
func cumulativeBuckets(bounds []float64, counts []uint64) map[string]float64 {
	out := map[string]float64{}
	var cum uint64
	for i, c := range counts {
		cum += c
		le := "+Inf"
		if i < len(bounds) {
			le = strconv.FormatFloat(bounds[i], 'g', -1, 64)
		}
		out[le] = float64(cum)
	}
	return out
}

func seriesKey(parts ...string) string { return fmt.Sprint(parts) }
