package hardening

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// mountTmpfs mounts a tmpfs with opts on a new directory and unmounts it
// when the test ends. Without the privilege to mount, the test is skipped
// loudly: these faults cannot be simulated for root by chmod.
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Skipf("SKIPPED: cannot mount a tmpfs (%v); the resource-fault tests need root and mount(2)", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

func remount(t *testing.T, dir string, flags uintptr, opts string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|flags, opts); err != nil {
		t.Fatalf("remount %s: %v", dir, err)
	}
}

// wantCode runs c and fails unless it answers code (0: success).
func wantCode(t *testing.T, c testbin.Call, want uint) testbin.Reply {
	t.Helper()
	r := testbin.Run(c)
	if got := code(r); got != want {
		t.Fatalf("%s %s %s: code %d, want %d: %s\nstderr: %s", c.Plugin, c.Command, c.ContainerID, got, want, r.Stdout, r.Stderr)
	}
	return r
}

// TestReadOnlyDataDir: on a read-only file system, ADD fails with code 5
// and changes nothing, while everything that needs no write (DEL of an
// unknown attachment, CHECK, STATUS, GC with nothing to collect) works,
// and the state is intact once the file system is writable again.
func TestReadOnlyDataDir(t *testing.T) {
	mnt := mountTmpfs(t, "size=1m")
	dataDir := filepath.Join(mnt, "data")
	setups := []setup{
		standaloneSetup(dataDir, "ro-sa", "10.81.0.0/27", ""),
		chainSetup(dataDir, "ro-chain", "p-ro", "10.82.0.0/27", ""),
	}
	live := map[string][]byte{} // network -> the live attachment's ADD result
	for _, s := range setups {
		live[s.name] = testbin.MustSucceed(t, call(s.plugin, "ADD", "live", s.conf(""))).Stdout
		testbin.MustSucceed(t, call(s.plugin, "DEL", "nobody", s.conf(""))) // leaves a valid index
	}
	remount(t, mnt, syscall.MS_RDONLY, "")
	before := snapshot(t, mnt)

	for _, s := range setups {
		t.Run(s.name, func(t *testing.T) {
			r := wantCode(t, call(s.plugin, "ADD", "new", s.conf("")), 5)
			if !strings.Contains(string(r.Stdout), "read-only") {
				t.Errorf("code 5 without the cause: %s", r.Stdout)
			}
			wantCode(t, call(s.plugin, "DEL", "unknown", s.conf("")), 0)
			wantCode(t, call(s.plugin, "CHECK", "live", s.conf(`,"prevResult":`+string(live[s.name]))), 0)
			wantCode(t, call(s.plugin, "STATUS", "", s.conf("")), 0)
			wantCode(t, gcCall(s.plugin, s.conf(`,"cni.dev/valid-attachments":[{"containerID":"live","ifname":"eth0"}]`)), 0)
			// Releasing needs a write: code 5, and the address stays held.
			wantCode(t, call(s.plugin, "DEL", "live", s.conf("")), 5)
			if d := diff(before, snapshot(t, mnt), ""); len(d) > 0 {
				t.Fatalf("the read-only tree changed?\n%s", strings.Join(d, "\n"))
			}
		})
	}

	remount(t, mnt, 0, "")
	for _, s := range setups {
		dir := s.stateOf(dataDir)
		state := readState(t, dir, s.pool)
		if len(state) != 1 || state[firstAddr(t, live[s.name])].id != "live" {
			t.Fatalf("%s: state after the read-only spell: %v", s.name, state)
		}
		a := testbin.MustSucceed(t, call(s.plugin, "ADD", "new", s.conf("")))
		if firstAddr(t, a.Stdout) == firstAddr(t, live[s.name]) {
			t.Fatalf("%s: live address handed out again", s.name)
		}
		for _, id := range []string{"live", "new"} {
			testbin.MustSucceed(t, call(s.plugin, "DEL", id, s.conf("")))
		}
		if state := readState(t, dir, s.pool); len(state) != 0 {
			t.Fatalf("%s: reservations left: %v", s.name, state)
		}
		checkIndex(t, dir, nil)
	}
}

// TestFullDataDir: on a full file system, ADD fails with code 5 and
// leaves no reservation, partial or whole; DEL of an unknown attachment
// succeeds; once there is space again, the plugin allocates, and the index
// agrees with the files.
func TestFullDataDir(t *testing.T) {
	mnt := mountTmpfs(t, "size=64k")
	dataDir := filepath.Join(mnt, "data")
	setups := []setup{
		standaloneSetup(dataDir, "full-sa", "10.83.0.0/27", ""),
		chainSetup(dataDir, "full-chain", "p-full", "10.84.0.0/27", ""),
	}
	live := map[string]string{}
	for _, s := range setups {
		live[s.name] = firstAddr(t, testbin.MustSucceed(t, call(s.plugin, "ADD", "live", s.conf(""))).Stdout)
	}
	fill(t, filepath.Join(mnt, "filler"))

	fresh := standaloneSetup(dataDir, "full-fresh", "10.85.0.0/27", "")
	for _, s := range append(setups, fresh) {
		t.Run(s.name, func(t *testing.T) {
			dir := s.stateOf(dataDir)
			before := readState(t, dir, s.pool)
			r := wantCode(t, call(s.plugin, "ADD", "new", s.conf("")), 5)
			if !strings.Contains(string(r.Stdout), "no space") {
				t.Errorf("code 5 without the cause: %s", r.Stdout)
			}
			after := readState(t, dir, s.pool) // fails on any partial file
			if len(after) != len(before) {
				t.Fatalf("failed ADD changed the reservations: %v -> %v", before, after)
			}
			wantCode(t, call(s.plugin, "DEL", "unknown", s.conf("")), 0)
			if after := readState(t, dir, s.pool); len(after) != len(before) {
				t.Fatalf("DEL of an unknown attachment changed the reservations: %v -> %v", before, after)
			}
		})
	}

	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	for _, s := range append(setups, fresh) {
		dir := s.stateOf(dataDir)
		a := testbin.MustSucceed(t, call(s.plugin, "ADD", "new", s.conf("")))
		if firstAddr(t, a.Stdout) == live[s.name] {
			t.Fatalf("%s: live address handed out again", s.name)
		}
		testbin.MustSucceed(t, call(s.plugin, "DEL", "unknown", s.conf("")))
		checkIndex(t, dir, readState(t, dir, s.pool))
		for _, id := range []string{"live", "new"} {
			testbin.MustSucceed(t, call(s.plugin, "DEL", id, s.conf("")))
		}
		if state := readState(t, dir, s.pool); len(state) != 0 {
			t.Fatalf("%s: reservations left: %v", s.name, state)
		}
		checkIndex(t, dir, nil)
	}
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill: %v", err)
			}
			return
		}
	}
}
