package ociimage

import (
	"encoding/json"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/cniplugins/cniplugins/internal/install"
)

// Annotations that name the image when the archive is loaded:
// containerd's (`ctr images import`, and `docker load`) takes the full
// name, the OCI one is the tag.
const (
	annotationImageName = "io.containerd.image.name"
	annotationRefName   = "org.opencontainers.image.ref.name"
)

// WriteArchive writes idx as an OCI image layout (oci-layout, index.json,
// blobs/sha256/...) packed in one tar at dst, named s.Ref(), plus a
// docker-archive manifest.json over the same blobs, and returns
// the index's digest. The layout is go-containerregistry's; the tar lists
// it sorted, with s.Epoch as every time and owner 0. dst appears
// complete or not at all.
func WriteArchive(idx v1.ImageIndex, s Spec, dst string) (v1.Hash, error) {
	digest, err := idx.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	dir, err := os.MkdirTemp("", "ociimage-")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		annotationImageName: s.Ref(),
		annotationRefName:   s.Version,
	})); err != nil {
		return v1.Hash{}, err
	}
	manifest, err := dockerManifest(idx, s)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := p.WriteFile("manifest.json", manifest, 0o644); err != nil {
		return v1.Hash{}, err
	}
	if err := install.ReplaceFile(dst, 0o644, func(w io.Writer) error { return packDir(w, dir, s.Epoch) }); err != nil {
		return v1.Hash{}, err
	}
	return digest, nil
}

// dockerManifest is the archive's manifest.json, for the loaders that
// read no OCI index (dockerd's own image store, `docker load` before the
// containerd store): one image per architecture, tagged
// <repository>:<version>-<arch>, its config and layers the layout's blobs.
// containerd reads index.json and ignores it.
func dockerManifest(idx v1.ImageIndex, s Spec) ([]byte, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
	var m tarball.Manifest
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		cfg, err := img.ConfigName()
		if err != nil {
			return nil, err
		}
		layers, err := img.Layers()
		if err != nil {
			return nil, err
		}
		e := tarball.Descriptor{Config: blob(cfg), RepoTags: []string{s.Ref() + "-" + d.Platform.Architecture}}
		for _, l := range layers {
			h, err := l.Digest()
			if err != nil {
				return nil, err
			}
			e.Layers = append(e.Layers, blob(h))
		}
		m = append(m, e)
	}
	return json.Marshal(m)
}

// packDir writes dir's tree to w as a tar: sorted, directories 0755 and
// files 0644, owner 0, mtime epoch.
func packDir(w io.Writer, dir string, epoch time.Time) error {
	files, err := readTree(dir, "")
	if err != nil {
		return err
	}
	return writeTar(w, files, epoch)
}
