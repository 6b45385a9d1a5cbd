// Package ops is what the operators' commands do (leases, pools, release,
// gc, fsck, validate), apart from their flags and output: it reads and
// writes state only through the engine (internal/alloc) and its disk
// store (internal/hostlocal), so the lock, the index and its stamp are
// handled exactly as the plugins handle them. Readers (leases, pools)
// take no lock: reservation files appear and disappear atomically.
// Writers (release, gc --apply, fsck --repair) open a directory the way a
// plugin does, one at a time.
package ops
