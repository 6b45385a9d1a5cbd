package hardening

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/plugintest"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// execMargin is what a bound on an exec's duration allows beyond the
// timeout it configures: the start-up and scheduling of a few processes
// on a loaded two-core machine. Such bounds only tell "gave up at its
// timeout" from "hung"; speed is measured by make bench, never here.
const execMargin = 20 * time.Second

// call is one invocation for container id on eth0.
func call(plugin, cmd, id string, stdin []byte) testbin.Call {
	return testbin.Call{Plugin: plugin, Command: cmd, ContainerID: id, IfName: "eth0",
		Netns: "/var/run/netns/" + id, Path: binDir, Stdin: stdin}
}

// gcCall is a GC: no attachment.
func gcCall(plugin string, stdin []byte) testbin.Call {
	return testbin.Call{Plugin: plugin, Command: "GC", Path: binDir, Stdin: stdin}
}

// proc is a started invocation that the test may kill or stop. It is
// reaped in the background, so the test can tell whether it has exited
// without waiting for it.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{} // closed once reaped
	waitErr        error
}

func startCall(t testing.TB, c testbin.Call) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(filepath.Join(binDir, c.Plugin)), done: make(chan struct{})}
	p.cmd.Env = c.Environ()
	p.cmd.Stdin = bytes.NewReader(c.Stdin)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", c.Plugin, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	return p
}

// exited reports whether p has been reaped.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// outcome of a finished proc.
type outcome struct {
	killed bool // ended by the test's SIGKILL
	exit   int
	stdout []byte
	err    *plugintest.ErrorOutput
}

// killAfter is kill -9 of p once d has passed, wherever it is by then.
func (p *proc) killAfter(d time.Duration) {
	time.Sleep(d)
	_ = p.cmd.Process.Kill()
}

// wait waits for p and checks the output contract of a run that was not
// killed: exit 0, or one JSON error object with a real code.
func (p *proc) wait(t testing.TB) outcome {
	t.Helper()
	<-p.done
	var o outcome
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		if ws.Signal() != syscall.SIGKILL {
			t.Fatalf("process died of %v\nstderr: %s", ws.Signal(), p.stderr.Bytes())
		}
		o.killed = true
		return o
	}
	var ee *exec.ExitError
	if p.waitErr != nil && !errors.As(p.waitErr, &ee) {
		t.Fatalf("wait: %v", p.waitErr)
	}
	o.exit = p.cmd.ProcessState.ExitCode()
	o.stdout = p.stdout.Bytes()
	e, cerr := plugintest.CheckOutput(o.exit, o.stdout)
	if cerr != nil {
		t.Fatalf("%v\nstderr: %s", cerr, p.stderr.Bytes())
	}
	o.err = e
	return o
}

// code is the CNI error code of a run (0 for success).
func code(r testbin.Reply) uint {
	if r.Exit == 0 {
		return 0
	}
	return r.Err().Code
}

// firstAddr is the first address of an ADD result.
func firstAddr(t testing.TB, stdout []byte) string {
	t.Helper()
	var res struct {
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal(stdout, &res); err != nil || len(res.IPs) == 0 {
		t.Fatalf("ADD result without an address: %s (%v)", stdout, err)
	}
	p, err := netip.ParsePrefix(res.IPs[0].Address)
	if err != nil {
		t.Fatalf("ADD result address %q: %v", res.IPs[0].Address, err)
	}
	return p.Addr().String()
}

// holder is who a reservation file names.
type holder struct{ id, ifname, network string }

func (h holder) key() string { return h.id + "@" + h.ifname }

// readState reads state directory dir and fails the test unless every
// file in it is one of host-local's (lock, last_reserved_ip.N with an
// address, reservation files) and every reservation is complete and well
// formed: "<id>\r\n<ifname>", plus "\r\n<network>" in a pool directory.
// It returns address -> holder.
func readState(t testing.TB, dir string, poolDir bool) map[string]holder {
	t.Helper()
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]holder{}
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]holder{}
	for _, de := range des {
		name := de.Name()
		if (name == "_tenants" || name == "_spill") && de.IsDir() { // a quota's tenant records (checkTenants), spill records
			continue
		}
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch {
		case name == "lock":
			continue
		case strings.HasPrefix(name, "last_reserved_ip."):
			if _, err := strconv.Atoi(strings.TrimPrefix(name, "last_reserved_ip.")); err != nil {
				t.Fatalf("unexpected file %s", path)
			}
			if _, err := netip.ParseAddr(string(data)); err != nil {
				t.Fatalf("cursor %s holds %q, not an address", path, data)
			}
			continue
		}
		if a, err := netip.ParseAddr(name); err != nil || a.String() != name || !de.Type().IsRegular() {
			t.Fatalf("unexpected file %s in a state directory (half-written or foreign)", path)
		}
		parts := strings.Split(string(data), "\r\n")
		want := 2
		if poolDir {
			want = 3
		}
		if len(parts) != want || slices.Contains(parts, "") || strings.ContainsAny(string(data), "\x00") ||
			strings.Count(string(data), "\n") != want-1 || strings.Count(string(data), "\r") != want-1 {
			t.Fatalf("reservation %s is malformed or partial: %q", path, data)
		}
		h := holder{id: parts[0], ifname: parts[1]}
		if poolDir {
			h.network = parts[2]
		}
		out[name] = h
	}
	return out
}

