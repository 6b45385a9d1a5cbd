package etcd

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/etcdtest"
)

// chainConf is ipam-delegated → ipam-ds-static → ipam-da-etcd: the
// selector names the pool, the allocator claims it in etcd, in-process.
func chainConf(t *testing.T, h host) []byte {
	ipam := map[string]any{
		"type":            "ipam-delegated",
		"delegates":       []string{"ipam-ds-static", "ipam-da-etcd"},
		"pools":           []map[string]any{{"name": "chain"}},
		"poolDefinitions": map[string]any{"chain": []map[string]string{{"subnet": "10.214.20.0/24"}}},
		"routes":          []map[string]string{{"dst": "0.0.0.0/0"}},
		"dataDir":         h.dir,
		"etcd":            etcdKeys(t, h, nil),
	}
	return mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "chain-net", "ipam": ipam})
}

func TestSelectorChain(t *testing.T) {
	needCluster(t)
	h := newHost(t, "host-a")
	conf := chainConf(t, h)
	r := call("ipam-delegated", "ADD", "ch1", conf, "")
	if r.Exit != 0 {
		t.Fatalf("chain ADD: %s\n%s", r.Stdout, r.Stderr)
	}
	var res struct {
		IPs    []map[string]any `json:"ips"`
		Routes []map[string]any `json:"routes"`
	}
	if err := json.Unmarshal(r.Stdout, &res); err != nil || len(res.IPs) != 1 || len(res.Routes) != 1 {
		t.Fatalf("chain result %s: %v", r.Stdout, err)
	}
	if ks := keys(t); len(ks) != 2 {
		t.Fatalf("keys after chain ADD: %v", ks)
	}
	withRes := withPrev(t, conf, r.Stdout)
	if r := call("ipam-delegated", "CHECK", "ch1", withRes, ""); r.Exit != 0 {
		t.Fatalf("chain CHECK: %s", r.Stdout)
	}
	if r := call("ipam-delegated", "STATUS", "", conf, ""); r.Exit != 0 {
		t.Fatalf("chain STATUS: %s", r.Stdout)
	}
	wantCode(t, call("ipam-delegated", "ADD", "ch1", conf, ""), 102)
	// The chain's rollback of a 102 leaves the allocator that answered it
	// alone: the live attachment keeps its claim.
	if ks := keys(t); len(ks) != 2 {
		t.Fatalf("keys after the retried ADD's 102: %v", ks)
	}
	if r := call("ipam-delegated", "CHECK", "ch1", withRes, ""); r.Exit != 0 {
		t.Fatalf("chain CHECK after the retried ADD's 102: %s", r.Stdout)
	}
	if r := call("ipam-delegated", "DEL", "ch1", withRes, ""); r.Exit != 0 {
		t.Fatalf("chain DEL: %s", r.Stdout)
	}
	wantNoKeys(t)
	// GC through the chain: the selector names the pool.
	for _, cid := range []string{"ch2", "ch3"} {
		if r := call("ipam-delegated", "ADD", cid, conf, ""); r.Exit != 0 {
			t.Fatalf("chain ADD %s: %s", cid, r.Stdout)
		}
	}
	if r := call("ipam-delegated", "GC", "", gcConf(t, conf, "ch2"), ""); r.Exit != 0 {
		t.Fatalf("chain GC: %s", r.Stdout)
	}
	if ks := keys(t); len(ks) != 2 {
		t.Fatalf("after chain GC keeping ch2: %v", ks)
	}
	call("ipam-delegated", "DEL", "ch2", conf, "")
	wantNoKeys(t)
}

// TestTLS runs a second cluster that requires client certificates from a
// CA the test generates: the right files work; a CA that did not sign the
// members' certificate, or no client certificate, is code 7 at once
// (no retrying can cure it).
func TestTLS(t *testing.T) {
	needCluster(t)
	tc, err := etcdtest.Start(etcdtest.Options{TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Stop()
	h := newHost(t, "host-a")
	conf := func(tls map[string]string) []byte {
		ipam := map[string]any{"type": "ipam-da-etcd", "dataDir": h.dir, "ranges": v4Ranges("10.214.21.0/24"),
			"etcd": map[string]any{"endpoints": tc.Endpoints(), "prefix": prefix(t), "nodeName": h.node, "tls": tls, "timeout": "3s"}}
		return mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "tls-net", "ipam": ipam})
	}
	f := tc.TLS
	good := conf(map[string]string{"caFile": f.CA, "certFile": f.ClientCert, "keyFile": f.ClientKey})
	r, _ := mustAdd(t, "tls1", good)
	if ks := stateKeys(t, tc); len(ks) != 2 {
		t.Fatalf("keys in the TLS cluster: %v", ks)
	}
	for name, bad := range map[string]map[string]string{
		"untrusted CA":          {"caFile": f.OtherCA, "certFile": f.ClientCert, "keyFile": f.ClientKey},
		"no client certificate": {"caFile": f.CA},
		"foreign client cert":   {"caFile": f.CA, "certFile": f.OtherCert, "keyFile": f.OtherKey},
	} {
		start := time.Now()
		e := wantCode(t, run1("ADD", "tls2", conf(bad)), 7)
		t.Logf("%s: %s (%s) after %v", name, e.Msg, e.Details, time.Since(start))
	}
	wantCode(t, run1("ADD", "tls2", conf(map[string]string{"caFile": "/nonexistent/ca.pem"})), 7)

	// One member whose certificate does not verify (an impostor, a
	// wrong name, an expired certificate) is skipped like any failing
	// member; 7 comes only when none verifies, and names each.
	impostor := httptest.NewUnstartedServer(http.NotFoundHandler())
	impostor.Config.ErrorLog = log.New(io.Discard, "", 0)
	impostor.StartTLS()
	defer impostor.Close()
	eps := append([]string{impostor.URL}, tc.Endpoints()...)
	mixed := mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "tls-net", "ipam": map[string]any{
		"type": "ipam-da-etcd", "dataDir": h.dir, "ranges": v4Ranges("10.214.21.0/24"),
		"etcd": map[string]any{"endpoints": eps, "prefix": prefix(t), "nodeName": nodeFirst("tls", 0, len(eps)), "timeout": "3s",
			"tls": map[string]string{"caFile": f.CA, "certFile": f.ClientCert, "keyFile": f.ClientKey}}}})
	r3, _ := mustAdd(t, "tls3", mixed)
	mustRun(t, "DEL", "tls3", withPrev(t, mixed, r3.Stdout))
	e := wantCode(t, run1("ADD", "tls2", conf(map[string]string{"caFile": f.OtherCA, "certFile": f.ClientCert, "keyFile": f.ClientKey})), 7)
	for _, ep := range tc.Endpoints() {
		if !strings.Contains(e.Details, ep+": ") {
			t.Errorf("7 does not name member %s: %s", ep, e.Details)
		}
	}
	mustRun(t, "DEL", "tls1", withPrev(t, good, r.Stdout))
	if ks := stateKeys(t, tc); len(ks) != 0 {
		t.Fatalf("keys left: %v", ks)
	}
}

