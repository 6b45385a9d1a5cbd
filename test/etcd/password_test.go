package etcd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// An etcd password never travels in clear unless the operator says so:
// username and passwordFile with a non-loopback http:// endpoint are code 7
// naming allowPasswordOverHTTP and the endpoint, before anything is sent
// (192.0.2.1 is a documentation address: nothing answers there, so an ADD
// that tried to authenticate would fail otherwise, not with 7). With the
// opt-in, the same config gets as far as trying to reach the endpoint; the
// CLI refuses the same flags unless --allow-password-over-http is given.
func TestPasswordOverHTTPRefused(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "etcd-password")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const endpoint = "http://192.0.2.1:2379"
	conf := func(extra map[string]any) []byte {
		e := map[string]any{"endpoints": []string{"https://192.0.2.2:2379", endpoint}, "nodeName": "host-a", "timeout": "200ms",
			"username": "root", "passwordFile": pw}
		for k, v := range extra {
			e[k] = v
		}
		ipam := map[string]any{"type": "ipam-da-etcd", "dataDir": dir, "ranges": [][]map[string]string{{{"subnet": "10.214.40.0/24"}}}, "etcd": e}
		return mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "clear-net", "ipam": ipam})
	}
	for _, cmd := range []string{"ADD", "DEL", "CHECK", "GC", "STATUS"} {
		r := run1(cmd, "pw1", conf(nil))
		e := r.Err()
		if e == nil || e.Code != 7 || !strings.Contains(e.Msg+e.Details, "ipam.etcd.allowPasswordOverHTTP") || !strings.Contains(e.Msg+e.Details, endpoint) {
			t.Errorf("%s with a password over http://: %+v, want code 7 naming ipam.etcd.allowPasswordOverHTTP and %s", cmd, e, endpoint)
		}
		if strings.Contains(string(r.Stdout)+string(r.Stderr), "s3cret") {
			t.Errorf("%s: the output shows the password", cmd)
		}
	}
	r := run1("ADD", "pw2", conf(map[string]any{"allowPasswordOverHTTP": true}))
	if e := r.Err(); e == nil || strings.Contains(e.Msg+e.Details, "allowPasswordOverHTTP") {
		t.Errorf("ADD with allowPasswordOverHTTP: %+v, want it to try the (unreachable) endpoint", e)
	}

	cli := func(extra ...string) testbin.Reply {
		return testbin.Run(testbin.Call{Plugin: "cniplugins", Path: binDir,
			Argv: append([]string{"leases", "--etcd", endpoint, "--user", "root", "--password-file", pw, "--timeout", "200ms"}, extra...)})
	}
	if r := cli(); r.Exit == 0 || !strings.Contains(string(r.Stderr), "allowPasswordOverHTTP") {
		t.Errorf("leases --user over http://: exit %d, stderr %s; want a refusal naming allowPasswordOverHTTP", r.Exit, r.Stderr)
	}
	if r := cli("--allow-password-over-http"); r.Exit == 0 || strings.Contains(string(r.Stderr), "allowPasswordOverHTTP") {
		t.Errorf("leases --allow-password-over-http: exit %d, stderr %s; want it to try the endpoint", r.Exit, r.Stderr)
	}
}
