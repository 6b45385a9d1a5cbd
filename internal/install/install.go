// Package install puts the binary and one link per personality into a CNI
// bin dir. scripts/install-symlinks.sh and `cniplugins install` both end
// here, so there is one implementation of the rules:
//   - links are relative ("cniplugins"), in the same directory;
//   - running it twice changes nothing;
//   - a file of the same name that this tool did not install (an upstream
//     plugin, say) is never replaced without Force, and every name is
//     checked before anything is written, so a refusal changes nothing:
//     a link is ours when it points at "cniplugins" (or, copy mode, is the
//     binary's inode), the binary when it is a regular file built from
//     this module (its Go build information says so) or already the
//     binary being installed;
//   - Uninstall removes only what it installed;
//   - a link of ours whose name the installed binary does not answer to
//     (a personality of another flavour, after switching back to the lean
//     one) is removed, so no name is left that would fail when called.
package install

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// BinaryName is the installed binary's name; every link points at it.
const BinaryName = "cniplugins"

// DefaultDir is the conventional CNI bin dir.
const DefaultDir = "/opt/cni/bin"

// Options for one run.
type Options struct {
	Dir       string
	Binary    string   // the executable to install
	Names     []string // personality names, one link each
	Copy      bool     // hard links (or copies) instead of symlinks
	Force     bool
	Uninstall bool
	Out       io.Writer // one line per change
}