// TestAuth: a cluster with authentication on; username and passwordFile
// work, a wrong password is code 7 naming the user, and a password inline
// in the config is refused before anything is sent.
func TestAuth(t *testing.T) {
	needCluster(t)
	ac, err := etcdtest.Start(etcdtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Stop()
	m := ac.Members[0]
	for _, step := range []struct {
		path string
		body any
	}{
		{"/v3/auth/user/add", map[string]string{"name": "root", "password": "rootpw"}},
		{"/v3/auth/user/grant", map[string]string{"user": "root", "role": "root"}},
		{"/v3/auth/enable", map[string]string{}},
	} {
		if err := ac.Post(m, step.path, step.body, nil); err != nil {
			t.Fatal(err)
		}
	}
	h := newHost(t, "host-a")
	pwFile := h.dir + "/etcd-password"
	conf := func(pw string, extra map[string]any) []byte {
		if err := os.WriteFile(pwFile, []byte(pw+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		e := map[string]any{"endpoints": ac.Endpoints(), "prefix": prefix(t), "nodeName": h.node, "username": "root", "passwordFile": pwFile}
		for k, v := range extra {
			e[k] = v
		}
		ipam := map[string]any{"type": "ipam-da-etcd", "dataDir": h.dir, "ranges": v4Ranges("10.214.23.0/24"), "etcd": e}
		return mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "auth-net", "ipam": ipam})
	}
	r, _ := mustAdd(t, "au1", conf("rootpw", nil))
	// The token is kept between execs (no bcrypt and raft write per ADD),
	// and replaced when an auth change makes it old.
	token := func() string {
		h := sha256.New()
		for _, s := range append([]string{"root", "rootpw"}, ac.Endpoints()...) {
			h.Write([]byte(s + "\x00"))
		}
		b, err := os.ReadFile(filepath.Join("/run/cniplugins/etcd", hex.EncodeToString(h.Sum(nil)[:12])+".json"))
		if err != nil {
			t.Fatalf("the client's memory: %v", err)
		}
		var m struct{ Token string }
		_ = json.Unmarshal(b, &m)
		return m.Token
	}
	t1 := token()
	r4, _ := mustAdd(t, "au4", conf("rootpw", nil))
	if t1 == "" || token() != t1 {
		t.Errorf("token %q then %q: the second exec authenticated again", t1, token())
	}
	// A token older than an auth change (a user or role changed while
	// the request was on its way; any change, with JWT tokens) is
	// refused with ErrAuthOldRevision: the client authenticates again
	// and the command goes through.
	var ps []*faultProxy
	for _, ep := range ac.Endpoints() {
		ps = append(ps, newFaultProxy(t, ep))
	}
	for _, p := range ps {
		p.on(func(r request) bool { return r.txn() && r.puts() }, answerOwn, 1).
			answering(400, gatewayError(3, "etcdserver: revision of auth store is old"))
	}
	viaProxies := func() []byte {
		if err := os.WriteFile(pwFile, []byte("rootpw\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		e := map[string]any{"endpoints": urls(ps...), "prefix": prefix(t), "nodeName": h.node, "username": "root", "passwordFile": pwFile}
		ipam := map[string]any{"type": "ipam-da-etcd", "dataDir": h.dir, "ranges": v4Ranges("10.214.23.0/24"), "etcd": e}
		return mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "auth-net", "ipam": ipam})
	}
	r5, _ := mustAdd(t, "au5", viaProxies())
	auths := 0
	for _, p := range ps {
		auths += len(p.requests(func(r request) bool { return r.Path == "/v3/auth/authenticate" }))
	}
	if auths != 2 {
		t.Errorf("%d token requests, want 2: the first, and one after the old revision", auths)
	}
	mustRun(t, "DEL", "au4", withPrev(t, conf("rootpw", nil), r4.Stdout))
	mustRun(t, "DEL", "au5", withPrev(t, viaProxies(), r5.Stdout))
	e := wantCode(t, run1("ADD", "au2", conf("wrong", nil)), 7)
	if !strings.Contains(e.Details, "root") {
		t.Errorf("error does not name the user: %s", e.Details)
	}
	wantCode(t, run1("ADD", "au2", conf("rootpw", map[string]any{"password": "rootpw"})), 7)
	mustRun(t, "DEL", "au1", withPrev(t, conf("rootpw", nil), r.Stdout))
}
