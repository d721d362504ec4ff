// Package image tests the container image of `make image` as it is shipped,
// the OCI archive: its config as skopeo reads it, its files as its layers
// hold them, and the image run with podman the way the README shows, as a
// gateway that takes OTLP and serves /metrics.
//
// The archive holds one image per platform of the Makefile (linux/amd64 and
// linux/arm64) and their image index; the tests read every platform's image
// and run the one of the host's platform. Beside the image, the SBOM of the
// binary is checked against the builder's manifest and the binaries' build
// info.
//
// It needs the archive and the Makefile's podman settings: `make test` (or
// `make image-test`) builds the image and sets STATSGATE_IMAGE_ARCHIVE,
// STATSGATE_IMAGE_PLATFORMS, STATSGATE_IMAGE_SBOM, STATSGATE_IMAGE_BINARIES,
// STATSGATE_PODMAN, STATSGATE_PODMAN_RUN_FLAGS and STATSGATE_SKOPEO. Without
// STATSGATE_IMAGE_ARCHIVE the tests skip; with it, anything else missing is
// a failure.
package image

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/statsgate/statsgate/internal/testnet"
	"github.com/statsgate/statsgate/test/internal/gatewaytest"
)

// What the Containerfile promises.
const (
	user          = "10001:10001"
	entrypoint    = "/otelcol-statsgate"
	defaultConfig = "/etc/statsgate/config.yaml"
	caBundle      = "/etc/ssl/certs/ca-certificates.crt"
)

var gatewayConfig = filepath.Join("..", "..", "testdata", "gateway.yaml")

// settings is how the Makefile builds and runs the image.
type settings struct {
	archive   string   // the OCI archive of make image
	platforms []string // os/arch of each image in the archive's index
	sbom      string   // the CycloneDX JSON SBOM of the binary
	binaries  []string // the binary of each platform, in the order of platforms
	podman    []string // podman and its global flags (project-local store, runtime)
	runFlags  []string // flags every podman run needs on the build machines
	skopeo    string
}

func imageSettings(t *testing.T) settings {
	t.Helper()
	s := settings{archive: os.Getenv("STATSGATE_IMAGE_ARCHIVE")}
	if s.archive == "" {
		t.Skip("STATSGATE_IMAGE_ARCHIVE is not set; run `make test` or `make image-test`, which build the image first")
	}
	_, err := os.Stat(s.archive)
	require.NoError(t, err, "STATSGATE_IMAGE_ARCHIVE")
	s.platforms = strings.Fields(os.Getenv("STATSGATE_IMAGE_PLATFORMS"))
	require.NotEmpty(t, s.platforms, "STATSGATE_IMAGE_PLATFORMS is not set")
	s.sbom = os.Getenv("STATSGATE_IMAGE_SBOM")
	require.NotEmpty(t, s.sbom, "STATSGATE_IMAGE_SBOM is not set")
	s.binaries = strings.Fields(os.Getenv("STATSGATE_IMAGE_BINARIES"))
	require.Len(t, s.binaries, len(s.platforms), "STATSGATE_IMAGE_BINARIES: one binary per platform of STATSGATE_IMAGE_PLATFORMS")
	s.podman = strings.Fields(os.Getenv("STATSGATE_PODMAN"))
	require.NotEmpty(t, s.podman, "STATSGATE_PODMAN is not set")
	s.runFlags = strings.Fields(os.Getenv("STATSGATE_PODMAN_RUN_FLAGS"))
	require.NotEmpty(t, s.runFlags, "STATSGATE_PODMAN_RUN_FLAGS is not set")
	s.skopeo = os.Getenv("STATSGATE_SKOPEO")
	require.NotEmpty(t, s.skopeo, "STATSGATE_SKOPEO is not set")
	return s
}

// podmanCmd is podman with the Makefile's global flags and args.
func (s settings) podmanCmd(args ...string) *exec.Cmd {
	return exec.Command(s.podman[0], append(append([]string{}, s.podman[1:]...), args...)...)
}

