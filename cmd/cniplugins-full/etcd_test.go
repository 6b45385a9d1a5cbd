package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/daetcd"
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/dsselect"
	"github.com/cniplugins/cniplugins/internal/etcdkv/etcdkvfake"
	"github.com/cniplugins/cniplugins/internal/etcdstore"
	"github.com/cniplugins/cniplugins/internal/ops"
	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/testkit/plugintest"
)

// The lean binary names ipam.etcd.prefix's default without linking
// etcdstore; they must agree, or pools --etcd would skip every network.
func TestEtcdPrefixDefault(t *testing.T) {
	if ops.DefaultEtcdPrefix != etcdstore.DefaultPrefix || ops.EtcdPrefix("") != etcdstore.DefaultPrefix || ops.EtcdPrefix("/x") != "/x/" {
		t.Errorf("ops %q, etcdstore %q", ops.DefaultEtcdPrefix, etcdstore.DefaultPrefix)
	}
}

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
		{"data dir", dapools.Personality(), `"dataDir":"DATA"`, func() (ops.Backend, error) { return ops.Local{}, nil }, "DATA/_pools/shared"},
		{"etcd", daetcd.Personality(),
			fmt.Sprintf(`"etcd":{"endpoints":[%q],"prefix":"/pools-test","nodeName":"node-a","machineIDFile":%q}`, fake.URL(), machine),
			func() (ops.Backend, error) {
				return openEtcd(ops.EtcdConfig{Endpoints: []string{fake.URL()}, Prefix: "/pools-test/"})
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
