package main

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/clusteraccess"
	"github.com/cniplugins/cniplugins/internal/daetcd"
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/dsselect"
	"github.com/cniplugins/cniplugins/internal/etcdkv/etcdkvfake"
	"github.com/cniplugins/cniplugins/internal/ops"
	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/testkit/plugintest"
)

// pools answers alike from the data dir and from etcd: the same ADDs
// through ipam-da-pools and through ipam-da-etcd (on the in-memory etcd)
// give the same rows, where ops placed each scope (the etcd backend
// refuses another place): a rule's inline pool, a default, and each
// tenant with its own rule's quota.
func TestPoolsAlikeOnBothBackends(t *testing.T) {
	fake := etcdkvfake.New(t)
	machine := filepath.Join(t.TempDir(), "machine-id")
	if err := os.WriteFile(machine, []byte("0123456789abcdef0123456789abcdef\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const rules = `"namespaceFrom":"kubernetes","rules":[
		{"namespace":"team-a","pools":[{"name":"shared","subnet":"10.241.1.0/29"}],"quota":{"per":"namespace","max":3}},
		{"namespace":"team-b","pools":["shared"],"quota":{"per":"namespace","max":5}}],
		"defaultPools":[{"name":"dflt","subnet":"10.241.9.0/29"}]`
	want := []string{
		"pool shared 10.241.1.1-10.241.1.6 3/5 [namespace=team-a 1/3 namespace=team-b 2/5]",
		"pool dflt 10.241.9.1-10.241.9.6 1/5 []",
	}
	for _, tt := range []struct {
		name      string
		allocator plugin.Personality
		keys      string // the allocator's own ipam keys
		backend   func() (ops.Backend, error)
		place     string // where the pool shared is, DATA the data dir
	}{
		{"data dir", dapools.Personality(nil), `"dataDir":"DATA"`, func() (ops.Backend, error) { return ops.Local{}, nil }, "DATA/_pools/shared"},
		{"etcd", daetcd.Personality(),
			fmt.Sprintf(`"etcd":{"endpoints":[%q],"prefix":"/pools-test","nodeName":"node-a","machineIDFile":%q}`, fake.URL(), machine),
			func() (ops.Backend, error) {
				return openEtcd(clusteraccess.Access{Endpoints: []string{fake.URL()}, Prefix: "/pools-test/"})
			},
			"/pools-test/ip/pool/shared/"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := t.TempDir()
			ipam := fmt.Sprintf(`"type":"ipam-delegated","delegates":["ipam-ds-args",%q],%s,%s`, tt.allocator.Name, strings.ReplaceAll(tt.keys, "DATA", data), rules)
			for i, ns := range []string{"team-a", "team-b", "team-b", "misc"} {
				conf := fmt.Sprintf(`{"cniVersion":"1.1.0","name":"tenants","ipam":{%s}}`, ipam)
				cid := fmt.Sprint("c", i)
				if _, err := plugintest.AddThrough([]byte(conf), cid, "IgnoreUnknown=1;K8S_POD_NAMESPACE="+ns+";K8S_POD_NAME="+cid, dsselect.Args(), tt.allocator); err != nil {
					t.Fatal(err)
				}
			}
			file := filepath.Join(t.TempDir(), "tenants.conflist")
			if err := os.WriteFile(file, fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":"tenants","plugins":[{"type":"bridge","ipam":{%s}}]}`, ipam), 0o644); err != nil {
				t.Fatal(err)
			}
			plugins, problems := ops.LoadPlugins([]string{file})
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			n, _, err := ops.Describe(plugins[0], "")
			if err != nil {
				t.Fatal(err)
			}
			b, err := tt.backend()
			if err != nil {
				t.Fatal(err)
			}
			us, err := ops.UsagesIn(b, []ops.Network{n})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, u := range us {
				var ts []string
				for _, tu := range u.Tenants {
					ts = append(ts, fmt.Sprintf("%s %d/%d", tu.Tenant, tu.InUse, *tu.Quota))
				}
				got = append(got, fmt.Sprintf("%s %s %s %d/%d [%s]", u.Kind, u.Name, u.Ranges, u.Used, u.Size, strings.Join(ts, " ")))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") || len(us) == 0 || us[0].Dir != strings.ReplaceAll(tt.place, "DATA", data) {
				t.Errorf("rows:\n%s\nwant\n%s\n(first at %v)", strings.Join(got, "\n"), strings.Join(want, "\n"), us)
			}
		})
	}
}

