package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// inode identifies a file across renames: a rebuild of the index swaps in
// a freshly written directory, so an unchanged inode of the index
// directory (and of its buckets) proves no rebuild happened.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// A full network, a leaked address released by hand, and the next ADD
// getting exactly that address with the index left as it was.
func TestOpsReleaseLeakThenAdd(t *testing.T) {
	l := newOpsLab(t)
	l.network("10-small.conflist", "small", `{"type":"ipam-da-pools","dataDir":"DATA","ranges":[[{"subnet":"10.78.0.0/29"}]]}`)
	for _, id := range []string{"c1", "c2", "c3", "c4", "c5"} {
		l.mustAdd("small", id, "eth0")
	}
	if r := l.call("ADD", "small", "c6", "eth0"); r.Err() == nil || r.Err().Code != 100 {
		t.Fatalf("ADD on a full network: %s", r.Stdout)
	}
	if out := l.cli(0, "pools", "--conf-dir", l.confDir, "--no-headers"); !strings.Contains(out, " yes ") {
		t.Errorf("pools does not report the exhausted range set:\n%s", out)
	}
	idx := filepath.Join(l.dataDir, "_index", "small")
	idxIno, b00Ino := inode(t, idx), inode(t, filepath.Join(idx, "b00"))
	leak := filepath.Join(l.dataDir, "small", "10.78.0.4")
	if b, _ := os.ReadFile(leak); string(b) != "c3\r\neth0" {
		t.Fatalf("%s = %q, want c3's", leak, b)
	}

	// Refusals leave everything as it was.
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"10.78.0.4", "--network", "small", "--container", "c9"}, `held by container "c3", not "c9"`},
		{[]string{"10.78.0.4", "--network", "small", "--container", "c3", "--ifname", "net1"}, `held by interface "eth0"`},
		{[]string{"10.78.0.7", "--network", "small"}, "10.78.0.7 is not reserved in small"},
		{[]string{"10.78.0.4", "--network", "../etc"}, "invalid --network"},
		{[]string{"10.78.0.4"}, "exactly one of --network or --pool"},
		{[]string{"10.78.0.4", "--network", "typo"}, "no state directory"},
	} {
		r := cliRun(append([]string{"release", "--data-dir", l.dataDir}, tt.args...)...)
		if r.Exit == 0 || !strings.Contains(string(r.Stderr), tt.msg) || len(r.Stdout) != 0 {
			t.Errorf("release %v: exit %d stdout %q stderr %q, want a refusal with %q", tt.args, r.Exit, r.Stdout, r.Stderr, tt.msg)
		}
	}
	if out := l.cli(0, "release", "--data-dir", l.dataDir, "10.78.0.4", "--network", "small", "--container", "c3", "--dry-run"); !strings.HasPrefix(out, "would release 10.78.0.4 (network small, container c3 ifname eth0") {
		t.Errorf("dry run printed %q", out)
	}
	if _, err := os.Stat(leak); err != nil {
		t.Fatalf("refusals or the dry run removed the reservation: %v", err)
	}
	if _, err := os.Stat(filepath.Join(l.dataDir, "typo")); !os.IsNotExist(err) {
		t.Errorf("release on a mistyped network created its directory: %v", err)
	}

	out := l.cli(0, "release", "--data-dir", l.dataDir, "10.78.0.4", "--network", "small", "--container", "c3", "--ifname", "eth0")
	if out != "released 10.78.0.4 (network small, container c3 ifname eth0, owner cni)\n" {
		t.Errorf("release printed %q", out)
	}
	if _, err := os.Stat(leak); !os.IsNotExist(err) {
		t.Fatalf("reservation still there: %v", err)
	}
	// The stamp is valid (fsck finds nothing, not even a stale index) and
	// the exhaustion mark went with the release.
	if out := l.cli(0, "fsck", "--data-dir", l.dataDir, "--no-headers"); out != "" {
		t.Errorf("fsck after release:\n%s", out)
	}
	if out := l.cli(0, "pools", "--conf-dir", l.confDir, "--no-headers"); strings.Contains(out, " yes ") {
		t.Errorf("pools still reports exhaustion after a release:\n%s", out)
	}
	if got := l.mustAdd("small", "c6", "eth0"); got != "10.78.0.4/29 gw 10.78.0.1" {
		t.Errorf("ADD after release got %s, want the released 10.78.0.4", got)
	}
	if inode(t, idx) != idxIno || inode(t, filepath.Join(idx, "b00")) != b00Ino {
		t.Error("the index directory was replaced: release or the next ADD rebuilt it")
	}
	if out := l.cli(0, "fsck", "--data-dir", l.dataDir, "--no-headers"); out != "" {
		t.Errorf("fsck after the ADD:\n%s", out)
	}
	// c3's DEL, arriving late, frees nothing of c6's.
	if r := l.call("DEL", "small", "c3", "eth0"); r.Exit != 0 {
		t.Fatalf("late DEL: %s", r.Stdout)
	}
	if b, _ := os.ReadFile(leak); string(b) != "c6\r\neth0" {
		t.Errorf("after c3's late DEL, %s = %q", leak, b)
	}
}

