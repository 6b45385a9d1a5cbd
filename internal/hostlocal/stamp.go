package hostlocal

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

const (
	stampName      = "stamp"
	untrustedStamp = "untrusted"
	exhaustedKey   = "exhausted"
)

// newStampNanos is now with random sub-microsecond digits: a timestamp
// the kernel assigns to D when someone else changes it will practically
// never equal it, even on the same clock tick.
func newStampNanos() int64 {
	now := time.Now().UnixNano()
	return now - now%1000 + 1 + rand.Int64N(999)
}

// dirMtime is the mtime of directory p, which must be safe to use
// (safedir.go); a missing one errors.Is os.ErrNotExist.
func (d stateDir) dirMtime(p string) (int64, error) {
	fi, err := checkDir(p, d.uid)
	if err != nil {
		return 0, err
	}
	return fi.ModTime().UnixNano(), nil
}

// commit makes the index trustworthy again after a modification (see
// "The stamp" in docs/state-on-disk.md); a file system that loses the
// nanoseconds marks it untrusted for good.
func (d *Disk) commit() error {
	if !d.dirty || d.untrusted {
		return nil
	}
	if err := d.flush(d.idx); err != nil {
		return err
	}
	nanos := newStampNanos()
	path, text := child(d.idx, stampName), strconv.FormatInt(nanos, 10)+"\n"
	if len(d.exhausted) > 0 {
		text += exhaustedKey + " " + strings.Trim(fmt.Sprint(d.exhausted), "[]") + "\n"
	}
	if err := overwrite(path, text, modePrivate); err != nil {
		return err
	}
	// Each directory is given the stamp as its mtime and read back.
	t, ok := time.Unix(0, nanos), true
	for _, p := range []string{d.dir, d.idx} {
		if ok = ok && os.Chtimes(p, time.Time{}, t) == nil; ok {
			m, err := d.dirMtime(p)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			ok = err == nil && m == nanos
		}
	}
	if !ok {
		d.untrusted = true
		return overwrite(path, untrustedStamp+"\n", modePrivate)
	}
	d.dirty = false
	return nil
}

// Index states, as trust judges them.
const (
	// IndexValid: the stamp matches; plugins trust the index as it is.
	IndexValid = "valid"
	// IndexStale: another writer (or a crash) changed the directory since
	// the last stamp; the next operation rebuilds the index. Normal after
	// upstream host-local wrote there.
	IndexStale = "stale"
	// IndexUntrusted: the file system cannot keep the stamp; every
	// operation scans the directory.
	IndexUntrusted = "untrusted"
)

// trust is the one rule for the index of D, for Open, fsck and STATUS
// alike: valid only if stamp == mtime(D) == mtime(index dir) and the index
// is in the bucket layout; a valid stamp's marks (the range sets recorded
// as full) come with it. A missing or garbled stamp (a crash, an older
// index) is simply not valid; only real read failures are errors. It
// reads, never repairs. The index directory is checked (safedir.go)
// before its stamp is read.
func (d stateDir) trust() (state string, exhausted []int, err error) {
	idxTime, err := d.dirMtime(d.idx)
	if errors.Is(err, os.ErrNotExist) {
		return IndexStale, nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	data, err := readFile(child(d.idx, stampName))
	if err != nil {
		return "", nil, err
	}
	// "<nanos>", then "exhausted <id>..." on a second line; or "untrusted".
	first, rest, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
	if first == untrustedStamp {
		return IndexUntrusted, nil, nil
	}
	nanos, err := strconv.ParseInt(first, 10, 64)
	fields := strings.Fields(rest)
	if err != nil || nanos <= 0 || rest != "" && fields[0] != exhaustedKey {
		return IndexStale, nil, nil
	}
	for _, f := range fields[min(1, len(fields)):] {
		id, err := strconv.Atoi(f)
		if err != nil {
			return IndexStale, nil, nil
		}
		exhausted = append(exhausted, id)
	}
	dirTime, err := d.dirMtime(d.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", nil, err
	}
	if err != nil || dirTime != nanos || idxTime != nanos || !d.bucketFormat() {
		return IndexStale, nil, nil
	}
	return IndexValid, exhausted, nil
}

// Exhausted returns the range-set IDs of dir that the last ADD found full
// and that nothing has been released from since, without the lock (STATUS
// must not queue behind ADDs) and only from a valid index.
func Exhausted(dir string) ([]int, error) {
	state, exhausted, err := newStateDir(dir).trust()
	if err != nil || state != IndexValid {
		return nil, err
	}
	return exhausted, nil
}
