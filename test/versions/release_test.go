package versions

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The distro is of one collector release: every core component at the
// release's v0 version (v1 for the stable modules, all at one v1 version),
// every contrib component at one version of the same minor release. The
// builder that assembles it (Makefile's BUILDER_VERSION) names the release.
//
// helperReplacements are the collector modules builder-config.yaml may
// replace with another version, each for one release only: a helper module
// the Go module proxy refuses at the release's version. A component is never
// replaced.
var helperReplacements = map[string]struct{ release, version, why string }{
	"go.opentelemetry.io/collector/internal/statusutil": {
		release: "v0.164.0",
		version: "v0.165.0",
		why:     "the proxy refuses it at v0.163.0 and v0.164.0; v0.165.0 has the same source and no collector requirement",
	},
}

// release is one collector release, as its modules are versioned.
type release struct {
	core    string // the v0 version of core modules, e.g. v0.164.0
	minor   string // its minor version, e.g. "164"
	stable  string // the v1 version of core's stable modules, "" while unknown
	contrib string // the version of contrib's modules, "" while unknown
}

var v0Version = regexp.MustCompile(`^v0\.(\d+)\.\d+$`)

func newRelease(core string) (release, error) {
	m := v0Version.FindStringSubmatch(core)
	if m == nil {
		return release{}, fmt.Errorf("%q is not a v0 collector release", core)
	}
	return release{core: core, minor: m[1]}, nil
}

func isCore(path string) bool {
	return path == "go.opentelemetry.io/collector" || strings.HasPrefix(path, "go.opentelemetry.io/collector/")
}

// check reports why path at version is not of the release, or "". The first
// stable and contrib versions it meets become the release's.
func (r *release) check(path, version string) string {
	switch {
	case isCore(path) && strings.HasPrefix(version, "v0."):
		if version != r.core {
			return fmt.Sprintf("%s %s: core is at %s", path, version, r.core)
		}
	case isCore(path) && strings.HasPrefix(version, "v1."):
		if r.stable == "" {
			r.stable = version
		} else if version != r.stable {
			return fmt.Sprintf("%s %s: core's stable modules are at %s", path, version, r.stable)
		}
	case isCore(path):
		return fmt.Sprintf("%s %s: neither the release's v0 nor its v1 version", path, version)
	case collectorModule(path):
		if m := v0Version.FindStringSubmatch(version); m == nil || m[1] != r.minor {
			return fmt.Sprintf("%s %s: contrib must be at v0.%s.x, the release of core %s", path, version, r.minor, r.core)
		}
		if r.contrib == "" {
			r.contrib = version
		} else if version != r.contrib {
			return fmt.Sprintf("%s %s: contrib is at %s", path, version, r.contrib)
		}
	}
	return ""
}

// builderConfig is what the release check reads of builder-config.yaml.
type builderConfig struct {
	Receivers, Processors, Exporters, Extensions, Connectors, Providers []component
	Replaces                                                            []string `yaml:"replaces"`
}

// component is an entry of builder-config.yaml, its gomod "module version".
type component struct {
	GoMod string `yaml:"gomod"`
}

// components lists the gomod entries of every kind, "path version" each.
func (c builderConfig) components() []string {
	var out []string
	for _, kind := range [][]component{c.Receivers, c.Processors, c.Exporters, c.Extensions, c.Connectors, c.Providers} {
		for _, e := range kind {
			out = append(out, e.GoMod)
		}
	}
	return out
}

