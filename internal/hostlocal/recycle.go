package hostlocal

import (
	"errors"
	"os"
	"syscall"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Creating an inode can be the most expensive step of an ADD (about 1 ms
// on the ext4 this was first measured on, against ~30 µs for a link or
// rename; a later run on the same machine found no difference: its price
// varies with the file system's state), and host-local pays it for every
// reservation and every cursor write. So the disk store recycles: a
// released reservation is renamed out of D to become the next scratch
// file and a replaced cursor becomes the next cursor spare; index buckets
// are rewritten in place and never removed. In a steady ADD/DEL workload
// no inode is created at all. Every recycled file is rewritten completely
// before it is published, and only ever while it has a single name.

// overwriteAlone is overwrite for a file that is about to be linked or
// renamed into D: if it unexpectedly has a second name (an earlier
// unlink failed, or someone linked it), writing would alter that other
// file, so it is replaced by a fresh inode first.
func overwriteAlone(path, s string) error {
	fi, err := os.Lstat(path)
	if err == nil && (!fi.Mode().IsRegular() || nlink(fi) != 1) {
		if err := os.Remove(path); err != nil {
			return cnierr.IO("remove", path, err)
		}
	}
	return overwrite(path, s, modeShared) // it becomes a reservation, a cursor or a hold record
}

func nlink(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}

// inode is the inode number of a regular file, from its status (an
// os.DirEntry's Info, or an Lstat) and the error that came with it.
func inode(fi os.FileInfo, err error) (uint64, bool) {
	if err != nil || !fi.Mode().IsRegular() {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st.Ino, ok
}

// replaceRecycled gives path (in D) the content s atomically: the spare
// is filled and renamed over path, and path's old inode is kept, through a
// hard link made first, as the next spare.
func (d *Disk) replaceRecycled(path, s string) error {
	d.dirty = true // Close re-stamps D
	spare := child(d.idx, cursorSpare)
	old := child(d.idx, cursorOld)
	if err := overwriteAlone(spare, s); err != nil {
		return err
	}
	err := os.Link(path, old)
	kept := err == nil
	switch {
	case errors.Is(err, os.ErrExist):
		// Left by a failed earlier call; the next call will keep one.
		if err := os.Remove(old); err != nil {
			return cnierr.IO("remove", old, err)
		}
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return cnierr.IO("link", path, err)
	}
	if err := os.Rename(spare, path); err != nil {
		return cnierr.IO("rename", path, err)
	}
	if kept {
		if err := os.Rename(old, spare); err != nil {
			return cnierr.IO("rename", old, err)
		}
	}
	return nil
}
