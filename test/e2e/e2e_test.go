// Package e2e runs the built otelcol-statsgate distribution between real
// agents and a real Prometheus server: the demo agent (cmd/grpcagent, a
// grpc-go service instrumented by both otelgrpc and grpc-go's OpenTelemetry
// plugin) and contrib's telemetrygen push OTLP to the gateway; Prometheus
// 2.42 (Debian's) scrapes it over TLS with a bearer token; the test asks
// Prometheus's query API whether every call arrived exactly once, in
// seconds. TestPrometheus3 does the same with Prometheus 3 in each of the
// ways it scrapes (protobuf with native histograms, OpenMetrics with
// exemplars, UTF-8 names).
//
// It needs the binary and the tools: `make e2e` builds and installs them and
// sets STATSGATE_BINARY, STATSGATE_PROMETHEUS, STATSGATE_PROMTOOL,
// STATSGATE_TELEMETRYGEN and STATSGATE_PROMETHEUS3.
package e2e

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/internal/agentmanifest"
	"github.com/statsgate/statsgate/internal/testnet"
	"github.com/statsgate/statsgate/test/internal/proctest"
	"github.com/statsgate/statsgate/test/internal/promtest"
)

// The call mix each simulated agent makes per round (the agent's --calls).
var (
	mix    = map[string]int{"ok": 12, "not_found": 5, "unimplemented": 3, "slow": 2}
	agents = 3
	rounds = 2
	slow   = 150 * time.Millisecond
)

// telemetrygen runs, one per OTLP metric type, and the Prometheus names the
// exporter gives them (otlptranslator: dots to underscores, _total on a
// monotonic sum; telemetrygen sets no unit, so no unit suffix).
const tgPoints = 5

var tgRuns = []struct{ otlpType, otlpName, promName string }{
	{"Gauge", "statsgate.e2e.queue_depth", "statsgate_e2e_queue_depth"},
	{"Sum", "statsgate.e2e.jobs", "statsgate_e2e_jobs_total"},
	{"Histogram", "statsgate.e2e.payload", "statsgate_e2e_payload"},
	{"ExponentialHistogram", "statsgate.e2e.latency_expo", "statsgate_e2e_latency_expo"},
}

const tgService = "e2e-telemetrygen"

// lintAllowed are the `promtool check metrics` findings the test accepts,
// each coming from a name or description the source chose, not from the
// exporter. Anything else promtool reports fails the test.
var lintAllowed = map[string]string{
	// telemetrygen sets no description on the metrics it generates, and
	// OTLP descriptions are what HELP carries.
	"statsgate_e2e_queue_depth no help text":  "telemetrygen metric without a description",
	"statsgate_e2e_jobs_total no help text":   "telemetrygen metric without a description",
	"statsgate_e2e_payload no help text":      "telemetrygen metric without a description",
	"statsgate_e2e_latency_expo no help text": "telemetrygen metric without a description",
}

type tools struct{ prometheus, promtool, telemetrygen string }

func binary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("STATSGATE_BINARY")
	if bin == "" {
		t.Skip("STATSGATE_BINARY is not set; run `make e2e`, which builds the distro and installs the tools first")
	}
	return bin
}

// requireTools fails (not skips) when a tool is missing: with the binary set,
// the caller meant to run this test.
func requireTools(t *testing.T) tools {
	t.Helper()
	return tools{requireTool(t, "STATSGATE_PROMETHEUS"), requireTool(t, "STATSGATE_PROMTOOL"), requireTool(t, "STATSGATE_TELEMETRYGEN")}
}

// requireTool is the path of the tool that env names; it fails (not skips)
// when the tool is missing.
func requireTool(t *testing.T, env string) string {
	t.Helper()
	p := os.Getenv(env)
	require.NotEmpty(t, p, "%s is not set; `make e2e` sets it", env)
	fi, err := os.Stat(p)
	require.NoError(t, err, "%s=%s", env, p)
	require.False(t, fi.IsDir(), "%s=%s is a directory", env, p)
	return p
}

// manifest is what cmd/grpcagent writes about the calls it made.
type manifest agentmanifest.GRPC

// callTotals sums the manifest over agents by method and status.
type callTotals struct {
	server, client int
	clientSeconds  float64
}

func (m manifest) totals() map[string]*callTotals {
	out := map[string]*callTotals{}
	for _, a := range m.Agents {
		for _, c := range a.Calls {
			k := c.Method + " " + c.Status
			if out[k] == nil {
				out[k] = &callTotals{}
			}
			out[k].server += c.Server
			out[k].client += c.Client
			out[k].clientSeconds += c.ClientSeconds
		}
	}
	return out
}