// gc --cri over etcd runs etcd's GC driver with the runtime's keep set,
// on this live node (so no --dead-after guard): it releases a dead
// sandbox's claim of a network the runtime serves, keeps a ready one's
// and another network's, and leaves the node's 16 fence buckets, which its
// ADDs still compare.
func TestLiveGCOverEtcd(t *testing.T) {
	fake := etcdkvfake.New(t)
	machine := filepath.Join(t.TempDir(), "machine-id")
	if err := os.WriteFile(machine, []byte("0123456789abcdef0123456789abcdef\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{{"lan", "live-1"}, {"lan", "gone-1"}, {"other", "gone-2"}} {
		conf := fmt.Sprintf(`{"cniVersion":"1.1.0","name":%q,"ipam":{"type":"ipam-da-etcd","ranges":[[{"subnet":"10.241.2.0/24"}]],
			"etcd":{"endpoints":[%q],"prefix":"/gc-test","nodeName":"node-a","machineIDFile":%q}}}`, c[0], fake.URL(), machine)
		if _, err := plugintest.AddThrough([]byte(conf), c[1], "", daetcd.Personality()); err != nil {
			t.Fatal(err)
		}
	}
	b, err := openEtcd(clusteraccess.Access{Endpoints: []string{fake.URL()}, Prefix: "/gc-test/"})
	if err != nil {
		t.Fatal(err)
	}
	rt := alloc.Runtime{Ready: map[string]bool{"live-1": true}, Networks: []string{"lan"}, MinAge: time.Minute, Now: time.Now().Add(time.Hour)}
	for _, apply := range []bool{false, true} {
		rep, err := ops.LiveGC(b, ops.GCRequest{Runtime: &rt, Apply: apply, Node: "node-a"})
		if err != nil || len(rep.Stale) != 1 || rep.Stale[0].ContainerID != "gone-1" || rep.Skipped["other"] != 1 {
			t.Fatalf("apply %v: %+v %v; want gone-1 released, other's claim skipped", apply, rep, err)
		}
	}
	ls, err := b.Leases(ops.LeaseFilter{})
	if err != nil || len(ls) != 2 || ls[0].ContainerID == "gone-1" || ls[1].ContainerID == "gone-1" {
		t.Errorf("left %+v %v; want live-1's and gone-2's", ls, err)
	}
	if fences := fake.Values("/gc-test/fences/node-a/"); len(fences) != 16 {
		t.Errorf("fence buckets left: %v", fences)
	}
}

// leases selects and orders alike from the data dir and from etcd (one
// filter, ops.LeaseFilter.Select): the same ADDs and DEL through
// ipam-da-pools and through ipam-da-etcd (on the in-memory etcd) list the
// same rows for each filter. A sticky key's hold is found under
// --container by the container that last had it, on both.
func TestLeasesAlikeOnBothBackends(t *testing.T) {
	fake := etcdkvfake.New(t)
	machine := filepath.Join(t.TempDir(), "machine-id")
	if err := os.WriteFile(machine, []byte("0123456789abcdef0123456789abcdef\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	queries := []struct {
		f    ops.LeaseFilter
		want string // each row's network, owner, container and last owner
	}{
		{ops.LeaseFilter{}, "lan sticky - g1|mid cni g2 -|other cni b1 -"},
		{ops.LeaseFilter{Container: "g1"}, "lan sticky - g1"},
		{ops.LeaseFilter{Container: "g"}, "lan sticky - g1|mid cni g2 -"},
		{ops.LeaseFilter{Container: "b"}, "other cni b1 -"},
		{ops.LeaseFilter{Network: "other"}, "other cni b1 -"},
		{ops.LeaseFilter{Network: "mid", Container: "g2"}, "mid cni g2 -"},
		{ops.LeaseFilter{Pool: "p"}, ""},
	}
	for _, tt := range []struct {
		name      string
		allocator plugin.Personality
		keys      string // the allocator's own ipam keys
		backend   func(data string) (ops.Backend, error)
	}{
		{"data dir", dapools.Personality(nil), `"dataDir":"DATA"`, func(data string) (ops.Backend, error) { return ops.Local{DataDir: data}, nil }},
		{"etcd", daetcd.Personality(),
			fmt.Sprintf(`"etcd":{"endpoints":[%q],"prefix":"/leases-test","nodeName":"node-a","machineIDFile":%q}`, fake.URL(), machine),
			func(string) (ops.Backend, error) {
				return openEtcd(clusteraccess.Access{Endpoints: []string{fake.URL()}, Prefix: "/leases-test/"})
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := t.TempDir()
			conf := func(network string) []byte {
				return fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":%q,"ipam":{"type":%q,%s,"ranges":[[{"subnet":"10.241.4.0/29"}]],"sticky":{"by":["arg"],"holdFor":"1h"}}}`,
					network, tt.allocator.Name, strings.ReplaceAll(tt.keys, "DATA", data))
			}
			// One container a network: etcd's addresses are not in ADD order.
			for _, c := range [][3]string{{"lan", "g1", "IgnoreUnknown=1;CNIPLUGINS_STICKY_KEY=ns/web-0"}, {"mid", "g2", ""}, {"other", "b1", ""}} {
				if _, err := plugintest.AddThrough(conf(c[0]), c[1], c[2], tt.allocator); err != nil {
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			env := []string{"CNI_COMMAND=DEL", "CNI_CONTAINERID=g1", "CNI_IFNAME=eth0", "CNI_NETNS=/x", "CNI_PATH=/nonexistent", "CNI_ARGS=IgnoreUnknown=1;CNIPLUGINS_STICKY_KEY=ns/web-0"}
			if exit := plugin.Run(tt.allocator, plugin.IO{Environ: env, Stdin: bytes.NewReader(conf("lan")), Stdout: &stdout, Stderr: &stderr}); exit != 0 {
				t.Fatalf("DEL g1: %s %s", stdout.Bytes(), stderr.Bytes())
			}
			b, err := tt.backend(data)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range queries {
				ls, err := b.Leases(q.f)
				var got []string
				for _, l := range ls {
					got = append(got, fmt.Sprintf("%s %s %s %s", l.Network, l.Owner, cmp.Or(l.ContainerID, "-"), cmp.Or(l.LastOwner, "-")))
				}
				if err != nil || strings.Join(got, "|") != q.want {
					t.Errorf("leases %+v: %q %v; want %q", q.f, strings.Join(got, "|"), err, q.want)
				}
			}
		})
	}
}
