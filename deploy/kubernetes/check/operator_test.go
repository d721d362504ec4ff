package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// deploy/operator, seen from this package.
var (
	operatorExample = filepath.Join(root, "..", "operator", "statsgate.yaml")
	operatorReadme  = filepath.Join(root, "..", "operator", "README.md")
)

// The OpenTelemetry Operator example decodes strictly into the Operator's v1beta1
// types and runs the base's gateway: CheckOperatorExample says what is compared. Its
// config passes the built distro's validate with the example's environment, and its
// README gives the commands that create the Secrets it reads.
func TestOperatorExample(t *testing.T) {
	ex, err := ParseOperatorExample(readFile(t, operatorExample))
	if err != nil {
		t.Fatalf("%s: %v", operatorExample, err)
	}
	_, set, g := render(t, filepath.Join(root, "base"))
	if err := CheckOperatorExample(ex, g, set); err != nil {
		t.Fatal(err)
	}
	readme := string(readFile(t, operatorReadme))
	for _, cmd := range []string{
		"kubectl -n statsgate create secret generic statsgate-scrape-token",
		"kubectl -n statsgate create secret generic statsgate-fleet-key",
	} {
		if !strings.Contains(readme, cmd) {
			t.Errorf("%s does not give %q", operatorReadme, cmd)
		}
	}
	if bin := os.Getenv("STATSGATE_BINARY"); bin != "" {
		if out, err := validate(t, bin, ex.Config, ex.Env); err != nil {
			t.Fatalf("otelcol-statsgate validate: %v\n%s", err, out)
		}
	} else {
		t.Log("STATSGATE_BINARY is not set: the collector config was not validated")
	}
}

// The decoding and the comparison fail on an example broken in one place.
func TestOperatorExampleBrokenFails(t *testing.T) {
	data := string(readFile(t, operatorExample))
	_, set, g := render(t, filepath.Join(root, "base"))
	for _, tt := range []struct{ name, from, to, want string }{
		{"misspelt field", "  replicas: 3\n", "  replica: 3\n", `unknown field "spec.replica"`},
		{"unknown mode", "mode: deployment", "mode: daemonset", `spec.mode "daemonset"`},
		{"another image", "image: localhost/statsgate/otelcol-statsgate:0.1.0", "image: otel/opentelemetry-collector:0.1.0", "spec.image"},
		{"GOMEMLIMIT drifts", `value: "1638MiB"`, `value: "1700MiB"`, "spec.env differs"},
		{"config drifts", "metric_expiration: 5m", "metric_expiration: 10m", "spec.config differs"},
		{"a null component", "grpcstats: {}", "grpcstats: null", "spec.config has null objects [processors.grpcstats:]"},
		{"health_check elsewhere", "endpoint: 0.0.0.0:13133", "endpoint: 0.0.0.0:13134", "the Operator's liveness probe is on port 13134, health_check's is 13133"},
		{"no udp gossip port", "    - name: gossip-udp\n      port: 7946\n      protocol: UDP\n  env:", "  env:", "spec.ports: no 7946/UDP"},
		{"gossip service with a virtual IP", "  clusterIP: None\n", "", "clusterIP must be None"},
		{"gossip service selects the base's labels", "    app.kubernetes.io/component: opentelemetry-collector\n", "    app.kubernetes.io/component: gateway\n", "selector differs"},
		{"key volume optional", "        secretName: statsgate-fleet-key\n", "        secretName: statsgate-fleet-key\n        optional: true\n", "spec.volumes fleet-key differs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ex, err := ParseOperatorExample([]byte(mutate(t, data, tt.from, tt.to)))
			if err == nil {
				err = CheckOperatorExample(ex, g, set)
			}
			if err == nil {
				t.Fatal("the broken example passed")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error does not say %q:\n%v", tt.want, err)
			}
		})
	}
}
