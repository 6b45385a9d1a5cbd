package ops

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// TestLiveGC: which reservations a reconcile against the runtime's live
// sandboxes releases, and that releasing them leaves exactly the others.
func TestLiveGC(t *testing.T) {
	now := time.Now()
	old, young := now.Add(-time.Hour), now.Add(-time.Minute)
	type res struct {
		path, owner string
		mtime       time.Time
	}
	state := []res{
		{"lan/10.0.0.2", "live-1\r\neth0", old},                   // a live sandbox: kept
		{"lan/10.0.0.3", "gone-1\r\neth0", old},                   // no sandbox, old: released
		{"lan/10.0.0.4", "gone-2\r\neth0", young},                 // no sandbox but young (an ADD in flight): kept
		{"lan/10.0.0.5", "gone-3", old},                           // legacy id-only file of a gone container: released
		{"_pools/web/10.1.0.2", "gone-4\r\neth0\r\nlan", old},     // in a pool: released
		{"_pools/web/10.1.0.3", "live-1\r\neth1\r\nlan", old},     // the live sandbox's second interface: kept
		{"_pools/web/10.1.0.4", "_docker\r\nweb\r\n_docker", old}, // the Docker driver's: never touched
		// Other runtimes' attachments beside the CRI runtime's: never its to release.
		{"podman/10.88.0.2", "podman-ctr\r\neth0", old},              // podman's own network directory
		{"_pools/web/10.1.0.5", "nomad-alloc\r\neth0\r\nnomad", old}, // Nomad's network in the shared pool
		{"_pools/web/10.1.0.6", "gone-5\r\neth0", old},               // no network recorded (host-local, older versions): kept
	}
	dataDir := t.TempDir()
	for _, r := range state {
		p := filepath.Join(dataDir, r.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(r.owner), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, r.mtime, r.mtime); err != nil {
			t.Fatal(err)
		}
	}
	local := Local{DataDir: dataDir, LockTimeout: time.Second}
	req := GCRequest{Runtime: &alloc.Runtime{Ready: map[string]bool{"live-1": true}, MinAge: 10 * time.Minute, Now: now, Networks: []string{"lan"}}}
	wantSkipped := map[string]int{"podman": 1, "nomad": 1, "": 1}
	want := []string{"10.0.0.3", "10.0.0.5", "10.1.0.2"}
	addrs := func(ls []LiveGCLease) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.Address)
		}
		slices.Sort(out)
		return out
	}
	planned, err := LiveGC(local, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := addrs(planned.Stale); !slices.Equal(got, want) {
		t.Fatalf("dry run plans %v, want %v", got, want)
	}
	if !maps.Equal(planned.Skipped, wantSkipped) {
		t.Errorf("dry run skipped %v, want %v", planned.Skipped, wantSkipped)
	}
	if ls, _ := local.Leases(LeaseFilter{}); len(ls) != len(state) {
		t.Fatalf("a dry run changed the state: %d leases left of %d", len(ls), len(state))
	}
	req.Apply = true
	released, err := LiveGC(local, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := addrs(released.Stale); !slices.Equal(got, want) {
		t.Fatalf("released %v, want %v", got, want)
	}
	left, err := local.Leases(LeaseFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range left {
		kept = append(kept, l.Address)
	}
	slices.Sort(kept)
	if wantKept := []string{"10.0.0.2", "10.0.0.4", "10.1.0.3", "10.1.0.4", "10.1.0.5", "10.1.0.6", "10.88.0.2"}; !slices.Equal(kept, wantKept) {
		t.Errorf("left %v, want %v", kept, wantKept)
	}
	// A second pass finds nothing: the released are gone, the rest kept.
	again, err := LiveGC(local, req)
	if err != nil || len(again.Stale) != 0 {
		t.Errorf("second pass: %v, %v; want nothing", again, err)
	}
}
