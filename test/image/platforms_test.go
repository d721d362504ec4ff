package image

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// elfMachine is the ELF machine of a binary built for each GOARCH the image
// may be built for.
var elfMachine = map[string]elf.Machine{
	"amd64": elf.EM_X86_64,
	"arm64": elf.EM_AARCH64,
}

func TestImageIndexListsEveryPlatform(t *testing.T) {
	s := imageSettings(t)
	// What a registry would serve for the tag: the image index itself.
	out, err := exec.Command(s.skopeo, "inspect", "--raw", "oci-archive:"+s.archive).Output()
	require.NoError(t, err, "skopeo inspect --raw: %s", stderrOf(err))
	var index struct {
		MediaType string          `json:"mediaType"`
		Manifests []ociDescriptor `json:"manifests"`
	}
	require.NoError(t, json.Unmarshal(out, &index), "%s", out)
	assert.Equal(t, ociIndex, index.MediaType, "the archive's image is an OCI image index")
	var got []string
	for _, m := range index.Manifests {
		assert.Equal(t, ociManifest, m.MediaType, "%s", m.Digest)
		if assert.NotNil(t, m.Platform, "%s has no platform", m.Digest) {
			got = append(got, m.Platform.OS+"/"+m.Platform.Architecture)
		}
	}
	want := append([]string(nil), s.platforms...)
	sort.Strings(want)
	sort.Strings(got)
	assert.Equal(t, want, got)
	assert.Subset(t, got, []string{"linux/amd64", "linux/arm64"})
}

func TestImageOfEveryPlatformRunsABinaryForItsArchitecture(t *testing.T) {
	s := imageSettings(t)
	var configs []imageConfig
	for i, platform := range s.platforms {
		t.Run(platform, func(t *testing.T) {
			goos, arch, _ := strings.Cut(platform, "/")
			machine, ok := elfMachine[arch]
			require.True(t, ok, "no ELF machine known for %s", arch)

			// The image config skopeo picks for the platform declares it.
			out, err := exec.Command(s.skopeo, "inspect", "--override-os", goos, "--override-arch", arch,
				"--config", "oci-archive:"+s.archive).Output()
			require.NoError(t, err, "skopeo inspect --config: %s", stderrOf(err))
			var cfg struct {
				OS           string      `json:"os"`
				Architecture string      `json:"architecture"`
				Config       imageConfig `json:"config"`
			}
			require.NoError(t, json.Unmarshal(out, &cfg), "%s", out)
			assert.Equal(t, platform, cfg.OS+"/"+cfg.Architecture, "the image config's platform")
			configs = append(configs, cfg.Config)

			// The entrypoint in its layers: a static ELF for its machine, the
			// binary make image built for the platform, byte for byte.
			files, err := imageFiles(s.archive, arch, entrypoint)
			require.NoError(t, err)
			bin, ok := files[entrypoint]
			require.True(t, ok, "%s is not in the linux/%s image", entrypoint, arch)
			f, err := elf.NewFile(bytes.NewReader(bin.Data))
			require.NoError(t, err, "%s of the linux/%s image is not an ELF file", entrypoint, arch)
			assert.Equal(t, elf.ELFCLASS64, f.Class)
			assert.Equal(t, machine, f.Machine)
			assert.Equal(t, elf.ET_EXEC, f.Type, "a static executable, not position independent")
			for _, p := range f.Progs {
				assert.NotEqual(t, elf.PT_INTERP, p.Type, "a static binary asks for no dynamic loader")
			}
			built, err := os.ReadFile(s.binaries[i])
			require.NoError(t, err)
			assert.Equal(t, sha256.Sum256(built), sha256.Sum256(bin.Data), "%s of the linux/%s image is %s", entrypoint, arch, s.binaries[i])
		})
	}
	// One Containerfile: user, entrypoint, command and ports alike on every platform.
	for i := 1; i < len(configs); i++ {
		assert.Equal(t, configs[0], configs[i])
	}
}
