package etcdstore_test

import (
	"testing"

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