// gc by hand: the plan changes nothing; --apply releases exactly what the
// plan said, keeping the listed attachments, legacy files of live
// containers and non-CNI owners.
func TestOpsGC(t *testing.T) {
	l := newOpsLab(t)
	l.network("10-p.conflist", "pnet", `{"type":"ipam-delegated","delegates":["ipam-ds-static","ipam-da-pools"],"dataDir":"DATA",
		"pools":[{"name":"gcpool","subnet":"10.79.0.0/28"}]}`)
	l.network("20-q.conflist", "qnet", `{"type":"ipam-delegated","delegates":["ipam-ds-static","ipam-da-pools"],"dataDir":"DATA",
		"pools":[{"name":"gcpool","subnet":"10.79.0.0/28"}]}`)
	l.mustAdd("pnet", "live", "eth0")  // .2
	l.mustAdd("pnet", "dead", "eth0")  // .3
	l.mustAdd("pnet", "live", "net1")  // .4
	l.mustAdd("qnet", "other", "eth0") // .5, qnet's
	pool := filepath.Join(l.dataDir, "_pools", "gcpool")
	writeFile(t, filepath.Join(pool, "10.79.0.9"), "live")                    // legacy file of a live container
	writeFile(t, filepath.Join(pool, "10.79.0.10"), "_docker\r\nep1\r\npnet") // non-CNI owner
	keepFile := filepath.Join(l.root, "keep")
	writeFile(t, keepFile, "# live attachments\nlive@eth0\n\n")

	plan := l.cli(0, "gc", "--data-dir", l.dataDir, "--pool", "gcpool", "--network", "pnet", "--keep-file", keepFile)
	want := "would release 10.79.0.3 (pool gcpool, network pnet, container dead ifname eth0, owner cni)\n" +
		"would release 10.79.0.4 (pool gcpool, network pnet, container live ifname net1, owner cni)\n"
	if plan != want {
		t.Errorf("plan:\n%s\nwant:\n%s", plan, want)
	}
	if _, err := os.Stat(filepath.Join(pool, "10.79.0.3")); err != nil {
		t.Fatal("the plan changed something")
	}
	done := l.cli(0, "gc", "--data-dir", l.dataDir, "--pool", "gcpool", "--network", "pnet", "--keep", "live@eth0", "--apply")
	if done != strings.ReplaceAll(want, "would release", "released") {
		t.Errorf("gc --apply:\n%s", done)
	}
	for _, ip := range []string{"10.79.0.2", "10.79.0.5", "10.79.0.9", "10.79.0.10"} {
		if _, err := os.Stat(filepath.Join(pool, ip)); err != nil {
			t.Errorf("%s was released: %v", ip, err)
		}
	}
	if r := cliRun("gc", "--data-dir", l.dataDir, "--pool", "gcpool"); r.Exit == 0 {
		t.Error("gc without --keep or --keep-file succeeded")
	}
	if out := l.cli(0, "fsck", "--data-dir", l.dataDir, "--no-headers"); strings.Contains(out, "problem") {
		t.Errorf("fsck after gc:\n%s", out)
	}
}
