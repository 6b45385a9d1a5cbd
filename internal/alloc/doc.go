// Package alloc is the allocation engine every address allocator of this
// project shares: the configuration (host-local's range sets, pools and
// their definitions, requested addresses, as internal/ipamconf reads them
// from the CNI input; the engine never reads that input itself), the
// targets an ADD allocates, host-local's allocation policy (round robin,
// requested addresses, gateways, exclusions, duplicate ADDs, exhaustion),
// the result, and the rules of DEL, CHECK and GC (KeepSet). The ranges
// and the iteration order are internal/addrspace's.
//
// The engine reserves addresses in a Store, the narrow interface an ADD
// needs; a store that keeps a full record of its reservations is a
// Ledger, and the engine then runs host-local's DEL, CHECK and rollback on
// it too; a Ledger that can list itself (a Lister) gets host-local's GC.
// ipam-da-pools' state directories (internal/hostlocal) are all three;
// ipam-da-etcd's claims (internal/etcdstore) are a plain Store, because its
// DEL, GC and CHECK's reads are etcd transactions of their own; CHECK's
// rule stays the engine's (CheckPrev, CheckHeld).
package alloc
