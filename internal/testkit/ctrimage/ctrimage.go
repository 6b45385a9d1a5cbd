// Package ctrimage makes the container images the tests' runtimes run,
// with no registry to pull from: a pause image of a static Go program,
// and a busybox image of Debian's static busybox, each a docker-archive
// that `ctr images import` loads.
package ctrimage

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
	"runtime"
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

// Pause builds a static pause binary and packs it as the image ref
// (entrypoint /pause) at dir/pause.tar.
func Pause(dir, ref string) (string, error) {
	src := filepath.Join(dir, "pause-src")
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
	return write(dir, "pause.tar", ref, []string{"/pause"}, File{"pause", 0o755, pause, ""})
}

// BusyboxPath is Debian's busybox-static, which scripts/test-deps.sh
// installs: a static executable, so an image of it alone runs.
const BusyboxPath = "/bin/busybox"

// Busybox packs /bin/busybox as the image ref at dir/busybox.tar, with
// /bin/sh and /bin/sleep linked to it; its command is sleep forever.
func Busybox(dir, ref string) (string, error) {
	bb, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return "", fmt.Errorf("busybox: %w (scripts/test-deps.sh installs Debian's busybox-static)", err)
	}
	return write(dir, "busybox.tar", ref, []string{"/bin/sleep", "infinity"},
		File{"bin/busybox", 0o755, bb, ""}, File{"bin/sh", 0o777, nil, "busybox"}, File{"bin/sleep", 0o777, nil, "busybox"})
}

// File is one entry of an image's only layer: a regular file, or a
// symlink when Link is set.
type File struct {
	Name string
	Mode int64
	Data []byte
	Link string
}

// write packs files as a docker-archive of the image ref at dir/name.
func write(dir, name, ref string, entrypoint []string, files ...File) (string, error) {
	archive, err := DockerArchive(ref, entrypoint, files...)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, archive, 0o644)
}

// DockerArchive is a docker-archive (manifest.json, the image config, one
// layer) of the image ref for this machine's architecture.
func DockerArchive(ref string, entrypoint []string, files ...File) ([]byte, error) {
	layer, err := tarOf(files...)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(layer)
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH, "os": "linux",
		"config": map[string]any{"Entrypoint": entrypoint},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(sum[:])}},
	})
	if err != nil {
		return nil, err
	}
	manifest, err := json.Marshal([]map[string]any{{
		"Config": "config.json", "RepoTags": []string{ref}, "Layers": []string{"layer.tar"},
	}})
	if err != nil {
		return nil, err
	}
	return tarOf(File{"layer.tar", 0o644, layer, ""}, File{"config.json", 0o644, config, ""}, File{"manifest.json", 0o644, manifest, ""})
}

func tarOf(files ...File) ([]byte, error) {
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	for _, f := range files {
		h := &tar.Header{Name: f.Name, Mode: f.Mode, Size: int64(len(f.Data)), Typeflag: tar.TypeReg}
		if f.Link != "" {
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, f.Link, 0
		}
		if err := w.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := w.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