// Run installs or uninstalls.
func Run(o Options) error {
	if o.Dir == "" {
		o.Dir = DefaultDir
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	target := filepath.Join(o.Dir, BinaryName)
	// Found before the binary is replaced: copy-mode links are recognised
	// by the installed binary's inode.
	ours, err := ownedNames(o.Dir)
	if err != nil {
		return err
	}
	if o.Uninstall {
		return uninstall(o, staleNames(ours, nil))
	}
	newBin, err := readBinary(o.Binary)
	if err != nil {
		return err
	}
	// Every target is checked before any is written: a refusal leaves the
	// bin dir exactly as it was, never with a new binary and some links.
	if !o.Force {
		if err := checkOwned(o.Dir, BinaryName, nil, newBin, maxBinarySize, true); err != nil {
			return fmt.Errorf("%w (use --force)", err)
		}
		for _, name := range o.Names {
			if err := checkName(o.Dir, name, ours[name]); err != nil {
				return err
			}
		}
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	if err := installBinary(o, target, newBin); err != nil {
		return err
	}
	for _, name := range o.Names {
		if err := installName(o, name, ours[name], newBin); err != nil {
			return err
		}
	}
	return removeAll(o, staleNames(ours, o.Names))
}

// uninstall removes the links that are ours, whatever their names, then
// the binary when it is ours (or with Force).
func uninstall(o Options, links []string) error {
	if err := removeAll(o, links); err != nil {
		return err
	}
	if _, err := os.Lstat(filepath.Join(o.Dir, BinaryName)); err != nil {
		return nil
	}
	if !o.Force {
		if err := checkOwned(o.Dir, BinaryName, nil, nil, maxBinarySize, true); err != nil {
			return fmt.Errorf("%w (use --force)", err)
		}
	}
	return removeAll(o, []string{BinaryName})
}

// checkName refuses a personality's name held by a file that is not ours.
func checkName(dir, name string, ours bool) error {
	path := filepath.Join(dir, name)
	if _, err := os.Lstat(path); err == nil && !ours {
		return fmt.Errorf("refusing to replace %s: it was not installed by cniplugins (use --force)", path)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// readBinary reads the binary to install (the running executable, or
// --binary): whole, since it is hashed for the record and compared with
// what is installed.
func readBinary(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("binary to install: %w", err)
	}
	data, err := readOpened(f, maxBinarySize)
	if err != nil {
		return nil, fmt.Errorf("binary to install: %w", err)
	}
	return data, nil
}

// ownedNames finds the entries of dir that are ours: a symlink to the
// binary, or (copy mode) the binary's own inode.
func ownedNames(dir string) (map[string]bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	bin, binErr := os.Stat(filepath.Join(dir, BinaryName))
	ours := map[string]bool{}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		switch {
		case e.Name() == BinaryName:
		case e.Type()&fs.ModeSymlink != 0:
			dest, err := os.Readlink(path)
			ours[e.Name()] = err == nil && dest == BinaryName
		case e.Type().IsRegular() && binErr == nil:
			fi, err := os.Stat(path)
			ours[e.Name()] = err == nil && os.SameFile(fi, bin)
		}
	}
	return ours, nil
}

// staleNames are the names of ours not in names (links a previous
// install of another flavour made), an installer's temporary file aside.
func staleNames(ours map[string]bool, names []string) []string {
	var stale []string
	for name, own := range ours {
		if own && !slices.Contains(names, name) && !strings.HasSuffix(name, ".tmp") {
			stale = append(stale, name)
		}
	}
	slices.Sort(stale)
	return stale
}

// installBinary replaces the binary atomically: the new one is written
// and synced under a temporary name, then renamed over the old, so a
// runtime exec'ing a personality meanwhile runs either the old binary or
// the new one, whole, never a missing or partial file. The links name the
// binary, not a version of it, and need no change.
func installBinary(o Options, target string, data []byte) error {
	if old, err := ReadRegular(target, maxBinarySize); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := ReplaceBytes(target, 0o755, data); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "installed %s\n", target)
	return nil
}

// ReplaceFile makes dst hold what write writes, with mode, atomically:
// written and synced under a temporary name in dst's directory (ending in
// .tmp, a name neither runtimes nor libcni read), then renamed over dst,
// and the directory synced. Readers see the old content or the new one,
// whole; a crash leaves at most a stray temporary file.
func ReplaceFile(dst string, mode fs.FileMode, write func(io.Writer) error) error {
	dir := filepath.Dir(dst)
	f, err := os.CreateTemp(dir, "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = write(f)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// ReplaceBytes is ReplaceFile writing data.
func ReplaceBytes(dst string, mode fs.FileMode, data []byte) error {
	return ReplaceFile(dst, mode, func(w io.Writer) error { _, err := w.Write(data); return err })
}

func installName(o Options, name string, ours bool, bin []byte) error {
	path := filepath.Join(o.Dir, name)
	if !o.Force {
		if err := checkName(o.Dir, name, ours); err != nil {
			return err // it appeared since Run checked
		}
	}
	if fi, err := os.Lstat(path); err == nil && ours && upToDate(o, fi) {
		return nil
	}
	// Build the new entry beside the old one, then rename over it, so the
	// name never disappears for a runtime calling it meanwhile. The
	// temporary name is this run's own: two installers never share it.
	tmp := fmt.Sprintf("%s.%d-%d.tmp", path, os.Getpid(), time.Now().UnixNano())
	var err error
	switch {
	case !o.Copy:
		err = os.Symlink(BinaryName, tmp)
	case os.Link(filepath.Join(o.Dir, BinaryName), tmp) != nil:
		err = os.WriteFile(tmp, bin, 0o755) // a file system without hard links
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	fmt.Fprintf(o.Out, "linked %s\n", path)
	return nil
}

// upToDate reports whether an entry we installed already has the wanted
// form: our symlink in link mode, the current binary's inode in copy mode.
func upToDate(o Options, fi fs.FileInfo) bool {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return !o.Copy
	}
	bin, err := os.Stat(filepath.Join(o.Dir, BinaryName))
	return o.Copy && err == nil && os.SameFile(fi, bin)
}

func removeAll(o Options, names []string) error {
	for _, name := range names {
		path := filepath.Join(o.Dir, name)
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		fmt.Fprintf(o.Out, "removed %s\n", path)
	}
	return nil
}
