package etcdkv

import (
	"os"
	"strings"
	"testing"
)

// TestSeenDamaged: a record that does not check out (a write another exec
// had half done when this one read it, a foreign file) is not known, and
// a sight too long to keep replaces the old one with nothing: a wrong
// hint must never be recalled.
func TestSeenDamaged(t *testing.T) {
	cfg := Config{Endpoints: []string{"http://a"}, StateDir: t.TempDir(), StateKey: "node-1"}
	New(cfg).Remember(map[string]Seen{"k": {Rev: 40, Value: "x"}, "j": {Rev: 7, Value: "y"}})
	c := New(cfg)
	p := c.revs.path("k")
	b, err := os.ReadFile(p)
	if err != nil || len(b) != seenSize {
		t.Fatalf("record: %d bytes, %v; want %d", len(b), err, seenSize)
	}
	torn := strings.Replace(string(b), `"rev":40`, `"rev":41`, 1)
	if err := os.WriteFile(p, []byte(torn), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := c.Recall("k"); got != (Seen{}) {
		t.Errorf("Recall of a damaged record = %+v, want nothing", got)
	}
	New(cfg).Remember(map[string]Seen{"j": {Rev: 8, Value: strings.Repeat("v", seenSize)}})
	if got := New(cfg).Recall("j"); got != (Seen{}) {
		t.Errorf("Recall after a sight too long to keep = %+v, want nothing (not the older 7 y)", got)
	}
}

// TestSeenConcurrentExecs: execs that learn of different keys at once
// keep what each learnt; a fork remembers nothing for the next execs.
func TestSeenConcurrentExecs(t *testing.T) {
	cfg := Config{Endpoints: []string{"http://a"}, StateDir: t.TempDir(), StateKey: "node-1"}
	one, two := New(cfg), New(cfg)
	if one.Recall("a") != (Seen{}) || two.Recall("b") != (Seen{}) {
		t.Fatal("a fresh state directory knows something")
	}
	one.Remember(map[string]Seen{"a": {Rev: 3, Value: "p"}})
	two.Remember(map[string]Seen{"b": {Rev: 4, Value: "q"}})
	one.Fork().Remember(map[string]Seen{"c": {Rev: 5}})
	next := New(cfg)
	if a, b, c := next.Recall("a"), next.Recall("b"), next.Recall("c"); a != (Seen{Rev: 3, Value: "p"}) || b != (Seen{Rev: 4, Value: "q"}) || c != (Seen{}) {
		t.Errorf("next exec recalls a=%+v b=%+v c=%+v; want 3 p, 4 q and nothing", a, b, c)
	}
}
