package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// contribDir holds the reference program: its own module, pinned to the
// contrib release the cases are compared with (contribVersion).
const (
	contribDir     = "contrib"
	contribVersion = "v0.165.1"
)

// startTimeout bounds a process' start, from exec to accepting OTLP.
const startTimeout = 30 * time.Second

var contribBuild struct {
	once sync.Once
	path string
	err  error
}

// contribBinary builds the reference program once per test run and returns
// its path. CONFORMANCE_CONTRIB_BINARY names a binary built beforehand
// instead (`go build` in conformance/contrib).
func contribBinary() (string, error) {
	contribBuild.once.Do(func() {
		if p := os.Getenv("CONFORMANCE_CONTRIB_BINARY"); p != "" {
			contribBuild.path = p
			return
		}
		dir, err := os.MkdirTemp("", "conformance-contrib-")
		if err != nil {
			contribBuild.err = err
			return
		}
		contribBuild.path = filepath.Join(dir, "contrib-prometheus")
		cmd := exec.Command("go", "build", "-o", contribBuild.path, ".")
		cmd.Dir = contribDir
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			contribBuild.err = fmt.Errorf("building %s (contrib %s): %v\n%s", contribDir, contribVersion, err, out)
		}
	})
	return contribBuild.path, contribBuild.err
}

// removeContribBinary deletes what contribBinary built.
func removeContribBinary() {
	if contribBuild.path != "" && os.Getenv("CONFORMANCE_CONTRIB_BINARY") == "" {
		_ = os.RemoveAll(filepath.Dir(contribBuild.path))
	}
}

// contribYAML is the reference's config for a case: the OTLP/HTTP receiver
// on otlpEndpoint, contrib's prometheus exporter with the case's settings on
// endpoint, nothing else. JSON is YAML, so the settings map is written as is.
func contribYAML(settings map[string]any, otlpEndpoint, endpoint string) ([]byte, error) {
	exp := map[string]any{
		"endpoint": endpoint,
		// The exporter's queue is off unless configured; say so, so that
		// OTLP/HTTP answers only after the exporter has taken the batch.
		"sending_queue": map[string]any{"enabled": false},
	}
	for k, v := range settings {
		exp[k] = v
	}
	return json.MarshalIndent(map[string]any{
		"receivers": map[string]any{"otlp": map[string]any{"protocols": map[string]any{
			"http": map[string]any{"endpoint": otlpEndpoint},
		}}},
		"exporters": map[string]any{"prometheus": exp},
		"service": map[string]any{
			"telemetry": map[string]any{
				"logs": map[string]any{"level": "warn", "encoding": "console"},
				// No internal metrics server: it would take port 8888 in
				// every process.
				"metrics": map[string]any{"level": "none"},
			},
			"pipelines": map[string]any{"metrics": map[string]any{
				"receivers": []string{"otlp"}, "exporters": []string{"prometheus"},
			}},
		},
	}, "", "  ")
}

// syncBuffer is an io.Writer safe to read while a process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startContrib starts the reference program for the case's settings and
// waits until its OTLP receiver answers.
func startContrib(t *testing.T, name string, settings map[string]any) (*running, error) {
	t.Helper()
	bin, err := contribBinary()
	if err != nil {
		return nil, err
	}
	return startRetrying(func() (*running, error) { return startContribOnce(t, name, bin, settings) })
}

func startContribOnce(t *testing.T, name, bin string, settings map[string]any) (*running, error) {
	otlpEndpoint, endpoint := freeEndpoint(t), freeEndpoint(t)
	cfg, err := contribYAML(settings, otlpEndpoint, endpoint)
	if err != nil {
		return nil, fmt.Errorf("%s: config: %w", name, err)
	}
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		return nil, err
	}
	logs := &syncBuffer{}
	cmd := exec.Command(bin, "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() error {
		select {
		case err := <-exited:
			return fmt.Errorf("exited before the end of the case: %v", err)
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			return nil
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			return errors.New("did not stop within 10s of SIGTERM; killed")
		}
	}
	r := &running{
		name:     name,
		endpoint: endpoint,
		logs:     func() string { return warnings(logs.String()) },
	}
	client := &http.Client{Timeout: 10 * time.Second}
	r.send = func(batches []pmetric.Metrics) error {
		for i, md := range batches {
			if err := postOTLP(client, otlpEndpoint, md); err != nil {
				return fmt.Errorf("%s: batch %d: %w", name, i, err)
			}
		}
		return nil
	}

	// The collector starts its exporters before its receivers: once the
	// receiver answers, /metrics is served.
	deadline := time.Now().Add(startTimeout)
	for {
		err := postOTLP(client, otlpEndpoint, pmetric.NewMetrics())
		if err == nil {
			break
		}
		select {
		case werr := <-exited:
			return nil, fmt.Errorf("%s: exited at start (%v):\n%s\nconfig:\n%s", name, werr, logs.String(), cfg)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = stop()
			return nil, fmt.Errorf("%s: OTLP receiver not up after %s: %v\n%s", name, startTimeout, err, logs.String())
		}
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("%s: %v\n%s", name, err, logs.String())
		}
	})
	return r, nil
}

// postOTLP sends one batch as OTLP/HTTP protobuf. The receiver answers once
// the pipeline has consumed it: with the exporter's queue off, the batch is
// then in the exporter's state.
func postOTLP(client *http.Client, endpoint string, md pmetric.Metrics) error {
	body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		return err
	}
	resp, err := client.Post("http://"+endpoint+"/v1/metrics", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("OTLP/HTTP %d: %s", resp.StatusCode, b)
	}
	er := pmetricotlp.NewExportResponse()
	if err := er.UnmarshalProto(b); err != nil {
		return fmt.Errorf("OTLP/HTTP response: %w", err)
	}
	if ps := er.PartialSuccess(); ps.RejectedDataPoints() != 0 || ps.ErrorMessage() != "" {
		return fmt.Errorf("OTLP/HTTP partial success: %d rejected: %s", ps.RejectedDataPoints(), ps.ErrorMessage())
	}
	return nil
}

// warnings keeps the lines of a collector's console log at warn level and
// above, and whatever is not a log line (a panic).
func warnings(log string) string {
	var b strings.Builder
	for line := range strings.Lines(log) {
		fields := strings.SplitN(line, "\t", 3)
		if len(fields) >= 2 && (fields[1] == "info" || fields[1] == "debug") {
			continue
		}
		b.WriteString("    ")
		b.WriteString(line)
	}
	return b.String()
}
