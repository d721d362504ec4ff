package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// imageFile is a regular file of the image's file system as its layers hold
// it: ownership and mode as they will be in every container.
type imageFile struct {
	UID, GID int
	Mode     int64
	Data     []byte
}

// ociDescriptor is the part of an OCI content descriptor the reader needs.
type ociDescriptor struct {
	MediaType string       `json:"mediaType"`
	Digest    string       `json:"digest"`
	Platform  *ociPlatform `json:"platform,omitempty"`
}

type ociPlatform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
}

const (
	ociIndex    = "application/vnd.oci.image.index.v1+json"
	ociManifest = "application/vnd.oci.image.manifest.v1+json"
)

// imageFiles reads the regular files named in want from the linux/arch image
// in an OCI archive (the output of `podman manifest push --all --format oci`):
// index.json -> the image index (manifest list) -> the platform's manifest ->
// layers, applied in order. It reads the archive itself rather than a
// container, so it sees what a registry or `docker load` would get.
// Whiteouts are not handled: an image built FROM scratch with COPY alone has
// none, and a whiteout found is an error.
func imageFiles(archive, arch string, want ...string) (map[string]imageFile, error) {
	blobs, err := readBlobs(archive)
	if err != nil {
		return nil, err
	}
	var top struct {
		Manifests []ociDescriptor `json:"manifests"`
	}
	if err := json.Unmarshal(blobs["index.json"], &top); err != nil {
		return nil, fmt.Errorf("index.json: %w", err)
	}
	if len(top.Manifests) != 1 || top.Manifests[0].MediaType != ociIndex {
		return nil, fmt.Errorf("index.json lists %+v, want one image index", top.Manifests)
	}
	var index struct {
		Manifests []ociDescriptor `json:"manifests"`
	}
	if err := json.Unmarshal(blobs[blobPath(top.Manifests[0].Digest)], &index); err != nil {
		return nil, fmt.Errorf("image index: %w", err)
	}
	var desc *ociDescriptor
	for i, m := range index.Manifests {
		if m.MediaType == ociManifest && m.Platform != nil && m.Platform.OS == "linux" && m.Platform.Architecture == arch {
			if desc != nil {
				return nil, fmt.Errorf("the image index lists linux/%s twice", arch)
			}
			desc = &index.Manifests[i]
		}
	}
	if desc == nil {
		return nil, fmt.Errorf("the image index has no image for linux/%s: %+v", arch, index.Manifests)
	}
	var manifest struct {
		Layers []ociDescriptor `json:"layers"`
	}
	if err := json.Unmarshal(blobs[blobPath(desc.Digest)], &manifest); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	wanted := make(map[string]bool, len(want))
	for _, name := range want {
		wanted[strings.TrimPrefix(name, "/")] = true
	}
	files := make(map[string]imageFile)
	for _, layer := range manifest.Layers {
		blob, ok := blobs[blobPath(layer.Digest)]
		if !ok {
			return nil, fmt.Errorf("layer %s is not in the archive", layer.Digest)
		}
		var r io.Reader = bytes.NewReader(blob)
		switch layer.MediaType {
		case "application/vnd.oci.image.layer.v1.tar":
		case "application/vnd.oci.image.layer.v1.tar+gzip":
			if r, err = gzip.NewReader(r); err != nil {
				return nil, fmt.Errorf("layer %s: %w", layer.Digest, err)
			}
		default:
			return nil, fmt.Errorf("layer %s: media type %q not handled", layer.Digest, layer.MediaType)
		}
		tr := tar.NewReader(r)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("layer %s: %w", layer.Digest, err)
			}
			name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
			if strings.HasPrefix(path.Base(name), ".wh.") {
				return nil, fmt.Errorf("layer %s has a whiteout (%s), which this reader does not apply", layer.Digest, name)
			}
			if !wanted[name] || hdr.Typeflag != tar.TypeReg {
				continue
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				return nil, fmt.Errorf("layer %s: %s: %w", layer.Digest, name, err)
			}
			files["/"+name] = imageFile{UID: hdr.Uid, GID: hdr.Gid, Mode: hdr.Mode & 0o7777, Data: data}
		}
	}
	return files, nil
}

// readBlobs holds every file of the archive (index.json and blobs/sha256/*)
// in memory, by path: the image is a few tens of MB.
func readBlobs(archive string) (map[string][]byte, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	blobs := make(map[string][]byte)
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return blobs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", archive, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", archive, hdr.Name, err)
		}
		blobs[path.Clean(hdr.Name)] = data
	}
}

// blobPath is where an OCI layout keeps the blob with this digest.
func blobPath(digest string) string {
	algo, hex, _ := strings.Cut(digest, ":")
	return path.Join("blobs", algo, hex)
}
