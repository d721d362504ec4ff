package smoke

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/test/internal/gatewaytest"
)

// contribExporterBlocks are contrib prometheusexporter v0.165.1's own config
// examples, the component renamed: its README example and the blocks of its
// testdata/config.yaml, plus the sending_queue its Config has.
var contribExporterBlocks = map[string]string{
	"README example": `
  agentprometheus:
    endpoint: "1.2.3.4:1234"
    tls:
      ca_file: "/path/to/ca.pem"
      cert_file: "/path/to/cert.pem"
      key_file: "/path/to/key.pem"
    namespace: test-space
    const_labels:
      label1: value1
      "another label": spaced value
    send_timestamps: true
    metric_expiration: 180m
    enable_open_metrics: true
    # Legacy configuration - deprecated, ignored when translation_strategy is set
    add_metric_suffixes: false
    translation_strategy: "UnderscoreEscapingWithoutSuffixes"
    resource_to_telemetry_conversion:
      enabled: true
`,
	"testdata prometheus": `
  agentprometheus:
`,
	"testdata prometheus/2": `
  agentprometheus/2:
    endpoint: "1.2.3.4:1234"
    tls:
      ca_file: "certs/ca.crt"
      key_file: "certs/server.key"
      cert_file: "certs/server.crt"
    namespace: test-space
    const_labels:
      label1: value1
      "another label": spaced value
    send_timestamps: true
    metric_expiration: 60m
    add_metric_suffixes: false
`,
	"testdata prometheus/3": `
  agentprometheus/3:
    resource_constant_labels:
      included:
        - service.name
        - k8s.pod.name
`,
	"sending_queue": `
  agentprometheus:
    endpoint: 127.0.0.1:9464
    sending_queue:
      enabled: true
      num_consumers: 4
      queue_size: 5000
`,
}

// pipelineWith writes a config whose metrics pipeline runs an OTLP receiver
// into the exporter id that block (under exporters:) configures.
func pipelineWith(t *testing.T, block, id string) string {
	cfg := "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:4317\n" +
		"exporters:" + block +
		"service:\n  pipelines:\n    metrics:\n      receivers: [otlp]\n      exporters: [" + id + "]\n"
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	return path
}

// Each block validates in a pipeline of the built binary.
func TestContribExporterConfigsValidate(t *testing.T) {
	bin := gatewaytest.Binary(t)
	for name, block := range contribExporterBlocks {
		t.Run(name, func(t *testing.T) {
			id := strings.TrimSuffix(strings.TrimSpace(strings.SplitN(block, "\n", 3)[1]), ":")
			path := pipelineWith(t, block, id)
			out, err := exec.Command(bin, "validate", "--config", path).CombinedOutput()
			require.NoError(t, err, "validate refused:\n%s\n%s", block, out)
		})
	}
}

// The former resource_labels key fails with a message naming its replacement.
func TestValidateNamesTheReplacementOfResourceLabels(t *testing.T) {
	path := pipelineWith(t, "\n  agentprometheus:\n    resource_labels: [host.name]\n", "agentprometheus")
	out, err := exec.Command(gatewaytest.Binary(t), "validate", "--config", path).CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "resource_labels was replaced by contrib's resource_constant_labels")
}

// contrib's gates are known to the binary: the one that refuses the
// deprecated conversion refuses contrib's README example.
func TestContribFeatureGateIsHonoured(t *testing.T) {
	path := pipelineWith(t, contribExporterBlocks["README example"], "agentprometheus")
	out, err := exec.Command(gatewaytest.Binary(t), "validate", "--config", path,
		"--feature-gates=exporter.prometheus.DisableResourceToTelemetryConversion").CombinedOutput()
	require.Error(t, err, "%s", out)
	require.Contains(t, string(out), "resource_to_telemetry_conversion: refused while the exporter.prometheus.DisableResourceToTelemetryConversion feature gate is on")
	out, err = exec.Command(gatewaytest.Binary(t), "validate", "--config", path,
		"--feature-gates=-exporter.prometheusexporter.DisableAddMetricSuffixes,pkg.prometheus.KeepIdentifyingResourceAttributes").CombinedOutput()
	require.NoError(t, err, "the other gates are known:\n%s", out)
}
