package etcdstore_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/daetcd"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/etcdkv/etcdkvfake"
	. "github.com/cniplugins/cniplugins/internal/etcdstore"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// These tests run ipam-da-etcd in-process against an in-memory etcd
// (etcdkvfake): the rules of the claim transaction, with no etcd binary.

// fakeNode runs commands as node "n1" against f, standalone on one /24,
// returning stdout and the exit status. prev, when not nil, is the
// prevResult.
func fakeNode(t *testing.T, f *etcdkvfake.Fake) func(cmd, cid, cniArgs string, prev []byte) ([]byte, int) {
	dir := t.TempDir()
	idFile := filepath.Join(dir, "machine-id")
	if err := os.WriteFile(idFile, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(cmd, cid, cniArgs string, prev []byte) ([]byte, int) {
		conf := map[string]any{"cniVersion": "1.1.0", "name": "fake-net", "ipam": map[string]any{
			"type": "ipam-da-etcd", "dataDir": dir, "ranges": [][]map[string]any{{{"subnet": "10.214.60.0/24"}}},
			"etcd": map[string]any{"endpoints": []string{f.URL()}, "prefix": "/u/", "nodeName": "n1", "machineIDFile": idFile}}}
		if prev != nil {
			conf["prevResult"] = json.RawMessage(prev)
		}
		stdin, _ := json.Marshal(conf)
		env := []string{"CNI_COMMAND=" + cmd, "CNI_CONTAINERID=" + cid, "CNI_IFNAME=eth0", "CNI_NETNS=/x", "CNI_PATH=/nonexistent", "CNI_ARGS=" + cniArgs}
		var stdout, stderr bytes.Buffer
		code := plugin.Run(daetcd.Personality(), plugin.IO{Environ: env, Stdin: bytes.NewReader(stdin), Stdout: &stdout, Stderr: &stderr})
		return stdout.Bytes(), code
	}
}

// claims lists the claim keys in f with their values.
func claims(f *etcdkvfake.Fake) map[string]string { return f.Values("/u/ip/") }

// TestOneClaimPerAddress: an address is claimed by one attachment only.
// A second attachment requesting a claimed address gets 101 and the
// first keeps it: the claim's transaction requires the address's key
// absent, and nothing else would stop the second claim (its own index
// key is absent too).
func TestOneClaimPerAddress(t *testing.T) {
	f := etcdkvfake.New(t)
	run := fakeNode(t, f)
	if out, code := run("ADD", "c1", "IP=10.214.60.5", nil); code != 0 || !strings.Contains(string(out), `"10.214.60.5/24"`) {
		t.Fatalf("ADD c1: exit %d %s", code, out)
	}
	out, code := run("ADD", "c2", "IP=10.214.60.5", nil)
	var e struct{ Code int }
	if code == 0 || json.Unmarshal(out, &e) != nil || e.Code != 101 {
		t.Fatalf("ADD c2 of c1's address: exit %d %s, want code 101", code, out)
	}
	cs := claims(f)
	if v := cs["/u/ip/net/fake-net/10.214.60.5"]; len(cs) != 1 || !strings.Contains(v, `"containerID":"c1"`) {
		t.Fatalf("claims %v, want 10.214.60.5 claimed by c1 alone", cs)
	}
	// Without a request, c2 gets another address.
	if out, code := run("ADD", "c2", "", nil); code != 0 || strings.Contains(string(out), `"10.214.60.5/24"`) {
		t.Fatalf("ADD c2: exit %d %s", code, out)
	}
	if cs := claims(f); len(cs) != 2 {
		t.Fatalf("claims %v, want two", cs)
	}
}

// TestLateClaimCopyAfterDel: a copy of an ADD's claim that etcd applies
// after the attachment's DEL fails on the attachment's fence bucket and
// claims nothing; the DEL left no key of the attachment (no fence in its
// index key), and a new ADD of the same attachment claims in one
// round trip.
func TestLateClaimCopyAfterDel(t *testing.T) {
	f := etcdkvfake.New(t)
	run := fakeNode(t, f)
	before := len(f.Requests())
	res, code := run("ADD", "c1", "", nil)
	if code != 0 {
		t.Fatalf("ADD: exit %d %s", code, res)
	}
	claim := f.Requests()[before] // the ADD's one request
	if _, code := run("DEL", "c1", "", res); code != 0 {
		t.Fatal("DEL failed")
	}
	if status, body := f.Deliver(claim); status != 200 || !bytes.Contains(body, []byte(`"succeeded":false`)) {
		t.Fatalf("the late claim copy: %d %s, want it refused by its conditions", status, body)
	}
	if cs := claims(f); len(cs) != 0 {
		t.Fatalf("the late claim copy committed: %v", cs)
	}
	if idx := f.Values("/u/node/"); len(idx) != 0 {
		t.Fatalf("after DEL: index keys %v, want none", idx)
	}
	if n, cs := addCounted(t, f, run, "c1"), claims(f); len(cs) != 1 || n != 1 {
		t.Fatalf("re-ADD: claims %v in %d requests, want one claim in one", cs, n)
	}
}

// addCounted ADDs cid through run and returns how many requests f got.
func addCounted(t *testing.T, f *etcdkvfake.Fake, run func(cmd, cid, cniArgs string, prev []byte) ([]byte, int), cid string) int {
	t.Helper()
	before := len(f.Requests())
	if out, code := run("ADD", cid, "", nil); code != 0 {
		t.Fatalf("ADD %s: exit %d %s", cid, code, out)
	}
	return len(f.Requests()) - before
}

// TestKeysBoundedAfterChurn: after N and then 4N attachments came and
// went, the keys under the prefix are the same: the node's record and its
// fence buckets, whatever the churn. (A fence per released attachment
// grew them by one per DEL.)
func TestKeysBoundedAfterChurn(t *testing.T) {
	f := etcdkvfake.New(t)
	run := fakeNode(t, f)
	churn := func(from, n int) int {
		t.Helper()
		for i := from; i < from+n; i++ {
			cid := fmt.Sprintf("c%d", i)
			res, code := run("ADD", cid, "", nil)
			if code != 0 {
				t.Fatalf("ADD %s: exit %d %s", cid, code, res)
			}
			if i%2 == 0 {
				res = nil // half without prevResult, as the second DEL of containerd
			}
			if out, code := run("DEL", cid, "", res); code != 0 {
				t.Fatalf("DEL %s: exit %d %s", cid, code, out)
			}
		}
		return len(f.Values("/u/"))
	}
	const n = 25
	once := churn(0, n)
	four := churn(n, 4*n)
	if want := 1 + FenceBuckets + 1; once != want || four != want { // + the range set's exhaustion mark
		t.Fatalf("keys after %d attachments: %d, after %d more: %d; want %d both times", n, once, 4*n, four, want)
	}
}

// TestStaleFenceRevision: a release this host did not see (another
// exec's, or an operator's) moved the bucket: the ADD's claim fails on it,
// reads the buckets, and claims again: it succeeds, in two requests.
func TestStaleFenceRevision(t *testing.T) {
	f := etcdkvfake.New(t)
	run := fakeNode(t, f)
	if out, code := run("ADD", "c0", "", nil); code != 0 { // registers n1
		t.Fatalf("ADD c0: exit %d %s", code, out)
	}
	cl := etcdkv.New(etcdkv.Config{Endpoints: []string{f.URL()}, Timeout: 5 * time.Second})
	if _, err := cl.Txn(etcdkv.Txn{Then: []etcdkv.Op{etcdkv.Put(FenceOf("/u/", "n1", "c1", "eth0"), nil)}}); err != nil {
		t.Fatal(err)
	}
	if n, cs := addCounted(t, f, run, "c1"), claims(f); len(cs) != 2 || n != 2 {
		t.Fatalf("claims %v in %d requests, want two claims, c1's in two requests", cs, n)
	}
}

// TestFirstClaimIgnoresStaleMemory: the host remembers fence revisions of
// an earlier cluster under the same prefix and node name (a cluster
// rebuilt); a new node's first claim compares its bucket absent, not at
// what the host remembers, and so is still one request.
func TestFirstClaimIgnoresStaleMemory(t *testing.T) {
	f := etcdkvfake.New(t)
	run := fakeNode(t, f)
	stale := etcdkv.New(etcdkv.Config{Endpoints: []string{"http://elsewhere"}, StateDir: StateDir, StateKey: "/u/\x00n1"})
	seen := map[string]etcdkv.Seen{}
	for b := range FenceBuckets {
		seen[FenceKey("/u/", "n1", b)] = etcdkv.Seen{Rev: 987654, Value: "earlier"}
	}
	stale.Remember(seen)
	if n := addCounted(t, f, run, "c1"); n != 1 {
		t.Fatalf("the first ADD sent %d requests, want 1", n)
	}
}

// TestLateCopyWithMemoryOfAnotherCluster: the host remembers c1's bucket
// at a revision of an earlier cluster that this one reaches exactly with
// c1's DEL. A late copy of c1's claim, which carries that memory, must
// still fail after the DEL: the bucket's value is the DEL's nonce, not
// the one remembered. (With the revision alone it committed.)
func TestLateCopyWithMemoryOfAnotherCluster(t *testing.T) {
	bucket := FenceOf("/u/", "n1", "c1", "eth0")
	// The revision c1's bucket gets from its DEL, in a cluster that
	// starts as this test's does.
	rehearsal := etcdkvfake.New(t)
	run := fakeNode(t, rehearsal)
	res, code := run("ADD", "c1", "", nil)
	if code != 0 {
		t.Fatalf("ADD: exit %d %s", code, res)
	}
	if _, code := run("DEL", "c1", "", res); code != 0 {
		t.Fatal("DEL failed")
	}
	rev := rehearsal.Revision()
	f := etcdkvfake.New(t)
	run = fakeNode(t, f)
	etcdkv.New(etcdkv.Config{Endpoints: []string{"http://elsewhere"}, StateDir: StateDir, StateKey: "/u/\x00n1"}).
		Remember(map[string]etcdkv.Seen{bucket: {Rev: rev, Value: "an earlier cluster's write"}})
	before := len(f.Requests())
	res, code = run("ADD", "c1", "", nil)
	if code != 0 {
		t.Fatalf("ADD: exit %d %s", code, res)
	}
	claim := f.Requests()[before]
	if _, code := run("DEL", "c1", "", res); code != 0 {
		t.Fatal("DEL failed")
	}
	if f.Revision() != rev {
		t.Fatalf("the DEL left revision %d, the rehearsal %d: the test proves nothing", f.Revision(), rev)
	}
	if status, body := f.Deliver(claim); status != 200 || !bytes.Contains(body, []byte(`"succeeded":false`)) {
		t.Fatalf("the late claim copy: %d %s", status, body)
	}
	if cs := claims(f); len(cs) != 0 {
		t.Fatalf("the late claim copy committed: %v", cs)
	}
}
