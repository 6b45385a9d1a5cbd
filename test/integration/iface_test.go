package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// hostNS is a network namespace standing in for a host on a LAN: link
// cnpi0 (testbin.HostLink: a dummy) holding 10.212.9.2/29 and fd00:212:9::2/125, default routes
// of both families via .6 / ::6 (not the first address, so the gateway
// can only come from the route), and a second link cnpi1 with IPv4 only.
func hostNS(t *testing.T) string {
	ns := testbin.NetNS(t, fmt.Sprintf("cnpi-i%d", os.Getpid()))
	t.Logf("host links: %s", testbin.HostLink(t, ns, "cnpi0"))
	testbin.HostLink(t, ns, "cnpi1")
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "add", "10.212.9.2/29", "dev", "cnpi0"},
		{"addr", "add", "fd00:212:9::2/125", "dev", "cnpi0", "nodad"},
		{"route", "add", "default", "via", "10.212.9.6", "dev", "cnpi0"},
		{"-6", "route", "add", "default", "via", "fd00:212:9::6", "dev", "cnpi0"},
		{"addr", "add", "10.212.10.2/24", "dev", "cnpi1"},
	} {
		testbin.IP(t, ns, args...)
	}
	return ns
}

// inNS execs c from inside ns, as a runtime on that host would.
func inNS(t *testing.T, ns string, c testbin.Call) testbin.Reply {
	t.Helper()
	var r testbin.Reply
	if err := testbin.InNetNS(ns, func() { r = testbin.Run(c) }); err != nil {
		t.Fatal(err)
	}
	return r
}

func ifaceChain(dataDir, ipam string) []byte {
	return []byte(fmt.Sprintf(`{"cniVersion":"1.1.0","name":"lan","ipam":{"type":"ipam-delegated",
		"delegates":["ipam-ds-iface","ipam-da-pools"],"dataDir":%q,%s}}`, dataDir, ipam))
}

// The real binary, exec'd inside the namespace, derives the pools from
// the namespace's links and routes.
func TestIfaceSelectsHostSubnet(t *testing.T) {
	ns := hostNS(t)
	tests := []struct{ ipam, want string }{
		{`"interface":"cnpi0"`, `[{"name":"iface-cnpi0-v4","subnet":"10.212.9.0/29","gateway":"10.212.9.6","exclude":["10.212.9.2","10.212.9.6"]},` +
			`{"name":"iface-cnpi0-v6","subnet":"fd00:212:9::/125","gateway":"fd00:212:9::6","exclude":["fd00:212:9::2","fd00:212:9::6"]}]`},
		{`"interface":"default","interfacePool":"up","families":["4"],"exclude":["10.212.9.3"]`,
			`[{"name":"up-v4","subnet":"10.212.9.0/29","gateway":"10.212.9.6","exclude":["10.212.9.2","10.212.9.6","10.212.9.3"]}]`},
		{`"interface":"cnpi1","familyRanges":{"4":{"rangeStart":"10.212.10.100","rangeEnd":"10.212.10.199"}}`,
			`[{"name":"iface-cnpi1-v4","subnet":"10.212.10.0/24","rangeStart":"10.212.10.100","rangeEnd":"10.212.10.199","exclude":["10.212.10.2"]}]`},
	}
	for _, tt := range tests {
		conf := []byte(`{"cniVersion":"1.1.0","name":"lan","ipam":{"type":"ipam-ds-iface",` + tt.ipam + `}}`)
		r := inNS(t, ns, call("ipam-ds-iface", "ADD", "sel", conf))
		if r.Exit != 0 {
			t.Fatalf("%s: exit %d: %s %s", tt.ipam, r.Exit, r.Stdout, r.Stderr)
		}
		var out struct{ Pools json.RawMessage }
		if err := json.Unmarshal(r.Stdout, &out); err != nil || string(out.Pools) != tt.want {
			t.Errorf("%s: pools\n got %s\nwant %s", tt.ipam, out.Pools, tt.want)
		}
	}

	// A multipath default route: each next hop is the gateway of its link.
	testbin.IP(t, ns, "route", "replace", "default", "nexthop", "via", "10.212.9.6", "dev", "cnpi0", "nexthop", "via", "10.212.10.1", "dev", "cnpi1")
	r := inNS(t, ns, call("ipam-ds-iface", "ADD", "sel", []byte(`{"cniVersion":"1.1.0","name":"lan","ipam":{"interface":"cnpi1"}}`)))
	if !strings.Contains(string(r.Stdout), `"gateway":"10.212.10.1"`) {
		t.Errorf("multipath: %s %s; want cnpi1's next hop as gateway", r.Stdout, r.Stderr)
	}

	for _, tt := range []struct {
		ipam   string
		code   uint
		detail string
	}{
		{`"interface":"cnpi9"`, 7, "cnpi9"},
		{`"interface":"cnpi1","families":["6"]`, 11, "interface=cnpi1 family=6"},
	} {
		r := inNS(t, ns, call("ipam-ds-iface", "ADD", "sel", []byte(`{"cniVersion":"1.1.0","name":"lan","ipam":{`+tt.ipam+`}}`)))
		if e := r.Err(); e == nil || e.Code != tt.code || !strings.Contains(e.Msg+" "+e.Details, tt.detail) {
			t.Errorf("%s: %s; want code %d naming %q", tt.ipam, r.Stdout, tt.code, tt.detail)
		}
	}
}

