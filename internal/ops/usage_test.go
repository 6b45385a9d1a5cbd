package ops

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/dsselect"
	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/pool"
	"github.com/cniplugins/cniplugins/internal/testkit/plugintest"
)

// tenantRules are ipam-ds-args rules where two namespaces share pool
// shared, with quotas of 3 and 5, other namespaces falling to the
// defaults; POOL is shared's definition (inline or a bare name).
const tenantRules = `"namespaceFrom":"kubernetes","rules":[
	{"namespace":"team-a","pools":[POOL],"quota":{"per":"namespace","max":3}},
	{"namespace":"team-b","pools":["shared"],"quota":{"per":"namespace","max":5}}],
	"defaultPools":[{"name":"dflt","subnet":"10.240.9.0/29"}]`

// usageConf is a conflist of network name whose ipam-delegated chain
// runs delegates over dataDir with ipam's other keys.
func usageConf(name, dataDir, delegates, ipam string) string {
	return fmt.Sprintf(`{"cniVersion":"1.1.0","name":%q,"plugins":[{"type":"bridge","ipam":{"type":"ipam-delegated",
		"delegates":[%s],"dataDir":%q,%s}}]}`, name, delegates, dataDir, ipam)
}

// add is one ADD through a file's network: the namespace it comes from.
type add struct{ file, cid, namespace string }

// poolRow is what a test compares of a Usage.
func poolRow(u Usage) string {
	var ts []string
	for _, tu := range u.Tenants {
		q := "-"
		if tu.Quota != nil {
			q = fmt.Sprint(*tu.Quota)
		}
		ts = append(ts, fmt.Sprintf("%s %d/%s", tu.Tenant, tu.InUse, q))
	}
	return fmt.Sprintf("%s %s %s used=%d free=%d nets=%s tenants=[%s] conflict=%v", u.Kind, u.Name, u.Ranges, u.Used, u.Free,
		strings.Join(u.Networks, ","), strings.Join(ts, ", "), u.Conflict != "")
}

