package smoke

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.yaml.in/yaml/v3"

	"github.com/statsgate/statsgate/internal/testnet"
	"github.com/statsgate/statsgate/test/internal/gatewaytest"
)

// Accept headers of the scrapes: Prometheus 2's text format, Prometheus 3's
// with UTF-8 names, and OpenMetrics preferred as Prometheus asks for it.
const (
	textAccept = "text/plain;version=0.0.4"
	utf8Accept = "text/plain;version=1.0.0;escaping=allow-utf-8"
	omAccept   = "application/openmetrics-text;version=1.0.0;q=0.9,text/plain;version=0.0.4;q=0.5"
)

// What servedAgent sends, as the default settings serve it.
const (
	gaugeFamily   = "smoke_temperature_celsius"
	counterFamily = "smoke_requests_total"
	scrapeToken   = "smoke-scrape-token"
	corsOrigin    = "https://grafana.example.com"
)

var (
	exemplarTraceID = []byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	exemplarSpanID  = []byte{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}
)

// servedAgent is one export of an instrumented service: a gauge, a counter
// with an exemplar and otelgrpc's legacy server duration (milliseconds),
// from a resource with attributes for the resource keys to promote and a
// scope with a version. Points are at `at`, a whole millisecond.
func servedAgent(at time.Time) *metricdata.ResourceMetrics {
	return &metricdata.ResourceMetrics{
		Resource: resource.NewSchemaless(
			attribute.String("service.name", "smoke"), attribute.String("service.instance.id", "smoke-1"),
			attribute.String("host.name", "h1"), attribute.String("k8s.pod.name", "p-1"), attribute.String("k8s.pod.uid", "u-1"),
		),
		ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: "statsgate/smoke", Version: "1.2.3"},
			Metrics: []metricdata.Metrics{
				{
					Name: "smoke.temperature",
					Unit: "Cel",
					Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{{
						Attributes: attribute.NewSet(attribute.String("room", "lab")), Time: at, Value: 21.5,
					}}},
				},
				{
					Name: "smoke.requests",
					Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: []metricdata.DataPoint[int64]{{
						Attributes: attribute.NewSet(attribute.String("room", "lab")), StartTime: at.Add(-time.Minute), Time: at, Value: 7,
						Exemplars: []metricdata.Exemplar[int64]{{Time: at, Value: 1, TraceID: exemplarTraceID, SpanID: exemplarSpanID}},
					}}},
				},
				{
					Name: "rpc.server.duration",
					Unit: "ms",
					Data: metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality, DataPoints: []metricdata.HistogramDataPoint[float64]{{
						Attributes: attribute.NewSet(attribute.String("rpc.system", "grpc"), attribute.String("rpc.service", "shop.Cart"),
							attribute.String("rpc.method", "Get"), attribute.Int("rpc.grpc.status_code", 0)),
						StartTime: at.Add(-time.Minute), Time: at, Count: 1, Sum: 4, Bounds: []float64{5, 10}, BucketCounts: []uint64{1, 0, 0},
					}}},
				},
			},
		}},
	}
}

// target is one exporter of a running binary, as a scraper reaches it.
type target struct {
	id        string // the exporter's component id
	addr      string // its endpoint
	scheme    string // http, or https when it has tls
	client    *http.Client
	telemetry string // the process's own metrics
}

// get requests path with the headers given as name, value pairs.
func (tg target) get(path string, header ...string) (*http.Response, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, tg.scheme+"://"+tg.addr+path, nil)
	if err != nil {
		return nil, nil, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := tg.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// families scrapes /metrics asking for accept, a text format, and parses it.
func (tg target) families(accept string) (map[string]*dto.MetricFamily, error) {
	resp, body, err := tg.get("/metrics", "Accept", accept)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: status %d: %.200s", tg.id, resp.StatusCode, body)
	}
	return parseText(body)
}

func parseText(body []byte) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(bytes.NewReader(body))
}

// effect reports whether what a target serves shows a setting: nil when it
// does, an error saying what is missing otherwise.
type effect func(tg target) error

