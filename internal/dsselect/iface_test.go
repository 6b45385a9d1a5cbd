package dsselect

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// fakeHost is a network namespace as a table.
type fakeHost struct {
	links  []hostLink
	addrs  map[int][]hostAddr
	routes []hostRoute
	err    error // when set, every call fails with it
	calls  int
}

func (f *fakeHost) LinkByName(name string) (hostLink, bool, error) {
	f.calls++
	for _, l := range f.links {
		if l.Name == name {
			return l, true, f.err
		}
	}
	return hostLink{}, false, f.err
}

func (f *fakeHost) LinkByIndex(index int) (hostLink, bool, error) {
	f.calls++
	for _, l := range f.links {
		if l.Index == index {
			return l, true, f.err
		}
	}
	return hostLink{}, false, f.err
}

func (f *fakeHost) Addrs(l hostLink) ([]hostAddr, error) {
	f.calls++
	return f.addrs[l.Index], f.err
}

func (f *fakeHost) DefaultRoutes() ([]hostRoute, error) {
	f.calls++
	return f.routes, f.err
}

func global(s string) hostAddr { return hostAddr{Prefix: netip.MustParsePrefix(s), Global: true} }
func local(s string) hostAddr  { return hostAddr{Prefix: netip.MustParsePrefix(s)} }
func via(fam, link int, gw string, metric int) hostRoute {
	r := hostRoute{Family: fam, LinkIndex: link, Metric: metric}
	if gw != "" {
		r.Gateway = netip.MustParseAddr(gw)
	}
	return r
}

// lan is a host with two uplinks: eth0 (v4 and v6, default routes of both
// families) and eth1 (v4 only, a worse default route), plus lo.
func lan() *fakeHost {
	return &fakeHost{
		links: []hostLink{{1, "lo"}, {2, "eth0"}, {3, "eth1"}, {4, "down0"}},
		addrs: map[int][]hostAddr{
			1: {local("127.0.0.1/8"), local("::1/128")},
			2: {global("10.212.1.10/24"), global("10.212.1.11/24"), local("fe80::1234/64"), global("fd00:212:1::10/64")},
			3: {global("10.212.2.5/25")},
			4: {local("fe80::99/64")},
		},
		routes: []hostRoute{via(4, 2, "10.212.1.1", 100), via(4, 3, "10.212.2.1", 200), via(6, 2, "fd00:212:1::1", 1024)},
	}
}

func runIface(t *testing.T, h hostNet, cmd, ipam string) (int, map[string]any) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := []string{"CNI_COMMAND=" + cmd, "CNI_CONTAINERID=c1", "CNI_IFNAME=eth0", "CNI_NETNS=/x", "CNI_PATH=/opt/cni/bin"}
	conf := `{"cniVersion":"1.1.0","name":"lan","ipam":{"type":"ipam-ds-iface",` + ipam + `}`
	if cmd == "GC" {
		conf = strings.Replace(conf, `"name":"lan",`, `"name":"lan","cni.dev/valid-attachments":[],`, 1)
	}
	conf += `}`
	exit := plugin.Run(ifaceWith(h), plugin.IO{Environ: env, Stdin: strings.NewReader(conf), Stdout: &stdout, Stderr: &stderr})
	var out map[string]any
	if stdout.Len() > 0 {
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatalf("stdout not JSON: %s", stdout.String())
		}
	}
	return exit, out
}

func poolsJSON(out map[string]any) string {
	b, _ := json.Marshal(out["pools"])
	return string(b)
}

