package integration

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// tenantsNetwork is a chain whose ipam-ds-args rules give each namespace
// a one-address pool (a /30), tenant-a may choose its second one, and
// everything else gets the default pool.
func tenantsNetwork(dataDir string) []byte {
	conf := map[string]any{"cniVersion": "1.1.0", "name": "tenants", "ipam": map[string]any{
		"type": "ipam-delegated", "delegates": []string{"ipam-ds-args", "ipam-da-pools"}, "dataDir": dataDir,
		"rules": []map[string]any{
			{"namespace": "tenant-a", "pools": []string{"a"}, "podChoice": []string{"a", "a2"}},
			{"namespace": "tenant-b", "pools": []string{"b"}},
		},
		"defaultPools": []string{"shared"},
		"poolDefinitions": map[string]any{
			"a": []map[string]string{{"subnet": "10.211.40.0/30"}}, "a2": []map[string]string{{"subnet": "10.211.40.4/30"}},
			"b": []map[string]string{{"subnet": "10.211.40.8/30"}}, "shared": []map[string]string{{"subnet": "10.211.40.12/30"}},
		},
	}}
	b, _ := json.Marshal(conf)
	return b
}

// STATUS of a chain whose selector chooses among pools fails (50) only
// when every pool set an ADD could be given holds a full pool: one
// tenant's full pool is that tenant's ADD error (100), and the network,
// which a runtime turns into the node's readiness, stays available.
func TestStatusTenantPoolFull(t *testing.T) {
	dataDir := t.TempDir()
	conf := tenantsNetwork(dataDir)
	status := func() testbin.Reply {
		c := call("ipam-delegated", "STATUS", "", conf)
		c.ContainerID, c.IfName, c.Netns = "", "", ""
		return testbin.Run(c)
	}
	add := func(id, ns string, choose ...string) testbin.Reply {
		in := conf
		if len(choose) > 0 {
			var m map[string]any
			_ = json.Unmarshal(conf, &m)
			in = invocation(m, annotated("cniplugins.io/pools", choose[0]), nil)
		}
		c := call("ipam-delegated", "ADD", id, in)
		c.Args = criArgs(ns, id)
		return testbin.Run(c)
	}
	fill := func(ns, pool string, choose ...string) {
		t.Helper()
		if r := add(ns+"-"+pool+"-1", ns, choose...); r.Exit != 0 {
			t.Fatalf("first ADD in %s: %s", pool, r.Stdout)
		}
		e := add(ns+"-"+pool+"-2", ns, choose...).Err()
		if e == nil || e.Code != 100 || !strings.Contains(e.Msg+e.Details, pool) {
			t.Fatalf("second ADD in %s: %+v, want 100 naming the pool", pool, e)
		}
	}
	mustBeAvailable := func(when string) {
		t.Helper()
		if r := status(); r.Exit != 0 {
			t.Fatalf("STATUS %s: %s, want success", when, r.Stdout)
		}
	}

	mustBeAvailable("with every pool free")
	fill("tenant-a", "a")
	mustBeAvailable("with tenant-a's pool full and the others free")
	if r := add("b-1", "tenant-b"); r.Exit != 0 {
		t.Fatalf("tenant-b's ADD beside tenant-a's full pool: %s", r.Stdout)
	}
	fill("tenant-a", "a2", "a2")
	fill("other", "shared")
	mustBeAvailable("with pool b's last address taken but no ADD refused there yet")

	// The last pool with room is found full by an ADD: no set is servable.
	e := add("b-2", "tenant-b").Err()
	if e == nil || e.Code != 100 {
		t.Fatalf("ADD in the full pool b: %+v, want 100", e)
	}
	e = status().Err()
	if e == nil || e.Code != 50 {
		t.Fatalf("STATUS with every selectable pool full: %+v, want 50", e)
	}
	for _, p := range []string{"pool a", "pool a2", "pool b", "pool shared"} {
		if !strings.Contains(e.Details, p) {
			t.Errorf("STATUS details %q do not name %s", e.Details, p)
		}
	}

	// One release makes the network available again.
	del := call("ipam-delegated", "DEL", "b-1", conf)
	del.Args = criArgs("tenant-b", "b-1")
	testbin.MustSucceed(t, del)
	mustBeAvailable("after one release")
}

// A selector that gives every ADD all its pools (ipam-ds-static) keeps
// host-local's meaning: any full pool fails STATUS, because every ADD
// needs an address from each.
func TestStatusStaticPoolsAllNeeded(t *testing.T) {
	dataDir := t.TempDir()
	conf := []byte(`{"cniVersion":"1.1.0","name":"both","ipam":{"type":"ipam-delegated","delegates":["ipam-ds-static","ipam-da-pools"],"dataDir":"` + dataDir + `",
		"pools":[{"name":"wide","subnet":"10.211.41.0/24"},{"name":"narrow","subnet":"10.211.42.0/30"}]}}`)
	testbin.MustSucceed(t, call("ipam-delegated", "ADD", "s1", conf))
	if e := testbin.Run(call("ipam-delegated", "ADD", "s2", conf)).Err(); e == nil || e.Code != 100 {
		t.Fatalf("ADD with narrow full: %+v, want 100", e)
	}
	c := call("ipam-delegated", "STATUS", "", conf)
	c.ContainerID, c.IfName, c.Netns = "", "", ""
	if e := testbin.Run(c).Err(); e == nil || e.Code != 50 || !strings.Contains(e.Details, "pool narrow") {
		t.Fatalf("STATUS with one of the two pools every ADD needs full: %+v, want 50 naming pool narrow", e)
	}
}
