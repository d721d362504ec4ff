package check

import (
	"bytes"
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

	kusttypes "sigs.k8s.io/kustomize/api/types"
)

// root is deploy/kubernetes, seen from this package.
const root = ".."

// kustomizations lists the base and every overlay: whatever has a kustomization.yaml.
func kustomizations(t *testing.T) []string {
	t.Helper()
	dirs := []string{filepath.Join(root, "base")}
	overlays, err := filepath.Glob(filepath.Join(root, "overlays", "*", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range overlays {
		dirs = append(dirs, filepath.Dir(k))
	}
	if len(dirs) < 2 {
		t.Fatalf("found no overlay under %s/overlays", root)
	}
	return dirs
}

func name(dir string) string {
	rel, _ := filepath.Rel(root, dir)
	return filepath.ToSlash(rel)
}

// render renders dir, decodes it and finds the gateway, failing the test on any error.
func render(t *testing.T, dir string) ([]byte, *Set, *Gateway) {
	t.Helper()
	out, err := Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	set, err := DecodeAll(out)
	if err != nil {
		t.Fatalf("%s renders objects that do not decode strictly:\n%v", name(dir), err)
	}
	g, err := FindGateway(set)
	if err != nil {
		t.Fatal(err)
	}
	return out, set, g
}

// generatorFiles are the files configMapGenerators read (collector configs), by path.
func generatorFiles(t *testing.T) map[string]bool {
	t.Helper()
	files := map[string]bool{}
	for _, dir := range kustomizations(t) {
		data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		obj, err := DecodeObject(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, gen := range obj.Value.(*kusttypes.Kustomization).ConfigMapGenerator {
			for _, f := range gen.FileSources {
				_, file, _ := strings.Cut(f, "=")
				if file == "" {
					file = f
				}
				files[filepath.Join(dir, file)] = true
			}
		}
	}
	return files
}

// Every YAML file under deploy/kubernetes is checked: a manifest (one object per file,
// decoded strictly, kustomizations and patches included), a collector config
// (TestCollectorConfigValidates) or the Prometheus scrape config (TestScrapeConfig).
func TestRawFilesDecodeStrictly(t *testing.T) {
	generated := generatorFiles(t)
	var checked int
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path == filepath.Join(root, "check") {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return nil
		}
		if generated[path] || path == scrapeConfigFile {
			return nil
		}
		t.Run(name(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			docs, err := SplitDocuments(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != 1 {
				t.Fatalf("%d objects; one per file", len(docs))
			}
			if _, err := DecodeObject(docs[0]); err != nil {
				t.Fatal(err)
			}
		})
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 8 {
		t.Fatalf("checked only %d files", checked)
	}
}

// The base and every overlay render as `kubectl apply -k` would, every object
// decodes strictly, and the objects agree with each other and with the config.
func TestRenderedManifests(t *testing.T) {
	for _, dir := range kustomizations(t) {
		t.Run(name(dir), func(t *testing.T) {
			_, set, _ := render(t, dir)
			if err := Check(set); err != nil {
				t.Fatalf("%v", err)
			}
		})
	}
}

func TestPrometheusOperatorOverlayHasPodMonitor(t *testing.T) {
	_, set, _ := render(t, filepath.Join(root, "overlays", "prometheus-operator"))
	if len(set.PodMonitors) != 1 {
		t.Fatalf("want one PodMonitor, found %d", len(set.PodMonitors))
	}
}

// binary is the built distro (make k8s-check sets STATSGATE_BINARY).
func binary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("STATSGATE_BINARY")
	if bin == "" {
		t.Skip("STATSGATE_BINARY is not set; run `make k8s-check`, which builds the distro first")
	}
	return bin
}

// validate runs `otelcol-statsgate validate` on config with the container's
// environment only (secrets as placeholders): the config must not depend on
// anything else.
func validate(t *testing.T, bin string, config []byte, env map[string]string) ([]byte, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, config, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "validate", "--config="+file)
	cmd.Env = []string{}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd.CombinedOutput()
}

// The collector config passes the built distro's validate: as written (with the
// base's environment) and as each rendering's ConfigMap carries it (with that
// rendering's environment).
func TestCollectorConfigValidates(t *testing.T) {
	bin := binary(t)
	_, _, base := render(t, filepath.Join(root, "base"))
	for file := range generatorFiles(t) {
		t.Run(name(file), func(t *testing.T) {
			config, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if out, err := validate(t, bin, config, base.Env); err != nil {
				t.Fatalf("validate failed: %v\n%s", err, out)
			}
		})
	}
	for _, dir := range kustomizations(t) {
		t.Run(name(dir)+"/rendered", func(t *testing.T) {
			_, _, g := render(t, dir)
			if out, err := validate(t, bin, g.Config, g.Env); err != nil {
				t.Fatalf("validate failed: %v\n%s", err, out)
			}
		})
	}
	// The same run refuses a broken config, so a pass above means something.
	t.Run("misspelt key fails", func(t *testing.T) {
		broken := mutate(t, string(base.Config), "send_timestamps: true", "send_timestamp: true")
		out, err := validate(t, bin, []byte(broken), base.Env)
		if err == nil || !strings.Contains(string(out), "send_timestamp") {
			t.Fatalf("validate accepted a misspelt key (err %v):\n%s", err, out)
		}
	})
	t.Run("unset variable fails", func(t *testing.T) {
		env := map[string]string{}
		for k, v := range base.Env {
			if k != "STATSGATE_MAX_SERIES" {
				env[k] = v
			}
		}
		if out, err := validate(t, bin, base.Config, env); err == nil {
			t.Fatalf("validate accepted max_series from an unset variable:\n%s", out)
		}
	})
}

var scrapeConfigFile = filepath.Join(root, "prometheus", "scrape-config.yaml")

// promtoolConfig wraps the scrape config for promtool: the token file it names
// exists (with a dummy token) in a temporary directory.
func promtoolConfig(t *testing.T, scrape []byte) string {
	t.Helper()
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("dummy-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const want = "credentials_file: /etc/prometheus/secrets/statsgate-scrape-token/token"
	config := mutate(t, string(scrape), want, "credentials_file: "+token)
	file := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// The plain-Prometheus scrape job finds the gateway's pods and keeps their metrics
// port only, with the settings that keep series exact; promtool accepts it.
func TestScrapeConfig(t *testing.T) {
	scrape, err := os.ReadFile(scrapeConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	_, _, g := render(t, filepath.Join(root, "base"))
	if err := CheckScrapeConfig(scrape, g); err != nil {
		t.Fatal(err)
	}
	promtool := os.Getenv("STATSGATE_PROMTOOL")
	if promtool == "" {
		t.Skip("STATSGATE_PROMTOOL is not set; run `make k8s-check`, which builds promtool with Kubernetes discovery")
	}
	t.Run("promtool", func(t *testing.T) {
		out, err := exec.Command(promtool, "check", "config", promtoolConfig(t, scrape)).CombinedOutput()
		if err != nil {
			t.Fatalf("promtool check config: %v\n%s", err, out)
		}
	})
	t.Run("promtool refuses a misspelt field", func(t *testing.T) {
		broken := mutate(t, string(scrape), "honor_labels: true", "honor_label: true")
		out, err := exec.Command(promtool, "check", "config", promtoolConfig(t, []byte(broken))).CombinedOutput()
		if err == nil {
			t.Fatalf("promtool accepted a misspelt field:\n%s", out)
		}
	})
}

// mutate replaces the first from in s by to; from must be there, so that a test
// does not pass on a mutation that never happened.
func mutate(t *testing.T, s, from, to string) string {
	t.Helper()
	if !strings.Contains(s, from) {
		t.Fatalf("%q is not in the text to mutate", from)
	}
	return strings.Replace(s, from, to, 1)
}

// The checks fail on real mistakes: each row breaks one rendering in one place and
// runs the same decoding and checks as TestRenderedManifests.
func TestBrokenManifestsFail(t *testing.T) {
	const (
		base     = "base"
		operator = "overlays/prometheus-operator"
	)
	tests := []struct {
		name, dir, from, to, want string
	}{
		{"misspelt field", base, "readinessProbe:", "readinesProbe:", `unknown field "spec.template.spec.containers[0].readinesProbe"`},
		{"field in the wrong case", base, "terminationGracePeriodSeconds:", "terminationgraceperiodseconds:", "unknown field"},
		{"duplicate field", base, "  replicas: 3\n", "  replicas: 3\n  replicas: 4\n", `key "replicas" already set`},
		{"wrong value type", base, "  replicas: 3\n", "  replicas: three\n", "cannot unmarshal"},
		{"unknown kind", base, "kind: PodDisruptionBudget", "kind: PodDisruptionBudgett", "not a kind this check knows"},
		{"probe on an undeclared port", base, "port: health\n", "port: healthz\n", "Probe: port healthz is not a container port"},
		{"probe on another port", base, "port: health\n", "port: metrics\n", "Probe: port metrics (9464) is not health_check's (13133)"},
		{"container port renamed", base, "name: metrics\n", "name: prometheus\n", `no container port named "metrics"`},
		{"container port moved", base, "containerPort: 4317", "containerPort: 14317", `container port "otlp-grpc" is 14317 but the collector listens on 4317`},
		{"service targets a missing port", base, "targetPort: otlp-http", "targetPort: otlphttp", "targetPort otlphttp is not a container port"},
		{"service exposes metrics", base, "targetPort: otlp-http", "targetPort: metrics", "exposes /metrics"},
		{"service selects other pods", base, "  selector:\n    app.kubernetes.io/component: gateway", "  selector:\n    app.kubernetes.io/component: agent", "does not match the pod template's labels"},
		{"pdb selects other pods", base, "  selector:\n    matchLabels:\n      app.kubernetes.io/component: gateway\n      app.kubernetes.io/name: statsgate\n---\napiVersion: autoscaling/v2", "  selector:\n    matchLabels:\n      app.kubernetes.io/component: agent\n      app.kubernetes.io/name: statsgate\n---\napiVersion: autoscaling/v2", "PodDisruptionBudget statsgate: selector"},
		{"hpa targets another deployment", base, "    kind: Deployment\n    name: statsgate", "    kind: Deployment\n    name: statsgate-gateway", "scaleTargetRef"},
		{"hpa below 2 replicas", base, "minReplicas: 3", "minReplicas: 1", "minReplicas 1: a gateway needs at least 2"},
		{"one replica", base, "  replicas: 3\n", "  replicas: 1\n", "replicas is 1"},
		{"GOMEMLIMIT above the memory limit", base, "value: 1638MiB", "value: 2200MiB", "GOMEMLIMIT (2200 MiB) must be below the container's memory limit (2048 MiB)"},
		{"limit_mib above GOMEMLIMIT", base, "value: \"1434\"", "value: \"1700\"", "limit_mib (1700) must be below GOMEMLIMIT (1638 MiB)"},
		{"max_series too large for the memory", base, "value: \"1500000\"", "value: \"3000000\"", "max_series (3000000)"},
		{"max_series_per_resource near max_series", base, "value: \"20000\"", "value: \"1000000\"", "max_series_per_resource (1000000)"},
		{"config variable not set", base, "- name: STATSGATE_MAX_SERIES\n", "- name: STATSGATE_MAXSERIES\n", "${env:STATSGATE_MAX_SERIES}, which the container does not set"},
		{"token from the config", base, "token: ${env:SCRAPE_TOKEN}", "token: hunter2", "must be ${env:NAME} with NAME from a Secret"},
		{"listens on localhost", base, "endpoint: 0.0.0.0:9464", "endpoint: localhost:9464", `listens on localhost only`},
		{"no timestamps with replicas", base, "send_timestamps: true", "send_timestamps: false", "needs send_timestamps: true"},
		{"short grace period", base, "terminationGracePeriodSeconds: 90", "terminationGracePeriodSeconds: 30", "terminationGracePeriodSeconds 30 < 85"},
		{"writable root", base, "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem"},
		{"a committed secret", base, "apiVersion: v1\nkind: Namespace\n", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: statsgate-scrape-token\n  namespace: statsgate\nstringData:\n  token: hunter2\n---\napiVersion: v1\nkind: Namespace\n", "Secret statsgate-scrape-token carries a value"},
		{"podmonitor port name", operator, "port: metrics\n    scheme: http", "port: metric\n    scheme: http", "port metric is not a container port"},
		{"podmonitor without honorLabels", operator, "honorLabels: true", "honorLabels: false", "honorLabels must be true"},
		{"podmonitor with another secret", operator, "name: statsgate-scrape-token\n", "name: scrape-token\n", "must authenticate with the Secret key"},
		{"podmonitor in another namespace", operator, "  namespace: statsgate\nspec:\n  podMetricsEndpoints:", "  namespace: monitoring\nspec:\n  podMetricsEndpoints:", `PodMonitor statsgate is in namespace "monitoring"`},
	}
	renders := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := renders[tt.dir]; !ok {
				out, _, _ := render(t, filepath.Join(root, tt.dir))
				renders[tt.dir] = string(out)
			}
			broken := mutate(t, renders[tt.dir], tt.from, tt.to)
			set, err := DecodeAll([]byte(broken))
			if err == nil {
				err = Check(set)
			}
			if err == nil {
				t.Fatal("the broken manifests passed")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error does not say %q:\n%v", tt.want, err)
			}
		})
	}
}

// The scrape config check fails on the mistakes that would make Prometheus scrape
// the wrong thing, or lose exactness across replicas.
func TestBrokenScrapeConfigFails(t *testing.T) {
	scrape, err := os.ReadFile(scrapeConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	_, _, g := render(t, filepath.Join(root, "base"))
	tests := []struct{ name, from, to, want string }{
		{"wrong port name", "regex: metrics\n", "regex: metric\n", "keep the gateway's container ports []"},
		{"every port", "regex: metrics\n", "regex: .*\n", "keep the gateway's container ports [otlp-grpc otlp-http metrics health]"},
		{"any pod", "regex: statsgate;gateway", "regex: .*", "of any pod in the namespace"},
		{"other namespace", "names: [statsgate]", "names: [monitoring]", "discovers namespaces [monitoring]"},
		{"no honor_labels", "honor_labels: true", "honor_labels: false", "honor_labels must be true"},
		{"no honor_timestamps", "honor_timestamps: true", "honor_timestamps: false", "honor_timestamps must be set to true"},
		{"https", "scheme: http\n", "scheme: https\n", `scheme "https": the exporter serves http`},
		{"a label per pod", "        action: drop\n", "        action: drop\n      - source_labels: [__meta_kubernetes_pod_name]\n        target_label: pod\n        action: replace\n", `relabel action "replace"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			broken := mutate(t, string(scrape), tt.from, tt.to)
			err := CheckScrapeConfig([]byte(broken), g)
			if err == nil {
				t.Fatal("the broken scrape config passed")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error does not say %q:\n%v", tt.want, err)
			}
		})
	}
}

func TestParseGoMemLimit(t *testing.T) {
	for in, want := range map[string]int64{"1638MiB": 1638 << 20, "2GiB": 2 << 30, "1000": 1000, "512KiB": 512 << 10} {
		got, err := ParseGoMemLimit(in)
		if err != nil || got != want {
			t.Errorf("ParseGoMemLimit(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"1.5GiB", "2Gi", "off", "", "1638 MiB"} {
		if _, err := ParseGoMemLimit(in); err == nil {
			t.Errorf("ParseGoMemLimit(%q) succeeded", in)
		}
	}
}

func TestRequiredEnv(t *testing.T) {
	got := RequiredEnv([]byte("a: ${env:A}\nb: ${env:B:-x}\nc: x${env:C}y ${env:A}\n"))
	if !slices.Equal(got, []string{"A", "C"}) {
		t.Fatalf("RequiredEnv = %v", got)
	}
}

// freePort returns a TCP port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// The rendered config runs as the pod would run it: with the container's
// environment only, healthy on the probes' port, /metrics refused without the scrape
// token and served with it, and a SIGTERM ends it well within the grace period. Only
// the port numbers differ, so that the test can run next to anything else.
func TestRenderedConfigServes(t *testing.T) {
	bin := binary(t)
	_, _, g := render(t, filepath.Join(root, "base"))
	config := string(g.Config)
	ports := map[string]string{}
	for _, from := range []string{"4317", "4318", "9464", "13133"} {
		ports[from] = freePort(t)
		config = mutate(t, config, "0.0.0.0:"+from, "127.0.0.1:"+ports[from])
	}
	config = mutate(t, config, "port: 8888", "port: "+freePort(t))
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}

	const token = "k8s-check-token"
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--config="+file)
	cmd.Env = []string{}
	for k, v := range g.Env {
		if k == "SCRAPE_TOKEN" {
			v = token
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		// The pod's budget after its 5 s preStop sleep: 30 s - 5 s.
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("the gateway exited with %v after SIGTERM", err)
			}
		case <-time.After(25 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("the gateway did not stop within 25 s of SIGTERM")
		}
	}
	defer func() {
		stop()
		if t.Failed() {
			t.Logf("gateway output:\n%s", logs.String())
		}
	}()

	client := &http.Client{Timeout: 5 * time.Second}
	status := func(url, bearer string) int {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	health := "http://127.0.0.1:" + ports["13133"] + "/"
	deadline := time.Now().Add(30 * time.Second)
	for status(health, "") != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("health_check never answered 200")
		}
		time.Sleep(100 * time.Millisecond)
	}
	metrics := "http://127.0.0.1:" + ports["9464"] + "/metrics"
	for bearer, want := range map[string]int{"": http.StatusUnauthorized, "wrong": http.StatusUnauthorized, token: http.StatusOK} {
		if got := status(metrics, bearer); got != want {
			t.Errorf("GET /metrics with token %q: %d, want %d", bearer, got, want)
		}
	}

	// One gauge over OTLP/HTTP (JSON) comes out with its own timestamp
	// (send_timestamps), under the agent's job and instance.
	pointTime := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	otlp := fmt.Sprintf(`{"resourceMetrics":[{"resource":{"attributes":[
		{"key":"service.name","value":{"stringValue":"k8s-check"}},
		{"key":"service.instance.id","value":{"stringValue":"agent-1"}}]},
	  "scopeMetrics":[{"metrics":[{"name":"queue.depth","gauge":{"dataPoints":[
		{"timeUnixNano":"%d","asDouble":7}]}}]}]}]}`, pointTime.UnixNano())
	resp, err := client.Post("http://127.0.0.1:"+ports["4318"]+"/v1/metrics", "application/json", strings.NewReader(otlp))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("OTLP/HTTP export: %d %s", resp.StatusCode, body)
	}
	want := fmt.Sprintf(`queue_depth{instance="agent-1",job="k8s-check"} 7 %d`, pointTime.UnixMilli())
	req, _ := http.NewRequest(http.MethodGet, metrics, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte(want)) {
		t.Errorf("/metrics does not have %s:\n%s", want, body)
	}
	start := time.Now()
	stop()
	t.Logf("SIGTERM to exit: %v", time.Since(start).Round(time.Millisecond))
}