func TestIfaceDerivation(t *testing.T) {
	const (
		eth0v4 = `{"exclude":["10.212.1.10","10.212.1.11","10.212.1.1"],"gateway":"10.212.1.1","name":"iface-eth0-v4","subnet":"10.212.1.0/24"}`
		eth0v6 = `{"exclude":["fd00:212:1::10","fd00:212:1::1"],"gateway":"fd00:212:1::1","name":"iface-eth0-v6","subnet":"fd00:212:1::/64"}`
	)
	tests := []struct {
		name string
		host func(*fakeHost)
		ipam string
		want string // pools, keys sorted
	}{
		{name: "both families by default", ipam: `"interface":"eth0"`, want: `[` + eth0v4 + `,` + eth0v6 + `]`},
		{name: "families asked for", ipam: `"interface":"eth0","families":["6","4","6"]`, want: `[` + eth0v4 + `,` + eth0v6 + `]`},
		{name: "only v6", ipam: `"interface":"eth0","families":["6"]`, want: `[` + eth0v6 + `]`},
		{name: "v4-only link: the families it has", ipam: `"interface":"eth1"`,
			want: `[{"exclude":["10.212.2.5","10.212.2.1"],"gateway":"10.212.2.1","name":"iface-eth1-v4","subnet":"10.212.2.0/25"}]`},
		{name: "pool base name, carve-out and exclude", ipam: `"interface":"eth0","interfacePool":"lan","families":["4"],
			"familyRanges":{"4":{"rangeStart":"10.212.1.100","rangeEnd":"10.212.1.199"}},"exclude":["10.212.1.150","10.212.1.160/30","fd00:212:1::5"]`,
			want: `[{"exclude":["10.212.1.10","10.212.1.11","10.212.1.1","10.212.1.150","10.212.1.160/30","fd00:212:1::5"],"gateway":"10.212.1.1","name":"lan-v4","rangeEnd":"10.212.1.199","rangeStart":"10.212.1.100","subnet":"10.212.1.0/24"}]`},
		{name: "configured exclude repeating a host address", ipam: `"interface":"eth1","exclude":["10.212.2.5"]`,
			want: `[{"exclude":["10.212.2.5","10.212.2.1"],"gateway":"10.212.2.1","name":"iface-eth1-v4","subnet":"10.212.2.0/25"}]`},
		{name: "default: the preferred route of each family", ipam: `"interface":"default"`,
			host: func(h *fakeHost) { h.routes[1].Metric = 50 }, // eth1 now wins for v4
			want: `[{"exclude":["10.212.2.5","10.212.2.1"],"gateway":"10.212.2.1","name":"iface-default-v4","subnet":"10.212.2.0/25"},` +
				strings.ReplaceAll(eth0v6, "iface-eth0", "iface-default") + `]`},
		{name: "default: a family without default route is left out", ipam: `"interface":"default"`,
			host: func(h *fakeHost) { h.routes = h.routes[:2] },
			want: `[` + strings.ReplaceAll(eth0v4, "iface-eth0", "iface-default") + `]`},
		{name: "no default route over the link: no gateway", ipam: `"interface":"eth0","families":["4"]`,
			host: func(h *fakeHost) { h.routes = h.routes[1:] },
			want: `[{"exclude":["10.212.1.10","10.212.1.11"],"name":"iface-eth0-v4","subnet":"10.212.1.0/24"}]`},
		{name: "link-local next hop is not a pool gateway", ipam: `"interface":"eth0","families":["6"]`,
			host: func(h *fakeHost) { h.routes[2].Gateway = netip.MustParseAddr("fe80::1") },
			want: `[{"exclude":["fd00:212:1::10"],"name":"iface-eth0-v6","subnet":"fd00:212:1::/64"}]`},
		{name: "lowest metric over the link wins", ipam: `"interface":"eth0","families":["4"]`,
			host: func(h *fakeHost) { h.routes = append(h.routes, via(4, 2, "10.212.1.254", 10)) },
			want: `[{"exclude":["10.212.1.10","10.212.1.11","10.212.1.254"],"gateway":"10.212.1.254","name":"iface-eth0-v4","subnet":"10.212.1.0/24"}]`},
		{name: "the first global address gives the subnet", ipam: `"interface":"eth0","families":["4"]`,
			host: func(h *fakeHost) {
				h.addrs[2] = append([]hostAddr{local("10.212.3.1/16"), global("10.212.3.7/28")}, h.addrs[2]...)
			},
			// (the host's addresses outside the subnet are left out)
			want: `[{"exclude":["10.212.3.1","10.212.3.7"],"name":"iface-eth0-v4","subnet":"10.212.3.0/28"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := lan()
			if tt.host != nil {
				tt.host(h)
			}
			for _, cmd := range []string{"ADD", "CHECK"} {
				exit, out := runIface(t, h, cmd, tt.ipam)
				if exit != 0 {
					t.Fatalf("%s: exit %d: %v", cmd, exit, out)
				}
				if got := poolsJSON(out); got != tt.want {
					t.Errorf("%s pools:\n got %s\nwant %s", cmd, got, tt.want)
				}
			}
		})
	}
}

func TestIfaceErrors(t *testing.T) {
	tests := []struct {
		name   string
		host   func(*fakeHost)
		ipam   string
		code   float64
		detail []string // each must appear in msg or details
	}{
		{name: "unknown link", ipam: `"interface":"eth9"`, code: 7, detail: []string{"ipam.interface", "eth9"}},
		{name: "no global address of an asked family", ipam: `"interface":"eth1","families":["4","6"]`, code: 11, detail: []string{"interface=eth1", "family=6"}},
		{name: "no global address at all", ipam: `"interface":"down0"`, code: 11, detail: []string{"interface=down0", "family=4 or 6"}},
		{name: "netlink failure", ipam: `"interface":"eth0"`, host: func(h *fakeHost) { h.err = errors.New("EPERM") }, code: 5, detail: []string{"netlink", "EPERM"}},
		{name: "default without default routes", ipam: `"interface":"default"`, host: func(h *fakeHost) { h.routes = nil }, code: 11, detail: []string{"interface=default"}},
		{name: "default without an asked family's route", ipam: `"interface":"default","families":["6"]`,
			host: func(h *fakeHost) { h.routes = h.routes[:2] }, code: 11, detail: []string{"interface=default", "family=6"}},
		{name: "default route's link lacks the address", ipam: `"interface":"default","families":["4"]`,
			host: func(h *fakeHost) { h.routes[0].LinkIndex = 4 }, code: 11, detail: []string{"interface=down0", "family=4"}},
		{name: "carve-out outside the host's subnet", ipam: `"interface":"eth0","familyRanges":{"4":{"rangeStart":"10.212.7.1"}}`,
			code: 7, detail: []string{"ipam.familyRanges.4.rangeStart", "10.212.7.1"}},
		{name: "host subnet too small", ipam: `"interface":"eth0","families":["4"]`,
			host: func(h *fakeHost) { h.addrs[2] = []hostAddr{global("10.212.1.10/32")} }, code: 7, detail: []string{"ipam.interface", "10.212.1.10/32"}},
		// Configuration errors: the host is never asked.
		{name: "missing interface", ipam: `"families":["4"]`, code: 7, detail: []string{"ipam.interface"}},
		{name: "interface too long", ipam: `"interface":"eth0123456789abcd"`, code: 7, detail: []string{"ipam.interface"}},
		{name: "interface not a name", ipam: `"interface":"../x"`, code: 7, detail: []string{"ipam.interface"}},
		{name: "interface cannot name a pool", ipam: `"interface":"eth@0"`, code: 7, detail: []string{"ipam.interface", "interfacePool"}},
		{name: "bad interfacePool", ipam: `"interface":"eth0","interfacePool":"_x"`, code: 7, detail: []string{"ipam.interfacePool", "_x"}},
		{name: "interfacePool too long", ipam: `"interface":"eth0","interfacePool":"` + strings.Repeat("p", 62) + `"`, code: 7, detail: []string{"ipam.interfacePool"}},
		{name: "empty families", ipam: `"interface":"eth0","families":[]`, code: 7, detail: []string{"ipam.families"}},
		{name: "bad family", ipam: `"interface":"eth0","families":["4","ipv6"]`, code: 7, detail: []string{"ipam.families[1]", "ipv6"}},
		{name: "family as a number", ipam: `"interface":"eth0","families":[4]`, code: 7, detail: []string{"ipam.families"}},
		{name: "bad familyRanges key", ipam: `"interface":"eth0","familyRanges":{"v4":{}}`, code: 7, detail: []string{"ipam.familyRanges", "v4"}},
		{name: "familyRanges of a family not asked for", ipam: `"interface":"eth0","families":["4"],"familyRanges":{"6":{"rangeStart":"fd00::5"}}`,
			code: 7, detail: []string{"ipam.familyRanges.6"}},
		{name: "familyRanges address of the wrong family", ipam: `"interface":"eth0","familyRanges":{"6":{"rangeEnd":"10.212.1.5"}}`,
			code: 7, detail: []string{"ipam.familyRanges.6.rangeEnd", "10.212.1.5"}},
		{name: "bad exclude", ipam: `"interface":"eth0","exclude":["10.212.1.5","10.212.1.0/33"]`, code: 7, detail: []string{"ipam.exclude[1]", "10.212.1.0/33"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := lan()
			if tt.host != nil {
				tt.host(h)
			}
			exit, out := runIface(t, h, "ADD", tt.ipam)
			text := ""
			if out != nil {
				text = out["msg"].(string) + " " + out["details"].(string)
			}
			if exit != 1 || out["code"] != tt.code {
				t.Fatalf("exit %d, %v; want code %v", exit, out, tt.code)
			}
			for _, d := range tt.detail {
				if !strings.Contains(text, d) {
					t.Errorf("error %q does not mention %q", text, d)
				}
			}
			if tt.code == 7 && len(tt.detail) > 0 && strings.HasPrefix(tt.detail[0], "ipam.") && tt.host == nil &&
				!strings.HasPrefix(tt.name, "unknown") && !strings.HasPrefix(tt.name, "carve") {
				if h.calls != 0 {
					t.Errorf("a configuration error asked the host %d times", h.calls)
				}
			}
		})
	}
}

// DEL and GC name every pool an ADD could have chosen, by name, without
// asking the host: the link may have lost its address or be gone.
func TestIfaceDelNamesPoolsWithoutTheHost(t *testing.T) {
	for _, tt := range []struct{ ipam, want string }{
		{`"interface":"eth0"`, `[{"name":"iface-eth0-v4"},{"name":"iface-eth0-v6"}]`},
		{`"interface":"gone0","families":["6"]`, `[{"name":"iface-gone0-v6"}]`},
		{`"interface":"default","interfacePool":"lan"`, `[{"name":"lan-v4"},{"name":"lan-v6"}]`},
	} {
		for _, cmd := range []string{"DEL", "GC"} {
			h := &fakeHost{err: errors.New("must not be called")}
			exit, out := runIface(t, h, cmd, tt.ipam)
			if exit != 0 || poolsJSON(out) != tt.want || h.calls != 0 {
				t.Errorf("%s %s: exit %d, %v, %d host calls; want pools %s and none", cmd, tt.ipam, exit, out, h.calls, tt.want)
			}
		}
	}
	// A config error is still one on DEL.
	if exit, out := runIface(t, &fakeHost{}, "DEL", `"interface":""`); exit != 1 || out["code"] != float64(7) {
		t.Errorf("DEL with a bad config: exit %d, %v", exit, out)
	}
}

// STATUS while the link has no address: "not available" (50), not 11.
func TestIfaceStatus(t *testing.T) {
	if exit, out := runIface(t, lan(), "STATUS", `"interface":"eth0"`); exit != 0 || poolsJSON(out) == "null" {
		t.Fatalf("STATUS with addresses: exit %d, %v", exit, out)
	}
	exit, out := runIface(t, lan(), "STATUS", `"interface":"down0"`)
	if exit != 1 || out["code"] != float64(50) || !strings.Contains(out["details"].(string), "interface=down0") {
		t.Fatalf("STATUS without address: exit %d, %v; want 50 naming the link", exit, out)
	}
	if exit, out := runIface(t, lan(), "STATUS", `"interface":"eth9"`); exit != 1 || out["code"] != float64(7) {
		t.Fatalf("STATUS with an unknown link: exit %d, %v; want 7", exit, out)
	}
}

func TestIfaceValidateAndArgs(t *testing.T) {
	p := ifaceWith(&fakeHost{err: errors.New("must not be called")})
	for _, tt := range []struct {
		ipam string
		code uint
	}{
		{`"interface":"eth0"`, 0},
		{`"interface":"eth0","families":["5"]`, 7},
	} {
		env, err := netconf.Parse([]byte(`{"cniVersion":"1.0.0","name":"lan","ipam":{` + tt.ipam + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		err = p.Validate(env)
		if (err == nil) != (tt.code == 0) {
			t.Errorf("Validate(%s) = %v", tt.ipam, err)
		}
	}
	keys, err := p.ArgKeys(nil)
	if want := "IP,K8S_POD_NAMESPACE,NOMAD_NAMESPACE,K8S_POD_NAME,CNIPLUGINS_STICKY_KEY"; err != nil || strings.Join(keys, ",") != want {
		t.Errorf("ArgKeys = %v, %v; want the chain's %s only", keys, err, want)
	}
}
