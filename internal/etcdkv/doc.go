// Package etcdkv is the one piece of cniplugins that knows etcd's v3 JSON
// gateway: a small client with the shape of etcd's own clientv3 (a
// transaction is If/Then/Else over Get, Put and Delete; List pages a
// prefix at one revision), built on the standard library alone: HTTP/1.1
// on connections of its own, read by net/http's response parser
// (transport.go; net/http's client costs a fresh process more than the
// request). The official client
// would cost every exec about 2.8 ms of package initialisation and 12 MB of
// memory, more than a whole ADD (docs/etcd.md, "Client").
//
// A Client lives for one CNI command and holds its deadline: every
// request, every retry included, ends by then. What it promises about
// retries is the heart of it:
//
//   - Reads, and writes made exact by their comparisons (each effect pinned
//     to a value or revision that any later operation changes), go to the
//     next member whenever one does not answer: a late copy of them can
//     change nothing a later operation made.
//   - Other writes (TxnOnce) are sent again only when they certainly were
//     not applied: no connection, or the member refused before proposing
//     (no leader, a learner, overload, a dropped proposal). Once such a
//     write may have reached a member, the caller gets ErrOutcomeUnknown
//     and decides; etcd's own client never re-sends a mutation for the
//     same reason.
//
// Between execs a Client remembers, in a small file, the members that
// failed it lately (the next exec starts elsewhere, so a stopped member
// costs one per-try timeout, not one per exec) and its auth token (no
// bcrypt and raft write per exec).
package etcdkv
