package etcdkvfake

import (
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// TestSemantics: what callers rely on, through the real client.
func TestSemantics(t *testing.T) {
	f := New(t)
	c := etcdkv.New(etcdkv.Config{Endpoints: []string{f.URL()}, Timeout: 2 * time.Second})
	txn := func(x etcdkv.Txn) *etcdkv.Response {
		t.Helper()
		r, err := c.Txn(x)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Create if absent, reading its own write in the same transaction.
	r := txn(etcdkv.Txn{If: []etcdkv.Cmp{etcdkv.Absent("a")}, Then: []etcdkv.Op{etcdkv.Put("a", []byte("1")), etcdkv.Get("a")}})
	kv, ok := r.First(1)
	if !r.Succeeded || !ok || string(kv.Value) != "1" || kv.CreateRevision != r.Revision || kv.ModRevision != r.Revision {
		t.Fatalf("create: %+v %+v", r, kv)
	}
	if r := txn(etcdkv.Txn{If: []etcdkv.Cmp{etcdkv.Absent("a")}, Then: []etcdkv.Op{etcdkv.Put("a", []byte("2"))}}); r.Succeeded {
		t.Fatal("a second create succeeded")
	}
	// A value comparison on a missing key fails, whatever the operator.
	for _, cmp := range []etcdkv.Cmp{etcdkv.ValueBelow("missing", []byte("z")), etcdkv.ValueAbove("missing", nil), etcdkv.ValueIs("missing", nil)} {
		if r := txn(etcdkv.Txn{If: []etcdkv.Cmp{cmp}}); r.Succeeded {
			t.Errorf("%+v held on a missing key", cmp)
		}
	}
	// ModBelow holds on a missing key; revisions move with writes only.
	rev := f.Revision()
	if r := txn(etcdkv.Txn{If: []etcdkv.Cmp{etcdkv.ModBelow("missing", 1)}}); !r.Succeeded || f.Revision() != rev {
		t.Fatalf("ModBelow on a missing key: %v, revision %d → %d", r.Succeeded, rev, f.Revision())
	}
	// Nested transactions, each with its own conditions.
	r = txn(etcdkv.Txn{Then: []etcdkv.Op{
		etcdkv.Nested(etcdkv.Txn{If: []etcdkv.Cmp{etcdkv.ValueIs("a", []byte("1"))}, Then: []etcdkv.Op{etcdkv.Put("b", []byte("x"))}}),
		etcdkv.Nested(etcdkv.Txn{If: []etcdkv.Cmp{etcdkv.ValueIs("a", []byte("0"))}, Then: []etcdkv.Op{etcdkv.Put("c", []byte("x"))}}),
	}})
	if !r.Nested(0).Succeeded || r.Nested(1).Succeeded || len(f.Values("b")) != 1 || len(f.Values("c")) != 0 {
		t.Fatalf("nested: %v %v %v", r.Nested(0).Succeeded, r.Nested(1).Succeeded, f.Values(""))
	}
	// etcd refuses a key written twice in one transaction, and applies
	// nothing of it.
	_, err := c.Txn(etcdkv.Txn{Then: []etcdkv.Op{etcdkv.Put("d", nil), etcdkv.Nested(etcdkv.Txn{Then: []etcdkv.Op{etcdkv.Put("d", nil)}})}})
	if err == nil || len(f.Values("d")) != 0 {
		t.Fatalf("duplicate put: %v %v", err, f.Values("d"))
	}
	// etcd refuses more than 128 operations at any level (its default
	// --max-txn-ops), and applies nothing of it; 128 pass.
	gets := func(n int) []etcdkv.Op {
		ops := make([]etcdkv.Op, n)
		for i := range ops {
			ops[i] = etcdkv.Get("a")
		}
		return ops
	}
	if _, err := c.Txn(etcdkv.Txn{Then: gets(128)}); err != nil {
		t.Fatalf("128 operations: %v", err)
	}
	if _, err := c.Txn(etcdkv.Txn{Then: append(gets(129), etcdkv.Put("d", nil))}); err == nil || len(f.Values("d")) != 0 {
		t.Fatalf("129 operations: %v %v", err, f.Values("d"))
	}
	if _, err := c.Txn(etcdkv.Txn{Then: []etcdkv.Op{etcdkv.Put("d", nil), etcdkv.Nested(etcdkv.Txn{Then: gets(129)})}}); err == nil || len(f.Values("d")) != 0 {
		t.Fatalf("129 nested operations: %v %v", err, f.Values("d"))
	}
	// A nested transaction gets what its parent left: 2 outer operations
	// leave 126 to each nested one.
	if _, err := c.Txn(etcdkv.Txn{Then: []etcdkv.Op{etcdkv.Put("d", nil), etcdkv.Nested(etcdkv.Txn{Then: gets(127)})}}); err == nil || len(f.Values("d")) != 0 {
		t.Fatalf("a nested 127 beside 2: %v %v", err, f.Values("d"))
	}
	if _, err := c.Txn(etcdkv.Txn{Then: []etcdkv.Op{etcdkv.Get("a"), etcdkv.Nested(etcdkv.Txn{Then: gets(126)})}}); err != nil {
		t.Fatalf("a nested 126 beside 2: %v", err)
	}
	// List pages through a prefix.
	for i := range 30 {
		txn(etcdkv.Txn{Then: []etcdkv.Op{etcdkv.Put("p/"+string(rune('A'+i)), []byte("v"))}})
	}
	kvs, err := c.List("p/", true)
	if err != nil || len(kvs) != 30 {
		t.Fatalf("list: %d %v", len(kvs), err)
	}
}