func allOf(effects ...effect) effect {
	return func(tg target) error {
		var errs []error
		for _, e := range effects {
			errs = append(errs, e(tg))
		}
		return errors.Join(errs...)
	}
}

// names: the families present are served, the absent ones are not.
func names(accept string, present, absent []string) effect {
	return func(tg target) error {
		fams, err := tg.families(accept)
		if err != nil {
			return err
		}
		var errs []error
		for _, name := range present {
			if len(fams[name].GetMetric()) == 0 {
				errs = append(errs, fmt.Errorf("%s: no family %q among %v", tg.id, name, familyNames(fams)))
			}
		}
		for _, name := range absent {
			if fams[name] != nil {
				errs = append(errs, fmt.Errorf("%s: family %q is served", tg.id, name))
			}
		}
		return errors.Join(errs...)
	}
}

func familyNames(fams map[string]*dto.MetricFamily) []string {
	var names []string
	for name := range fams {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// anyGauge names the pushed gauge under whatever name the settings give it,
// so that an effect on labels does not depend on the names.
const anyGauge = ""

// familyOf is family in fams, or for anyGauge the pushed gauge's.
func familyOf(fams map[string]*dto.MetricFamily, family string) (string, bool) {
	if family == anyGauge {
		for name := range fams {
			if strings.Contains(name, "smoke_temperature") || strings.Contains(name, "smoke.temperature") {
				return name, true
			}
		}
		return "smoke_temperature (any name)", false
	}
	return family, len(fams[family].GetMetric()) > 0
}

// labels: every series of family has the labels of want, and none named
// in absent.
func labels(accept, family string, want map[string]string, absent ...string) effect {
	return func(tg target) error {
		fams, err := tg.families(accept)
		if err != nil {
			return err
		}
		family, found := familyOf(fams, family)
		if !found {
			return fmt.Errorf("%s: no family %q among %v", tg.id, family, familyNames(fams))
		}
		var errs []error
		for _, m := range fams[family].GetMetric() {
			has := map[string]string{}
			for _, l := range m.GetLabel() {
				has[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got, ok := has[k]; !ok || got != v {
					errs = append(errs, fmt.Errorf("%s: %s%v: want %s=%q", tg.id, family, has, k, v))
				}
			}
			for _, k := range absent {
				if _, ok := has[k]; ok {
					errs = append(errs, fmt.Errorf("%s: %s%v: has %s", tg.id, family, has, k))
				}
			}
		}
		return errors.Join(errs...)
	}
}

// timestamps: every sample of family carries want (milliseconds), or none
// when want is 0.
func timestamps(family string, want int64) effect {
	return func(tg target) error {
		fams, err := tg.families(textAccept)
		if err != nil {
			return err
		}
		if len(fams[family].GetMetric()) == 0 {
			return fmt.Errorf("%s: no family %q", tg.id, family)
		}
		for _, m := range fams[family].GetMetric() {
			if m.TimestampMs == nil && want != 0 {
				return fmt.Errorf("%s: %s has no timestamp, want %d", tg.id, family, want)
			}
			if m.TimestampMs != nil && m.GetTimestampMs() != want {
				return fmt.Errorf("%s: %s has timestamp %d, want %d (0: none)", tg.id, family, m.GetTimestampMs(), want)
			}
		}
		return nil
	}
}

// openMetrics: a scrape asking for OpenMetrics gets it, with the counter's
// exemplar (the trace and span of the measurement) on the series counter.
func openMetrics(counter string) effect {
	return func(tg target) error {
		resp, body, err := tg.get("/metrics", "Accept", omAccept)
		if err != nil {
			return err
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
			return fmt.Errorf("%s: Content-Type %q, want OpenMetrics", tg.id, ct)
		}
		if !strings.HasSuffix(string(body), "# EOF\n") {
			return fmt.Errorf("%s: OpenMetrics without # EOF:\n%s", tg.id, body)
		}
		exemplar := `# {span_id="` + hex.EncodeToString(exemplarSpanID) + `",trace_id="` + hex.EncodeToString(exemplarTraceID) + `"} `
		for _, line := range strings.Split(string(body), "\n") {
			_, after, found := strings.Cut(line, exemplar)
			if !strings.HasPrefix(line, counter+"{") || !found {
				continue
			}
			if value, _, _ := strings.Cut(after, " "); value == "1" || value == "1.0" {
				return nil
			}
		}
		return fmt.Errorf("%s: no %s line with the exemplar %s:\n%s", tg.id, counter, exemplar, body)
	}
}

// header: a response to a request with the headers given carries name: want.
func header(name, want string, request ...string) effect {
	return func(tg target) error {
		resp, body, err := tg.get("/metrics", request...)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: status %d: %.200s", tg.id, resp.StatusCode, body)
		}
		if got := resp.Header.Get(name); got != want {
			return fmt.Errorf("%s: %s: %q, want %q", tg.id, name, got, want)
		}
		return nil
	}
}

// status: /metrics with the headers given answers want.
func status(want int, request ...string) effect {
	return func(tg target) error {
		resp, _, err := tg.get("/metrics", request...)
		if err != nil {
			return err
		}
		if resp.StatusCode != want {
			return fmt.Errorf("%s: status %d with %q, want %d", tg.id, resp.StatusCode, request, want)
		}
		return nil
	}
}

// servedWith: a client configured by tlsCfg (nil: plain HTTP) scrapes the
// pushed gauge, whatever its name, from the target's address.
func servedWith(tlsCfg *tls.Config) effect {
	return func(tg target) error {
		scheme, client := "http", &http.Client{Timeout: 5 * time.Second}
		if tlsCfg != nil {
			scheme, client = "https", &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
		}
		tg.scheme, tg.client = scheme, client
		fams, err := tg.families(textAccept)
		if err != nil {
			return err
		}
		if name, found := familyOf(fams, anyGauge); !found {
			return fmt.Errorf("%s: no family %q among %v", tg.id, name, familyNames(fams))
		}
		return nil
	}
}

// refusedWith: a client configured by tlsCfg (nil: plain HTTP) gets no
// answer from the target, or not a 200.
func refusedWith(tlsCfg *tls.Config) effect {
	return func(tg target) error {
		if err := servedWith(tlsCfg)(tg); err == nil {
			return fmt.Errorf("%s: served to a client it should refuse", tg.id)
		}
		return nil
	}
}

// queued: the collector's own metrics show the exporter's sending queue and
// its capacity.
func queued(capacity float64) effect {
	return func(tg target) error {
		fams, _, _, err := gatewaytest.Scrape("http://" + tg.telemetry + "/metrics")
		if err != nil {
			return err
		}
		got, ok := gatewaytest.Value(fams, "otelcol_exporter_queue_capacity", map[string]string{"exporter": tg.id})
		if !ok || got != capacity {
			return fmt.Errorf("%s: otelcol_exporter_queue_capacity %v (found %v), want %v", tg.id, got, ok, capacity)
		}
		return nil
	}
}

// keyCase is one setting's effect: shown by the exporter that sets it and
// not by its control, the same settings with the key at its default.
type keyCase struct {
	name     string
	exporter string
	control  string // "": the value is this exporter's default, whose effect another case checks
	effect   effect
}

// run is a binary serving several agentprometheus exporters, each on its
// own endpoint, all in one pipeline from one OTLP receiver.
type run struct {
	g         *gatewaytest.Gateway
	otlp      string
	health    string
	telemetry string
	targets   map[string]target // by the name after agentprometheus/
}

// startExporters starts the binary with the exporters (name: settings),
// each given an endpoint unless it sets one, and args added to its command
// line. Clients of the exporters with tls trust pool and present clientCert.
func startExporters(t *testing.T, exporters map[string]map[string]any, pool *x509.CertPool, clientCert *tls.Certificate, args ...string) *run {
	t.Helper()
	r := &run{otlp: testnet.FreeEndpoint(t), health: testnet.FreeEndpoint(t), telemetry: testnet.FreeEndpoint(t), targets: map[string]target{}}
	telemetryPort, err := strconv.Atoi(gatewaytest.PortOf(t, r.telemetry))
	require.NoError(t, err)
	cfgExporters := map[string]any{}
	var ids []string
	for name, settings := range exporters {
		id := "agentprometheus/" + name
		ids = append(ids, id)
		cfg := map[string]any{}
		for k, v := range settings {
			cfg[k] = v
		}
		if _, ok := cfg["endpoint"]; !ok {
			cfg["endpoint"] = testnet.FreeEndpoint(t)
		}
		cfgExporters[id] = cfg
		tg := target{id: id, addr: cfg["endpoint"].(string), scheme: "http", client: &http.Client{Timeout: 5 * time.Second}, telemetry: r.telemetry}
		if tlsSettings, ok := cfg["tls"].(map[string]any); ok {
			tc := &tls.Config{RootCAs: pool}
			if _, mutual := tlsSettings["client_ca_file"]; mutual {
				tc.Certificates = []tls.Certificate{*clientCert}
			}
			tg.scheme, tg.client = "https", &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
		}
		r.targets[name] = tg
	}
	slices.Sort(ids)
	cfg := map[string]any{
		"extensions": map[string]any{
			"health_check":    map[string]any{"endpoint": r.health},
			"bearertokenauth": map[string]any{"token": scrapeToken},
		},
		"receivers": map[string]any{"otlp": map[string]any{"protocols": map[string]any{"grpc": map[string]any{"endpoint": r.otlp}}}},
		"exporters": cfgExporters,
		"service": map[string]any{
			"extensions": []string{"health_check", "bearertokenauth"},
			"pipelines":  map[string]any{"metrics": map[string]any{"receivers": []string{"otlp"}, "exporters": ids}},
			"telemetry": map[string]any{"metrics": map[string]any{"readers": []any{map[string]any{"pull": map[string]any{"exporter": map[string]any{
				"prometheus": map[string]any{"host": "127.0.0.1", "port": telemetryPort},
			}}}}}},
		},
	}
	b, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "exporters.yaml")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	r.g = startBinary(t, nil, append([]string{"--config", path}, args...)...)
	return r
}

// startBinary runs the built binary with args, env added to the test's
// environment; it is stopped when the test ends.
func startBinary(t *testing.T, env []string, args ...string) *gatewaytest.Gateway {
	t.Helper()
	g := &gatewaytest.Gateway{Logs: &gatewaytest.SyncBuffer{}, Done: make(chan struct{})}
	g.Cmd = exec.Command(gatewaytest.Binary(t), args...)
	g.Cmd.Env = append(os.Environ(), env...)
	g.Cmd.Stdout, g.Cmd.Stderr = g.Logs, g.Logs
	require.NoError(t, g.Cmd.Start())
	go func() {
		g.ExitErr = g.Cmd.Wait()
		close(g.Done)
	}()
	t.Cleanup(func() {
		_ = g.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-g.Done:
		case <-time.After(15 * time.Second):
			_ = g.Cmd.Process.Kill()
			<-g.Done
			t.Error("binary did not stop within 15s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("output of %v:\n%s", args, g.Logs.String())
		}
	})
	return g
}

// export sends servedAgent(at) to an OTLP gRPC endpoint.
func export(t *testing.T, otlp string, at time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(otlp), otlpmetricgrpc.WithInsecure())
	require.NoError(t, err)
	require.NoError(t, exp.Export(ctx, servedAgent(at)), "OTLP export failed")
	require.NoError(t, exp.Shutdown(ctx))
}