// imageConfig is the part of the OCI image config the Containerfile sets.
type imageConfig struct {
	User         string              `json:"User"`
	Entrypoint   []string            `json:"Entrypoint"`
	Cmd          []string            `json:"Cmd"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts"`
}

func inspectConfig(t *testing.T, s settings) imageConfig {
	t.Helper()
	out, err := exec.Command(s.skopeo, "inspect", "--config", "oci-archive:"+s.archive).Output()
	require.NoError(t, err, "skopeo inspect: %s", stderrOf(err))
	var cfg struct {
		Config imageConfig `json:"config"`
	}
	require.NoError(t, json.Unmarshal(out, &cfg), "%s", out)
	return cfg.Config
}

func TestImageRunsAsNonRootOnTheDefaultConfig(t *testing.T) {
	cfg := inspectConfig(t, imageSettings(t))
	assert.Equal(t, user, cfg.User)
	assert.Equal(t, []string{entrypoint}, cfg.Entrypoint)
	assert.Equal(t, []string{"--config", defaultConfig}, cfg.Cmd)
}

// listenVar matches each ${env:STATSGATE_…:-default} of the default config
// that sets where something listens: an _ENDPOINT or _BIND (host:port), or a
// _PORT. The others (the fleet's switch, its peers and key) are not addresses.
var listenVar = regexp.MustCompile(`\$\{env:(STATSGATE_\w+_(?:ENDPOINT|BIND|PORT)):-([^}]+)\}`)

// listenDefaults maps each listening STATSGATE_* variable of
// testdata/gateway.yaml to its default: a host:port, or a bare port for the
// collector's own metrics (whose host is set apart from it). config is the
// file's text.
func listenDefaults(t *testing.T) (vars map[string]string, config string) {
	t.Helper()
	raw, err := os.ReadFile(gatewayConfig)
	require.NoError(t, err)
	vars = make(map[string]string)
	for _, m := range listenVar.FindAllStringSubmatch(string(raw), -1) {
		vars[m[1]] = m[2]
	}
	require.NotEmpty(t, vars, "no ${env:STATSGATE_...:-default} in %s", gatewayConfig)
	return vars, string(raw)
}

func TestImageExposesEveryPortTheDefaultConfigOpensToOthers(t *testing.T) {
	cfg := inspectConfig(t, imageSettings(t))

	// Ports bound to all interfaces by default are the image's to expose;
	// the collector's own metrics stay on localhost and must not be.
	vars, config := listenDefaults(t)
	var want []string
	for name, def := range vars {
		host, port, err := net.SplitHostPort(def)
		if err != nil { // a bare port: the collector's own metrics
			assert.Regexp(t, `host: localhost\s+port: \$\{env:`+name+`:`, config, "%s is not bound to localhost", name)
			continue
		}
		assert.Equal(t, "0.0.0.0", host, "%s", name)
		want = append(want, port+"/tcp")
		if strings.HasPrefix(name, "STATSGATE_FLEET_") {
			// memberlist gossips over UDP and TCP on one port.
			want = append(want, port+"/udp")
		}
	}
	var got []string
	for port := range cfg.ExposedPorts {
		got = append(got, port)
	}
	sort.Strings(want)
	sort.Strings(got)
	assert.Equal(t, []string{"13133/tcp", "4317/tcp", "4318/tcp", "7946/tcp", "7946/udp", "9464/tcp"}, want, "the default config's public ports")
	assert.Equal(t, want, got, "EXPOSE in the Containerfile")
}

func TestImageHoldsTheCABundleAndTheDefaultConfigReadOnly(t *testing.T) {
	s := imageSettings(t)
	for _, platform := range s.platforms {
		t.Run(platform, func(t *testing.T) {
			_, arch, _ := strings.Cut(platform, "/")
			files, err := imageFiles(s.archive, arch, caBundle, defaultConfig, entrypoint)
			require.NoError(t, err)
			checkFilesReadOnly(t, files)
		})
	}
}

