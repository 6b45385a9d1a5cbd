// Package etcdstore is ipam-da-etcd's state in an etcd cluster: the
// engine's Store over etcd (one key per address, claimed by a
// create-if-absent transaction; no lock, no lease on a claim, no per-pool
// document), its key layout, records, fences, node registration, quota,
// sticky holds, migrations and tenant GC, and the operators' tool over
// them (Operator). The personality (internal/daetcd) reaches it through
// Open and the Operation's commands, with the request already parsed, so
// that what reads and writes etcd is in this package alone. It is part of
// the full flavour only: it links net/http.
package etcdstore
