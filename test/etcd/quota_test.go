package etcd

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// quotaConf is h's pool-mode config with a selection carrying the quota
// of tenant namespace=a, max 5 (as ipam-ds-args sends it).
func quotaConf(t *testing.T, h host, pools []map[string]any, defs map[string]any, sticky bool) []byte {
	ipam := map[string]any{"type": "ipam-da-etcd", "dataDir": h.dir, "etcd": etcdKeys(t, h, nil)}
	if defs != nil {
		ipam["poolDefinitions"] = defs
	}
	if sticky {
		ipam["sticky"] = map[string]any{"by": []string{"arg"}, "holdFor": "1h"}
	}
	return mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "quota-net", "ipam": ipam,
		"prevResult": map[string]any{"cniVersion": "1.1.0", "pools": pools,
			"quota": map[string]any{"tenant": "namespace=a", "rule": "ipam.rules[0]", "max": 5}}})
}

// race runs 16 ADDs on each of two hosts at once and returns the
// addresses handed out and the count of 106 answers; any other outcome
// fails the test.
func race(t *testing.T, pools []map[string]any, defs map[string]any) ([]netip.Addr, int) {
	hosts := []host{newHost(t, "host-a"), newHost(t, "host-b")}
	var mu sync.Mutex
	var got []netip.Addr
	refused := 0
	parallel(32, func(i int) {
		h := hosts[i%2]
		r := run1("ADD", fmt.Sprintf("c%d", i), quotaConf(t, h, pools, defs, false))
		mu.Lock()
		defer mu.Unlock()
		if r.Exit == 0 {
			got = append(got, addrsOf(t, r.Stdout)...)
			return
		}
		if e := r.Err(); e != nil && e.Code == 106 && strings.Contains(e.Details, "tenant=namespace=a rule=ipam.rules[0] max=5 inUse=5") {
			refused++
			return
		}
		t.Errorf("ADD c%d on %s: %s %s", i, h.node, r.Stdout, r.Stderr)
	})
	return got, refused
}

// Two hosts × 16 concurrent ADDs for one tenant with max 5: exactly 5
// succeed, cluster-wide, and 27 get 106.
func TestQuotaRaceAcrossHosts(t *testing.T) {
	needCluster(t)
	got, refused := race(t, []map[string]any{{"name": "qa", "subnet": "10.235.1.0/24"}}, nil)
	if len(got) != 5 || refused != 27 {
		t.Fatalf("%d successes %v, %d × 106; want 5 and 27", len(got), got, refused)
	}
}

// The same race with an overflow chain: distinct addresses, the first
// pool's two first.
func TestQuotaRaceWithOverflow(t *testing.T) {
	needCluster(t)
	got, refused := race(t,
		[]map[string]any{{"name": "qa", "subnet": "10.235.2.0/29", "rangeStart": "10.235.2.2", "rangeEnd": "10.235.2.3", "overflow": "qb"}},
		map[string]any{"qb": []map[string]string{{"subnet": "10.235.3.0/24"}}})
	if len(got) != 5 || refused != 27 {
		t.Fatalf("%d successes %v, %d × 106; want 5 and 27", len(got), got, refused)
	}
	slices.SortFunc(got, netip.Addr.Compare)
	if len(slices.Compact(slices.Clone(got))) != 5 {
		t.Fatalf("an address handed out twice: %v", got)
	}
	if got[0] != netip.MustParseAddr("10.235.2.2") || got[1] != netip.MustParseAddr("10.235.2.3") || !strings.HasPrefix(got[2].String(), "10.235.3.") {
		t.Errorf("addresses %v: want the first pool's two, then the overflow pool's", got)
	}
}

