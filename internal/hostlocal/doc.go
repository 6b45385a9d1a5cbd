// Package hostlocal is the disk store of an IPAM plugin that is a drop-in
// replacement for the upstream CNI host-local plugin: the same files on
// disk (a state directory written by either binary can be taken over by
// the other), but ADD, DEL and CHECK cost does not grow with the number of
// existing allocations. The allocation policy is internal/alloc's; a Disk
// is its store, and Examine and Repair are fsck's read view of the same
// directory, judged by the same trust rule (trust) and listed by the same
// reader (readEntries).
//
// The layout, the index and its stamp, the sticky records' write order
// and the tenants' and spill records are described in
// docs/state-on-disk.md and docs/tenancy.md; what follows is what the code
// must keep true.
//
// A state directory D holds host-local's files exactly: reservation
// files appear atomically with their content (written to a scratch file,
// then link(2)ed into place; EEXIST means taken), and a cursor is replaced
// by rename(2), so a SIGKILL never leaves a half-written file in D.
//
// The index (a sibling _index tree, 256 buckets, which host-local never
// walks) is a cache: other writers do not maintain it, but any of them
// changing D changes D's mtime, so it is trusted only while its stamp
// equals the mtimes of D and of the index directory, and is rebuilt from
// one scan otherwise. Index entries are still verified against D when
// first used: an address whose file is missing or someone else's is
// dropped from the entry, never released.
//
// A sticky hold's record (D/_sticky) is written one file at a time in the
// engine's order (alloc.HoldStore) and always read against its address's
// file, so an address is never both held and handed out and no key loses
// an address it held. Tenant records and spill records are written before
// what they describe and removed after it, so a crash leaves at most a
// record that counts or spills too much, which GC removes (a tenant
// record: the next rebuild and fsck --repair too).
package hostlocal
