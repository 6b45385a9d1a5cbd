package etcdstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/etcdkv/etcdkvfake"
)

// A standalone DEL whose prevResult lists the attachment's address
// releases it in one request: the config DEL parsed once places the
// address in its ranges. Without prevResult, the read path takes two.
func TestDelFromPrevOneRequest(t *testing.T) {
	f := etcdkvfake.New(t)
	run := fakeNode(t, f)
	del := func(cid string, prev []byte) int {
		t.Helper()
		before := len(f.Requests())
		if out, code := run("DEL", cid, "", prev); code != 0 {
			t.Fatalf("DEL %s: exit %d %s", cid, code, out)
		}
		if cs := claims(f); len(cs) != 0 {
			t.Fatalf("DEL %s left claims %v", cid, cs)
		}
		return len(f.Requests()) - before
	}
	res, code := run("ADD", "c1", "", nil)
	if code != 0 {
		t.Fatalf("ADD c1: exit %d %s", code, res)
	}
	if n := del("c1", res); n != 1 {
		t.Errorf("DEL with prevResult: %d requests, want 1", n)
	}
	if _, code := run("ADD", "c2", "", nil); code != 0 {
		t.Fatal("ADD c2 failed")
	}
	if n := del("c2", nil); n != 2 {
		t.Errorf("DEL without prevResult: %d requests, want 2", n)
	}
}

// The one-round-trip DEL is finished only when the engine's plan leaves
// what the attachment's index keys still name: a record that names no
// network is this network's (alloc.PlanDel), so the read path releases
// it, as a DEL without prevResult does.
func TestDelFromPrevLeavesNoRecordOfThisNetwork(t *testing.T) {
	f := etcdkvfake.New(t)
	run := fakeNode(t, f)
	res, code := run("ADD", "c1", "", nil)
	if code != 0 {
		t.Fatalf("ADD c1: exit %d %s", code, res)
	}
	var rewrite []etcdkv.Op // both keys of the claim, naming no network
	for k, v := range f.Values("/u/") {
		if strings.HasPrefix(k, "/u/ip/") || strings.HasPrefix(k, "/u/node/n1/net/") {
			rewrite = append(rewrite, etcdkv.Put(k, []byte(strings.Replace(v, `"network":"fake-net"`, `"network":""`, 1))))
		}
	}
	if _, err := etcdkv.New(etcdkv.Config{Endpoints: []string{f.URL()}, Timeout: 10 * time.Second}).Txn(etcdkv.Txn{Then: rewrite}); len(rewrite) != 2 || err != nil {
		t.Fatalf("rewriting %d keys: %v", len(rewrite), err)
	}
	if out, code := run("DEL", "c1", "", res); code != 0 {
		t.Fatalf("DEL: exit %d %s", code, out)
	}
	if cs, idx := claims(f), f.Values("/u/node/n1/net/"); len(cs) != 0 || len(idx) != 0 {
		t.Fatalf("DEL with prevResult left claims %v, index keys %v", cs, idx)
	}
}