// exportHTTP sends a gauge of another service, smoke.http.level, to an OTLP
// HTTP endpoint.
func exportHTTP(t *testing.T, endpoint string, at time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint(endpoint), otlpmetrichttp.WithInsecure())
	require.NoError(t, err)
	require.NoError(t, exp.Export(ctx, &metricdata.ResourceMetrics{
		Resource: resource.NewSchemaless(attribute.String("service.name", "smoke-http"), attribute.String("service.instance.id", "smoke-http-1")),
		ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: "statsgate/smoke"},
			Metrics: []metricdata.Metrics{{
				Name: "smoke.http.level",
				Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{{Time: at, Value: 3}}},
			}},
		}},
	}), "OTLP/HTTP export failed")
	require.NoError(t, exp.Shutdown(ctx))
}

// contribBlock is a block of contribExporterBlocks as settings, with its
// listen address and certificate files replaced by ones of this test.
func contribBlock(t *testing.T, name, endpoint string, files map[string]string) map[string]any {
	t.Helper()
	var block map[string]map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(contribExporterBlocks[name]), &block), name)
	require.Len(t, block, 1, name)
	for _, settings := range block {
		if settings == nil {
			settings = map[string]any{}
		}
		settings["endpoint"] = endpoint
		if tlsSettings, ok := settings["tls"].(map[string]any); ok {
			for k := range tlsSettings {
				require.Contains(t, files, k, "%s: tls::%s", name, k)
				tlsSettings[k] = files[k]
			}
		}
		return settings
	}
	return nil
}