// Sticky holds count against the quota, and a key comes back to its held
// address at the quota; a release lets the tenant grow again.
func TestQuotaCountsHolds(t *testing.T) {
	needCluster(t)
	h := newHost(t, "host-a")
	conf := quotaConf(t, h, []map[string]any{{"name": "qs", "subnet": "10.235.4.0/24"}}, nil, true)
	add := func(cid, key string) testbin.Reply {
		args := "IgnoreUnknown=1"
		if key != "" {
			args += ";CNIPLUGINS_STICKY_KEY=" + key
		}
		return call("ipam-da-etcd", "ADD", cid, conf, args)
	}
	var held string
	for i := range 5 {
		r := add(fmt.Sprint("s", i), fmt.Sprint("k", i))
		if r.Exit != 0 {
			t.Fatalf("ADD s%d: %s", i, r.Stdout)
		}
		if i == 0 {
			held = string(r.Stdout)
		}
	}
	wantCode(t, add("s5", "k5"), 106)
	if r := call("ipam-da-etcd", "DEL", "s0", conf, "IgnoreUnknown=1;CNIPLUGINS_STICKY_KEY=k0"); r.Exit != 0 {
		t.Fatalf("DEL s0: %s", r.Stdout)
	}
	wantCode(t, add("s6", "k6"), 106) // k0's hold counts
	r := add("s0-again", "k0")
	if r.Exit != 0 || addrsOf(t, r.Stdout)[0] != addrsOf(t, []byte(held))[0] {
		t.Fatalf("k0 back at the quota: %s, want its held address", r.Stdout)
	}
	if r := call("ipam-da-etcd", "DEL", "s1", conf, "IgnoreUnknown=1"); r.Exit != 0 {
		t.Fatalf("DEL s1: %s", r.Stdout)
	}
	if r := cli(t, "release", "--sticky-key", "k1", "--pool", "qs"); r.Exit != 0 {
		t.Fatalf("release k1: %s %s", r.Stdout, r.Stderr)
	}
	if r := add("s7", "k7"); r.Exit != 0 {
		t.Errorf("after k1's release the tenant is below its quota: %s", r.Stdout)
	}
	// leases names each address's tenant, the held one's included.
	ls := cliLeases(t)
	if len(ls) != 5 {
		t.Fatalf("leases: %d, want the tenant's 5: %+v", len(ls), ls)
	}
	for _, l := range ls {
		if l.Tenant != "namespace=a" {
			t.Errorf("lease %+v: want tenant namespace=a", l)
		}
	}
}

// tenantRecords are the tenant records in etcd under the test's prefix.
func tenantRecords(t *testing.T) []string {
	t.Helper()
	kvs, err := cluster.Values(prefix(t) + "tenant/")
	if err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(kvs))
}

// A tenant claims three addresses and DELs them, and never claims again:
// the CNI GC removes their records, which count nothing (DEL writes nothing
// for quotas), and keeps the record of the claim it keeps; so does the
// operators' gc --etcd --apply.
func TestGCRemovesTenantRecords(t *testing.T) {
	needCluster(t)
	h := newHost(t, "host-a")
	conf := quotaConf(t, h, []map[string]any{{"name": "qg", "subnet": "10.235.5.0/24"}}, nil, false)
	_, live := mustAdd(t, "live", conf)
	var added []testbin.Reply
	for i := range 3 {
		r, _ := mustAdd(t, fmt.Sprint("g", i), conf)
		added = append(added, r)
	}
	for i, r := range added { // after every ADD: a claim deletes the records that count nothing
		mustRun(t, "DEL", fmt.Sprint("g", i), withPrev(t, conf, r.Stdout))
	}
	if n := len(tenantRecords(t)); n != 4 {
		t.Fatalf("%d tenant records after 4 ADDs and 3 DELs, want 4", n)
	}
	mustRun(t, "GC", "", gcConf(t, conf, "live"))
	recs := tenantRecords(t)
	if len(recs) != 1 || !strings.HasSuffix(recs[0], "/pool/qg/"+live[0].String()) {
		t.Fatalf("after GC: tenant records %v, want only live's (%s)", recs, live[0])
	}
	if ls := cliLeases(t); len(ls) != 1 || ls[0].ContainerID != "live" || ls[0].Tenant != "namespace=a" {
		t.Fatalf("leases after GC: %+v, want live's, tenant namespace=a", ls)
	}
	// The operators' gc --etcd --apply sweeps them alike.
	r, _ := mustAdd(t, "g3", conf)
	mustRun(t, "DEL", "g3", withPrev(t, conf, r.Stdout))
	if r := cli(t, "gc", "--node", "host-a", "--keep", "live@eth0", "--apply", "--force"); r.Exit != 0 {
		t.Fatalf("gc --apply: exit %d %s %s", r.Exit, r.Stdout, r.Stderr)
	}
	if got := tenantRecords(t); !slices.Equal(got, recs) {
		t.Fatalf("after gc --etcd --apply: tenant records %v, want only live's %v", got, recs)
	}
	mustRun(t, "GC", "", gcConf(t, conf))
	if recs := tenantRecords(t); len(recs) != 0 {
		t.Fatalf("after GC of live too: tenant records %v, want none", recs)
	}
}

