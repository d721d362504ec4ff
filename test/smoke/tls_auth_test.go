package smoke

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"github.com/statsgate/statsgate/test/internal/gatewaytest"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tlsAuthConfig serves /metrics over TLS behind the authenticator %[1]s
// (configured by %[7]s), with debug logs and the collector's own metrics on,
// so that a leaked secret would show up in one or the other.
const tlsAuthConfig = `
extensions:
%[7]s
  health_check:
    endpoint: %[2]s
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %[3]s
exporters:
  agentprometheus:
    endpoint: %[4]s
    tls:
      cert_file: %[5]s
      key_file: %[6]s
    auth:
      authenticator: %[1]s
service:
  extensions: [%[1]s, health_check]
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [agentprometheus]
  telemetry:
    logs:
      level: debug
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: %[8]s
`

func TestMetricsBehindTLSAndAnAuthenticator(t *testing.T) {
	const token, password = "s3cret-scrape-token", "s3cret-scrape-password"
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	tests := []struct {
		authenticator, extension string
		secret                   string
		good                     string
		bad                      []string
	}{
		{
			authenticator: "bearertokenauth",
			extension:     fmt.Sprintf("  bearertokenauth:\n    token: %q", token),
			secret:        token,
			good:          "Bearer " + token,
			bad:           []string{"", "Bearer wrong-token-value", basic("prometheus", token)},
		},
		{
			authenticator: "basicauth",
			extension:     fmt.Sprintf("  basicauth:\n    htpasswd:\n      inline: |\n        prometheus:%s", password),
			secret:        password,
			good:          basic("prometheus", password),
			bad:           []string{"", basic("prometheus", "wrong-password-value"), basic("nobody", password), "Bearer " + password},
		},
	}
	for _, tt := range tests {
		t.Run(tt.authenticator, func(t *testing.T) {
			bin := binary(t)
			dir := t.TempDir()
			certFile, keyFile, pool := gatewaytest.WriteCert(t, dir)
			health, metrics, telemetry := gatewaytest.FreeAddr(t), gatewaytest.FreeAddr(t), gatewaytest.FreeAddr(t)
			_, telemetryPort, err := net.SplitHostPort(telemetry)
			require.NoError(t, err)
			cfg := filepath.Join(dir, "gateway.yaml")
			require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, tlsAuthConfig,
				tt.authenticator, health, gatewaytest.FreeAddr(t), metrics, certFile, keyFile, tt.extension, telemetryPort), 0o600))

			var logs bytes.Buffer
			cmd := exec.Command(bin, "--config", cfg)
			cmd.Stdout, cmd.Stderr = &logs, &logs
			require.NoError(t, cmd.Start())
			stopped := false
			stop := func() {
				if !stopped {
					stopped = true
					_ = cmd.Process.Signal(syscall.SIGTERM)
					_ = cmd.Wait()
				}
			}
			t.Cleanup(func() {
				stop()
				if t.Failed() {
					t.Logf("gateway output:\n%s", logs.String())
				}
			})
			require.Eventually(t, func() bool { return statusOf("http://"+health+"/") == http.StatusOK },
				30*time.Second, 100*time.Millisecond, "health check never answered 200")

			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
			get := func(auth string) int {
				req, err := http.NewRequest(http.MethodGet, "https://"+metrics+"/metrics", nil)
				require.NoError(t, err)
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp, err := client.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				return resp.StatusCode
			}
			assert.Equal(t, http.StatusOK, get(tt.good), "authorised scrape")
			for _, auth := range tt.bad {
				assert.Equal(t, http.StatusUnauthorized, get(auth), "scrape with Authorization %q", auth)
			}

			// Plain HTTP is not served on the TLS port.
			resp, err := http.Get("http://" + metrics + "/metrics")
			if err == nil {
				resp.Body.Close()
				assert.NotEqual(t, http.StatusOK, resp.StatusCode)
			}

			resp, err = http.Get("http://" + telemetry + "/metrics")
			require.NoError(t, err)
			own, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Contains(t, string(own), "otelcol_exporter_agentprometheus_scrapes", "the collector's own metrics count the scrapes")
			stop()
			for _, leak := range []string{tt.secret, "wrong-token-value", "wrong-password-value", base64.StdEncoding.EncodeToString([]byte("prometheus:" + tt.secret))} {
				assert.NotContains(t, logs.String(), leak, "a credential in the logs")
				assert.NotContains(t, string(own), leak, "a credential in the collector's own metrics")
			}
		})
	}
}