// checkFilesReadOnly checks the files the Containerfile copies into the
// image, as one platform's layers hold them.
func checkFilesReadOnly(t *testing.T, files map[string]imageFile) {
	t.Helper()
	// Owned by root and not writable by anyone else: the gateway (uid 10001)
	// can read its config and run its binary but not replace them.
	for _, want := range []struct {
		name string
		mode int64
	}{{caBundle, 0o644}, {defaultConfig, 0o644}, {entrypoint, 0o755}} {
		f, ok := files[want.name]
		if !assert.True(t, ok, "%s is not in the image", want.name) {
			continue
		}
		assert.Equal(t, [2]int{0, 0}, [2]int{f.UID, f.GID}, "%s owner", want.name)
		assert.Equal(t, fmt.Sprintf("%#o", want.mode), fmt.Sprintf("%#o", f.Mode), "%s mode", want.name)
	}

	if bundle, ok := files[caBundle]; ok {
		assert.Greater(t, countCertificates(t, bundle.Data), 100, "a CA bundle has the public roots")
	}
	if config, ok := files[defaultConfig]; ok {
		want, err := os.ReadFile(gatewayConfig)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(config.Data), "the default config is testdata/gateway.yaml")
	}
}

// countCertificates parses every PEM block of a CA bundle as a certificate.
func countCertificates(t *testing.T, bundle []byte) int {
	t.Helper()
	n := 0
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		require.Equal(t, "CERTIFICATE", block.Type)
		_, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err, "certificate %d of the bundle", n+1)
		n++
	}
	return n
}

