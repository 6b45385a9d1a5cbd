package dockeripam

import (
	"encoding/json"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// The i-th of subnets' sequence is base's address plus i subnets.
func TestSubnets(t *testing.T) {
	cases := []struct {
		base string
		size int
		i    uint64
		want string
	}{
		{"10.213.128.0/17", 24, 0, "10.213.128.0/24"},
		{"10.213.128.0/17", 24, 5, "10.213.133.0/24"},
		{"10.213.0.0/16", 28, 17, "10.213.1.16/28"},
		{"10.0.0.0/8", 16, 255, "10.255.0.0/16"},
		{"fd00:213::/48", 64, 0, "fd00:213::/64"},
		{"fd00:213::/48", 64, 0x1234, "fd00:213:0:1234::/64"},
		{"fd00:213::/48", 56, 3, "fd00:213:0:300::/56"},
		{"fd00::/8", 64, 1, "fd00:0:0:1::/64"},
		{"fd00:213::/48", 112, 65535, "fd00:213::ffff:0/112"},
	}
	for _, c := range cases {
		var got netip.Prefix
		i := c.i
		for p := range subnets(netip.MustParsePrefix(c.base), c.size) {
			if i == 0 {
				got = p
				break
			}
			i--
		}
		if got.String() != c.want {
			t.Errorf("subnet %d of %s in /%d = %s, want %s", c.i, c.base, c.size, got, c.want)
		}
	}
}

func TestOwnPoolNamesAreValidPoolNames(t *testing.T) {
	for _, s := range []string{"10.213.5.0/24", "0.0.0.0/0", "fd00:213:8000::/64", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:0/112", "::/0"} {
		name := ownPoolName(netip.MustParsePrefix(s))
		if err := pool.ValidName("name", name); err != nil {
			t.Errorf("%s -> %q: %v", s, name, err)
		}
	}
	if a, b := ownPoolName(netip.MustParsePrefix("10.213.5.0/24")), ownPoolName(netip.MustParsePrefix("10.213.5.0/25")); a == b {
		t.Errorf("two subnets, one name %q", a)
	}
}

func TestRestrict(t *testing.T) {
	rs, err := addrspace.ParseRangeSet("r", []addrspace.RangeConfig{{Subnet: "10.213.1.0/24", RangeStart: "10.213.1.10", RangeEnd: "10.213.1.200"}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ sub, want string }{
		{"", "10.213.1.10-10.213.1.200"},
		{"10.213.1.128/25", "10.213.1.128-10.213.1.200"},
		{"10.213.1.0/28", "10.213.1.10-10.213.1.15"},
		{"10.213.1.64/27", "10.213.1.64-10.213.1.95"},
		{"10.213.1.240/28", ""},
	}
	for _, c := range cases {
		var sub netip.Prefix
		if c.sub != "" {
			sub = netip.MustParsePrefix(c.sub)
		}
		got := restrict(rs, sub)
		if got.String() != c.want {
			t.Errorf("restrict to %q = %q, want %q", c.sub, got, c.want)
		}
		if len(got) > 0 && got[0].Gateway != rs[0].Gateway {
			t.Errorf("restrict changed the gateway")
		}
	}
}

// poolDefinitions go through ipam-da-pools' parser (pool.ParseDefinitions): both forms,
// exclusions, and its errors, naming the config file's key.
func TestPoolDefinitions(t *testing.T) {
	cases := []struct {
		name, defs, err string
	}{
		{"range set", `{"a":[{"subnet":"10.213.1.0/24"}]}`, ""},
		{"object form with exclude", `{"a":{"ranges":[{"subnet":"10.213.1.0/24"}],"exclude":["10.213.1.5","10.213.1.64/26"]}}`, ""},
		{"bad exclude", `{"a":{"ranges":[{"subnet":"10.213.1.0/24"}],"exclude":["ten"]}}`, "poolDefinitions.a.exclude[0]"},
		{"bad name", `{"../x":[{"subnet":"10.213.1.0/24"}]}`, "must match"},
		{"underscore first", `{"_docker":[{"subnet":"10.213.1.0/24"}]}`, "must match"},
		{"overlap", `{"a":[{"subnet":"10.213.1.0/24"},{"subnet":"10.213.1.0/25"}]}`, "overlaps"},
		{"bad CIDR", `{"a":[{"subnet":"10.213.1.0/33"}]}`, "CIDR"},
	}
	for _, c := range cases {
		path := t.TempDir() + "/c.json"
		if err := writeFile(path, `{"poolDefinitions":`+c.defs+`}`); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(path, "")
		if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.err)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	cases := []struct{ name, json, err string }{
		{"defaults", `{}`, ""},
		{"relative dataDir", `{"dataDir":"var/lib"}`, "absolute"},
		{"lockTimeout", `{"lockTimeout":"forever"}`, "lockTimeout"},
		{"unknown key", `{"dataDir":"/x","pools":{}}`, "unknown field"},
		{"pool base with host bits", `{"defaultAddressPools":[{"base":"10.213.0.1/16","size":24}]}`, "not a network"},
		{"pool size too small", `{"defaultAddressPools":[{"base":"10.213.0.0/16","size":8}]}`, "size"},
		{"pool size too large", `{"defaultAddressPools":[{"base":"10.213.0.0/16","size":31}]}`, "size"},
	}
	for _, c := range cases {
		path := t.TempDir() + "/c.json"
		if err := writeFile(path, c.json); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(path, "")
		if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.err)
		}
		if c.name == "defaults" && (cfg.DataDir != DefaultDataDir || len(cfg.Defaults) != 2) {
			t.Errorf("defaults: %+v", cfg)
		}
	}
}

// The example config loads, and defines pool web exactly as the example
// conflist beside it does: the worked example's two sides agree.
func TestExampleConfigMatchesItsConflist(t *testing.T) {
	cfg, err := LoadConfig("../../examples/docker-ipam.json", "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../examples/docker-shared.conflist")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Plugins []struct {
			IPAM struct {
				PoolDefinitions map[string]json.RawMessage `json:"poolDefinitions"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	cni, err := pool.ParseDefinitions("ipam.poolDefinitions", list.Plugins[0].IPAM.PoolDefinitions)
	if err != nil {
		t.Fatal(err)
	}
	if cni["web"].Set.String() != cfg.Pools["web"].Set.String() || cni["web"].Set.String() == "" {
		t.Errorf("pool web: conflist %s, driver config %s", cni["web"].Set, cfg.Pools["web"].Set)
	}
}
