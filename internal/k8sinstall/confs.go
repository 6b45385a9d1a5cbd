// Package k8sinstall is the work of `cniplugins k8s-install`, the
// entrypoint of the container image that a DaemonSet runs on every node:
// install the binary and its links into the node's CNI bin dir
// (internal/install's rules, atomically), install the network
// configurations of a mounted ConfigMap into the node's net.d, then
// either return (an init container) or stay, installing the ConfigMap's
// files again when they change and, in the full flavour, reconciling the
// node's reservations against the runtime's live sandboxes on a timer.
package k8sinstall

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cniplugins/cniplugins/internal/install"
	"github.com/cniplugins/cniplugins/internal/ops"
)

// maxConfSize bounds what is read from the ConfigMap: a network
// configuration is kilobytes; anything near this is not one.
const maxConfSize = 1 << 20

// Confs copies the network configurations of a mounted directory into
// the node's net.d.
type Confs struct {
	// Source is the mounted ConfigMap: every file libcni would load from
	// it (.conflist, .conf, .json; the ConfigMap's ..data entries are none
	// of those) is installed under its own name.
	Source string
	// NetDir is the node's net.d. Only the source's names are ever
	// written there; no other file is touched or removed.
	NetDir string
	// Validate returns the problems of a configuration file (nil: none);
	// a file with problems is not installed and the installed one stays.
	Validate func(file string) []ops.Problem
}

// Install writes each source file whose content differs from what NetDir
// holds under its name (atomically: the runtime, which watches net.d,
// reads the old file or the new one, whole) and returns the names it
// wrote. A file that cannot be read or does not validate is skipped, and
// named in the returned error; the others are still installed.
func (c Confs) Install() ([]string, error) {
	files, err := ops.ConfFiles(c.Source)
	if err != nil {
		return nil, err
	}
	var written []string
	var failed []error
	for _, src := range files {
		name := filepath.Base(src)
		data, err := readConf(src)
		if err == nil && c.Validate != nil {
			err = problems(c.Validate(src))
		}
		if err != nil {
			failed = append(failed, fmt.Errorf("%s not installed: %w", name, err))
			continue
		}
		dst := filepath.Join(c.NetDir, name)
		if old, err := os.ReadFile(dst); err == nil && bytes.Equal(old, data) {
			continue
		}
		if err := install.ReplaceFile(dst, 0o644, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
			failed = append(failed, err)
			continue
		}
		written = append(written, dst)
	}
	return written, errors.Join(failed...)
}

// readConf reads a regular file (a ConfigMap's key is a symlink to one)
// of at most maxConfSize bytes.
func readConf(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (mode %s)", fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxConfSize {
		return nil, fmt.Errorf("larger than %d bytes", maxConfSize)
	}
	return data, nil
}

func problems(ps []ops.Problem) error {
	var errs []error
	for _, p := range ps {
		errs = append(errs, errors.New(p.String()))
	}
	return errors.Join(errs...)
}