// offRelease lists the components of the builder config that are not of the
// release, and the replacements of collector modules it does not allow; r
// learns the release's stable and contrib versions from the components.
func offRelease(r *release, cfg builderConfig) []string {
	var out []string
	components := map[string]bool{}
	for _, gomod := range cfg.components() {
		path, version, ok := strings.Cut(strings.TrimSpace(gomod), " ")
		if !ok {
			out = append(out, fmt.Sprintf("%q: want \"module version\"", gomod))
			continue
		}
		components[path] = true
		if why := r.check(path, strings.TrimSpace(version)); why != "" {
			out = append(out, why)
		}
	}
	for _, replace := range cfg.Replaces {
		old, repl, _ := strings.Cut(replace, "=>")
		old, repl = strings.TrimSpace(old), strings.TrimSpace(repl)
		fields := strings.Fields(old)
		if len(fields) == 0 || !collectorModule(fields[0]) {
			continue
		}
		path := fields[0]
		allowed, ok := helperReplacements[path]
		switch {
		case components[path]:
			out = append(out, fmt.Sprintf("replaces %s: a component is never replaced", replace))
		case !ok:
			out = append(out, fmt.Sprintf("replaces %s: not a helper module the release is allowed to replace (helperReplacements)", replace))
		case allowed.release != r.core:
			out = append(out, fmt.Sprintf("replaces %s: allowed for release %s only (%s); check whether %s needs it", replace, allowed.release, allowed.why, r.core))
		case repl != path+" "+allowed.version:
			out = append(out, fmt.Sprintf("replaces %s: allowed only with %s %s", replace, path, allowed.version))
		}
	}
	sort.Strings(out)
	return out
}

