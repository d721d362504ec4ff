package check

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// readme is deploy/kubernetes/README.md, which Check reads for the Secrets to create.
func readme(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return data
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
		// The scrape config and the rules files are Prometheus's, not Kubernetes objects:
		// TestScrapeConfig, TestRules and TestRulesPromtool check them.
		if generated[path] || path == scrapeConfigFile || path == rulesFile || path == rulesTestFile {
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
			if err := Check(set, readme(t)); err != nil {
				t.Fatalf("%v", err)
			}
		})
	}
}

// The operator overlay scrapes both the agents' metrics and the collector's own.
func TestPrometheusOperatorOverlayHasPodMonitors(t *testing.T) {
	_, set, _ := render(t, filepath.Join(root, "overlays", "prometheus-operator"))
	var ports []string
	for _, pm := range set.PodMonitors {
		for _, ep := range pm.Spec.PodMetricsEndpoints {
			if ep.Port != nil {
				ports = append(ports, *ep.Port)
			}
		}
	}
	slices.Sort(ports)
	if want := []string{"metrics", TelemetryPortName}; !slices.Equal(ports, want) {
		t.Fatalf("the PodMonitors scrape ports %v, want %v", ports, want)
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

// tool is the path of the tool env names, which make k8s-check or make
// helm-check sets; how says how to get it. Without STATSGATE_BINARY (a plain
// go test ./...) the caller skips, as the tests of the distro do; with it, a
// make target meant to run the caller, and a missing tool fails it.
func tool(t *testing.T, env, how string) string {
	t.Helper()
	if os.Getenv("STATSGATE_BINARY") == "" {
		t.Skipf("STATSGATE_BINARY is not set; %s", how)
	}
	p := os.Getenv(env)
	if p == "" {
		t.Fatalf("%s is not set; %s", env, how)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatalf("%s=%s: %v; %s", env, p, err, how)
	}
	if fi.IsDir() {
		t.Fatalf("%s=%s is a directory; %s", env, p, how)
	}
	return p
}

// promtoolHow says how to get promtool with Kubernetes discovery.
const promtoolHow = "run `make k8s-check`, which builds promtool with Kubernetes discovery into .tools/ and sets STATSGATE_PROMTOOL"

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
	promtool := tool(t, "STATSGATE_PROMTOOL", promtoolHow)
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
		{"short grace period", base, "terminationGracePeriodSeconds: 90", "terminationGracePeriodSeconds: 30", "terminationGracePeriodSeconds 30 < 87"},
		{"writable root", base, "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem"},
		{"a committed secret", base, "apiVersion: v1\nkind: Namespace\n", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: statsgate-scrape-token\n  namespace: statsgate\nstringData:\n  token: hunter2\n---\napiVersion: v1\nkind: Namespace\n", "Secret statsgate-scrape-token carries a value"},
		{"port name too long", base, "name: gossip-udp\n", "name: gossip-udp-memberlist\n", `container port name "gossip-udp-memberlist": must be no more than 15 characters`},
		{"fleet off", base, "fleet:\n          enabled: true", "fleet:\n          enabled: false", "fleet::enabled must be true with 3 replicas"},
		{"no udp gossip port", base, "        - containerPort: 7946\n          name: gossip-udp\n          protocol: UDP\n", "", "no container port 7946/UDP"},
		{"tcp gossip port moved", base, "      - containerPort: 7946\n          name: gossip-tcp\n", "      - containerPort: 17946\n          name: gossip-tcp\n", "no container port 7946/TCP"},
		{"gossip bound elsewhere", base, "bind: 0.0.0.0:7946", "bind: 0.0.0.0:7947", "no container port 7947/TCP"},
		{"gossip on localhost", base, "bind: 0.0.0.0:7946", "bind: 127.0.0.1:7946", `fleet::bind: "127.0.0.1:7946" listens on 127.0.0.1 only`},
		{"advertise not set", base, "advertise: ${env:POD_IP}:7946\n", "\n", "fleet::advertise: not set"},
		{"advertise a literal address", base, "advertise: ${env:POD_IP}:7946", "advertise: 10.0.0.1:7946", `fleet::advertise "10.0.0.1:7946": want ${env:NAME}:7946`},
		{"advertise another port", base, "advertise: ${env:POD_IP}:7946", "advertise: ${env:POD_IP}:7947", "fleet::advertise port 7947 is not fleet::bind's (7946)"},
		{"POD_IP from the node", base, "fieldPath: status.podIP", "fieldPath: status.hostIP", "${env:POD_IP} must come from the downward API's status.podIP"},
		{"join nobody", base, "join: [statsgate-gossip:7946]", "join: []", "fleet::join: empty"},
		{"join an unknown name", base, "join: [statsgate-gossip:7946]", "join: [statsgate-peers:7946]", `fleet::join "statsgate-peers:7946": not the DNS name of a Service`},
		{"join in another namespace", base, "join: [statsgate-gossip:7946]", "join: [statsgate-gossip.monitoring.svc:7946]", `fleet::join "statsgate-gossip.monitoring.svc:7946": not the DNS name of a Service in the rendering (namespace statsgate)`},
		{"join another port", base, "join: [statsgate-gossip:7946]", "join: [statsgate-gossip:7947]", "port 7947 is not fleet::bind's (7946)"},
		{"join the OTLP service", base, "join: [statsgate-gossip:7946]", "join: [statsgate.statsgate.svc.cluster.local.:7946]", "Service statsgate: clusterIP must be None"},
		{"gossip service with a virtual IP", base, "  clusterIP: None\n", "", "Service statsgate-gossip: clusterIP must be None"},
		{"gossip service lists ready pods only", base, "publishNotReadyAddresses: true", "publishNotReadyAddresses: false", "publishNotReadyAddresses must be true"},
		{"gossip service without udp", base, "    protocol: UDP\n    targetPort: gossip-udp\n", "    protocol: TCP\n    targetPort: gossip-tcp\n", "Service statsgate-gossip: no port 7946/UDP"},
		{"gossip service targets another port", base, "    protocol: UDP\n    targetPort: gossip-udp\n", "    protocol: UDP\n    targetPort: gossip-tcp\n", "port gossip-udp: targetPort gossip-tcp is not the container's gossip port 7946/UDP"},
		{"gossip service selects other pods", base, "  publishNotReadyAddresses: true\n  selector:\n    app.kubernetes.io/component: gateway", "  publishNotReadyAddresses: true\n  selector:\n    app.kubernetes.io/component: agent", "Service statsgate-gossip: selector map[app.kubernetes.io/component:agent app.kubernetes.io/name:statsgate] does not select the gateway pods"},
		{"dns without search domains", base, "      serviceAccountName: statsgate\n", "      dnsPolicy: Default\n      serviceAccountName: statsgate\n", "dnsPolicy Default: fleet::join names a Service by a name the cluster's search domains complete"},
		{"no key", base, "secret_key_file: /etc/statsgate/fleet/key\n", "\n", "fleet::secret_key_file: not set"},
		{"key where nothing is mounted", base, "secret_key_file: /etc/statsgate/fleet/key", "secret_key_file: /run/statsgate/key", "fleet::secret_key_file /run/statsgate/key: no volume is mounted there"},
		{"key from the config map", base, "secret_key_file: /etc/statsgate/fleet/key", "secret_key_file: /etc/statsgate/key", "the volume config mounted at /etc/statsgate is not a Secret"},
		{"key file another item", base, "          - key: key\n            path: key\n", "          - key: key\n            path: gossip.key\n", `(Secret statsgate-fleet-key) has no item at path "key"`},
		{"key secret optional", base, "          secretName: statsgate-fleet-key\n", "          optional: true\n          secretName: statsgate-fleet-key\n", "the Secret statsgate-fleet-key is optional"},
		{"key secret not in the README", base, "secretName: statsgate-fleet-key", "secretName: statsgate-gossip-key", "the gateway reads the Secret statsgate-gossip-key (key \"key\"), but no `kubectl -n statsgate create secret generic statsgate-gossip-key"},
		{"key item not in the README", base, "          - key: key\n            path: key\n", "          - key: aes\n            path: key\n", "the gateway reads the Secret statsgate-fleet-key (key \"aes\")"},
		{"scrape token not in the README", base, "              key: token\n", "              key: bearer\n", "the gateway reads the Secret statsgate-scrape-token (key \"bearer\")"},
		{"podmonitor port name", operator, "port: metrics\n    relabelings:", "port: metric\n    relabelings:", "port metric is not a container port"},
		{"podmonitor with another job", operator, "replacement: statsgate\n", "replacement: gateway\n", `the agents' metrics must be scraped as job "statsgate"`},
		{"podmonitor without a job", operator, "    relabelings:\n    - action: replace\n      replacement: statsgate\n      targetLabel: job\n", "", `not "<namespace>/<PodMonitor name>"`},
		{"telemetry podmonitor with another job", operator, "replacement: statsgate-telemetry", "replacement: otelcol", `the collector's own metrics must be scraped as job "statsgate-telemetry"`},
		{"telemetry podmonitor on another port", operator, "port: telemetry\n    relabelings:", "port: health\n    relabelings:", "port health (13133) is neither the exporter's (9464) nor the collector's own metrics' (8888)"},
		{"telemetry on localhost", base, "host: 0.0.0.0\n", "host: localhost\n", `service::telemetry::metrics::readers[0]::pull::exporter::prometheus: "localhost:8888" listens on localhost only`},
		{"telemetry port moved", base, "port: 8888\n", "port: 18888\n", `container port "telemetry" is 8888 but the collector serves its own metrics on 18888`},
		{"telemetry port not declared", base, "        - containerPort: 8888\n          name: telemetry\n          protocol: TCP\n", "", `no container port named "telemetry"`},
		{"no network policy", base, "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n", "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicyy\n", "not a kind this check knows"},
		{"network policy selects other pods", base, "      protocol: UDP\n  podSelector:\n    matchLabels:\n      app.kubernetes.io/component: gateway\n", "      protocol: UDP\n  podSelector:\n    matchLabels:\n      app.kubernetes.io/component: agent\n", "NetworkPolicy statsgate: podSelector"},
		{"network policy egress only", base, "  policyTypes:\n  - Ingress\n", "  policyTypes:\n  - Egress\n", "without Ingress the policy restricts nothing"},
		{"telemetry from anywhere", base, "  - from:\n    - namespaceSelector:\n        matchLabels:\n          kubernetes.io/metadata.name: monitoring\n", "  - from: []\n", "port telemetry (8888/TCP): admitted from anywhere"},
		{"telemetry from every namespace", base, "    - namespaceSelector:\n        matchLabels:\n          kubernetes.io/metadata.name: monitoring\n", "    - namespaceSelector: {}\n", "port telemetry (8888/TCP): admitted from every namespace"},
		{"telemetry from an address block", base, "    - namespaceSelector:\n        matchLabels:\n          kubernetes.io/metadata.name: monitoring\n", "    - ipBlock:\n        cidr: 0.0.0.0/0\n", "port metrics (9464/TCP): admitted from ipBlock 0.0.0.0/0"},
		{"prometheus not admitted", base, "    - port: telemetry\n      protocol: TCP\n", "    - port: telemetry\n      protocol: UDP\n", "ingress[1].ports[1]: telemetry/UDP is not a container port"},
		{"otlp not admitted", base, "  - ports:\n    - port: otlp-grpc\n", "  - ports:\n    - port: otlp-grpcs\n", "port otlp-grpc (4317/TCP): agents in any namespace push OTLP"},
		{"gossip from every pod", base, "  - from:\n    - podSelector:\n        matchLabels:\n          app.kubernetes.io/component: gateway\n          app.kubernetes.io/name: statsgate\n    ports:\n    - port: gossip-tcp\n", "  - ports:\n    - port: gossip-tcp\n", "port gossip-tcp (7946/TCP): the replicas must reach each other's gossip port"},
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
				err = Check(set, readme(t))
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

// Check fails when the README no longer gives the command that creates a Secret
// the gateway reads, or gives it for another name, key or namespace: the Secrets
// are created by hand, and the README is all that says which.
func TestUndocumentedSecretsFail(t *testing.T) {
	_, set, _ := render(t, filepath.Join(root, "base"))
	doc := string(readme(t))
	tests := []struct{ name, from, to, want string }{
		{"fleet key renamed", "generic statsgate-fleet-key", "generic statsgate-gossip-key", `the gateway reads the Secret statsgate-fleet-key (key "key"), but no`},
		{"fleet key under another key", "--from-literal=key=", "--from-literal=aes=", `the gateway reads the Secret statsgate-fleet-key (key "key"), but no`},
		{"scrape token in another namespace", "-n statsgate create secret generic statsgate-scrape-token", "-n monitoring create secret generic statsgate-scrape-token", `the gateway reads the Secret statsgate-scrape-token (key "token"), but no`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Every occurrence: the README gives a command to create and one to rotate.
			broken := strings.ReplaceAll(mutate(t, doc, tt.from, tt.to), tt.from, tt.to)
			err := Check(set, []byte(broken))
			if err == nil {
				t.Fatal("the broken README passed")
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
		{"every port", "regex: metrics\n", "regex: .*\n", "keep the gateway's container ports [otlp-grpc otlp-http metrics health telemetry gossip-tcp gossip-udp]"},
		{"metrics job renamed", "job_name: statsgate\n", "job_name: gateway\n", `scrapes the agents' metrics as job "gateway"`},
		{"telemetry job renamed", "job_name: statsgate-telemetry", "job_name: otelcol", `scrapes the collector's own metrics as job "otelcol"`},
		{"telemetry job scrapes the agents' metrics", "regex: telemetry\n", "regex: metrics\n", `scrapes the agents' metrics as job "statsgate-telemetry"`},
		{"telemetry of any pod", "regex: statsgate;gateway\n        action: keep\n      - source_labels: [__meta_kubernetes_pod_container_port_name]\n        regex: telemetry", "regex: .*\n        action: keep\n      - source_labels: [__meta_kubernetes_pod_container_port_name]\n        regex: telemetry", `keep port "telemetry" of any pod in the namespace`},
		{"telemetry over https", "scheme: http\n    metrics_path: /metrics\n    relabel_configs:\n      - source_labels:\n          - __meta_kubernetes_pod_label_app_kubernetes_io_name\n          - __meta_kubernetes_pod_label_app_kubernetes_io_component\n        regex: statsgate;gateway\n        action: keep\n      - source_labels: [__meta_kubernetes_pod_container_port_name]\n        regex: telemetry", "scheme: https\n    metrics_path: /metrics\n    relabel_configs:\n      - source_labels:\n          - __meta_kubernetes_pod_label_app_kubernetes_io_name\n          - __meta_kubernetes_pod_label_app_kubernetes_io_component\n        regex: statsgate;gateway\n        action: keep\n      - source_labels: [__meta_kubernetes_pod_container_port_name]\n        regex: telemetry", "job statsgate-telemetry: scheme https"},
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

// localConfig is the base's rendered config made to run here, as a replica of
// a fleet whose key is in keyFile: every listen address moved to a free port on
// 127.0.0.1 (ports maps the config's ports to them), POD_IP 127.0.0.1, and peers
// joined in place of the headless Service's name. Only these differ from what the
// pod runs.
type localConfig struct {
	file  string
	ports map[string]string
	env   []string
	// gossip is where it gossips (fleet::bind).
	gossip string
}

// scrapeToken is what the local gateways take as SCRAPE_TOKEN.
const scrapeToken = "k8s-check-token"

func newLocalConfig(t *testing.T, g *Gateway, keyFile string, peers ...string) localConfig {
	t.Helper()
	config := string(g.Config)
	ports := map[string]string{}
	for _, from := range []string{"4317", "4318", "9464", "13133"} {
		ports[from] = freePort(t)
		config = mutate(t, config, "0.0.0.0:"+from, "127.0.0.1:"+ports[from])
	}
	ports["8888"] = freePort(t)
	config = mutate(t, config, "host: 0.0.0.0\n", "host: 127.0.0.1\n")
	config = mutate(t, config, "port: 8888", "port: "+ports["8888"])

	f, err := g.Collector.Fleet()
	if err != nil || !f.Enabled {
		t.Fatalf("the base's fleet is not on (%v)", err)
	}
	_, bindPort, _ := net.SplitHostPort(f.Bind)
	ports[bindPort] = freePort(t)
	config = mutate(t, config, "bind: "+f.Bind, "bind: 127.0.0.1:"+ports[bindPort])
	config = mutate(t, config, "advertise: "+f.Advertise, "advertise: "+strings.Replace(f.Advertise, ":"+bindPort, ":"+ports[bindPort], 1))
	if len(peers) == 0 {
		peers = []string{"127.0.0.1:" + ports[bindPort]} // itself: alone, without a DNS lookup
	}
	config = mutate(t, config, "join: ["+strings.Join(f.Join, ", ")+"]", "join: ["+strings.Join(peers, ", ")+"]")
	config = mutate(t, config, "secret_key_file: "+f.SecretKeyFile, "secret_key_file: "+keyFile)

	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for k, v := range g.Env {
		switch {
		case g.FieldEnv[k] == podIPField:
			v = "127.0.0.1"
		case k == "SCRAPE_TOKEN":
			v = scrapeToken
		}
		env = append(env, k+"="+v)
	}
	return localConfig{file: file, ports: ports, env: env, gossip: "127.0.0.1:" + ports[bindPort]}
}

// fleetKeyFile writes a key as `openssl rand -base64 32` prints it, the command
// the README gives for the Secret statsgate-fleet-key.
func fleetKeyFile(t *testing.T) string {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// syncBuffer is the gateway's output, read while it runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// localGateway is the built distro running a localConfig, healthy.
type localGateway struct {
	logs   *syncBuffer
	exited chan error
	// stop sends SIGTERM and fails the test unless the gateway exits cleanly
	// within the pod's budget; the test's cleanup calls it too.
	stop func()
}

func startGateway(t *testing.T, bin string, c localConfig) *localGateway {
	t.Helper()
	gw := &localGateway{logs: &syncBuffer{}, exited: make(chan error, 1)}
	cmd := exec.Command(bin, "--config="+c.file)
	cmd.Env = c.env
	cmd.Stdout, cmd.Stderr = gw.logs, gw.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { gw.exited <- cmd.Wait() }()
	stopped := false
	gw.stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		// The pod's budget after its 5 s preStop sleep: 30 s - 5 s.
		select {
		case err := <-gw.exited:
			if err != nil {
				t.Errorf("the gateway exited with %v after SIGTERM", err)
			}
		case <-time.After(25 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("the gateway did not stop within 25 s of SIGTERM")
		}
	}
	t.Cleanup(func() {
		gw.stop()
		if t.Failed() {
			t.Logf("gateway output:\n%s", gw.logs.String())
		}
	})
	// Healthy once every component has started, the fleet's listener included.
	client := &http.Client{Timeout: 2 * time.Second}
	health := "http://127.0.0.1:" + c.ports["13133"] + "/"
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(health)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return gw
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("health_check never answered 200")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The rendered config runs as the pod would run it: with the container's
// environment only, healthy on the probes' port, /metrics refused without the scrape
// token and served with it, and a SIGTERM ends it well within the grace period. Only
// the port numbers, the fleet's peers and the key file's path differ, so that the
// test can run next to anything else.
func TestRenderedConfigServes(t *testing.T) {
	bin := binary(t)
	_, _, g := render(t, filepath.Join(root, "base"))
	c := newLocalConfig(t, g, fleetKeyFile(t))
	ports := c.ports
	gw := startGateway(t, bin, c)
	const token = scrapeToken

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
	gw.stop()
	t.Logf("SIGTERM to exit: %v", time.Since(start).Round(time.Millisecond))
}

// fleetMembers is the gateway's own count of its fleet's members, from its
// telemetry; -1 until it answers.
func fleetMembers(c localConfig) float64 {
	return telemetryValue(c, `otelcol_exporter_agentprometheus_fleet_members`)
}

// telemetryValue is the sum of the gateway's own series that selector (a regexp
// of a metric name, and of labels if it has any) matches; -1 when none does.
func telemetryValue(c localConfig, selector string) float64 {
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get("http://localhost:" + c.ports["8888"] + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	matches := regexp.MustCompile(`(?m)^`+selector+`(?:\{[^}]*\})? (\S+)$`).FindAllSubmatch(body, -1)
	if matches == nil {
		return -1
	}
	var sum float64
	for _, m := range matches {
		v, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			return -1
		}
		sum += v
	}
	return sum
}

// The rendered fleet settings make replicas one fleet, and the key keeps others
// out: two gateways with the same key (as `openssl rand -base64 32` prints it)
// count each other as members; a third with another key is refused and stays alone.
func TestRenderedConfigFormsAFleet(t *testing.T) {
	bin := binary(t)
	_, _, g := render(t, filepath.Join(root, "base"))
	key := fleetKeyFile(t)
	a := newLocalConfig(t, g, key)
	startGateway(t, bin, a)
	b := newLocalConfig(t, g, key, a.gossip)
	startGateway(t, bin, b)
	deadline := time.Now().Add(30 * time.Second)
	for fleetMembers(a) != 2 || fleetMembers(b) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no fleet of 2 after 30 s: members %v and %v", fleetMembers(a), fleetMembers(b))
		}
		time.Sleep(200 * time.Millisecond)
	}

	other := newLocalConfig(t, g, fleetKeyFile(t), a.gossip)
	startGateway(t, bin, other)
	dropped := `otelcol_exporter_agentprometheus_fleet_messages_dropped\{reason="unauthenticated"\}`
	deadline = time.Now().Add(30 * time.Second)
	for telemetryValue(a, dropped) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the fleet never refused the gateway with another key")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := fleetMembers(other); n != 1 {
		t.Errorf("the gateway with another key counts %v members, want 1 (itself)", n)
	}
	if n := fleetMembers(a); n != 2 {
		t.Errorf("the fleet has %v members after a gateway with another key tried to join, want 2", n)
	}
}

// Without a usable key file (the Secret volume made optional, a wrong path, a
// Secret that holds something else) the gateway does not start, and says which
// setting is wrong, rather than gossip in clear.
func TestRenderedConfigWithoutKeyFails(t *testing.T) {
	bin := binary(t)
	_, _, g := render(t, filepath.Join(root, "base"))
	tests := []struct{ name, content, want string }{
		{"no file", "", "fleet::secret_key_file: open "},
		{"not base64", "hunter2!\n", "want the base64 of a 16, 24 or 32-byte key"},
		{"20 bytes", base64.StdEncoding.EncodeToString(make([]byte, 20)) + "\n", "the key is 20 bytes, want 16, 24 or 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := filepath.Join(t.TempDir(), "key")
			if tt.content != "" {
				if err := os.WriteFile(key, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c := newLocalConfig(t, g, key)
			cmd := exec.Command(bin, "--config="+c.file)
			cmd.Env = c.env
			out := &syncBuffer{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			var err error
			select {
			case err = <-exited:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
				t.Fatalf("the gateway still ran 30 s after starting with this key file:\n%s", out)
			}
			if err == nil {
				t.Fatalf("the gateway exited cleanly with this key file:\n%s", out)
			}
			if !strings.Contains(out.String(), "fleet::secret_key_file") || !strings.Contains(out.String(), tt.want) {
				t.Fatalf("the gateway's error does not name fleet::secret_key_file and say %q:\n%s", tt.want, out)
			}
		})
	}
}
