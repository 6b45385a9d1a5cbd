package cri

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// pauseSource is the sandbox's only process: it waits for SIGTERM or
// SIGINT, as the kubelet's pause image does.
const pauseSource = `package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
`

// buildPause builds a static pause binary and packs it as a
// docker-archive (manifest.json, image config with Entrypoint ["/pause"],
// one layer) at root/pause.tar.
func buildPause(root string) (string, error) {
	src := filepath.Join(root, "pause-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(pauseSource), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module pause\n\ngo 1.21\n"), 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(src, "pause")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build pause: %v\n%s", err, out)
	}
	pause, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	archive, err := dockerArchive(pause)
	if err != nil {
		return "", err
	}
	tarPath := filepath.Join(root, "pause.tar")
	return tarPath, os.WriteFile(tarPath, archive, 0o644)
}

// importImage loads the pause image into c's k8s.io namespace, where the
// CRI plugin finds its sandbox image.
func (c *containerd) importImage(tarPath string) error {
	imp := exec.Command(c.rel.bin("ctr"), "-a", c.sock, "-n", "k8s.io", "images", "import", "--snapshotter", "native", tarPath)
	if out, err := imp.CombinedOutput(); err != nil {
		return fmt.Errorf("ctr images import: %v\n%s", err, out)
	}
	return nil
}

func dockerArchive(pause []byte) ([]byte, error) {
	layer, err := tarOf(tarFile{"pause", 0o755, pause})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(layer)
	config, err := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Entrypoint": []string{"/pause"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(sum[:])}},
	})
	if err != nil {
		return nil, err
	}
	manifest, err := json.Marshal([]map[string]any{{
		"Config": "config.json", "RepoTags": []string{pauseImage}, "Layers": []string{"layer.tar"},
	}})
	if err != nil {
		return nil, err
	}
	return tarOf(tarFile{"layer.tar", 0o644, layer}, tarFile{"config.json", 0o644, config}, tarFile{"manifest.json", 0o644, manifest})
}

type tarFile struct {
	name string
	mode int64
	data []byte
}

func tarOf(files ...tarFile) ([]byte, error) {
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	for _, f := range files {
		if err := w.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
