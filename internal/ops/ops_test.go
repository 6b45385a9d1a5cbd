package ops

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/pool"
)

func TestProblemFromTypedError(t *testing.T) {
	p := PluginConf{File: "f.conflist", Path: "plugins[1]"}
	for _, tt := range []struct {
		err              error
		path, value, msg string
	}{
		{cnierr.InvalidConfig("ipam.ranges[0][0].subnet", "10.0.0.0/33", "not a valid CIDR"), "plugins[1].ipam.ranges[0][0].subnet", "10.0.0.0/33", "invalid ipam.ranges[0][0].subnet: not a valid CIDR"},
		{cnierr.MissingConfig("ipam.pools"), "plugins[1].ipam.pools", "", "missing ipam.pools"},
		{cnierr.New(cnierr.CodeDecoding, "not JSON", "stdin: bad at offset 3"), "plugins[1]", "stdin: bad at offset 3", "not JSON"},
		{errors.New("plain failure"), "plugins[1]", "", "plain failure"},
	} {
		got := p.problem(tt.err)
		if got.Path != tt.path || got.Value != tt.value || !strings.Contains(got.Msg, tt.msg) || got.File != "f.conflist" {
			t.Errorf("problem(%v) = %+v; want path %q value %q msg %q", tt.err, got, tt.path, tt.value, tt.msg)
		}
	}
}

// Usages lists a pool shared by two networks once, naming both, and
// counts only the addresses inside each set.
func TestUsagesSharedPool(t *testing.T) {
	data := t.TempDir()
	set := rangeSet(t, addrspace.RangeConfig{Subnet: "10.0.0.0/29"})
	p := PoolDef{Name: "p", Dir: data + "/_pools/p", Definition: pool.Definition{Set: set}}
	nets := []Network{
		{Conf: PluginConf{Network: "a"}, Pools: []PoolDef{p}},
		{Conf: PluginConf{Network: "b"}, Pools: []PoolDef{p}},
	}
	d, err := hostlocal.Open(p.Dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range []string{"10.0.0.2", "10.0.0.3", "10.9.9.9"} {
		if _, err := d.Reserve(alloc.Attachment{ContainerID: "c" + ip, IfName: "eth0"}, netip.MustParseAddr(ip)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	us, err := UsagesIn(Local{}, nets)
	if err != nil {
		t.Fatal(err)
	}
	if len(us) != 1 || strings.Join(us[0].Networks, ",") != "a,b" || us[0].Used != 2 || us[0].Free != 3 || us[0].Percent != 40 || us[0].RangeSet != nil {
		t.Errorf("usages = %+v", us)
	}
}

func rangeSet(t *testing.T, cfgs ...addrspace.RangeConfig) addrspace.RangeSet {
	t.Helper()
	rs, err := addrspace.ParseRangeSet("r", cfgs)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// A delegate is looked up as ipam-delegated looks it up: the first
// regular file of its name in the CNI path is the one the runtime runs,
// so an executable of that name in a later directory does not make a
// first one that cannot run resolvable.
func TestValidateDelegateLookup(t *testing.T) {
	first, later := t.TempDir(), t.TempDir()
	v := Validator{
		Lookup:  func(string) (plugin.Personality, bool) { return plugin.Personality{}, false },
		CNIPath: []string{first, later},
	}
	validate := func(dir string, mode os.FileMode) []Problem {
		if err := os.WriteFile(filepath.Join(dir, "ipam-x"), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return v.Data("n.conf", []byte(`{"cniVersion":"1.0.0","name":"n","type":"bridge","ipam":{"type":"ipam-delegated","delegates":["ipam-x"]}}`))
	}
	if got := validate(later, 0o755); len(got) != 0 {
		t.Fatalf("executable in the CNI path: %v", got)
	}
	got := validate(first, 0o644)
	if len(got) != 1 || got[0].Path != "ipam.delegates[0]" || got[0].Msg != "delegate not found in CNI path "+first+":"+later {
		t.Fatalf("a first file that cannot run: got %v", got)
	}
}