// indexDir is the lookup index of state directory dir.
func indexDir(dir string) string {
	return filepath.Join(filepath.Dir(dir), "_index", filepath.Base(dir))
}

// checkIndex fails unless dir's index is trusted (its stamp equals the
// mtimes of dir and of the index directory) and agrees with the
// reservation files: each "<cid>@<ifname> <ip>..." line of the bucket
// files b00..bff lists exactly the addresses whose files name that
// attachment, every holder has one, and each line sits, sorted, in the
// bucket its key hashes to.
// Call it after an operation that validates (or rebuilds) the index.
func checkIndex(t testing.TB, dir string, state map[string]holder) {
	t.Helper()
	idx := indexDir(dir)
	stamp, err := os.ReadFile(filepath.Join(idx, "stamp"))
	if err != nil {
		t.Fatalf("index stamp: %v", err)
	}
	nanos, err := strconv.ParseInt(strings.SplitN(string(stamp), "\n", 2)[0], 10, 64)
	if err != nil {
		t.Fatalf("index stamp %q is not a timestamp (untrusted index?)", stamp)
	}
	for _, p := range []string{dir, idx} {
		fi, err := os.Stat(p)
		if err != nil || fi.ModTime().UnixNano() != nanos {
			t.Fatalf("index not trusted: mtime of %s is not the stamp %d (%v)", p, nanos, err)
		}
	}
	want := map[string][]string{}
	for addr, h := range state {
		want[h.key()] = append(want[h.key()], addr)
	}
	got := map[string][]string{}
	des, err := os.ReadDir(idx)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		name := de.Name()
		if name == "stamp" || strings.HasPrefix(name, ".") {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimPrefix(name, "b"), 16, 8)
		if err != nil || len(name) != 3 || name[0] != 'b' || name != strings.ToLower(name) {
			t.Errorf("index holds %s, which is not a bucket file", name)
			continue
		}
		data, err := os.ReadFile(filepath.Join(idx, name))
		if err != nil {
			t.Fatal(err)
		}
		prev := ""
		for line := range strings.Lines(string(data)) {
			fields := strings.Fields(line)
			if len(fields) < 2 || !strings.HasSuffix(line, "\n") || !strings.Contains(fields[0], "@") {
				t.Errorf("bucket %s: malformed line %q", name, line)
				continue
			}
			key := fields[0]
			h := fnv.New32a()
			id, ifname, _ := strings.Cut(key, "@")
			h.Write([]byte(id + "\x00" + ifname))
			if h.Sum32()&0xff != uint32(n) {
				t.Errorf("bucket %s holds %s, which hashes elsewhere", name, key)
			}
			if key <= prev {
				t.Errorf("bucket %s: %s after %s (unsorted or duplicate)", name, key, prev)
			}
			prev = key
			got[key] = fields[1:]
		}
	}
	for k := range want {
		slices.SortFunc(want[k], func(a, b string) int { return netip.MustParseAddr(a).Compare(netip.MustParseAddr(b)) })
	}
	for k, addrs := range got {
		if !slices.Equal(addrs, want[k]) {
			t.Errorf("index entry %s lists %v; reservation files say %v", k, addrs, want[k])
		}
	}
	for k, addrs := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("attachment %s holds %v but has no index entry", k, addrs)
		}
	}
}

// snapshot records a directory tree: every path with its type, mode and
// content (or link target), to prove that nothing outside a test's dataDir
// was created or changed.
func snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			desc += " -> " + target
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %q", data)
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", root, err)
	}
	return out
}

// diff describes how two snapshots differ, ignoring paths under skip.
func diff(before, after map[string]string, skip string) []string {
	var out []string
	under := func(p string) bool { return skip != "" && (p == skip || strings.HasPrefix(p, skip+"/")) }
	for p, a := range after {
		if b, ok := before[p]; !under(p) && (!ok || a != b) {
			out = append(out, fmt.Sprintf("%s: %q -> %q", p, b, a))
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok && !under(p) {
			out = append(out, p+": removed")
		}
	}
	slices.Sort(out)
	return out
}

// tryLock takes dir's lock without waiting, as a test stand-in for a
// stopped holder, or to learn whether someone holds it. ok is false when
// someone else holds it; release must be called when ok.
func tryLock(t testing.TB, dir string) (release func(), ok bool) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false
		}
		t.Fatalf("flock %s: %v", dir, err)
	}
	return func() { f.Close() }, true
}
