// Package smoke runs the built otelcol-statsgate distribution the way an
// operator does: validate the default config, list the components, start it,
// push one OTLP request with the OpenTelemetry Go SDK exporter, and check the
// health and /metrics endpoints; and check in what it serves that each
// setting of the default config and each contrib prometheusexporter key
// takes effect.
//
// It needs the binary: `make test` builds it and sets STATSGATE_BINARY.
package smoke

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/statsgate/statsgate/internal/testnet"
	"github.com/statsgate/statsgate/test/internal/gatewaytest"
)

var gatewayConfig = filepath.Join("..", "..", "testdata", "gateway.yaml")

func TestValidateDefaultConfig(t *testing.T) {
	out, err := exec.Command(gatewaytest.Binary(t), "validate", "--config", gatewayConfig).CombinedOutput()
	require.NoError(t, err, "validate failed:\n%s", out)
}

// TestDefaultConfigServesItsSettings runs the default config and checks in
// what it serves what it sets: every listen address taken from the
// environment, the cardinality view, grpcstats in the pipeline and sample
// timestamps. Each effect is also checked to be absent from a control run
// of the same config with the setting at the component's default (the view
// off, no grpcstats, send_timestamps false as in contrib).
func TestDefaultConfigServesItsSettings(t *testing.T) {
	type gateway struct {
		g                                    *gatewaytest.Gateway
		otlp, otlpHTTP, health, metrics, tel string
	}
	start := func(args ...string) gateway {
		gw := gateway{otlp: testnet.FreeEndpoint(t), otlpHTTP: testnet.FreeEndpoint(t), health: testnet.FreeEndpoint(t), metrics: testnet.FreeEndpoint(t)}
		port := gatewaytest.PortOf(t, testnet.FreeEndpoint(t))
		gw.tel = "localhost:" + port
		gw.g = startBinary(t, []string{
			"STATSGATE_OTLP_GRPC_ENDPOINT=" + gw.otlp, "STATSGATE_OTLP_HTTP_ENDPOINT=" + gw.otlpHTTP,
			"STATSGATE_METRICS_ENDPOINT=" + gw.metrics, "STATSGATE_HEALTH_ENDPOINT=" + gw.health, "STATSGATE_TELEMETRY_PORT=" + port,
		}, append([]string{"--config", gatewayConfig}, args...)...)
		return gw
	}
	def := start()
	control := start("--set", "service::pipelines::metrics::processors=[memory_limiter]",
		"--set", "exporters::agentprometheus::cardinality::enabled=false",
		"--set", "exporters::agentprometheus::send_timestamps=false")
	at := time.Now().Truncate(time.Millisecond)
	for _, gw := range []gateway{def, control} {
		gatewaytest.WaitHealthy(t, gw.g, "http://"+gw.health+"/")
		export(t, gw.otlp, at)
		exportHTTP(t, gw.otlpHTTP, at)
	}
	targetOf := func(gw gateway) target {
		return target{id: "agentprometheus", addr: gw.metrics, scheme: "http", client: gatewaytest.HTTPClient, telemetry: gw.tel}
	}
	both := names(textAccept, []string{gaugeFamily, "smoke_http_level"}, nil)
	for _, gw := range []gateway{def, control} {
		require.Eventually(t, func() bool { return both(targetOf(gw)) == nil }, 10*time.Second, 50*time.Millisecond,
			"the exports over gRPC and HTTP never showed on STATSGATE_METRICS_ENDPOINT: %v", both(targetOf(gw)))
	}

	for _, c := range []keyCase{
		{"telemetry: the collector's own metrics on localhost:STATSGATE_TELEMETRY_PORT", "default", "", func(tg target) error {
			fams, _, _, err := gatewaytest.Scrape("http://" + tg.telemetry + "/metrics")
			if err != nil {
				return err
			}
			if v, ok := gatewaytest.Value(fams, "otelcol_exporter_agentprometheus_series_active", nil); !ok || v == 0 {
				return fmt.Errorf("otelcol_exporter_agentprometheus_series_active: %v (found %v)", v, ok)
			}
			return nil
		}},
		{"cardinality::enabled: the view lists the agents", "default", "control", func(tg target) error {
			resp, body, err := tg.get("/cardinality?format=json")
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("/cardinality: status %d", resp.StatusCode)
			}
			var report struct {
				Resources []struct {
					Job string `json:"job"`
				} `json:"resources"`
			}
			if err := json.Unmarshal(body, &report); err != nil {
				return err
			}
			var jobs []string
			for _, r := range report.Resources {
				jobs = append(jobs, r.Job)
			}
			if !slices.Contains(jobs, "smoke") || !slices.Contains(jobs, "smoke-http") {
				return fmt.Errorf("/cardinality: resources %v, want smoke and smoke-http", jobs)
			}
			return nil
		}},
		{"grpcstats: otelgrpc's legacy duration in the canonical form", "default", "control", allOf(
			names(textAccept, []string{"rpc_server_call_duration_seconds"}, []string{"rpc_server_duration_milliseconds"}),
			labels(textAccept, "rpc_server_call_duration_seconds", map[string]string{"rpc_method": "shop.Cart/Get", "rpc_status_code": "OK"}))},
		{"send_timestamps: samples carry their points' timestamps", "default", "control",
			allOf(timestamps(gaugeFamily, at.UnixMilli()), timestamps(counterFamily, at.UnixMilli()))},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.NoError(t, c.effect(targetOf(def)))
			if c.control != "" {
				assert.Error(t, c.effect(targetOf(control)), "the control run")
			}
		})
	}
}

