// Package etcdadmin is the operators' tool over ipam-da-etcd's store
// (`cniplugins-full leases`, `release`, `gc` and `pools` with --etcd),
// for a node that is gone for good: its runtime will never send the DEL
// or GC that would free its addresses. It composes the store's operator
// reads and writes (etcdstore.Operator) into what an operator sees:
// rows, filters, their order and the dry runs' reports. Which claim a
// release or a GC frees is the engine's (internal/alloc); every etcd
// read and write is the store's.
package etcdadmin