// Usages lists every pool a configuration can select (inline in a rule,
// a default, defined), counted after real ADDs through the chain, with
// each tenant's quota as its own rule gives it; a pool two files define
// differently is a row per definition, each saying so.
func TestUsagesSelectablePools(t *testing.T) {
	args := `"ipam-ds-args","ipam-da-pools"`
	inline := `{"name":"shared","subnet":"10.240.1.0/29"}`
	for _, tt := range []struct {
		name  string
		files map[string]string // file → ipam keys (DATA: the data dir); networks are named by file
		adds  []add
		want  []string
		// conflict is what the first conflicting row's Conflict says.
		conflict string
		prom     []string // lines -o prom writes
	}{
		{"inline pools: a rule's and a default",
			map[string]string{"a": strings.Replace(tenantRules, "POOL", inline, 1)},
			[]add{{"a", "c1", "team-a"}, {"a", "c2", "team-b"}, {"a", "c3", "team-b"}, {"a", "c4", "misc"}},
			[]string{
				"pool shared 10.240.1.1-10.240.1.6 used=3 free=2 nets=a tenants=[namespace=team-a 1/3, namespace=team-b 2/5] conflict=false",
				"pool dflt 10.240.9.1-10.240.9.6 used=1 free=4 nets=a tenants=[] conflict=false",
			}, "", []string{
				`cniplugins_ipam_used_addresses{kind="pool",name="shared",range_set="",networks="a"} 3`,
				`cniplugins_ipam_used_addresses{kind="pool",name="dflt",range_set="",networks="a"} 1`,
				`cniplugins_tenant_quota{tenant="namespace=team-a",pool="shared"} 3`,
				`cniplugins_tenant_quota{tenant="namespace=team-b",pool="shared"} 5`,
			}},
		{"a defined pool two rules share: each tenant its own rule's max",
			map[string]string{"a": strings.Replace(tenantRules, "POOL", `"shared"`, 1) + `,"poolDefinitions":{"shared":[{"subnet":"10.240.2.0/29"}],"idle":[{"subnet":"10.240.3.0/29"}]}`},
			[]add{{"a", "c1", "team-b"}, {"a", "c2", "team-a"}},
			[]string{
				"pool shared 10.240.2.1-10.240.2.6 used=2 free=3 nets=a tenants=[namespace=team-a 1/3, namespace=team-b 1/5] conflict=false",
				"pool dflt 10.240.9.1-10.240.9.6 used=0 free=5 nets=a tenants=[] conflict=false",
				"pool idle 10.240.3.1-10.240.3.6 used=0 free=5 nets=a tenants=[] conflict=false",
			}, "", nil},
		{"one inline pool in two files, alike: one row; a default defined differently: a row each",
			map[string]string{
				"a": strings.Replace(tenantRules, "POOL", inline, 1),
				"b": `"rules":[{"namespace":"*","pools":[` + inline + `]}],"defaultPools":[{"name":"dflt","subnet":"10.240.8.0/29"}]`,
			},
			[]add{{"a", "c1", "team-a"}, {"b", "c2", "misc"}, {"a", "c3", "misc"}},
			[]string{
				"pool shared 10.240.1.1-10.240.1.6 used=2 free=3 nets=a,b tenants=[namespace=team-a 1/3] conflict=false",
				"pool dflt 10.240.9.1-10.240.9.6 used=1 free=4 nets=a tenants=[] conflict=true",
				"pool dflt 10.240.8.1-10.240.8.6 used=0 free=5 nets=b tenants=[] conflict=true",
			},
			"as DIR/a.conflist (plugins[0].ipam.defaultPools[0]) defines it; defined differently in DIR/b.conflist (plugins[0].ipam.defaultPools[0]: 10.240.8.1-10.240.8.6)", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, data := t.TempDir(), t.TempDir()
			var files []string
			for _, f := range []string{"a", "b"} {
				if ipam, ok := tt.files[f]; ok {
					path := filepath.Join(dir, f+".conflist")
					if err := os.WriteFile(path, []byte(usageConf(f, data, args, ipam)), 0o644); err != nil {
						t.Fatal(err)
					}
					files = append(files, path)
				}
			}
			for _, a := range tt.adds {
				conf := fmt.Sprintf(`{"cniVersion":"1.1.0","name":%q,"ipam":{"type":"ipam-delegated","delegates":[%s],"dataDir":%q,%s}}`, a.file, args, data, tt.files[a.file])
				cniArgs := "IgnoreUnknown=1;K8S_POD_NAMESPACE=" + a.namespace + ";K8S_POD_NAME=" + a.cid
				if _, err := plugintest.AddThrough([]byte(conf), a.cid, cniArgs, dsselect.Args(), dapools.Personality(nil)); err != nil {
					t.Fatal(err)
				}
			}
			us, err := UsagesIn(Local{}, describeAll(t, files))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, u := range us {
				got = append(got, poolRow(u))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("rows:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			for _, u := range us {
				if want := strings.ReplaceAll(tt.conflict, "DIR", dir); u.Conflict != "" && u.Conflict != want {
					t.Errorf("conflict %q, want %q", u.Conflict, want)
				}
				if u.Conflict != "" {
					break
				}
			}
			var prom strings.Builder
			if err := WriteProm(&prom, us); err != nil {
				t.Fatal(err)
			}
			for _, line := range tt.prom {
				if !strings.Contains(prom.String(), line+"\n") {
					t.Errorf("-o prom lacks %s:\n%s", line, prom.String())
				}
			}
		})
	}
}

// describeAll is every network of files the CLI reads.
func describeAll(t *testing.T, files []string) []Network {
	t.Helper()
	plugins, problems := LoadPlugins(files)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	var nets []Network
	for _, p := range plugins {
		n, ok, err := Describe(p, "")
		if err != nil {
			t.Fatalf("%s: %v", p.File, err)
		}
		if ok {
			nets = append(nets, n)
		}
	}
	return nets
}

