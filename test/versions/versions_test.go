// Package versions checks the distro's collector versions: every component in
// builder-config.yaml is of one collector release, and so is every collector
// module the built distro resolved (release_test.go); and the unit tests run
// the collector code the distro ships: every collector core and contrib
// module that go.mod (or bench/go.mod, or test/promparse/go.mod) requires
// must be required at the version the built distro resolved, as recorded in
// _build/go.mod.
//
// The checks of the built distro need it: `make versions` (part of `make
// test`) checks builder-config.yaml, builds the distro and sets
// STATSGATE_DISTRO_GOMOD.
package versions

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// collectorModule reports whether path is a collector core or contrib module.
func collectorModule(path string) bool {
	return path == "go.opentelemetry.io/collector" ||
		strings.HasPrefix(path, "go.opentelemetry.io/collector/") ||
		strings.HasPrefix(path, "github.com/open-telemetry/opentelemetry-collector-contrib/")
}

// requirements returns the collector modules a go.mod file requires, with
// their versions, as `go mod edit -json` reads them.
func requirements(t *testing.T, gomod string) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "mod", "edit", "-json", gomod).Output()
	require.NoError(t, err, "go mod edit -json %s", gomod)
	var parsed struct {
		Require []struct{ Path, Version string }
	}
	require.NoError(t, json.Unmarshal(out, &parsed))
	reqs := map[string]string{}
	for _, r := range parsed.Require {
		if collectorModule(r.Path) {
			reqs[r.Path] = r.Version
		}
	}
	return reqs
}

// drift lists the modules both files require at different versions.
func drift(ours, distro map[string]string) []string {
	var out []string
	for path, version := range ours {
		if shipped, ok := distro[path]; ok && shipped != version {
			out = append(out, fmt.Sprintf("%s %s, the distro ships %s", path, version, shipped))
		}
	}
	sort.Strings(out)
	return out
}

func TestCollectorModulesAreTheOnesTheDistroShips(t *testing.T) {
	distroGoMod := os.Getenv("STATSGATE_DISTRO_GOMOD")
	if distroGoMod == "" {
		t.Skip("STATSGATE_DISTRO_GOMOD is not set; run `make versions`, which builds the distro first")
	}
	distro := requirements(t, distroGoMod)
	require.NotEmpty(t, distro, "%s requires no collector module", distroGoMod)

	for _, name := range []string{"go.mod", "bench/go.mod", "test/promparse/go.mod"} {
		t.Run(name, func(t *testing.T) {
			gomod := filepath.Join("..", "..", filepath.FromSlash(name))
			ours := requirements(t, gomod)
			common := 0
			for path := range ours {
				if _, ok := distro[path]; ok {
					common++
				}
			}
			require.NotZero(t, common, "%s and the distro share no collector module: is this the right file?", gomod)
			if d := drift(ours, distro); len(d) > 0 {
				t.Errorf("%s requires collector modules at other versions than the distro (%s):\n  %s\n"+
					"Require the distro's versions (builder-config.yaml decides them), or build the distro from ours.",
					name, distroGoMod, strings.Join(d, "\n  "))
				return
			}
			t.Logf("%d collector modules in common with the distro, all at its versions", common)
		})
	}
}

func TestDrift(t *testing.T) {
	ours := map[string]string{"go.opentelemetry.io/collector/a": "v0.159.0", "go.opentelemetry.io/collector/b": "v1.70.0", "go.opentelemetry.io/collector/c": "v1.0.0"}
	distro := map[string]string{"go.opentelemetry.io/collector/a": "v0.164.0", "go.opentelemetry.io/collector/b": "v1.70.0"}
	require.Equal(t, []string{"go.opentelemetry.io/collector/a v0.159.0, the distro ships v0.164.0"}, drift(ours, distro))
}
