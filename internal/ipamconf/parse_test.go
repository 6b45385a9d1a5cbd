package ipamconf_test

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

func TestValidAttachments(t *testing.T) {
	env := alloctest.Envelope(t, `{"cniVersion":"1.1.0","name":"n","ipam":{},
		"cni.dev/valid-attachments":[{"containerID":"a","ifname":"eth0"},{"containerID":"b"}]}`)
	got, err := ipamconf.ValidAttachments(env)
	if err != nil || !slices.Equal(got, []alloc.Attachment{{ContainerID: "a", IfName: "eth0"}, {ContainerID: "b"}}) {
		t.Errorf("= %v, %v", got, err)
	}
	if got, err := ipamconf.ValidAttachments(alloctest.Envelope(t, `{"cniVersion":"1.1.0","name":"n","cni.dev/valid-attachments":null}`)); err != nil || len(got) != 0 {
		t.Errorf("null = %v, %v", got, err)
	}
	_, err = ipamconf.ValidAttachments(alloctest.Envelope(t, `{"cniVersion":"1.1.0","name":"n"}`))
	alloctest.AssertCode(t, err, 7)
	_, err = ipamconf.ValidAttachments(alloctest.Envelope(t, `{"cniVersion":"1.1.0","name":"n","cni.dev/valid-attachments":{"a":1}}`))
	alloctest.AssertCode(t, err, 7)
}

func TestPrevAddrs(t *testing.T) {
	got, err := ipamconf.PrevAddrs(alloctest.Envelope(t, `{"cniVersion":"1.0.0","name":"n","prevResult":{"cniVersion":"1.0.0",
		"ips":[{"address":"10.0.0.5/24"},{"address":"fd00::5/64"}]}}`))
	if err != nil || !slices.Equal(got, []netip.Addr{netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("fd00::5")}) {
		t.Errorf("= %v, %v", got, err)
	}
	if got, err := ipamconf.PrevAddrs(alloctest.Envelope(t, `{"cniVersion":"1.0.0","name":"n"}`)); err != nil || got != nil {
		t.Errorf("none = %v, %v", got, err)
	}
}

func TestStandalone(t *testing.T) {
	for conf, want := range map[string]bool{
		`{"cniVersion":"1.0.0","name":"n","ipam":{"type":"me"}}`:    true,
		`{"cniVersion":"1.0.0","name":"n","ipam":{"type":"other"}}`: false,
	} {
		if got, err := ipamconf.Standalone(alloctest.Envelope(t, conf), "me"); err != nil || got != want {
			t.Errorf("%s: %v, %v", conf, got, err)
		}
	}
	_, err := ipamconf.Standalone(alloctest.Envelope(t, `{"cniVersion":"1.0.0","name":"n","ipam":{"type":7}}`), "me")
	alloctest.AssertCode(t, err, 7)
}

// The file's own ranges, as the operators' commands read a config.
func TestKeysRangeSets(t *testing.T) {
	var k ipamconf.Keys
	if sets, err := k.RangeSets(); err != nil || sets != nil {
		t.Errorf("no ranges = %v, %v", sets, err)
	}
	k.Subnet = "10.9.0.0/24"
	k.Ranges = [][]addrspace.RangeConfig{{{Subnet: "10.1.0.0/24"}}}
	sets, err := k.RangeSets()
	if err != nil || len(sets) != 2 || sets[0].String() != "10.9.0.1-10.9.0.254" {
		t.Errorf("= %v, %v", sets, err)
	}
	// A decoding error of the sections Parse reads itself.
	_, err = ipamconf.Parse(alloctest.Envelope(t, `{"cniVersion":"1.0.0","name":"n","ipam":{"subnet":7}}`), nil, true)
	alloctest.AssertCode(t, err, 7)
	_, err = ipamconf.Parse(alloctest.Envelope(t, `{"cniVersion":"1.0.0","name":"n","ipam":{},"runtimeConfig":{"ips":7}}`), nil, true)
	alloctest.AssertCode(t, err, 7)
	_, err = ipamconf.Parse(alloctest.Envelope(t, `{"cniVersion":"1.0.0","name":"n","ipam":{}}`), nil, true)
	alloctest.AssertCode(t, err, 7)
}

// DEL parses the config once for both its paths: the standalone ranges
// are Parse's while they parse (its prevResult fast path places the
// addresses in them), missing with no error once they do not (the read
// path needs none), and what DEL needs (CNI_ARGS) fails as Parse's does.
func TestParseDel(t *testing.T) {
	conf := func(ranges string) string {
		return `{"cniVersion":"1.0.0","name":"n","ipam":{"type":"me","ranges":` + ranges + `}}`
	}
	valid := alloctest.Envelope(t, conf(`[[{"subnet":"10.9.0.0/29"}],[{"subnet":"fd00::/125"}]]`))
	want, err := ipamconf.Parse(valid, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := ipamconf.ParseDel(valid, nil); err != nil || len(c.RangeSets) != 2 || fmt.Sprint(c.RangeSets) != fmt.Sprint(want.RangeSets) {
		t.Errorf("valid ranges = %+v, %v; want %v", c, err, want.RangeSets)
	}
	for _, ranges := range []string{`[]`, `[[{"subnet":"10.9.0.0/29"}],[{"subnet":"10.9.0.0/30"}]]`} {
		env := alloctest.Envelope(t, conf(ranges))
		if _, err := ipamconf.Parse(env, nil, true); err == nil {
			t.Fatalf("%s: Parse needing ranges accepts them", ranges)
		}
		if c, err := ipamconf.ParseDel(env, nil); err != nil || c.RangeSets != nil || c.Network != "n" || len(c.Scopes()) != 1 {
			t.Errorf("%s = %+v, %v; want the network's scope, no ranges", ranges, c, err)
		}
	}
	bad := []netconf.CNIArg{{Key: "IP", Value: "not-an-address"}}
	_, want7 := ipamconf.Parse(valid, bad, false)
	_, err = ipamconf.ParseDel(valid, bad)
	if err == nil || want7 == nil || cnierr.Code(err) != cnierr.Code(want7) {
		t.Errorf("CNI_ARGS IP=not-an-address: %v, want %v", err, want7)
	}
}
