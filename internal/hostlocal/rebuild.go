package hostlocal

import (
	"errors"
	"os"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// rescan fills the cache from a scan of D, which an untrusted or stale
// index leaves as the only truth. A stale index may be a crash's: a
// tenant record whose reservation was never made, or is gone, must not
// count another moment (tenants.go).
func (d *Disk) rescan() error {
	all, err := d.scan()
	if err != nil {
		return err
	}
	d.fill(all)
	_, err = d.RepairTenants()
	return err
}

// rebuild scans D and replaces the index directory with a fresh one. The
// new tree is written under a dot-name (no network or pool name starts
// with '.') and renamed into place; it carries no stamp until Close
// commits, so a crash at any point leaves an index the next Open rejects
// and rebuilds again, discarding the leftovers first.
func (d *Disk) rebuild() error {
	if err := d.rescan(); err != nil {
		return err
	}
	d.dirty = true

	fresh, old := d.rebuildDirs()
	for _, p := range []string{fresh, old} {
		if err := os.RemoveAll(p); err != nil {
			return cnierr.IO("remove", p, err)
		}
	}
	if err := os.Mkdir(fresh, modePrivateDir); err != nil {
		return cnierr.IO("create", fresh, err)
	}
	// At most numBuckets files, whatever the number of attachments:
	// creating inodes is where a rebuild's time would go. Every bucket
	// that has a line is written; b00 always, even empty: it marks the
	// bucket layout (see bucketFormat).
	d.bucket(0) // a complete cache reads nothing: no error
	for n, b := range d.buckets {
		b.dirty = b.dirty || n == 0 || len(b.lines) > 0
	}
	if err := d.flush(fresh); err != nil {
		return err
	}
	if err := os.Rename(d.idx, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return cnierr.IO("rename", d.idx, err)
	}
	if err := os.Rename(fresh, d.idx); err != nil {
		return cnierr.IO("rename", fresh, err)
	}
	if err := os.RemoveAll(old); err != nil {
		return cnierr.IO("remove", old, err)
	}
	return nil
}
