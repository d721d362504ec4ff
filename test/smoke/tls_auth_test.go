package smoke

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
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

// writeCert writes a self-signed certificate for 127.0.0.1 and its key.
func writeCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "statsgate-test"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

const tlsAuthConfig = `
extensions:
  bearertokenauth:
    token: %[1]q
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
      authenticator: bearertokenauth
service:
  extensions: [bearertokenauth, health_check]
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [agentprometheus]
  telemetry:
    metrics:
      level: none
`

func TestMetricsBehindTLSAndBearerToken(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	certFile, keyFile, pool := writeCert(t, dir)
	const token = "s3cret-scrape-token"
	health, metrics := freeAddr(t), freeAddr(t)
	cfg := filepath.Join(dir, "gateway.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, tlsAuthConfig, token, health, freeAddr(t), metrics, certFile, keyFile), 0o600))

	var logs bytes.Buffer
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
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
	assert.Equal(t, http.StatusOK, get("Bearer "+token), "authorised scrape")
	assert.Equal(t, http.StatusUnauthorized, get(""), "scrape without a token")
	assert.Equal(t, http.StatusUnauthorized, get("Bearer wrong"), "scrape with a wrong token")

	// Plain HTTP is not served on the TLS port.
	resp, err := http.Get("http://" + metrics + "/metrics")
	if err == nil {
		resp.Body.Close()
		assert.NotEqual(t, http.StatusOK, resp.StatusCode)
	}
	assert.NotContains(t, logs.String(), token, "the token must not appear in the logs")
}
