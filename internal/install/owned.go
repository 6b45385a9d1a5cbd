package install

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"hash/fnv"

	"golang.org/x/sys/unix"
)

// RecordName is the file, in net.d, that records what k8s-install wrote
// there: one line per file, "<hash>  <name>" (Sum). net.d is shared with other software
// (calico's conflist, say), and a conflist carries no mark of its author,
// so a file there is replaced only when it is absent or provably ours: its
// content is one the record holds. The name has no extension a runtime or
// libcni reads (.conf, .conflist, .json). (The bin dir needs no record: a
// cniplugins binary says whose it is in its Go build information, and a
// link of ours points at it.)
const RecordName = ".cniplugins-installed"

// maxRecordSize bounds the record: a line per installed file.
const maxRecordSize = 1 << 20

// moduleMark is what the Go build information of a cniplugins binary says
// (`go version -m`): its main module. It proves a binary installed before
// the record existed (an earlier release, or a copy made by hand) ours.
const moduleMark = "\nmod\tgithub.com/cniplugins/cniplugins\t"

// buildInfoMagic starts the build information the Go linker writes into
// every binary, stripped ones included.
const buildInfoMagic = "\xff Go buildinf:"

// Record is what one directory's record holds: for each name, the hashes
// of the contents the installer wrote there. A name has two hashes only
// between writing the record and renaming the new file in: a crash there
// leaves either content recognised.
type Record map[string][]string

// ReadRecord reads dir's record; a directory without one has an empty
// record (nothing in it is provably ours).
func ReadRecord(dir string) (Record, error) {
	path := filepath.Join(dir, RecordName)
	data, err := ReadRegular(path, maxRecordSize)
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("record of what was installed: %w", err)
	}
	r := Record{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != sumLen || name == "" || strings.ContainsRune(name, '/') {
			return nil, fmt.Errorf("record of what was installed: %s line %d: want \"<hash>  <name>\"", path, n)
		}
		r[name] = append(r[name], sum)
	}
	return r, nil
}

// Write replaces dir's record, atomically.
func (r Record) Write(dir string) error {
	var b bytes.Buffer
	for _, name := range slices.Sorted(maps.Keys(r)) {
		for _, sum := range r[name] {
			fmt.Fprintf(&b, "%s  %s\n", sum, name)
		}
	}
	return ReplaceBytes(filepath.Join(dir, RecordName), 0o644, b.Bytes())
}

// Holds reports whether name's content, of hash sum, is one the installer
// wrote.
func (r Record) Holds(name, sum string) bool { return slices.Contains(r[name], sum) }

// Add records sum for name beside what is recorded (before the file is
// renamed in), Set replaces what is recorded (after).
func (r Record) Add(name, sum string) {
	if !r.Holds(name, sum) {
		r[name] = append(r[name], sum)
	}
}

// Set makes sum the one content recorded for name.
func (r Record) Set(name, sum string) { r[name] = []string{sum} }

// Sum is the hash a record keeps for data: FNV-128a, not SHA-256, since
// the lean binary links no crypto (its FIPS module's initialisation would
// cost every exec of every personality; alloc.StickyID makes the same
// choice). A crafted collision could only make the installer take for its
// own a file of net.d whose exact content the ConfigMap's editor knew in
// advance, under a name the installer once wrote there: only net.d's own
// software writes there besides it, and none of it is the editor's.
func Sum(data []byte) string {
	h := fnv.New128a()
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// sumLen is the length of a Sum.
const sumLen = 32

// ReadRegular reads path, which must be a regular file (not a link, a
// FIFO, a device or a directory) of at most max bytes. It is opened with
// O_NOFOLLOW, so a link is never read through, and O_NONBLOCK, so a FIFO
// or a device never blocks the open; then fstat'ed, so what is read is
// what was checked.
func ReadRegular(path string, max int64) ([]byte, error) {
	return readAt(unix.AT_FDCWD, path, path, max)
}

// ReadRegularAt is ReadRegular of name inside the open directory dir.
func ReadRegularAt(dir *os.File, name string, max int64) ([]byte, error) {
	return readAt(int(dir.Fd()), name, filepath.Join(dir.Name(), name), max)
}

func readAt(dirfd int, name, path string, max int64) ([]byte, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%s: a symbolic link, not a regular file", path)
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return readOpened(os.NewFile(uintptr(fd), path), max)
}

// readOpened reads f (which it closes) when it is a regular file of at
// most max bytes.
func readOpened(f *os.File, max int64) ([]byte, error) {
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", f.Name(), fileKind(fi.Mode()))
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", f.Name(), max)
	}
	// The file may grow after the fstat: never read more than max.
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", f.Name(), max)
	}
	return data, nil
}

// fileKind names a file type for an error message.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "mode " + m.String()
}

// maxBinarySize bounds what is read of a binary to decide whose it is: a
// cniplugins binary is tens of MB.
const maxBinarySize = 1 << 30

// isOurBuild reports whether data is a Go binary of this module: its
// build information names it as the main module.
func isOurBuild(data []byte) bool {
	i := bytes.Index(data, []byte(buildInfoMagic))
	if i < 0 {
		return false
	}
	// The module information follows the header, the Go version and a
	// 16-byte sentinel: well within the next 512 bytes.
	end := min(len(data), i+512)
	return bytes.Contains(data[i:end], []byte(moduleMark))
}

// CheckOwned returns nil when dir/name may be replaced: it is absent, or
// a regular file (of at most max bytes) whose content the record holds or
// equals want. Otherwise the error names the file and why it is not ours.
func CheckOwned(dir, name string, rec Record, want []byte, max int64) error {
	return checkOwned(dir, name, rec, want, max, false)
}

// checkOwned is CheckOwned; ourBuild also accepts a cniplugins binary
// (installed before records existed, or copied by hand).
func checkOwned(dir, name string, rec Record, want []byte, max int64, ourBuild bool) error {
	path := filepath.Join(dir, name)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("refusing to replace %s: it is %s, which cniplugins never installs there", path, fileKind(fi.Mode()))
	}
	data, err := ReadRegular(path, max)
	if err != nil {
		return fmt.Errorf("refusing to replace %s: %w", path, err)
	}
	if rec.Holds(name, Sum(data)) || (want != nil && bytes.Equal(data, want)) || (ourBuild && isOurBuild(data)) {
		return nil
	}
	return fmt.Errorf("refusing to replace %s: it was not installed by cniplugins (its content is none that %s records)", path, filepath.Join(dir, RecordName))
}