// TestContribKeysTakeEffect runs the built binary with an exporter per
// contrib prometheusexporter key (and contrib's own example blocks, which
// TestContribExporterConfigsValidate validates), sends them one OTLP
// export, and checks in what each serves that its key took effect, and
// that the effect is absent from the same settings without the key. A
// second binary, with the gate that makes add_metric_suffixes count turned
// off, checks that key; both run at once.
func TestContribKeysTakeEffect(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := gatewaytest.WriteCert(t, dir)
	caFile, clientCert := writeClientCA(t, dir)
	serverTLS := map[string]any{"cert_file": certFile, "key_file": keyFile}
	with := func(m map[string]any, kv ...any) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	// On 127.0.0.2 with a port free on 127.0.0.1: the host of the endpoint
	// takes effect when 127.0.0.1 refuses it.
	endpointPort := strconv.Itoa(testnet.FreePort(t))
	contribFiles := map[string]string{"ca_file": certFile, "cert_file": certFile, "key_file": keyFile}

	exporters := map[string]map[string]any{
		// contrib's testdata "prometheus" block, every key at its default:
		// the control of most cases.
		"base":                             contribBlock(t, "testdata prometheus", testnet.FreeEndpoint(t), nil),
		"readme_example":                   contribBlock(t, "README example", testnet.FreeEndpoint(t), contribFiles),
		"testdata_2":                       contribBlock(t, "testdata prometheus/2", testnet.FreeEndpoint(t), contribFiles),
		"testdata_3":                       contribBlock(t, "testdata prometheus/3", testnet.FreeEndpoint(t), nil),
		"sending_queue":                    contribBlock(t, "sending_queue", testnet.FreeEndpoint(t), nil),
		"endpoint":                         {"endpoint": "127.0.0.2:" + endpointPort},
		"tls":                              {"tls": serverTLS},
		"tls_min_version":                  {"tls": with(serverTLS, "min_version", "1.3")},
		"tls_client_ca_file":               {"tls": with(serverTLS, "client_ca_file", caFile)},
		"auth":                             {"auth": map[string]any{"authenticator": "bearertokenauth"}},
		"response_headers":                 {"response_headers": map[string]any{"X-Statsgate-Smoke": "served"}},
		"cors":                             {"cors": map[string]any{"allowed_origins": []string{corsOrigin}}},
		"namespace":                        {"namespace": "test-space"},
		"const_labels":                     {"const_labels": map[string]any{"label1": "value1", "another label": "spaced value"}},
		"send_timestamps":                  {"send_timestamps": false},
		"metric_expiration":                {"metric_expiration": "2s"},
		"resource_to_telemetry_conversion": {"resource_to_telemetry_conversion": map[string]any{"enabled": true}},
		"exclude_service_attributes":       {"resource_to_telemetry_conversion": map[string]any{"enabled": true, "exclude_service_attributes": true}},
		"resource_constant_labels":         {"resource_constant_labels": map[string]any{"included": []string{"k8s.*"}}},
		"resource_constant_labels_excluded": {"resource_constant_labels": map[string]any{
			"included": []string{"k8s.*"}, "excluded": []string{"k8s.pod.u?d"},
		}},
		"enable_open_metrics": {"enable_open_metrics": true},
		"without_scope_info":  {"without_scope_info": true},
		"without_suffixes":    {"translation_strategy": "UnderscoreEscapingWithoutSuffixes"},
		"utf8_with_suffixes":  {"translation_strategy": "NoUTF8EscapingWithSuffixes"},
		"no_translation":      {"translation_strategy": "NoTranslation"},
		"add_metric_suffixes": {"add_metric_suffixes": false},
	}
	// The gate that lets add_metric_suffixes apply is process-wide.
	suffixExporters := map[string]map[string]any{
		"base":                     {},
		"add_metric_suffixes":      {"add_metric_suffixes": false},
		"translation_and_suffixes": {"add_metric_suffixes": false, "translation_strategy": "UnderscoreEscapingWithSuffixes"},
	}
	gates := startExporters(t, exporters, pool, &clientCert)
	gateOff := startExporters(t, suffixExporters, pool, &clientCert, "--feature-gates=-exporter.prometheusexporter.DisableAddMetricSuffixes")
	for _, r := range []*run{gates, gateOff} {
		gatewaytest.WaitHealthy(t, r.g, "http://"+r.health+"/")
	}

	// The export is stored by every exporter before the receiver answers,
	// but for the one with a sending queue, whose consumers store it later.
	served := func(tg target) func() bool {
		return func() bool { return names(textAccept, []string{gaugeFamily}, nil)(tg) == nil }
	}
	at := time.Now().Truncate(time.Millisecond)
	exported := time.Now()
	export(t, gates.otlp, at)
	// Served by the exporter that expires it, before it can have expired.
	require.Eventually(t, served(gates.targets["metric_expiration"]), 2*time.Second, 20*time.Millisecond, "the export never reached the exporters")
	require.Eventually(t, served(gates.targets["sending_queue"]), 10*time.Second, 20*time.Millisecond, "the sending queue never delivered the export")
	export(t, gateOff.otlp, at)

	clientTLS := func(maxVersion uint16, cert *tls.Certificate) *tls.Config {
		c := &tls.Config{RootCAs: pool, MaxVersion: maxVersion}
		if cert != nil {
			c.Certificates = []tls.Certificate{*cert}
		}
		return c
	}
	gauge := func(accept string, want map[string]string, absent ...string) effect {
		return labels(accept, anyGauge, want, absent...)
	}
	resourceLabels := map[string]string{"host_name": "h1", "k8s_pod_name": "p-1", "k8s_pod_uid": "u-1"}
	serviceLabels := map[string]string{"service_name": "smoke", "service_instance_id": "smoke-1"}
	merged := func(ms ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	withSuffixes := []string{gaugeFamily, counterFamily}
	withoutSuffixes := []string{"smoke_temperature", "smoke_requests"}
	pointTime := at.UnixMilli()

	cases := []keyCase{
		// The listen address, its TLS and its HTTP server settings.
		{"endpoint: served on its host and port only", "endpoint", "base", allOf(
			servedWith(nil),
			func(tg target) error {
				tg.addr = "127.0.0.1:" + gatewaytest.PortOf(t, tg.addr)
				return refusedWith(nil)(tg)
			})},
		{"tls: cert_file and key_file serve HTTPS with that certificate, not HTTP", "tls", "base",
			allOf(servedWith(clientTLS(0, nil)), refusedWith(nil))},
		{"tls::min_version: 1.3 refuses a TLS 1.2 client", "tls_min_version", "tls",
			allOf(servedWith(clientTLS(tls.VersionTLS13, nil)), refusedWith(clientTLS(tls.VersionTLS12, nil)))},
		{"tls::client_ca_file: a client certificate signed by the CA is required", "tls_client_ca_file", "tls",
			allOf(servedWith(clientTLS(0, &clientCert)), refusedWith(clientTLS(0, nil)))},
		{"auth: scrapes need the authenticator's token", "auth", "base",
			allOf(status(http.StatusUnauthorized), status(http.StatusUnauthorized, "Authorization", "Bearer wrong"),
				status(http.StatusOK, "Authorization", "Bearer "+scrapeToken))},
		{"response_headers: added to the /metrics response", "response_headers", "base", header("X-Statsgate-Smoke", "served")},
		{"cors::allowed_origins: the origin is allowed", "cors", "base",
			header("Access-Control-Allow-Origin", corsOrigin, "Origin", corsOrigin)},

		// What is served.
		{"namespace: prefixes every name, target_info too, sanitised", "namespace", "base", names(textAccept,
			[]string{"test_space_" + gaugeFamily, "test_space_" + counterFamily, "test_space_target_info"},
			[]string{gaugeFamily, counterFamily, "target_info"})},
		{"const_labels: on every series, a name with a space escaped", "const_labels", "base",
			allOf(gauge(textAccept, map[string]string{"label1": "value1", "another_label": "spaced value"}),
				labels(textAccept, counterFamily, map[string]string{"label1": "value1", "another_label": "spaced value"}))},
		{"const_labels: a name with a space kept for UTF-8 scrapers", "const_labels", "base",
			gauge(utf8Accept, map[string]string{"label1": "value1", "another label": "spaced value"}, "another_label")},
		{"send_timestamps: false serves no timestamps", "send_timestamps", "base",
			allOf(timestamps(gaugeFamily, 0), timestamps(counterFamily, 0))},
		{"resource_to_telemetry_conversion::enabled: every resource attribute a label", "resource_to_telemetry_conversion", "base",
			allOf(gauge(textAccept, merged(resourceLabels, serviceLabels)), labels(textAccept, counterFamily, resourceLabels))},
		{"resource_to_telemetry_conversion::exclude_service_attributes: but the service's", "exclude_service_attributes", "resource_to_telemetry_conversion",
			gauge(textAccept, resourceLabels, "service_name", "service_instance_id")},
		{"resource_constant_labels::included: the attributes matched", "resource_constant_labels", "base",
			gauge(textAccept, map[string]string{"k8s_pod_name": "p-1", "k8s_pod_uid": "u-1"}, "host_name", "service_name")},
		{"resource_constant_labels::excluded: taken out of included", "resource_constant_labels_excluded", "resource_constant_labels",
			gauge(textAccept, map[string]string{"k8s_pod_name": "p-1"}, "k8s_pod_uid")},
		{"enable_open_metrics: OpenMetrics with exemplars to a scraper that asks", "enable_open_metrics", "base", openMetrics(counterFamily)},
		{"without_scope_info: no otel_scope_* labels", "without_scope_info", "base",
			gauge(textAccept, map[string]string{"room": "lab"}, "otel_scope_name", "otel_scope_version")},
		{"translation_strategy: UnderscoreEscapingWithoutSuffixes", "without_suffixes", "base",
			names(textAccept, withoutSuffixes, withSuffixes)},
		{"translation_strategy: NoUTF8EscapingWithSuffixes keeps dots for UTF-8 scrapers", "utf8_with_suffixes", "base",
			names(utf8Accept, []string{"smoke.temperature_celsius", "smoke.requests_total"}, withSuffixes)},
		{"translation_strategy: NoTranslation keeps the OTLP names", "no_translation", "base",
			names(utf8Accept, []string{"smoke.temperature", "smoke.requests"}, withSuffixes)},
		{"add_metric_suffixes: false is ignored while its gate is on (the default)", "add_metric_suffixes", "",
			names(textAccept, withSuffixes, withoutSuffixes)},

		// contrib's own blocks, served: each key of a block shows next to the
		// others. Their control is the block's transport without the key.
		{"README example: tls", "readme_example", "base", allOf(servedWith(clientTLS(0, nil)), refusedWith(nil))},
		{"README example: namespace, translation_strategy without suffixes", "readme_example", "tls",
			names(textAccept, []string{"test_space_smoke_temperature", "test_space_smoke_requests"}, []string{"test_space_" + gaugeFamily})},
		{"README example: const_labels, resource_to_telemetry_conversion", "readme_example", "tls",
			gauge(textAccept, merged(resourceLabels, serviceLabels, map[string]string{"label1": "value1", "another_label": "spaced value"}))},
		{"README example: enable_open_metrics", "readme_example", "tls", openMetrics("test_space_smoke_requests")},
		{"README example: send_timestamps", "readme_example", "", timestamps("test_space_smoke_temperature", pointTime)},
		{"testdata prometheus/2: tls", "testdata_2", "base", allOf(servedWith(clientTLS(0, nil)), refusedWith(nil))},
		{"testdata prometheus/2: namespace, add_metric_suffixes ignored", "testdata_2", "tls",
			names(textAccept, []string{"test_space_" + gaugeFamily, "test_space_" + counterFamily}, []string{"test_space_smoke_temperature"})},
		{"testdata prometheus/2: const_labels", "testdata_2", "tls",
			gauge(textAccept, map[string]string{"label1": "value1", "another_label": "spaced value"}, "host_name")},
		{"testdata prometheus/2: send_timestamps", "testdata_2", "", timestamps("test_space_"+gaugeFamily, pointTime)},
		{"testdata prometheus/3: resource_constant_labels::included", "testdata_3", "base",
			gauge(textAccept, map[string]string{"service_name": "smoke", "k8s_pod_name": "p-1"}, "host_name", "k8s_pod_uid")},
		{"sending_queue: the queue holds queue_size batches, and what it takes is served", "sending_queue", "base",
			allOf(queued(5000), servedWith(nil))},
		{"testdata prometheus: the defaults serve timestamps, suffixes, scope labels, no resource labels", "base", "",
			allOf(timestamps(gaugeFamily, pointTime), names(textAccept, withSuffixes, nil),
				gauge(textAccept, map[string]string{"otel_scope_name": "statsgate/smoke", "otel_scope_version": "1.2.3", "job": "smoke", "instance": "smoke-1"},
					"host_name", "service_name", "label1"))},
	}
	check := func(t *testing.T, r *run, c keyCase) {
		t.Helper()
		require.Contains(t, r.targets, c.exporter)
		assert.NoError(t, c.effect(r.targets[c.exporter]), "the key's effect")
		if c.control != "" {
			require.Contains(t, r.targets, c.control)
			assert.Error(t, c.effect(r.targets[c.control]), "the same effect without the key, on %s", c.control)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, gates, c) })
	}
	for _, c := range []keyCase{
		{"add_metric_suffixes: false drops the suffixes when its gate is off", "add_metric_suffixes", "base",
			names(textAccept, withoutSuffixes, withSuffixes)},
		{"add_metric_suffixes: translation_strategy wins over it", "translation_and_suffixes", "add_metric_suffixes",
			names(textAccept, withSuffixes, withoutSuffixes)},
	} {
		t.Run(c.name, func(t *testing.T) { check(t, gateOff, c) })
	}

	// metric_expiration: the series goes once not updated for 2s (the sweep
	// runs every quarter of it), not before, while the default keeps it.
	t.Run("metric_expiration: a series not updated for it is removed", func(t *testing.T) {
		expiring, base := gates.targets["metric_expiration"], gates.targets["base"]
		present := names(textAccept, []string{gaugeFamily}, nil)
		require.Eventually(t, func() bool { return present(expiring) != nil }, 10*time.Second, 50*time.Millisecond,
			"%s still served 10s after the export", gaugeFamily)
		gone := time.Since(exported)
		assert.GreaterOrEqual(t, gone, 2*time.Second, "removed before metric_expiration")
		assert.NoError(t, present(base), "the default metric_expiration keeps it")
		t.Logf("removed %v after the export", gone.Round(time.Millisecond))
	})
}

// writeClientCA writes a CA certificate into dir, and returns its file and
// a client certificate it signed.
func writeClientCA(t *testing.T, dir string) (caFile string, client tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "statsgate-test-client-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	caFile = filepath.Join(dir, "client-ca.crt")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600))

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "prometheus"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	require.NoError(t, err)
	return caFile, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