// TestValidateNamesMisspeltKeys puts one misspelt key at each depth of both
// components' configuration into the default config: validate must fail and
// name the key with its path and the component.
func TestValidateNamesMisspeltKeys(t *testing.T) {
	gateway, err := os.ReadFile(gatewayConfig)
	require.NoError(t, err)
	const (
		exporterAt    = "    endpoint: ${env:STATSGATE_METRICS_ENDPOINT:-0.0.0.0:9464}\n"
		cardinalityAt = "    cardinality:\n"
		processorAt   = "  grpcstats:\n"
	)
	tests := []struct{ component, at, insert, key string }{
		{"agentprometheus", exporterAt, "    endpiont: 0.0.0.0:9464\n", "endpiont"},
		{"agentprometheus", exporterAt, "    namepsace: gw\n", "namepsace"},
		{"agentprometheus", exporterAt, "    scrape:\n      timeuot: 5s\n", "scrape::timeuot"},
		{"agentprometheus", cardinalityAt, "      enabeld: true\n", "cardinality::enabeld"},
		{"agentprometheus", exporterAt, "    resource_to_telemetry_conversion:\n      enabeld: true\n", "resource_to_telemetry_conversion::enabeld"},
		{"agentprometheus", exporterAt, "    tls:\n      cert_fiel: server.crt\n", "tls::cert_fiel"},
		{"agentprometheus", exporterAt, "    auth:\n      authenticatr: bearertokenauth\n", "auth::authenticatr"},
		{"agentprometheus", exporterAt, "    cors:\n      allowed_origns: [https://example.com]\n", "cors::allowed_origns"},
		{"agentprometheus", exporterAt, "    keepalive:\n      idle_timout: 1m\n", "keepalive::idle_timout"},
		{"agentprometheus", exporterAt, "    dialer:\n      timout: 1s\n", "dialer::timout"},
		{"agentprometheus", exporterAt, "    middlewares:\n      - idd: headers_setter\n", "middlewares[0]::idd"},
		{"agentprometheus", "    fleet:\n", "      claim_intervall: 5s\n", "fleet::claim_intervall"},
		{"grpcstats", processorAt, "    traget: grpc\n", "traget"},
		{"grpcstats", processorAt, "    methods:\n      max_per_servce: 10\n", "methods::max_per_servce"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			require.Contains(t, string(gateway), tt.at)
			cfg := filepath.Join(t.TempDir(), "gateway.yaml")
			misspelt := strings.Replace(string(gateway), tt.at, tt.at+tt.insert, 1)
			require.NoError(t, os.WriteFile(cfg, []byte(misspelt), 0o600))
			out, err := exec.Command(gatewaytest.Binary(t), "validate", "--config", cfg).CombinedOutput()
			require.Error(t, err, "validate accepted a misspelt key:\n%s", out)
			assert.Contains(t, string(out), `"`+tt.component+`"`)
			assert.Contains(t, string(out), "has invalid keys: "+tt.key)
		})
	}
}

