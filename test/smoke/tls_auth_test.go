package smoke

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/test/internal/gatewaytest"
)

// TestMetricsBehindTLSAndAnAuthenticator serves /metrics and the cardinality
// view over TLS behind bearertokenauth, the distro's authenticator: with the
// token inline, and with tokens read from a file (as from a mounted Secret),
// two of them as while a token is rotated.
func TestMetricsBehindTLSAndAnAuthenticator(t *testing.T) {
	const token, current, next = "s3cret-scrape-token", "s3cret-current-token", "s3cret-next-token"
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	tests := []struct {
		name      string
		extension map[string]any // the bearertokenauth config
		// tokenFile, when set, is written into the test's directory and
		// the extension reads its tokens from there (filename) instead.
		tokenFile string
		secrets   []string
		good      []string
		bad       []string
	}{
		{
			name:      "token inline",
			extension: map[string]any{"token": token},
			secrets:   []string{token},
			good:      []string{"Bearer " + token},
			bad:       []string{"", "Bearer wrong-token-value", "bearer" + token, basic("prometheus", token), token},
		},
		{
			name:      "tokens from a file",
			tokenFile: current + "\n" + next + "\n",
			secrets:   []string{current, next},
			good:      []string{"Bearer " + current, "Bearer " + next},
			bad:       []string{"", "Bearer wrong-token-value", "Bearer " + current + " " + next, basic("prometheus", current), "Basic " + next},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := gatewaytest.Binary(t)
			dir := t.TempDir()
			certFile, keyFile, pool := gatewaytest.WriteCert(t, dir)
			extension := tt.extension
			if tt.tokenFile != "" {
				tokens := filepath.Join(dir, "tokens")
				require.NoError(t, os.WriteFile(tokens, []byte(tt.tokenFile), 0o600))
				// Start waits until the file is read, so the tokens are in force
				// once the gateway is healthy.
				extension = map[string]any{
					"filename":            tokens,
					"wait_for_token_file": true,
					"retry_on_failure":    map[string]any{"enabled": true, "max_retries": 5, "interval": "100ms"},
				}
			}
			// /metrics over TLS behind the authenticator, with debug logs and
			// the collector's own metrics on, so that a leaked secret would
			// show up in one or the other.
			c := gatewaytest.Config{
				Addrs: gatewaytest.FreeAddrs(t),
				Exporter: map[string]any{
					"tls":         map[string]any{"cert_file": certFile, "key_file": keyFile},
					"auth":        map[string]any{"authenticator": "bearertokenauth"},
					"cardinality": map[string]any{"enabled": true},
				},
				Extensions: map[string]any{"bearertokenauth": extension},
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
				for _, auth := range tt.good {
					assert.Equal(t, http.StatusOK, get(path, auth), "authorised %s", path)
				}
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
			leaks := []string{"wrong-token-value"}
			for _, secret := range tt.secrets {
				leaks = append(leaks, secret, base64.StdEncoding.EncodeToString([]byte("prometheus:"+secret)))
			}
			for _, leak := range leaks {
				assert.NotContains(t, logs.String(), leak, "a credential in the logs")
				assert.NotContains(t, string(own), leak, "a credential in the collector's own metrics")
			}
		})
	}
}
