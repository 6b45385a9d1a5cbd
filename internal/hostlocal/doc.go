// Package hostlocal is the disk store of an IPAM plugin that is a drop-in
// replacement for the upstream CNI host-local plugin: same files on disk
// (a state directory written by either binary can be taken over by the
// other), but ADD, DEL and CHECK cost does not grow with the number of
// existing allocations. The allocation policy (ranges, allocation order,
// requested addresses, DEL and GC rules) is internal/alloc's; a Disk is
// its store, and Examine and Repair are fsck's read view of the same
// directory, judged by the same trust rule (trust) and listed by the same
// reader (readEntries).
//
// # State directory
//
// A state directory D (host-local's <dataDir>/<network>, or a pool's
// <dataDir>/_pools/<pool>) holds, exactly as host-local writes them:
//
//	lock                 empty, mode 0600; BSD flock(2) serialises every writer
//	<ip>                 one per reservation, named by netip.Addr.String(),
//	                     mode 0644, content "<containerID>\r\n<ifname>"
//	                     (legacy files: "<containerID>" only)
//	last_reserved_ip.<N> round-robin cursor of range set N, no newline
//
// Reservation files appear atomically with their content (written to a
// temporary file, then link(2)ed into place; EEXIST means taken), and the
// cursor is replaced by rename(2), so a SIGKILL never leaves a half-written
// file in D.
//
// # Why an index
//
// host-local answers "what does this container hold?" by reading every
// file in D, on every ADD (duplicate check) and DEL: about 11 µs per
// allocation, 0.7 s at 60,000. We keep a per-attachment index in a sibling
// tree that host-local never walks (network and pool names cannot start
// with '_'):
//
//	<parent of D>/_index/<base of D>/
//	    b00 ... bff              256 buckets, created lazily (a missing
//	                             bucket is empty); one line per attachment,
//	                             sorted by key: "<containerID>@<ifname> <ip>
//	                             <ip>..." ("<containerID>@ <ip>..." legacy)
//	    stamp                    validity stamp (see below)
//	                             (the index directory is 0700, its
//	                             buckets and stamp 0600; safedir.go says
//	                             who must own every directory)
//	    .tmp .tmpw .tmpw-old     scratch files for link/rename, and
//	                             recycled inodes (see recycle.go)
//
// An attachment's bucket is the low byte of the FNV-1a (32-bit) hash of
// "<containerID>\x00<ifname>" (never the network). A lookup reads one
// bucket, about n/256 lines; a rebuild writes at most 256 files however
// many attachments D holds, where one file per attachment made taking
// over a large directory cost seconds of file creation under the lock.
//
// Every rebuild writes b00, even empty, and nothing removes it: an index
// without it was left by a version that kept one file per attachment and
// is rebuilt even if its stamp is valid.
//
// Buckets and the stamp are rewritten in place; their consistency rests
// on the stamp, not on atomic replacement. The index directory must be on
// D's file system (it is a sibling of D's parent's children, so it is,
// barring a mount point at exactly that spot).
//
// Attachments whose key would not be one unambiguous field (white space,
// NUL or line breaks in either name, '@' in the ID, or an ID starting
// with '.') are not indexed; lookups for them fall back to a scan of D.
//
// # Trusting the index
//
// Other writers (real host-local, an administrator, an older version of
// us) do not maintain the index, but any of them creating or removing a
// file in D changes D's mtime. After every modification we pick a stamp S
// (unix nanoseconds with random low-order digits, so a kernel timestamp
// practically never equals it), write S to the stamp file, set the mtime
// of both D and the index directory to S, and read them back. On Open the
// index is trusted only if stamp == mtime(D) == mtime(index dir);
// otherwise D is scanned once, a fresh index is written to a temporary
// directory and swapped in, and later operations are O(1) again. A crash
// anywhere in an operation leaves at least one mtime different from S, so
// it is always followed by a rebuild, which also discards stale scratch
// files and half-swapped directories. If the file system cannot store
// the exact nanoseconds, the stamp file says "untrusted" and every Open
// scans D (correct, but as slow as host-local); deleting the index
// directory makes us try again.
//
// Index entries are still verified against D when first used: an
// address whose file is missing or owned by someone else is dropped from
// the entry (its bucket is rewritten) and never released.
//
// # Sticky holds
//
// An address a sticky key keeps (see alloc.Hold) has a record beside the
// reservations, and, while no container has it, a file of owner kind
// "sticky" (host-local and older versions see it taken, never free; GC's
// keep rule never frees '_' owners):
//
//	_sticky/<ID>.json    the alloc.Hold record of one key and interface
//	                     (ID = alloc.StickyID), replaced atomically by a
//	                     rename from the index directory's spare
//	                     (replaceRecycled; not fsynced, as no
//	                     reservation is); it exists while the key has an
//	                     address in D
//	<ip>                 "_sticky\r\n<ID>" while held; the container's
//	                     usual content while reserved
//
// The engine (alloc.HoldStore, internal/alloc/holds.go) makes every
// change, under D's lock, one of the two files at a time, in this order:
//
//	ADD, new address      reservation file, then record (owner = container)
//	ADD, held address     record (owner = container, expiry kept), then file
//	DEL / GC of the owner record (held, expiry), then file "_sticky <ID>"
//	expiry, release       file removed, then record removed
//	failed ADD            claimed: file back to "_sticky", then the record;
//	                      new: record removed, then the reservation
//	migration target      ADD, DEL: the record alone (second owner set,
//	                      dropped)
//	migration source DEL  file to the target, then record (target owner)
//
// and a record is always read against its address's file (the engine's
// reconciliation rule):
//
//	file "_sticky <ID>"                     held (an unfinished claim is undone:
//	                                        the expiry it kept still applies)
//	file of the record's owner              reserved by it
//	file of the lastOwner, record held      reserved by lastOwner (an unfinished
//	                                        DEL; its retry finishes it)
//	file of the record's second owner       reserved by it alone (a source's
//	                                        unfinished DEL)
//	no file, or anyone else's               stale: the record holds nothing,
//	                                        and the next ADD, GC or fsck
//	                                        --repair of that key drops it
//
// So a kill -9 between two writes leaves either a state one of the
// operations also leaves when it completes, or a plain reservation of a
// failed ADD (which the runtime's DEL frees), or a stale record: an
// address is never both held and handed out (a file has one owner, and a
// record counts only when its file agrees), and no key loses an address
// it held. A record that still names a container its file does not (an
// unfinished claim, or a source's DEL stopped mid-hand-over) is rewritten
// as judged (alloc.SettleHold) by the next DEL of that container, with or
// without the key, by GC and by fsck --repair, which reports it until
// then. A "_sticky" file without a record (left by hand, never by this
// order) stays taken until fsck --repair frees it. A DEL with the key
// reads the key's records by ID; without it (DEL may come without the
// key) it lists _sticky/: one failed open where nothing is sticky, a read
// of each record (and its address file) where something is.
//
// # Exhaustion
//
// When an ADD finds a range set full, its ID is recorded on a second line
// of the stamp file ("exhausted 0 2"); any release clears the record.
// Exhausted reads it without the lock and reports nothing unless the stamp
// is valid, because a mismatch means another writer may have freed
// addresses since. Keeping the record in the stamp (rather than one file
// per range set) lets both the reader and a clearing DEL find it without
// listing the index directory.
//
// # Tenants and overflow chains
//
// A quota's per-tenant counts live in D's _tenants (tenants.go), each
// tenant's lock beside the pools' indexes; the attachments that may hold
// an address further down D's overflow chain are recorded in D's _spill
// (spill.go). Neither is a reservation, a cursor or part of the index.
package hostlocal