// The default config takes the fleet settings from the environment, as its
// listen addresses: alone by default, a replica of a fleet with them.
func TestValidateFleetSettingsFromTheEnvironment(t *testing.T) {
	validate := func(env ...string) (string, error) {
		cmd := exec.Command(gatewaytest.Binary(t), "validate", "--config", gatewayConfig)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := validate("STATSGATE_FLEET_ENABLED=true", "STATSGATE_FLEET_BIND=10.0.0.1:7946",
		"STATSGATE_FLEET_JOIN=10.0.0.2:7946,statsgate-gossip:7946", "STATSGATE_FLEET_SECRET_KEY_FILE=/etc/statsgate/fleet/key")
	require.NoError(t, err, "a replica of a fleet:\n%s", out)
	for _, tc := range []struct{ env, want string }{
		{"STATSGATE_FLEET_BIND=0.0.0.0", `fleet::bind: want host:port, got "0.0.0.0"`},
		{"STATSGATE_FLEET_BIND=0.0.0.0:99999", `port "99999" is not a number from 0 to 65535`},
		{"STATSGATE_FLEET_ENABLED=maybe", "enabled"},
	} {
		out, err := validate("STATSGATE_FLEET_ENABLED=true", tc.env)
		require.Error(t, err, "%s:\n%s", tc.env, out)
		assert.Contains(t, out, tc.want, tc.env)
	}
	// Settings of a fleet that is off are not checked: alone is the default.
	out, err = validate("STATSGATE_FLEET_BIND=0.0.0.0")
	require.NoError(t, err, out)
}

// scrape::gzip_level takes deflate's levels, 1 to 9; validate names the
// option of a level out of range.
func TestValidateGzipLevel(t *testing.T) {
	validate := func(level string) (string, error) {
		out, err := exec.Command(gatewaytest.Binary(t), "validate", "--config", gatewayConfig,
			"--set", "exporters::agentprometheus::scrape::gzip_level="+level).CombinedOutput()
		return string(out), err
	}
	for _, level := range []string{"1", "6", "9"} {
		out, err := validate(level)
		require.NoError(t, err, "gzip_level %s:\n%s", level, out)
	}
	for _, level := range []string{"0", "10"} {
		out, err := validate(level)
		require.Error(t, err, "gzip_level %s accepted:\n%s", level, out)
		assert.Contains(t, out, "scrape::gzip_level: must be 1 (fastest) to 9 (smallest), got "+level)
	}
}

// Aggregate rules are checked by validate: each error names the rule by its
// place and the key at fault; aggregate.yaml validates; and a gateway whose
// rules aggregate with the fleet off says at start why that is not exact
// behind a load balancer.
func TestValidateAggregateRules(t *testing.T) {
	validate := func(args ...string) (string, error) {
		out, err := exec.Command(gatewaytest.Binary(t), append([]string{"validate"}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := validate("--config", aggregateConfig)
	require.NoError(t, err, "aggregate.yaml:\n%s", out)
	for rule, want := range map[string]string{
		"[{metrics: [a], by: [service.name], without: [k8s.pod.name]}]": "aggregate[0]: by and without: set one of them, not both",
		"[{metrics: [a]}]": "aggregate[0]: by or without: set one of them",
		"[{metrics: [a], by: [service.name, service.instance.id]}]": "aggregate[0]: by[1]: service.instance.id cannot be kept",
		"[{metrics: [a], by: [x]}, {metrics: [], by: [x]}]":         "aggregate[1]: metrics: must list at least one metric name or pattern",
		"[{metrics: [a], by: [x], gauge: avg}]":                     `aggregate[0]: gauge: unknown function "avg" (want sum, max or min)`,
		"[{metrics: [a], bye: [x]}]":                                "aggregate[0]::bye",
	} {
		out, err := validate("--config", gatewayConfig, "--set", "exporters::agentprometheus::aggregate="+rule)
		require.Error(t, err, "%s accepted:\n%s", rule, out)
		assert.Contains(t, out, want, rule)
	}
}

func TestAggregateAloneWarnsAboutReplicas(t *testing.T) {
	_, _, _, g := startGatewayProcess(t, aggregateConfig)
	// Healthy: the exporter has started and logged.
	assert.Contains(t, g.Logs.String(), "aggregate rules with fleet::enabled false", "the start log explains why a fleet is needed behind a load balancer")
}

func TestComponentsListsOurs(t *testing.T) {
	out, err := exec.Command(gatewaytest.Binary(t), "components").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "name: grpcstats")
	assert.Contains(t, string(out), "name: agentprometheus")
	// contrib's processors that drop or aggregate a data point attribute
	// (testdata/drop-attribute.yaml) and edit resource attributes.
	assert.Contains(t, string(out), "name: metrics_transform")
	assert.Contains(t, string(out), "name: resource")
}

func TestGatewayServes(t *testing.T) {
	bin := gatewaytest.Binary(t)
	otlpGRPC, otlpHTTP, metrics, health := testnet.FreeEndpoint(t), testnet.FreeEndpoint(t), testnet.FreeEndpoint(t), testnet.FreeEndpoint(t)
	_, telemetryPort, err := net.SplitHostPort(testnet.FreeEndpoint(t))
	require.NoError(t, err)

	var logs bytes.Buffer
	cmd := exec.Command(bin, "--config", gatewayConfig)
	cmd.Env = append(os.Environ(),
		"STATSGATE_OTLP_GRPC_ENDPOINT="+otlpGRPC,
		"STATSGATE_OTLP_HTTP_ENDPOINT="+otlpHTTP,
		"STATSGATE_METRICS_ENDPOINT="+metrics,
		"STATSGATE_HEALTH_ENDPOINT="+health,
		"STATSGATE_TELEMETRY_PORT="+telemetryPort,
	)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			assert.NoError(t, err, "gateway did not exit cleanly")
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("gateway did not stop within 15s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("gateway output:\n%s", logs.String())
		}
	})

	require.Eventually(t, func() bool {
		return statusOf("http://"+health+"/") == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "health check never answered 200")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(otlpGRPC), otlpmetricgrpc.WithInsecure())
	require.NoError(t, err)
	require.NoError(t, exp.Export(ctx, oneGauge()), "OTLP export to the gateway failed")
	require.NoError(t, exp.Shutdown(ctx))

	// The gauge went through memory_limiter and grpcstats to the exporter.
	require.Eventually(t, func() bool {
		return strings.Contains(bodyOf("http://"+metrics+"/metrics"), `smoke_temperature_celsius{job="smoke",otel_scope_name="statsgate/smoke",room="lab"} 21.5`)
	}, 10*time.Second, 100*time.Millisecond, "the pushed gauge never appeared on /metrics:\n%s", bodyOf("http://"+metrics+"/metrics"))
}

func bodyOf(url string) string {
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// oneGauge is the smallest useful OTLP request: one resource, one gauge point.
func oneGauge() *metricdata.ResourceMetrics {
	now := time.Now()
	return &metricdata.ResourceMetrics{
		Resource: resource.NewSchemaless(attribute.String("service.name", "smoke")),
		ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: "statsgate/smoke"},
			Metrics: []metricdata.Metrics{{
				Name: "smoke.temperature",
				Unit: "Cel",
				Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{{
					Attributes: attribute.NewSet(attribute.String("room", "lab")),
					Time:       now,
					Value:      21.5,
				}}},
			}},
		}},
	}
}

func statusOf(url string) int {
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
