// Package hostlocal is the disk store of an IPAM plugin that is a drop-in
// replacement for the upstream CNI host-local plugin: the same files on
// disk (a state directory written by either binary can be taken over by
// the other), but ADD, DEL and CHECK cost does not grow with the number of
// existing allocations. The allocation policy is internal/alloc's; a Disk
// is its store. Examine is fsck's read view of the same directory, judged
// by the same trust rule (trust) and listed by the same reader
// (readEntries); Repair mends the index by Open's own rebuild.
//
// docs/state-on-disk.md describes the layout, the index and its stamp and
// the sticky records' write order; docs/tenancy.md the tenants' and spill
// records. What the code must keep true: a file appears in a state
// directory whole or not at all (link(2), rename(2)), so a SIGKILL never
// leaves a half-written one; the index is a cache, trusted only while its
// stamp equals the mtimes of D and of the index directory (any writer
// changing D changes D's mtime), and its entries are verified against D
// when first used (an address whose file is missing or someone else's is
// dropped from the entry, never released); a sticky hold's record is
// always read against its address's file; and tenant and spill records
// are written before what they describe and removed after it, so a crash
// leaves at most a record that counts or spills too much, which GC (and,
// for a tenant record, the next rebuild and fsck --repair) removes.
package hostlocal
