package smoke

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/test/internal/gatewaytest"
)

func TestMetricsBehindTLSAndAnAuthenticator(t *testing.T) {
	const token, password = "s3cret-scrape-token", "s3cret-scrape-password"
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	tests := []struct {
		authenticator string
		extension     map[string]any
		secret        string
		good          string
		bad           []string
	}{
		{
			authenticator: "bearertokenauth",
			extension:     map[string]any{"token": token},
			secret:        token,
			good:          "Bearer " + token,
			bad:           []string{"", "Bearer wrong-token-value", basic("prometheus", token)},
		},
		{
			authenticator: "basicauth",
			extension:     map[string]any{"htpasswd": map[string]any{"inline": "prometheus:" + password}},
			secret:        password,
			good:          basic("prometheus", password),
			bad:           []string{"", basic("prometheus", "wrong-password-value"), basic("nobody", password), "Bearer " + password},
		},
	}
	for _, tt := range tests {
		t.Run(tt.authenticator, func(t *testing.T) {
			bin := gatewaytest.Binary(t)
			dir := t.TempDir()
			certFile, keyFile, pool := gatewaytest.WriteCert(t, dir)
			// /metrics over TLS behind the authenticator, with debug logs and
			// the collector's own metrics on, so that a leaked secret would
			// show up in one or the other.
			c := gatewaytest.Config{
				Addrs: gatewaytest.FreeAddrs(t),
				Exporter: map[string]any{
					"tls":         map[string]any{"cert_file": certFile, "key_file": keyFile},
					"auth":        map[string]any{"authenticator": tt.authenticator},
					"cardinality": map[string]any{"enabled": true},
				},
				Extensions: map[string]any{tt.authenticator: tt.extension},
				LogLevel:   "debug",
			}
			health, metrics, telemetry := c.Health, c.Metrics, c.Telemetry
			cfg := filepath.Join(dir, "gateway.yaml")
			c.Write(t, cfg)

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
			get := func(path, auth string) int {
				req, err := http.NewRequest(http.MethodGet, "https://"+metrics+path, nil)
				require.NoError(t, err)
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp, err := client.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				return resp.StatusCode
			}
			// The cardinality view is served behind the same TLS and authenticator.
			for _, path := range []string{"/metrics", "/cardinality", "/cardinality?format=json"} {
				assert.Equal(t, http.StatusOK, get(path, tt.good), "authorised %s", path)
				for _, auth := range tt.bad {
					assert.Equal(t, http.StatusUnauthorized, get(path, auth), "%s with Authorization %q", path, auth)
				}
			}

			// Plain HTTP is not served on the TLS port.
			for _, path := range []string{"/metrics", "/cardinality"} {
				resp, err := http.Get("http://" + metrics + path)
				if err == nil {
					resp.Body.Close()
					assert.NotEqual(t, http.StatusOK, resp.StatusCode)
				}
			}

			resp, err := http.Get("http://" + telemetry + "/metrics")
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