// authorChain is ipam-delegated → ipam-ds-args → ipam-da-etcd with two
// rules for namespaces team-*: gold (max 3), which a pod's author chooses
// by annotation, and std (max 2) for every pod; and a third, per
// annotation team, for namespaces t-*.
func authorChain(t *testing.T, h host) []byte {
	ipam := map[string]any{
		"type": "ipam-delegated", "delegates": []string{"ipam-ds-args", "ipam-da-etcd"}, "namespaceFrom": "kubernetes",
		"rules": []any{
			map[string]any{"namespace": "team-*", "annotations": map[string]string{"tier": "gold"}, "pools": []string{"gold"}, "quota": map[string]any{"per": "namespace", "max": 3}},
			map[string]any{"namespace": "team-*", "pools": []string{"std"}, "quota": map[string]any{"per": "namespace", "max": 2}},
			map[string]any{"namespace": "t-*", "pools": []string{"std"}, "quota": map[string]any{"per": "annotation:team", "max": 2}},
		},
		"poolDefinitions": map[string]any{"gold": []map[string]string{{"subnet": "10.235.7.0/24"}}, "std": []map[string]string{{"subnet": "10.235.8.0/24"}}},
		"dataDir":         h.dir, "etcd": etcdKeys(t, h, nil),
	}
	return mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "author-net", "ipam": ipam})
}

// The rules of a pod author's choices hold cluster-wide too: a team-a pod
// annotated into the gold rule after two std pods is refused at std's max
// (the smallest), and a pod in t-mallory annotated team=blue does not
// spend t-blue's tenant.
func TestQuotaAuthorChoices(t *testing.T) {
	needCluster(t)
	conf := authorChain(t, newHost(t, "host-a"))
	pod := func(id, ns string, annotations map[string]string) testbin.Reply {
		var m map[string]any
		_ = json.Unmarshal(conf, &m)
		m["runtimeConfig"] = map[string]any{"io.kubernetes.cri.pod-annotations": annotations}
		return call("ipam-delegated", "ADD", id, mustJSON(t, m), "IgnoreUnknown=1;K8S_POD_NAMESPACE="+ns+";K8S_POD_NAME="+id)
	}
	for i := range 2 {
		if r := pod(fmt.Sprint("s", i), "team-a", nil); r.Exit != 0 {
			t.Fatalf("std pod %d: %s", i, r.Stdout)
		}
	}
	if e := wantCode(t, pod("g0", "team-a", map[string]string{"tier": "gold"}), 106); !strings.Contains(e.Details, "tenant=namespace=team-a rule=ipam.rules[1] max=2 inUse=2") {
		t.Errorf("gold pod: %s", e.Details)
	}
	blue := map[string]string{"team": "blue"}
	for i := range 2 {
		if r := pod(fmt.Sprint("m", i), "t-mallory", blue); r.Exit != 0 {
			t.Fatalf("t-mallory pod %d: %s", i, r.Stdout)
		}
	}
	if r := pod("b0", "t-blue", blue); r.Exit != 0 {
		t.Fatalf("t-blue's pod after t-mallory's team=blue ones: %s", r.Stdout)
	}
	if e := wantCode(t, pod("m2", "t-mallory", blue), 106); !strings.Contains(e.Details, "tenant=t-mallory/annotation:team=blue") {
		t.Errorf("t-mallory's third pod: %s", e.Details)
	}
}
