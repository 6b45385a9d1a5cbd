package hardening

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// plantHandoverCrash leaves dir as a source's DEL killed between the two
// writes of its hand-over leaves it: ip's reservation file is the
// target's (renamed in, as the DEL writes it, so that the index is
// rebuilt), while the key's record still names the source as owner and
// the target as its second.
func plantHandoverCrash(t *testing.T, dir, ip, source, target string) {
	t.Helper()
	path := filepath.Join(dir, ip)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	owner, rest, _ := strings.Cut(string(b), "\r\n")
	if owner != source {
		t.Fatalf("%s is %q's, want %s's", ip, owner, source)
	}
	if err := os.WriteFile(path+".planted", []byte(target+"\r\n"+rest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".planted", path); err != nil {
		t.Fatal(err)
	}
}

// writtenHolds are dir's hold records as written, unjudged.
func writtenHolds(t *testing.T, dir string) []alloc.Hold {
	t.Helper()
	holds, err := alloc.ListHolds(hostlocal.Reader(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []alloc.Hold
	for _, e := range holds {
		out = append(out, e.Written)
	}
	return out
}

// fsckProblems runs cniplugins fsck (with --repair when repair) and
// returns its problems' findings.
func fsckProblems(t *testing.T, dataDir string, repair bool) []string {
	t.Helper()
	argv := []string{"fsck", "--data-dir", dataDir, "-o", "json"}
	if repair {
		argv = append(argv, "--repair")
	}
	r := testbin.Run(testbin.Call{Plugin: "cniplugins", Path: binDir, Argv: argv})
	var findings []struct {
		Severity, Finding string
		Repaired          bool
	}
	if err := json.Unmarshal(r.Stdout, &findings); err != nil || r.Exit > 1 {
		t.Fatalf("fsck: exit %d %v\n%s%s", r.Exit, err, r.Stdout, r.Stderr)
	}
	var out []string
	for _, f := range findings {
		if f.Severity == "problem" && !f.Repaired {
			out = append(out, f.Finding)
		}
	}
	return out
}

// TestHandoverCrashState is issue 37's window, planted deterministically
// on both layouts: a source's DEL killed between the hand-over's two
// writes. fsck reports it; the source's DEL retried without pod args or
// annotations (as a runtime may send it after a restart) succeeds and
// leaves the record naming the target alone, as does fsck --repair; and
// the next migration shares the address.
func TestHandoverCrashState(t *testing.T) {
	const sticky = `,"sticky":{"by":["kubevirt"],"holdFor":"0"}`
	for _, repair := range []bool{false, true} {
		dataDir := t.TempDir()
		for _, s := range []setup{standaloneSetup(dataDir, "handover", "10.81.1.0/28", sticky),
			chainSetup(dataDir, "handover-pool", "hp", "10.81.2.0/28", sticky)} {
			key := "vms/vm/" + s.name
			dir := s.stateOf(dataDir)
			ip := firstAddr(t, testbin.MustSucceed(t, migrationCall(s, "ADD", "src", key, "")).Stdout)
			testbin.MustSucceed(t, migrationCall(s, "ADD", "tgt", key, "mig-1"))
			plantHandoverCrash(t, dir, ip, "src", "tgt")
			problems := fsckProblems(t, dataDir, repair)
			if !repair && (len(problems) != 1 || !strings.Contains(problems[0], "hand-over")) {
				t.Fatalf("%s: fsck of the interrupted hand-over: %q", s.name, problems)
			}
			if repair && len(problems) != 0 {
				t.Fatalf("%s: fsck --repair left %q", s.name, problems)
			}
			for range 2 {
				testbin.MustSucceed(t, call(s.plugin, "DEL", "src", s.conf("")))
			}
			for _, h := range writtenHolds(t, dir) {
				if h.Owner != "tgt" || h.Second != "" || h.LastOwner != "src" {
					t.Errorf("%s: after the source's DEL the record is %+v, want tgt the sole owner", s.name, h)
				}
			}
			if got := firstAddr(t, testbin.MustSucceed(t, migrationCall(s, "ADD", "tgt2", key, "mig-2")).Stdout); got != ip {
				t.Errorf("%s: the next migration's target got %s, want %s", s.name, got, ip)
			}
		}
		if p := fsckProblems(t, dataDir, false); len(p) != 0 {
			t.Errorf("fsck after the DELs: %q", p)
		}
	}
}
