package etcdstore

import (
	"bytes"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// The one-round-trip DEL's ranges: a sticky record lies in its own
// owner's sticky range, never in the plain one, and a later record of the
// same owner lies in neither.
func TestStickyRecordRanges(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	plain := Record{Node: "n", ContainerID: "c", IfName: "eth0", Network: "net", Address: "10.0.0.5", Time: stamp(now), Claim: "x"}
	st := &stickyAtt{Keyed: alloc.Keyed{Key: "ns/web-0", HoldFor: time.Minute}, id: alloc.StickyID("ns/web-0", "eth0")}
	sticky := st.mark(plain)
	in := func(r, bound Record) bool {
		v := r.encode()
		return bytes.Compare(v, bound.ownerPrefix()) > 0 && bytes.Compare(v, bound.writtenBefore()) < 0
	}
	delAt := func(r Record) Record { r.Time, r.Claim = stamp(now.Add(time.Second)), ""; return r }
	if !in(sticky, delAt(sticky)) || in(sticky, delAt(plain)) || !in(plain, delAt(plain)) || in(plain, delAt(sticky)) {
		t.Fatal("sticky and plain ranges overlap or miss")
	}
	later := sticky
	later.Time = stamp(now.Add(2 * time.Second))
	if in(later, delAt(sticky)) {
		t.Fatal("a later record is in an earlier DEL's range")
	}
	other := sticky
	other.Hold = alloc.StickyID("ns/web-1", "eth0")
	if in(other, delAt(sticky)) {
		t.Fatal("another key's record is in the range")
	}
}

func TestHoldRecord(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 500, time.UTC)
	r := Record{Hold: "h", Node: "n", ContainerID: "c", IfName: "eth0", Network: "net", Address: "10.0.0.5", StickyKey: "k", HoldFor: "30m0s"}
	heldOf := func(r Record) alloc.Hold {
		p := (&Operation{now: now}).planDel(r.attachment(), r)
		if p.Step != alloc.DelToHold || p.Gone != alloc.DelFree {
			t.Fatalf("DEL of sticky claim %+v: %+v", r, p)
		}
		return p.Hold
	}
	h := heldOf(r)
	if h.Owner != "" || h.Node != "" || h.LastOwner != "c" || h.LastNode != "n" || !h.Expires.Equal(time.Date(2026, 11, 25, 12, 30, 1, 0, time.UTC)) { // 30m after now, rounded up
		t.Fatalf("held: %+v", h)
	}
	if !h.Held() || h.Expired(now) || !h.Expired(now.Add(time.Hour)) {
		t.Fatalf("rules: %+v", h)
	}
	if h0 := heldOf(Record{Hold: "h", ContainerID: "c", IfName: "eth0", Address: "10.0.0.5", HoldFor: "0s"}); !h0.Expires.IsZero() {
		t.Fatalf("holdFor 0: %+v", h0)
	}
	owned := alloc.Hold{Node: "n", Owner: "c", IfName: "eth0", Network: "net", Address: "10.0.0.5", Key: "k", Time: "t"}
	if !owned.OwnedBy("n", "c") || owned.OwnedBy("m", "c") {
		t.Fatalf("owner not qualified by node: %+v", owned)
	}
	p := encodeHold(alloc.Hold{Node: "n", Owner: "c", IfName: "eth0", Network: "net", Address: "10.0.0.5"})
	p = p[:bytes.Index(p, []byte(`"key":`))] // the owner's fields
	v := encodeHold(owned)
	if !bytes.HasPrefix(v, p) || bytes.HasPrefix(encodeHold(h), p) || bytes.HasPrefix(encodeHold(alloc.Hold{Node: "n", Owner: "c2", IfName: "eth0", Network: "net", Address: "10.0.0.5", Key: "k"}), p) {
		t.Fatalf("owner prefix %s of %s", p, v)
	}
	if _, ok := decodeRecord(encodeHold(h)); ok {
		t.Fatal("a held claim decodes as an owner record")
	}
}