func TestGatewayThroughPrometheus(t *testing.T) {
	bin := binary(t)
	tl := requireTools(t)
	dir := t.TempDir()
	agentBin := proctest.GoBuild(t, "../..", "./cmd/grpcagent", dir)

	// The gateway, with /metrics behind TLS and a bearer token.
	certFile, keyFile, tlsClient := writeCert(t, dir)
	token := rand.Text()
	otlp, metrics, health := testnet.FreeEndpoint(t), testnet.FreeEndpoint(t), testnet.FreeEndpoint(t)
	gw := proctest.Start(t, dir, "gateway", []string{
		"E2E_OTLP_GRPC_ENDPOINT=" + otlp,
		"E2E_METRICS_ENDPOINT=" + metrics,
		"E2E_HEALTH_ENDPOINT=" + health,
		"E2E_TLS_CERT=" + certFile,
		"E2E_TLS_KEY=" + keyFile,
		"E2E_SCRAPE_TOKEN=" + token,
	}, bin, "--config", filepath.Join("testdata", "gateway.yaml"))
	proctest.Poll(t, 30*time.Second, "gateway health check", func() error {
		return errors.Join(gw.Running(), getStatus("http://"+health+"/"))
	})

	// Prometheus scraping it every second, as an operator would configure a
	// gateway job: honor_labels keeps the agents' job and instance.
	tokenFile := filepath.Join(dir, "scrape-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	promConfig := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: statsgate
    honor_labels: true
    scheme: https
    tls_config:
      ca_file: %s
    authorization:
      credentials_file: %s
    static_configs:
      - targets: [%q]
`, certFile, tokenFile, metrics)
	prom := promtest.Start(t, dir, "prometheus", tl.prometheus, promConfig,
		"--enable-feature=native-histograms",
	)
	api := prom.API
	prom.WaitUp(t, "statsgate", 1, 30*time.Second)

	// The load: the demo agent and telemetrygen, side by side.
	prefix := "e2e-" + strings.ToLower(rand.Text()[:8])
	manifestFile := filepath.Join(dir, "manifest.json")
	agent := proctest.Start(t, dir, "grpcagent", nil, agentBin,
		"--gateway", otlp,
		"--calls", callsFlag(),
		"--agents", strconv.Itoa(agents),
		"--rounds", strconv.Itoa(rounds),
		"--interval", "100ms",
		"--slow", slow.String(),
		"--export-interval", "500ms",
		"--instance-prefix", prefix,
		"--manifest", manifestFile,
	)
	var gens []*proctest.Proc
	for _, r := range tgRuns {
		gens = append(gens, proctest.Start(t, dir, "telemetrygen-"+strings.ToLower(r.otlpType), nil, tl.telemetrygen, "metrics",
			"--otlp-endpoint", otlp, "--otlp-insecure",
			"--metric-type", r.otlpType, "--otlp-metric-name", r.otlpName,
			"--service", tgService, "--metrics", strconv.Itoa(tgPoints), "--rate", "50"))
	}
	require.NoError(t, agent.Wait(90*time.Second), "grpcagent:\n%s", proctest.Tail(agent.Log, 30))
	for _, g := range gens {
		require.NoError(t, g.Wait(60*time.Second), "%s:\n%s", g.Name, proctest.Tail(g.Log, 30))
	}
	// Every sender has had its last export acknowledged, and the pipeline
	// has no batching: a scrape that starts now sees the final values.
	prom.WaitScrapedAfter(t, "statsgate", time.Now(), 30*time.Second)

	var m manifest
	require.NoError(t, agentmanifest.Read(manifestFile, &m))
	requireManifestMatchesMix(t, m, prefix)
	sel := fmt.Sprintf(`job=%q, instance=~%q, rpc_system_name="grpc"`, m.Service, prefix+"-.*")

	t.Run("server calls counted once", func(t *testing.T) {
		assertCallsOnce(t, api, m, "rpc_server_call_duration_seconds_count", sel, func(c callTotals) int { return c.server })
	})
	t.Run("client calls counted once", func(t *testing.T) {
		assertCallsOnce(t, api, m, "rpc_client_call_duration_seconds_count", sel, func(c callTotals) int { return c.client })
	})
	t.Run("only otelgrpc's measurements kept", func(t *testing.T) {
		// The processor keeps the first dialect in sinks (semconv, which
		// otelgrpc writes) and drops the plugin's; with duplicates kept, the
		// plugin's converted points would show up under their own scope.
		for _, name := range []string{"rpc_server_call_duration_seconds_count", "rpc_client_call_duration_seconds_count"} {
			scopes, err := api.Floats(fmt.Sprintf(`count by (otel_scope_name) (%s{%s})`, name, sel), "otel_scope_name")
			require.NoError(t, err)
			assert.Equal(t, []string{"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"},
				slices.Sorted(maps.Keys(scopes)), "%s: scopes", name)
		}
		plugin, err := api.Query(fmt.Sprintf(`{__name__=~"grpc_(server|client)_call_duration_seconds.*", job=%q, instance=~%q}`, m.Service, prefix+"-.*"))
		require.NoError(t, err)
		assert.Empty(t, plugin, "the plugin's call durations reached Prometheus under their own names")
	})
	t.Run("latency in seconds", func(t *testing.T) {
		assertLatency(t, api, m, sel)
	})
	t.Run("target_info per agent", func(t *testing.T) {
		got, err := api.Floats(fmt.Sprintf(`target_info{job=%q, instance=~%q}`, m.Service, prefix+"-.*"), "instance")
		require.NoError(t, err)
		var want []string
		for _, a := range m.Agents {
			want = append(want, a.InstanceID)
		}
		assert.ElementsMatch(t, want, slices.Collect(maps.Keys(got)))
	})
	t.Run("telemetrygen series", func(t *testing.T) {
		assertTelemetrygen(t, api)
	})
	t.Run("promtool check metrics", func(t *testing.T) {
		assertPromtool(t, tl.promtool, tlsClient, "https://"+metrics+"/metrics", token)
	})
	t.Run("scrapes need TLS and the token", func(t *testing.T) {
		assertScrapeAuth(t, api, tlsClient, metrics, token)
	})
}

func callsFlag() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(mix)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, mix[k]))
	}
	return strings.Join(parts, ",")
}

// requireManifestMatchesMix checks the agent did what it was asked: the
// number of agents, rounds and calls, each call answered by its server.
func requireManifestMatchesMix(t *testing.T, m manifest, prefix string) {
	t.Helper()
	require.Len(t, m.Agents, agents, "agents in the manifest")
	perRound := 0
	for _, n := range mix {
		perRound += n
	}
	for _, a := range m.Agents {
		require.True(t, strings.HasPrefix(a.InstanceID, prefix+"-"), "instance %q", a.InstanceID)
		require.Equal(t, rounds, a.Rounds, "%s: rounds", a.InstanceID)
		var server, client int
		for _, c := range a.Calls {
			server += c.Server
			client += c.Client
		}
		require.Equal(t, rounds*perRound, client, "%s: calls made", a.InstanceID)
		require.Equal(t, rounds*perRound, server, "%s: calls handled", a.InstanceID)
	}
	require.InDelta(t, slow.Seconds(), m.SlowSeconds, 1e-9)
	require.NotEmpty(t, m.SlowMethod)
}

// assertCallsOnce compares a call counter in Prometheus, per agent and
// summed over agents, with the agent's own counts.
func assertCallsOnce(t *testing.T, api promtest.API, m manifest, name, sel string, count func(callTotals) int) {
	perAgent := map[string]float64{}
	for _, a := range m.Agents {
		for _, c := range a.Calls {
			if n := count(callTotals{server: c.Server, client: c.Client}); n > 0 {
				perAgent[a.InstanceID+" "+c.Method+" "+c.Status] = float64(n)
			}
		}
	}
	got, err := api.Floats(fmt.Sprintf(`sum by (instance, rpc_method, rpc_status_code) (%s{%s})`, name, sel),
		"instance", "rpc_method", "rpc_status_code")
	require.NoError(t, err)
	assert.Equal(t, perAgent, got, "%s per agent, method and status: Prometheus vs the agent's manifest", name)

	total := map[string]float64{}
	for k, c := range m.totals() {
		if n := count(*c); n > 0 {
			total[k] = float64(n)
		}
	}
	got, err = api.Floats(fmt.Sprintf(`sum by (rpc_method, rpc_status_code) (%s{%s})`, name, sel),
		"rpc_method", "rpc_status_code")
	require.NoError(t, err)
	if !assert.Equal(t, total, got, "%s summed over agents", name) {
		for k, want := range total {
			if got[k] == 2*want {
				t.Errorf("%s: %s counted twice (%v, want %v): the duplicate handler's calls were not dropped", name, k, got[k], want)
			}
		}
	}
}

// assertLatency checks that durations are seconds and plausible: each
// method's summed duration lies within the wall time the client measured
// around its calls, and the slow method takes at least its sleep.
func assertLatency(t *testing.T, api promtest.API, m manifest, sel string) {
	totals := m.totals()
	for _, side := range []string{"server", "client"} {
		sums, err := api.Floats(fmt.Sprintf(`sum by (rpc_method, rpc_status_code) (rpc_%s_call_duration_seconds_sum{%s})`, side, sel),
			"rpc_method", "rpc_status_code")
		require.NoError(t, err)
		require.NotEmpty(t, sums, "%s duration sums", side)
		for k, sum := range sums {
			c, ok := totals[k]
			if !assert.True(t, ok, "%s: %s is not in the manifest", side, k) {
				continue
			}
			assert.Positive(t, sum, "%s: %s", side, k)
			// Both handlers measure inside the client's call; a sum in
			// milliseconds would be ~1000 times over.
			assert.LessOrEqual(t, sum, c.clientSeconds+1e-3, "%s: %s duration sum above the client's wall time", side, k)
			if strings.HasPrefix(k, m.SlowMethod+" ") {
				n := c.server
				if side == "client" {
					n = c.client
				}
				assert.GreaterOrEqual(t, sum, float64(n)*m.SlowSeconds, "%s: %s faster than its handler's sleep", side, k)
			}
		}
	}
	// The p99 a dashboard shows for the slow method, interpolated in the
	// bucket of its sleep. Milliseconds would land in +Inf, for which
	// histogram_quantile answers the highest bound (10 s with otelgrpc's).
	p99, err := api.Floats(fmt.Sprintf(`histogram_quantile(0.99, sum by (le) (rpc_server_call_duration_seconds_bucket{%s, rpc_method=%q}))`, sel, m.SlowMethod))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, p99[""], m.SlowSeconds/2, "p99 of %s", m.SlowMethod)
	assert.Less(t, p99[""], 5.0, "p99 of %s", m.SlowMethod)
}

func assertTelemetrygen(t *testing.T, api promtest.API) {
	sel := fmt.Sprintf(`{job=%q}`, tgService)
	last := float64(tgPoints - 1) // telemetrygen's gauge and sum count 0, 1, ...
	for _, r := range tgRuns {
		switch r.otlpType {
		case "Gauge", "Sum":
			got, err := api.Floats(r.promName + sel)
			require.NoError(t, err)
			assert.Equal(t, map[string]float64{"": last}, got, "%s (%s): the last of %d points", r.promName, r.otlpType, tgPoints)
		case "Histogram":
			for _, suffix := range []string{"_count", "_sum"} {
				got, err := api.Floats(r.promName + suffix + sel)
				require.NoError(t, err)
				assert.Len(t, got, 1, "%s%s", r.promName, suffix)
				assert.Positive(t, got[""], "%s%s", r.promName, suffix)
			}
			// A classic histogram: the +Inf bucket holds every observation.
			inf, err := api.Floats(fmt.Sprintf(`%s_bucket{job=%q, le="+Inf"} - on () %s_count%s`, r.promName, tgService, r.promName, sel))
			require.NoError(t, err)
			assert.Equal(t, map[string]float64{"": 0}, inf, "%s: +Inf bucket = count", r.promName)
		case "ExponentialHistogram":
			res, err := api.Query(r.promName + sel)
			require.NoError(t, err)
			if assert.Len(t, res, 1, "%s", r.promName) {
				assert.NotNil(t, res[0].Histogram, "%s arrived as a float series, not a native histogram: %+v", r.promName, res[0])
				assert.Nil(t, res[0].Value, "%s", r.promName)
			}
			n, err := api.Floats(fmt.Sprintf("histogram_count(%s%s)", r.promName, sel))
			require.NoError(t, err)
			assert.Positive(t, n[""], "histogram_count(%s)", r.promName)
		}
	}
}

// assertPromtool lints a text scrape with promtool: exit 0 is clean, 3 means
// lint findings (each must be in lintAllowed), anything else is an error.
func assertPromtool(t *testing.T, promtool string, client *http.Client, url, token string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	code, body, err := httpStatus(client, req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), "\nrpc_server_call_duration_seconds_count{", "the scrape has the canonical RPC metrics")

	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
			why, ok := lintAllowed[strings.TrimSpace(line)]
			if assert.True(t, ok, "promtool finding not justified in lintAllowed: %q", line) {
				t.Logf("promtool: %s (accepted: %s)", line, why)
			}
		}
	default:
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

func assertScrapeAuth(t *testing.T, api promtest.API, client *http.Client, metrics, token string) {
	scrape := func(auth string) int {
		req, err := http.NewRequest(http.MethodGet, "https://"+metrics+"/metrics", nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		code, _, err := httpStatus(client, req)
		require.NoError(t, err)
		return code
	}
	assert.Equal(t, http.StatusUnauthorized, scrape(""), "scrape without a token")
	assert.Equal(t, http.StatusUnauthorized, scrape("Bearer not-"+token), "scrape with a wrong token")
	assert.Equal(t, http.StatusOK, scrape("Bearer "+token), "scrape with the token")

	// Prometheus itself scraped over https with the token.
	targets, err := api.Targets()
	require.NoError(t, err)
	require.Len(t, targets, 1)
	assert.Equal(t, "https://"+metrics+"/metrics", targets[0].ScrapeURL)
	assert.Equal(t, "up", targets[0].Health, "last error: %s", targets[0].LastError)
}
