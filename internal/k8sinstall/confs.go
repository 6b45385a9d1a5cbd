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
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cniplugins/cniplugins/internal/install"
	"github.com/cniplugins/cniplugins/internal/ops"
)

// maxConfSize bounds what is read from the ConfigMap: a network
// configuration is kilobytes; anything near this is not one.
const maxConfSize = 1 << 20

// Confs copies the network configurations of a mounted ConfigMap into the
// node's net.d. Whoever may edit the ConfigMap is not trusted as much as
// the node: net.d is shared with other software, and what containerd
// loads from it decides whether any pod of the node starts.
type Confs struct {
	// Source is the mounted ConfigMap: each of its keys libcni would load
	// (.conflist, .conf, .json) is installed under its own name, read as
	// readSource allows (hidden keys skipped, no link followed but the
	// kubelet's own).
	Source string
	// NetDir is the node's net.d. Only the source's names are ever
	// written there, and only over files that are absent or that the
	// installer wrote (install.RecordName); nothing is removed.
	NetDir string
	// Validate returns the problems of a configuration file, given by its
	// name and content (nil: none): validate's checks.
	Validate func(name string, data []byte) []ops.Problem
	// Runtime, when its BinDir is set, checks each file as the runtime
	// will run it (every plugin in the bin dir, speaking the file's
	// versions).
	Runtime Runtime
}

// Report is what one pass did.
type Report struct {
	Written []string // the files of net.d it wrote
	Skipped []string // hidden keys of the ConfigMap, never installed
	Notes   []string // what could not be checked fully, for the log
	// Installed counts the ConfigMap's files that net.d holds as the
	// pass left it, written or already equal: set only when the pass
	// succeeded (a refused or failed pass leaves net.d as it was, which
	// the caller knows from its last success).
	Installed int
}

// Install checks every file of the ConfigMap and every file of net.d it
// would replace, then, only when all pass, writes each one whose content
// differs from what net.d holds (atomically: the runtime, which watches
// net.d, reads the old file or the new one, whole). A ConfigMap with any
// problem writes nothing: net.d keeps the configuration that worked, and
// the error names each file and why. ctx ends the pass (SIGTERM) early,
// with nothing written.
func (c Confs) Install(ctx context.Context) (Report, error) {
	files, skipped, err := readSource(c.Source)
	rep := Report{Skipped: skipped}
	if err != nil {
		return rep, refused(c.Source, err)
	}
	var failed []error
	asked := map[string]pluginVersions{}
	for _, f := range files {
		var errs []error
		if c.Validate != nil {
			for _, p := range c.Validate(f.name, f.data) {
				// A warning (a quota a pod's author can get around) is
				// the operator's to weigh, not a broken network: said,
				// and installed.
				if p.Warning() {
					rep.Notes = append(rep.Notes, p.String())
					continue
				}
				errs = append(errs, errors.New(p.String()))
			}
		}
		if c.Runtime.BinDir != "" {
			problems, notes, err := c.Runtime.check(ctx, f, asked)
			if err != nil {
				return rep, err
			}
			rep.Notes = append(rep.Notes, notes...)
			for _, p := range problems {
				errs = append(errs, errors.New(p))
			}
		}
		if len(errs) > 0 {
			failed = append(failed, fmt.Errorf("%s not installed: %w", f.name, errors.Join(errs...)))
		}
	}
	rec, err := install.ReadRecord(c.NetDir)
	if err != nil {
		return rep, refused(c.Source, err)
	}
	for _, f := range files {
		if err := install.CheckOwned(c.NetDir, f.name, rec, f.data, maxConfSize); err != nil {
			failed = append(failed, fmt.Errorf("%s not installed: %w; rename the ConfigMap's key, or remove that file if it is a leftover", f.name, err))
		}
	}
	if len(failed) > 0 {
		return rep, refused(c.Source, errors.Join(failed...))
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	rep, err = c.write(files, rec, rep)
	if err == nil {
		rep.Installed = len(files)
	}
	return rep, err
}

// write installs files over net.d. The record names each new content
// before its file is renamed in and only it after, so wherever the
// installer stops, every file it wrote is one it recognises as its own.
func (c Confs) write(files []sourceFile, rec install.Record, rep Report) (Report, error) {
	var changed []sourceFile
	recDirty := false
	for _, f := range files {
		sum := install.Sum(f.data)
		old, err := install.ReadRegular(filepath.Join(c.NetDir, f.name), maxConfSize)
		if err == nil && bytes.Equal(old, f.data) {
			// Unchanged; recorded now if it was installed before the
			// record existed (CheckOwned accepted it as equal).
			if len(rec[f.name]) != 1 || !rec.Holds(f.name, sum) {
				rec.Set(f.name, sum)
				recDirty = true
			}
			continue
		}
		rec.Add(f.name, sum)
		changed = append(changed, f)
		recDirty = true
	}
	if !recDirty {
		return rep, nil
	}
	if err := rec.Write(c.NetDir); err != nil {
		return rep, err
	}
	var failed []error
	for _, f := range changed {
		dst := filepath.Join(c.NetDir, f.name)
		if err := install.ReplaceBytes(dst, 0o644, f.data); err != nil {
			failed = append(failed, err)
			continue
		}
		rec.Set(f.name, install.Sum(f.data))
		rep.Written = append(rep.Written, dst)
	}
	if len(changed) > 0 {
		if err := rec.Write(c.NetDir); err != nil {
			failed = append(failed, err)
		}
	}
	return rep, errors.Join(failed...)
}

// RefusedError is the error of a ConfigMap that is not installed for
// what it holds (its files' problems, a name net.d gives another
// owner), as against a pass that could not write: the installer counts
// refusals apart (cniplugins_install_refusals_total).
type RefusedError struct {
	Source string
	Err    error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the ConfigMap %s is refused, nothing of it is installed:\n%v", e.Source, indent(e.Err))
}

func (e *RefusedError) Unwrap() error { return e.Err }

// refused is the error of a ConfigMap that is not installed.
func refused(source string, err error) error {
	return &RefusedError{Source: source, Err: err}
}

// indent puts each line of err's message on its own indented line.
func indent(err error) error {
	return errors.New("  " + strings.ReplaceAll(err.Error(), "\n", "\n  "))
}
