// Package ops is what the operators' commands do (leases, pools, release,
// gc, fsck, validate), apart from their flags and output: it reads and
// writes state only through the allocation engine (internal/alloc) and
// its disk store (internal/hostlocal), so the lock, the index and its
// stamp are handled exactly as the plugins handle them.
//
// Readers (leases, pools) take no lock: reservation files appear and
// disappear atomically. Writers (release, gc --apply, fsck --repair) open
// a directory the way a plugin does, one directory at a time.
//
// leases, release and gc (and gc --cri) act on a Backend: Local, the data
// dir, or the full flavour's etcd store, chosen once from the flags.
package ops