// validate reports an inline pool another file defines differently, as
// pools does, in the same words as a defined pool's.
func TestValidateInlinePoolConflict(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	args := `"ipam-ds-args","ipam-da-pools"`
	var files []string
	for name, ipam := range map[string]string{
		"a": `"rules":[{"namespace":"x","pools":[{"name":"p","subnet":"10.242.1.0/29"}]}]`,
		"b": `"defaultPools":[{"name":"p","subnet":"10.242.2.0/29"}]`,
	} {
		path := filepath.Join(dir, name+".conflist")
		if err := os.WriteFile(path, []byte(usageConf(name, data, args, ipam)), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	slices.Sort(files)
	var got []string
	for _, p := range (Validator{Lookup: func(string) (plugin.Personality, bool) { return plugin.Personality{}, false }}).Files(files) {
		if strings.Contains(p.Msg, "defined differently") {
			got = append(got, p.File+" "+p.Value+": "+p.Msg)
		}
	}
	want := files[1] + " p=10.242.2.1-10.242.2.6: pool p is defined differently in " + files[0] +
		" (plugins[0].ipam: 10.242.1.1-10.242.1.6); the networks sharing it would disagree on its ranges"
	if len(got) != 1 || got[0] != want {
		t.Errorf("validate: %q, want %q", got, want)
	}
}

// Usages, the data dir's, leaves the ipam-da-etcd networks to the etcd
// backend: their Dir is a key prefix, no directory.
func TestUsagesLeavesEtcdNetworks(t *testing.T) {
	set := rangeSet(t, addrspace.RangeConfig{Subnet: "10.0.0.0/29"})
	n := Network{Conf: PluginConf{Network: "e"}, EtcdPrefix: "/cniplugins/", Dir: "/cniplugins/ip/net/e/", RangeSets: []addrspace.RangeSet{set}}
	if us, err := UsagesIn(Local{}, []Network{n}); err != nil || len(us) != 0 {
		t.Errorf("Usages of an etcd network: %+v %v", us, err)
	}
}

// elsewhere is a backend whose layout disagrees with Describe's.
type elsewhere struct{ Local }

func (elsewhere) Shared() bool { return true }
func (elsewhere) States(ss []StateScope) ([]alloc.ScopeState, error) {
	return []alloc.ScopeState{{Place: "/other/ip/pool/p/"}}, nil
}

// A backend that reads a scope elsewhere than Describe placed it is an
// error naming both places, never another place's counts.
func TestUsagesPlaceError(t *testing.T) {
	set := rangeSet(t, addrspace.RangeConfig{Subnet: "10.0.0.0/29"})
	n := Network{Conf: PluginConf{Network: "e"}, EtcdPrefix: "/cniplugins/", Pools: []PoolDef{{Name: "p", Dir: "/cniplugins/ip/pool/p/", Definition: pool.Definition{Set: set}}}}
	_, err := UsagesIn(elsewhere{}, []Network{n})
	var pe PlaceError
	if !errors.As(err, &pe) || err.Error() != "pool p: its state was read at /other/ip/pool/p/, not at /cniplugins/ip/pool/p/ where its configuration places it" {
		t.Errorf("UsagesIn = %v", err)
	}
}

// pools shows a listed pool's chain as the allocator resolves
// ipam-ds-static's selection: an overflowPools list without an overflow
// is no chain (the allocator resolves the chain again from overflow), and
// its pools are not counted.
func TestListedPoolChains(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	static := `"ipam-ds-static","ipam-da-pools"`
	spill := `"overflowPools":[{"name":"b","subnet":"10.243.2.0/29"}]`
	for _, tc := range []struct {
		pool, want string
		pools      []string
	}{
		{`{"name":"a","subnet":"10.243.1.0/29",` + spill + `}`, "", []string{"a"}},
		{`{"name":"a","subnet":"10.243.1.0/29","overflow":"b",` + spill + `}`, "b", []string{"a"}},
	} {
		path := filepath.Join(dir, "n.conflist")
		if err := os.WriteFile(path, []byte(usageConf("n", data, static, `"pools":[`+tc.pool+`]`)), 0o644); err != nil {
			t.Fatal(err)
		}
		nets := describeAll(t, []string{path})
		var names []string
		chain := "?"
		for _, p := range nets[0].Pools {
			names = append(names, p.Name)
			if p.Name == "a" {
				chain = strings.Join(p.Chain, ",")
			}
		}
		if chain != tc.want || !slices.Equal(names, tc.pools) {
			t.Errorf("%s: pools %q, a's chain %q, want %q and %q", tc.pool, names, chain, tc.pools, tc.want)
		}
	}
}