// Exhausting the pool never hands out the host's own address or the
// gateway; DEL frees the addresses even after the link lost its address.
func TestIfaceNeverHandsOutHostOrGateway(t *testing.T) {
	ns := hostNS(t)
	dataDir := t.TempDir()
	for _, tt := range []struct {
		family string
		want   []string // in allocation order
	}{
		// /29: .1-.6 usable; .2 is the host's, .6 the gateway.
		{"4", []string{"10.212.9.1", "10.212.9.3", "10.212.9.4", "10.212.9.5"}},
		// /125: ::1-::7 usable; ::2 is the host's, ::6 the gateway.
		{"6", []string{"fd00:212:9::1", "fd00:212:9::3", "fd00:212:9::4", "fd00:212:9::5", "fd00:212:9::7"}},
	} {
		conf := ifaceChain(dataDir, `"interface":"cnpi0","families":["`+tt.family+`"]`)
		var got []string
		for i := range len(tt.want) + 1 {
			r := inNS(t, ns, call("ipam-delegated", "ADD", fmt.Sprintf("c%s-%d", tt.family, i), conf))
			if i == len(tt.want) {
				if e := r.Err(); e == nil || e.Code != 100 {
					t.Fatalf("family %s: ADD %d after %v: %s; want 100 (exhausted)", tt.family, i, got, r.Stdout)
				}
				break
			}
			if r.Exit != 0 {
				t.Fatalf("family %s: ADD %d: %s %s", tt.family, i, r.Stdout, r.Stderr)
			}
			addr := parseResult(t, r.Stdout).IPs[0].Address
			got = append(got, addr[:strings.IndexByte(addr, '/')])
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("family %s: allocated %v, want %v", tt.family, got, tt.want)
		}
	}
	// A requested host address is refused.
	req := call("ipam-delegated", "ADD", "req", ifaceChain(dataDir, `"interface":"cnpi0","families":["4"]`))
	req.Args = "IP=10.212.9.2"
	if e := inNS(t, ns, req).Err(); e == nil || e.Code != 101 {
		t.Errorf("requested host address: %+v; want 101", e)
	}

	// The link loses its addresses (DHCP lease gone, link flushed): ADD is
	// "try again later", and DEL still frees what the attachment holds.
	testbin.IP(t, ns, "addr", "flush", "dev", "cnpi0")
	conf := ifaceChain(dataDir, `"interface":"cnpi0"`)
	if e := inNS(t, ns, call("ipam-delegated", "ADD", "late", conf)).Err(); e == nil || e.Code != 11 || !strings.Contains(e.Details, "interface=cnpi0") {
		t.Errorf("ADD without addresses: %+v; want 11 naming the link", e)
	}
	for _, id := range []string{"c4-0", "c6-2"} {
		if r := inNS(t, ns, call("ipam-delegated", "DEL", id, conf)); r.Exit != 0 {
			t.Fatalf("DEL %s: %s %s", id, r.Stdout, r.Stderr)
		}
	}
	if got := reservations(t, filepath.Join(dataDir, "_pools", "iface-cnpi0-v4")); got != "10.212.9.3 10.212.9.4 10.212.9.5" {
		t.Errorf("v4 pool after DEL of c4-0: %s", got)
	}
	if got := reservations(t, filepath.Join(dataDir, "_pools", "iface-cnpi0-v6")); got != "fd00:212:9::1 fd00:212:9::3 fd00:212:9::5 fd00:212:9::7" {
		t.Errorf("v6 pool after DEL of c6-2: %s", got)
	}
}