func TestImageServesOTLPAsPrometheusMetricsAsUser10001(t *testing.T) {
	s := imageSettings(t)

	// Every listen address of the default config moves to a free loopback
	// port (the container shares the host's network), so the test can run
	// next to any other gateway.
	env := map[string]string{}
	vars, _ := listenDefaults(t)
	for name, def := range vars {
		addr := testnet.FreeEndpoint(t)
		if _, _, err := net.SplitHostPort(def); err != nil {
			env[name] = gatewaytest.PortOf(t, addr) // a bare port
		} else {
			env[name] = addr
		}
	}
	for _, name := range []string{"STATSGATE_HEALTH_ENDPOINT", "STATSGATE_OTLP_GRPC_ENDPOINT", "STATSGATE_METRICS_ENDPOINT"} {
		require.Contains(t, env, name, "testdata/gateway.yaml no longer reads %s", name)
	}

	name := fmt.Sprintf("statsgate-image-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	g := runImage(t, s, name, env)
	gatewaytest.WaitHealthy(t, g, "http://"+env["STATSGATE_HEALTH_ENDPOINT"]+"/")

	t.Run("the gateway runs as 10001:10001 on the default config", func(t *testing.T) {
		out, err := s.podmanCmd("top", name, "pid", "user", "group", "args").Output()
		require.NoError(t, err, "podman top: %s", stderrOf(err))
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		require.Len(t, lines, 2, "one process in the container:\n%s", out)
		assert.Equal(t, []string{"1", "10001", "10001", entrypoint, "--config", defaultConfig}, strings.Fields(lines[1]))
	})

	t.Run("OTLP pushed to it appears on /metrics with job and instance", func(t *testing.T) {
		instance := fmt.Sprintf("image-test-%d", time.Now().UnixNano())
		pushOTLP(t, env["STATSGATE_OTLP_GRPC_ENDPOINT"], instance)

		labels := map[string]string{"job": "statsgate-image-test", "instance": instance, "route": "/checkout"}
		url := "http://" + env["STATSGATE_METRICS_ENDPOINT"] + "/metrics"
		var last string
		ok := assert.Eventually(t, func() bool {
			fams, _, _, err := gatewaytest.Scrape(url)
			if err != nil {
				last = err.Error()
				return false
			}
			requests, found := gatewaytest.Value(fams, "image_test_requests_total", labels)
			hist := histogram(fams, "image_test_duration_seconds", labels)
			last = fmt.Sprintf("requests %v (found %v), duration histogram %v", requests, found, hist)
			return found && requests == 3 && hist != nil &&
				hist.GetSampleCount() == 3 && hist.GetSampleSum() > 2.0999 && hist.GetSampleSum() < 2.1001
		}, 10*time.Second, 50*time.Millisecond)
		if !ok {
			t.Logf("last scrape: %s", last)
		}
	})

	t.Run("podman stop ends it cleanly", func(t *testing.T) {
		start := time.Now()
		out, err := s.podmanCmd("stop", "--time", "10", name).CombinedOutput()
		require.NoError(t, err, "podman stop: %s", out)
		// podman run exits with the gateway's status: 0 after SIGTERM.
		took := g.WaitExit(t, start, 15*time.Second)
		t.Logf("stopped in %v", took.Round(time.Millisecond))
	})
}

// runImage starts the image from the archive in the foreground of a podman
// run process, its output collected in the Gateway's logs; the container is
// removed in t.Cleanup whatever happens to the test.
func runImage(t *testing.T, s settings, name string, env map[string]string) *gatewaytest.Gateway {
	t.Helper()
	args := []string{"run", "--rm", "--name", name}
	args = append(args, s.runFlags...)
	for k, v := range env {
		args = append(args, "-e", k+"="+v)
	}
	args = append(args, "oci-archive:"+s.archive)

	g := &gatewaytest.Gateway{Logs: &gatewaytest.SyncBuffer{}, Done: make(chan struct{})}
	g.Cmd = s.podmanCmd(args...)
	g.Cmd.Stdout, g.Cmd.Stderr = g.Logs, g.Logs
	start := time.Now()
	require.NoError(t, g.Cmd.Start())
	go func() {
		g.ExitErr = g.Cmd.Wait()
		close(g.Done)
	}()
	t.Cleanup(func() {
		if out, err := s.podmanCmd("rm", "--force", "--ignore", "--time", "5", name).CombinedOutput(); err != nil {
			t.Errorf("podman rm %s: %v\n%s", name, err, out)
		}
		select {
		case <-g.Done:
		case <-time.After(15 * time.Second):
			_ = g.Cmd.Process.Kill()
			<-g.Done
			t.Error("podman run did not exit within 15s of podman rm")
		}
		t.Logf("container %s ran for %v", name, time.Since(start).Round(time.Millisecond))
		if t.Failed() {
			t.Logf("podman run output:\n%s", g.Logs.String())
		}
	})
	return g
}

// pushOTLP sends a counter and a histogram through the OpenTelemetry Go SDK
// and its OTLP/gRPC exporter, as an instrumented service would.
func pushOTLP(t *testing.T, endpoint, instance string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(endpoint), otlpmetricgrpc.WithInsecure())
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithResource(resource.NewSchemaless(
			attribute.String("service.name", "statsgate-image-test"),
			attribute.String("service.instance.id", instance),
		)),
		// Exported on ForceFlush below, not on a timer.
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))),
	)
	defer func() { require.NoError(t, mp.Shutdown(ctx)) }()

	meter := mp.Meter("statsgate/test/image")
	route := metric.WithAttributes(attribute.String("route", "/checkout"))
	requests, err := meter.Int64Counter("image_test.requests", metric.WithUnit("{request}"))
	require.NoError(t, err)
	duration, err := meter.Float64Histogram("image_test.duration", metric.WithUnit("s"))
	require.NoError(t, err)
	requests.Add(ctx, 3, route)
	for _, d := range []float64{0.2, 0.4, 1.5} {
		duration.Record(ctx, d, route)
	}
	require.NoError(t, mp.ForceFlush(ctx), "OTLP export to the gateway in the container failed")
}

// histogram is the histogram of family name whose labels include match.
func histogram(fams map[string]*dto.MetricFamily, name string, match map[string]string) *dto.Histogram {
	fam, ok := fams[name]
	if !ok {
		return nil
	}
metrics:
	for _, m := range fam.GetMetric() {
		for k, v := range match {
			if gatewaytest.LabelValue(m, k) != v {
				continue metrics
			}
		}
		return m.GetHistogram()
	}
	return nil
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	if err != nil {
		return err.Error()
	}
	return ""
}
