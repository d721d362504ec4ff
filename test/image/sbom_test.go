package image

import (
	"debug/buildinfo"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ourModule is this repository's module, which holds the distro's own
// components; the builder's sources replace it with the repository (../).
const ourModule = "github.com/statsgate/statsgate"

var builderConfig = filepath.Join("..", "..", "builder-config.yaml")

// cyclonedxComponent is the part of a CycloneDX component the test reads.
type cyclonedxComponent struct {
	Type    string `json:"type"`
	Name    string `json:"name"`
	Version string `json:"version"`
	PURL    string `json:"purl"`
}

var (
	gomodLine   = regexp.MustCompile(`(?m)^\s*- gomod: (\S+) (\S+)\s*$`)
	distVersion = regexp.MustCompile(`(?m)^  version: (\S+)\s*$`)
)

// builderManifest is what builder-config.yaml pins: the distro's version
// and each component's module at its version.
func builderManifest(t *testing.T) (version string, modules map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(builderConfig)
	require.NoError(t, err)
	m := distVersion.FindSubmatch(raw)
	require.NotNil(t, m, "no dist version in %s", builderConfig)
	modules = make(map[string]string)
	for _, m := range gomodLine.FindAllSubmatch(raw, -1) {
		modules[string(m[1])] = string(m[2])
	}
	require.NotEmpty(t, modules, "no gomod in %s", builderConfig)
	return "v" + string(m[1]), modules
}

func TestSBOMListsEveryModuleOfTheBinaryAtItsVersion(t *testing.T) {
	s := imageSettings(t)
	raw, err := os.ReadFile(s.sbom)
	require.NoError(t, err)
	var bom struct {
		BOMFormat   string `json:"bomFormat"`
		SpecVersion string `json:"specVersion"`
		Metadata    struct {
			Component cyclonedxComponent `json:"component"`
		} `json:"metadata"`
		Components []cyclonedxComponent `json:"components"`
	}
	require.NoError(t, json.Unmarshal(raw, &bom))
	assert.Equal(t, "CycloneDX", bom.BOMFormat)
	assert.NotEmpty(t, bom.SpecVersion)

	version, pinned := builderManifest(t)
	components := make(map[string]string, len(bom.Components))
	for _, c := range bom.Components {
		assert.Equal(t, "library", c.Type, "%s", c.Name)
		assert.Equal(t, "pkg:golang/"+c.Name+"@"+c.Version, c.PURL, "%s", c.Name)
		_, dup := components[c.Name]
		assert.False(t, dup, "%s is listed twice", c.Name)
		components[c.Name] = c.Version
	}

	t.Run("the main module is the distro at its version", func(t *testing.T) {
		info, err := buildinfo.ReadFile(s.binaries[0])
		require.NoError(t, err)
		assert.Equal(t, "github.com/statsgate/statsgate/otelcol-statsgate", info.Main.Path, "dist::module of builder-config.yaml")
		main := bom.Metadata.Component
		assert.Equal(t, cyclonedxComponent{
			Type: "application", Name: info.Main.Path, Version: version,
			PURL: "pkg:golang/" + info.Main.Path + "@" + version,
		}, main)
	})

	t.Run("every component of builder-config.yaml at its pinned version", func(t *testing.T) {
		require.Contains(t, pinned, "go.opentelemetry.io/collector/receiver/otlpreceiver")
		assert.Equal(t, pinned["go.opentelemetry.io/collector/receiver/otlpreceiver"],
			components["go.opentelemetry.io/collector/receiver/otlpreceiver"], "otlpreceiver")
		for mod, v := range pinned {
			if mod == ourModule {
				// Replaced by the repository: listed at the distro's version.
				assert.Equal(t, version, components[mod], "%s", mod)
				continue
			}
			assert.Equal(t, v, components[mod], "%s", mod)
		}
	})

	// The SBOM is made from one binary; every platform's binary must link
	// exactly the modules it lists, at the versions it lists.
	for i, platform := range s.platforms {
		t.Run("the modules linked into the "+platform+" binary", func(t *testing.T) {
			info, err := buildinfo.ReadFile(s.binaries[i])
			require.NoError(t, err)
			want := make(map[string]string, len(info.Deps))
			for _, dep := range info.Deps {
				switch {
				case dep.Replace == nil:
					want[dep.Path] = dep.Version
				case dep.Replace.Version == "" || dep.Replace.Version == "(devel)":
					// A replacement by a directory: our module.
					assert.Equal(t, ourModule, dep.Path)
					want[dep.Path] = version
				default:
					want[dep.Path] = dep.Replace.Version
				}
			}
			assert.Empty(t, diffModules(want, components), "the binary's modules (-) against the SBOM's (+)")
		})
	}
}

// diffModules lists each module whose version differs between binary and
// sbom, as "-path version" and "+path version" lines, sorted.
func diffModules(binary, sbom map[string]string) []string {
	var out []string
	for path, v := range binary {
		if sbom[path] != v {
			out = append(out, "-"+path+" "+v)
		}
	}
	for path, v := range sbom {
		if binary[path] != v {
			out = append(out, "+"+path+" "+v)
		}
	}
	sort.Strings(out)
	return out
}