// builderRelease is the release of the builder the Makefile installs.
func builderRelease(t *testing.T) release {
	t.Helper()
	makefile, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^BUILDER_VERSION\s*:=\s*(\S+)$`).FindSubmatch(makefile)
	require.NotNil(t, m, "no BUILDER_VERSION in the Makefile")
	r, err := newRelease(string(m[1]))
	require.NoError(t, err)
	return r
}

func TestCollectorModulesOfOneRelease(t *testing.T) {
	r := builderRelease(t)
	raw, err := os.ReadFile(filepath.Join("..", "..", "builder-config.yaml"))
	require.NoError(t, err)
	var cfg builderConfig
	require.NoError(t, yaml.Unmarshal(raw, &cfg))
	require.NotEmpty(t, cfg.components())

	t.Run("builder-config.yaml", func(t *testing.T) {
		if off := offRelease(&r, cfg); len(off) > 0 {
			t.Fatalf("builder-config.yaml is not of one collector release (the builder, Makefile's BUILDER_VERSION, is %s):\n  %s\n"+
				"Move every component to the release (README.md, Building, says why this one).", r.core, strings.Join(off, "\n  "))
		}
		t.Logf("%d components, all of release %s (contrib %s)", len(cfg.components()), r.core, r.contrib)
	})

	// What the builder resolved: a component of another release drags its
	// own requirements in, so the distro's go.mod shows it even when the
	// components' pins look alike.
	t.Run("_build/go.mod", func(t *testing.T) {
		distroGoMod := os.Getenv("STATSGATE_DISTRO_GOMOD")
		if distroGoMod == "" {
			t.Skip("STATSGATE_DISTRO_GOMOD is not set; run `make versions`, which builds the distro first")
		}
		resolved := r
		reqs := requirements(t, distroGoMod)
		// The stable version is component's, which every component requires.
		resolved.stable = reqs["go.opentelemetry.io/collector/component"]
		paths := make([]string, 0, len(reqs))
		for path := range reqs {
			paths = append(paths, path)
		}
		sort.Strings(paths)
		var off []string
		for _, path := range paths {
			if why := resolved.check(path, reqs[path]); why != "" {
				off = append(off, why)
			}
		}
		if len(off) > 0 {
			t.Fatalf("the distro resolved collector modules of another release than %s:\n  %s", r.core, strings.Join(off, "\n  "))
		}
		t.Logf("%d collector modules resolved, all of release %s (stable %s, contrib %s)", len(reqs), r.core, resolved.stable, resolved.contrib)
	})
}

func TestOffRelease(t *testing.T) {
	r, err := newRelease("v0.164.0")
	require.NoError(t, err)
	gomods := func(lines ...string) (out []component) {
		for _, l := range lines {
			out = append(out, component{GoMod: l})
		}
		return out
	}
	const (
		receiver = "go.opentelemetry.io/collector/receiver/otlpreceiver"
		stable   = "go.opentelemetry.io/collector/confmap/provider/envprovider"
		batch    = "go.opentelemetry.io/collector/processor/batchprocessor"
		bearer   = "github.com/open-telemetry/opentelemetry-collector-contrib/extension/bearertokenauthextension"
		pprof    = "github.com/open-telemetry/opentelemetry-collector-contrib/extension/pprofextension"
		statusu  = "go.opentelemetry.io/collector/internal/statusutil"
	)
	tests := []struct {
		name string
		cfg  builderConfig
		want []string
	}{
		{
			name: "one release",
			cfg: builderConfig{
				Receivers:  gomods(receiver + " v0.164.0"),
				Processors: gomods(batch + " v0.164.0"),
				Extensions: gomods(bearer+" v0.164.1", pprof+" v0.164.1"),
				Providers:  gomods(stable + " v1.70.0"),
				Replaces:   []string{"github.com/statsgate/statsgate => ../", statusu + " => " + statusu + " v0.165.0"},
			},
		},
		{
			name: "core component of an older release",
			cfg:  builderConfig{Receivers: gomods(receiver + " v0.162.0"), Processors: gomods(batch + " v0.164.0")},
			want: []string{receiver + " v0.162.0: core is at v0.164.0"},
		},
		{
			name: "contrib component of an older release",
			cfg:  builderConfig{Extensions: gomods(bearer+" v0.164.1", "github.com/open-telemetry/opentelemetry-collector-contrib/extension/basicauthextension v0.155.0")},
			want: []string{"github.com/open-telemetry/opentelemetry-collector-contrib/extension/basicauthextension v0.155.0: contrib must be at v0.164.x, the release of core v0.164.0"},
		},
		{
			name: "contrib components of two patch releases",
			cfg:  builderConfig{Extensions: gomods(bearer+" v0.164.1", pprof+" v0.164.0")},
			want: []string{pprof + " v0.164.0: contrib is at v0.164.1"},
		},
		{
			name: "stable modules of two versions",
			cfg:  builderConfig{Providers: gomods(stable+" v1.70.0", "go.opentelemetry.io/collector/confmap/provider/fileprovider v1.71.0")},
			want: []string{"go.opentelemetry.io/collector/confmap/provider/fileprovider v1.71.0: core's stable modules are at v1.70.0"},
		},
		{
			name: "a component replaced",
			cfg:  builderConfig{Receivers: gomods(receiver + " v0.164.0"), Replaces: []string{receiver + " => " + receiver + " v0.165.0"}},
			want: []string{"replaces " + receiver + " => " + receiver + " v0.165.0: a component is never replaced"},
		},
		{
			name: "a helper replaced without a reason",
			cfg:  builderConfig{Replaces: []string{"go.opentelemetry.io/collector/pdata => go.opentelemetry.io/collector/pdata v1.71.0"}},
			want: []string{"replaces go.opentelemetry.io/collector/pdata => go.opentelemetry.io/collector/pdata v1.71.0: not a helper module the release is allowed to replace (helperReplacements)"},
		},
		{
			name: "an allowed helper replaced with another version",
			cfg:  builderConfig{Replaces: []string{statusu + " => " + statusu + " v0.166.0"}},
			want: []string{"replaces " + statusu + " => " + statusu + " v0.166.0: allowed only with " + statusu + " v0.165.0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := r
			require.Equal(t, tt.want, offRelease(&r, tt.cfg))
		})
	}

	next, err := newRelease("v0.165.0")
	require.NoError(t, err)
	require.Equal(t, []string{"replaces " + statusu + " => " + statusu + " v0.165.0: allowed for release v0.164.0 only (" +
		helperReplacements[statusu].why + "); check whether v0.165.0 needs it"},
		offRelease(&next, builderConfig{Replaces: []string{statusu + " => " + statusu + " v0.165.0"}}))
}
