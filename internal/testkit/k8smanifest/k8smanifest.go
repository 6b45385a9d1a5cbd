// Package k8smanifest reads the manifests of deploy/kubernetes for the
// tests: strictly, with the Kubernetes API's own types (a field the API
// does not know, or a duplicate, is an error), and lays out a ConfigMap's
// data as the kubelet mounts it.
package k8smanifest

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/cniplugins/cniplugins/internal/testkit"
)

// Dir is deploy/kubernetes.
func Dir() string { return filepath.Join(testkit.RepoRoot(), "deploy", "kubernetes") }

// Decode reads deploy/kubernetes/name into v strictly.
func Decode(name string, v any) error {
	b, err := os.ReadFile(filepath.Join(Dir(), name))
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		return fmt.Errorf("%s does not decode strictly: %w", name, err)
	}
	return nil
}

// ConfigMapVolume is a directory laid out as the kubelet mounts a
// ConfigMap: each key a symlink through ..data to a timestamped
// directory; an update writes a new directory and swaps ..data to it in
// one rename, which is all a reader of the keys ever sees change.
type ConfigMapVolume struct {
	Dir string
	gen int
}

// NewConfigMapVolume lays data out in dir (which exists).
func NewConfigMapVolume(dir string, data map[string]string) (*ConfigMapVolume, error) {
	v := &ConfigMapVolume{Dir: dir}
	if err := v.Update(data); err != nil {
		return nil, err
	}
	for name := range data {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Update swaps the volume's content to data (the same keys).
func (v *ConfigMapVolume) Update(data map[string]string) error {
	v.gen++
	gen := fmt.Sprintf("..2026_11_26_13_00_%02d.%d", v.gen%60, v.gen)
	if err := os.Mkdir(filepath.Join(v.Dir, gen), 0o755); err != nil {
		return err
	}
	for name, body := range data {
		if err := os.WriteFile(filepath.Join(v.Dir, gen, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	tmp := filepath.Join(v.Dir, "..data_tmp")
	if err := os.Symlink(gen, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(v.Dir, "..data"))
}
