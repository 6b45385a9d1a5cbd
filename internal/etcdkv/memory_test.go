package etcdkv

import (
	"strings"
	"testing"
)

// TestMemoryConcurrentExecs: execs that started together each learn of a
// different failed member, and of a token; what each saves adds to the
// others', so the next exec tries both failed members last and sends the
// token. (Saving each exec's own view whole lost the first one's.) Of the
// two, the member that did not answer at all comes last, after the one
// that answered with a refusal (an election's "no leader").
func TestMemoryConcurrentExecs(t *testing.T) {
	cfg := Config{Endpoints: []string{"http://a", "http://b", "http://c"}, StateDir: t.TempDir()}
	one, two, three := New(cfg), New(cfg), New(cfg)
	one.failed("http://a", avoidFor)
	two.failed("http://b", avoidRefusedFor)
	three.memory.update(func(m *memory) { m.Token = "t7" })
	next := New(cfg)
	if got := strings.Join(next.order, ","); got != "http://c,http://b,http://a" {
		t.Errorf("order = %s, want c first, then b (refused), a (no answer) last", got)
	}
	if next.token != "t7" {
		t.Errorf("token = %q, want the one another exec remembered", next.token)
	}
}

// TestRememberSeen: what is remembered under a state key is the next
// exec's whichever endpoints it lists, and another key's is not mixed in;
// a newer sight replaces an older one even at a lower revision (a cluster
// restored from a backup).
func TestRememberSeen(t *testing.T) {
	dir := t.TempDir()
	a := New(Config{Endpoints: []string{"http://a"}, StateDir: dir, StateKey: "node-1"})
	a.Remember(map[string]Seen{"k": {Rev: 40, Value: "x"}, "j": {Rev: 7}})
	b := New(Config{Endpoints: []string{"http://proxy-a", "http://proxy-b"}, StateDir: dir, StateKey: "node-1"})
	if got := b.Recall("k"); got != (Seen{Rev: 40, Value: "x"}) {
		t.Fatalf("Recall(k) through other endpoints = %+v, want 40 x", got)
	}
	if got := New(Config{Endpoints: []string{"http://a"}, StateDir: dir, StateKey: "node-2"}).Recall("k"); got != (Seen{}) {
		t.Fatalf("another state key's Recall(k) = %+v, want nothing", got)
	}
	b.Remember(map[string]Seen{"k": {Rev: 12, Value: "y"}})
	c := New(Config{Endpoints: []string{"http://a"}, StateDir: dir, StateKey: "node-1"})
	if k, j := c.Recall("k"), c.Recall("j"); k != (Seen{Rev: 12, Value: "y"}) || j.Rev != 7 {
		t.Fatalf("after a lower revision: k=%+v j=%+v, want 12 y and 7", k, j)
	}
}
