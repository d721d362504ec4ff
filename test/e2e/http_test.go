package e2e

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/statsgate/statsgate/test/internal/gatewaytest"
)

func httpStatus(client *http.Client, req *http.Request) (int, []byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func getStatus(url string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	code, body, err := httpStatus(&http.Client{Timeout: 2 * time.Second}, req)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("%s: %d %s", url, code, bytes.TrimSpace(body))
	}
	return nil
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key, and
// returns a client that trusts it.
func writeCert(t *testing.T, dir string) (certFile, keyFile string, client *http.Client) {
	t.Helper()
	certFile, keyFile, pool := gatewaytest.WriteCert(t, dir)
	return certFile, keyFile, &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}
