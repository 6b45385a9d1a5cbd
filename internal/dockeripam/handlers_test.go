package dockeripam

import (
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
)

// step is one request of a scripted conversation with the driver and what
// its reply must hold: want's keys with those exact string values, or
// "Error" / "Err" containing the given text.
type step struct {
	name   string
	method string // default POST
	path   string
	body   string
	status int // default 200
	want   map[string]string
}

// TestHandlers runs one conversation, in order, as dockerd would hold it:
// discovery, pools of every kind, addresses, errors, releases.
func TestHandlers(t *testing.T) {
	dataDir := t.TempDir()
	api := served(t, testDriver(t, dataDir))
	const shared = "shared,10.213.1.0/24"
	const sub = "docker-10.213.20.0-24,10.213.20.0/24,10.213.20.128/25"
	big := `{"Pool":"` + strings.Repeat("x", maxBody) + `"}`
	steps := []step{
		{name: "activate, empty body", path: "/Plugin.Activate", want: map[string]string{"Implements": "[IpamDriver]"}},
		{name: "capabilities", path: "/IpamDriver.GetCapabilities", want: map[string]string{"RequiresMACAddress": "false", "RequiresRequestReplay": "false"}},
		{name: "address spaces", path: "/IpamDriver.GetDefaultAddressSpaces", want: map[string]string{"LocalDefaultAddressSpace": LocalSpace, "GlobalDefaultAddressSpace": GlobalSpace}},
		{name: "unknown endpoint", path: "/VolumeDriver.Create", body: "{}", status: 404, want: map[string]string{"Err": "no such endpoint"}},
		{name: "GET", method: "GET", path: "/Plugin.Activate", status: 405, want: map[string]string{"Err": "POST"}},
		{name: "malformed JSON", path: "/IpamDriver.RequestPool", body: `{"Pool":`, status: 400, want: map[string]string{"Err": "malformed"}},
		{name: "wrong type", path: "/IpamDriver.RequestPool", body: `{"V6":"yes"}`, status: 400, want: map[string]string{"Err": "malformed"}},
		{name: "trailing data", path: "/IpamDriver.RequestPool", body: `{} {}`, status: 400, want: map[string]string{"Err": "after the JSON"}},
		{name: "empty body where one is needed", path: "/IpamDriver.RequestAddress", status: 400, want: map[string]string{"Err": "empty"}},
		{name: "body too large", path: "/IpamDriver.RequestPool", body: big, status: 413, want: map[string]string{"Err": "too large"}},
		{name: "global space refused", path: "/IpamDriver.RequestPool", body: `{"AddressSpace":"cniplugins-global","Pool":"10.213.1.0/24"}`, want: map[string]string{"Error": "no cluster allocator"}},
		{name: "unknown space", path: "/IpamDriver.RequestPool", body: `{"AddressSpace":"nope"}`, want: map[string]string{"Error": "unknown address space"}},

		{name: "subnet of a defined pool", path: "/IpamDriver.RequestPool", body: `{"AddressSpace":"cniplugins-local","Options":{},"Pool":"10.213.1.0/24","SubPool":"","V6":false}`, want: map[string]string{"PoolID": shared, "Pool": "10.213.1.0/24"}},
		{name: "identical request, same ID", path: "/IpamDriver.RequestPool", body: `{"AddressSpace":"cniplugins-local","Pool":"10.213.1.0/24"}`, want: map[string]string{"PoolID": shared}},
		{name: "by name", path: "/IpamDriver.RequestPool", body: `{"AddressSpace":"cniplugins-local","Options":{"cniplugins.pool":"named"}}`, want: map[string]string{"PoolID": "named,10.213.2.0/24", "Pool": "10.213.2.0/24"}},
		{name: "by name, wrong subnet", path: "/IpamDriver.RequestPool", body: `{"Pool":"10.213.3.0/24","Options":{"cniplugins.pool":"named"}}`, want: map[string]string{"Error": "no range in subnet"}},
		{name: "unknown name", path: "/IpamDriver.RequestPool", body: `{"Options":{"cniplugins.pool":"nope"}}`, want: map[string]string{"Error": "no such pool"}},
		{name: "by name, IPv6", path: "/IpamDriver.RequestPool", body: `{"V6":true,"Options":{"cniplugins.pool":"v6"}}`, want: map[string]string{"Pool": "fd00:213:1::/64"}},
		{name: "overlaps a defined pool", path: "/IpamDriver.RequestPool", body: `{"Pool":"10.213.0.0/16"}`, want: map[string]string{"Error": "overlaps defined pool"}},
		{name: "host bits", path: "/IpamDriver.RequestPool", body: `{"Pool":"10.213.5.1/24"}`, want: map[string]string{"Error": "host bits"}},
		{name: "family mismatch", path: "/IpamDriver.RequestPool", body: `{"Pool":"10.213.5.0/24","V6":true}`, want: map[string]string{"Error": "family"}},
		{name: "own pool", path: "/IpamDriver.RequestPool", body: `{"Pool":"10.213.5.0/24"}`, want: map[string]string{"PoolID": "docker-10.213.5.0-24,10.213.5.0/24"}},
		{name: "overlaps a pool in use", path: "/IpamDriver.RequestPool", body: `{"Pool":"10.213.5.0/25"}`, want: map[string]string{"Error": "already in use"}},
		{name: "default pool", path: "/IpamDriver.RequestPool", body: `{}`, want: map[string]string{"Pool": "10.213.128.0/24"}},
		{name: "next default pool", path: "/IpamDriver.RequestPool", body: `{}`, want: map[string]string{"Pool": "10.213.129.0/24"}},
		{name: "default pools exhausted", path: "/IpamDriver.RequestPool", body: `{}`, want: map[string]string{"Error": "no free IPv4 subnet"}},
		{name: "default IPv6 pool", path: "/IpamDriver.RequestPool", body: `{"V6":true}`, want: map[string]string{"Pool": "fd00:213:8000::/64", "PoolID": "docker-fd00.0213.8000.0000.0000.0000.0000.0000-64,fd00:213:8000::/64"}},
		{name: "sub-pool", path: "/IpamDriver.RequestPool", body: `{"Pool":"10.213.20.0/24","SubPool":"10.213.20.128/25"}`, want: map[string]string{"PoolID": sub}},
		{name: "sub-pool outside", path: "/IpamDriver.RequestPool", body: `{"Pool":"10.213.21.0/24","SubPool":"10.213.22.0/25"}`, want: map[string]string{"Error": "not inside"}},

		{name: "gateway, default", path: "/IpamDriver.RequestAddress", body: `{"Address":"","Options":{"RequestAddressType":"com.docker.network.gateway"},"PoolID":"` + shared + `"}`, want: map[string]string{"Address": "10.213.1.1/24"}},
		{name: "dynamic", path: "/IpamDriver.RequestAddress", body: `{"PoolID":"` + shared + `","Address":"","Options":null}`, want: map[string]string{"Address": "10.213.1.2/24"}},
		{name: "dynamic, round-robin", path: "/IpamDriver.RequestAddress", body: `{"PoolID":"` + shared + `","Options":null}`, want: map[string]string{"Address": "10.213.1.3/24"}},
		{name: "requested", path: "/IpamDriver.RequestAddress", body: `{"PoolID":"` + shared + `","Address":"10.213.1.77","Options":null}`, want: map[string]string{"Address": "10.213.1.77/24"}},
		{name: "requested, taken", path: "/IpamDriver.RequestAddress", body: `{"PoolID":"` + shared + `","Address":"10.213.1.77"}`, want: map[string]string{"Error": "already reserved"}},
		{name: "requested, the gateway", path: "/IpamDriver.RequestAddress", body: `{"PoolID":"` + shared + `","Address":"10.213.1.1"}`, want: map[string]string{"Error": "gateway"}},
		{name: "requested, outside", path: "/IpamDriver.RequestAddress", body: `{"PoolID":"` + shared + `","Address":"10.99.0.1"}`, want: map[string]string{"Error": "outside pool"}},
		{name: "requested, outside the range", path: "/IpamDriver.RequestAddress", body: `{"PoolID":"named,10.213.2.0/24","Address":"10.213.2.200"}`, want: map[string]string{"Error": "not in range set"}},
		{name: "requested, not an IP", path: "/IpamDriver.RequestAddress", body: `{"PoolID":"` + shared + `","Address":"ten"}`, want: map[string]string{"Error": "not an IP"}},
		{name: "gateway elsewhere", path: "/IpamDriver.RequestAddress", body: `{"PoolID":"docker-10.213.5.0-24,10.213.5.0/24","Address":"10.213.5.254","Options":{"RequestAddressType":"com.docker.network.gateway"}}`, want: map[string]string{"Address": "10.213.5.254/24"}},
		{name: "named pool's range, past its exclusions", path: "/IpamDriver.RequestAddress", body: `{"PoolID":"named,10.213.2.0/24"}`, want: map[string]string{"Address": "10.213.2.12/24"}},
		{name: "requested, excluded", path: "/IpamDriver.RequestAddress", body: `{"PoolID":"named,10.213.2.0/24","Address":"10.213.2.11"}`, want: map[string]string{"Error": "excluded"}},
		{name: "sub-pool's range", path: "/IpamDriver.RequestAddress", body: `{"PoolID":"` + sub + `"}`, want: map[string]string{"Address": "10.213.20.128/24"}},
		{name: "sub-pool, requested outside it", path: "/IpamDriver.RequestAddress", body: `{"PoolID":"` + sub + `","Address":"10.213.20.9"}`, want: map[string]string{"Address": "10.213.20.9/24"}},
		{name: "unknown pool ID", path: "/IpamDriver.RequestAddress", body: `{"PoolID":"nope"}`, want: map[string]string{"Error": "unknown pool ID"}},

		{name: "release", path: "/IpamDriver.ReleaseAddress", body: `{"PoolID":"` + shared + `","Address":"10.213.1.77"}`, want: map[string]string{}},
		{name: "release again", path: "/IpamDriver.ReleaseAddress", body: `{"PoolID":"` + shared + `","Address":"10.213.1.77"}`, want: map[string]string{"Error": "not reserved"}},
		{name: "release, other Docker pool's", path: "/IpamDriver.ReleaseAddress", body: `{"PoolID":"` + sub + `","Address":"10.213.1.2"}`, want: map[string]string{"Error": "not reserved in pool"}},
		{name: "release the gateway", path: "/IpamDriver.ReleaseAddress", body: `{"PoolID":"` + shared + `","Address":"10.213.1.1"}`, want: map[string]string{}},
		{name: "release pool, one of two", path: "/IpamDriver.ReleasePool", body: `{"PoolID":"` + shared + `"}`, want: map[string]string{}},
		{name: "still served (the cursor moved to .77, as host-local moves it)", path: "/IpamDriver.RequestAddress", body: `{"PoolID":"` + shared + `"}`, want: map[string]string{"Address": "10.213.1.78/24"}},
		{name: "release pool, last", path: "/IpamDriver.ReleasePool", body: `{"PoolID":"` + shared + `"}`, want: map[string]string{}},
		{name: "gone", path: "/IpamDriver.RequestAddress", body: `{"PoolID":"` + shared + `"}`, want: map[string]string{"Error": "unknown pool ID"}},
		{name: "release unknown pool", path: "/IpamDriver.ReleasePool", body: `{"PoolID":"` + shared + `"}`, want: map[string]string{"Error": "unknown pool ID"}},
	}
	for _, s := range steps {
		method := s.method
		if method == "" {
			method = http.MethodPost
		}
		wantStatus := s.status
		if wantStatus == 0 {
			wantStatus = http.StatusOK
		}
		status, got := api.post(t, method, s.path, s.body)
		if status != wantStatus {
			t.Errorf("%s: status %d, want %d (%v)", s.name, status, wantStatus, got)
			continue
		}
		if _, isErr := got["Error"]; isErr && s.want["Error"] == "" {
			t.Errorf("%s: unexpected error %v", s.name, got["Error"])
			continue
		}
		for k, v := range s.want {
			g := fmt.Sprint(got[k])
			if k == "Error" || k == "Err" {
				if !strings.Contains(g, v) {
					t.Errorf("%s: %s = %q, want it to contain %q", s.name, k, g, v)
				}
			} else if g != v {
				t.Errorf("%s: %s = %q, want %q", s.name, k, g, v)
			}
		}
	}
	// ReleasePool at zero freed what the Docker pool still held (.2, .3, .78).
	entries, _ := os.ReadDir(filepath.Join(dataDir, "_pools", "shared"))
	for _, e := range entries {
		if _, err := netip.ParseAddr(e.Name()); err == nil {
			t.Errorf("reservation %s left in pool shared after its release", e.Name())
		}
	}
}

// A reservation is Docker's by the owner convention, and CNI's are not
// Docker's to release.
func TestOwnershipAcrossCNIAndDocker(t *testing.T) {
	dataDir := t.TempDir()
	api := served(t, testDriver(t, dataDir))
	_, got := api.post(t, "POST", "/IpamDriver.RequestPool", `{"Pool":"10.213.1.0/24"}`)
	id := fmt.Sprint(got["PoolID"])
	// A CNI container takes .2 through the engine, as ipam-da-pools does.
	dir := filepath.Join(dataDir, "_pools", "shared")
	disk, err := hostlocal.Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := addrspace.ParseRangeSet("r", []addrspace.RangeConfig{{Subnet: "10.213.1.0/24"}})
	cni := alloc.Attachment{ContainerID: "abc", IfName: "eth0", Network: "blue"}
	if _, _, err := alloc.New(disk).Allocate(cni, 0, rs, netip.Addr{}, "pool shared"); err != nil {
		t.Fatal(err)
	}
	disk.Close()

	_, got = api.post(t, "POST", "/IpamDriver.RequestAddress", `{"PoolID":"`+id+`"}`)
	if got["Address"] != "10.213.1.3/24" {
		t.Fatalf("Docker got %v, want the next address after CNI's 10.213.1.2", got)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "10.213.1.3"))
	if string(b) != "_docker\r\n"+id+"\r\n_docker" {
		t.Errorf("Docker's reservation reads %q", b)
	}
	_, got = api.post(t, "POST", "/IpamDriver.ReleaseAddress", `{"PoolID":"`+id+`","Address":"10.213.1.2"}`)
	if !strings.Contains(fmt.Sprint(got["Error"]), "not held by Docker") {
		t.Errorf("release of a CNI reservation: %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "10.213.1.2")); err != nil {
		t.Errorf("CNI reservation gone: %v", err)
	}
	// A CNI DEL of any attachment, even one naming Docker's address, frees nothing of Docker's.
	disk, _ = hostlocal.Open(dir, 0)
	for _, a := range []alloc.Attachment{cni, {ContainerID: "_docker", IfName: id, Network: "blue"}} {
		if _, err := alloc.Release(disk, a, []netip.Addr{netip.MustParseAddr("10.213.1.3")}); err != nil {
			t.Fatal(err)
		}
	}
	disk.Close()
	if _, err := os.Stat(filepath.Join(dir, "10.213.1.3")); err != nil {
		t.Errorf("a CNI DEL freed Docker's reservation: %v", err)
	}
}

// Many requests at once, as dockerd sends them when containers start in
// parallel: every address distinct, every release effective.
func TestConcurrentRequests(t *testing.T) {
	dataDir := t.TempDir()
	api := served(t, testDriver(t, dataDir))
	_, got := api.post(t, "POST", "/IpamDriver.RequestPool", `{"Pool":"10.213.1.0/24"}`)
	id := fmt.Sprint(got["PoolID"])
	const n = 64
	addrs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, got := api.post(t, "POST", "/IpamDriver.RequestAddress", `{"PoolID":"`+id+`"}`)
			addrs[i] = fmt.Sprint(got["Address"])
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] || !strings.HasPrefix(a, "10.213.1.") {
			t.Fatalf("address %q handed out twice or invalid: %v", a, addrs)
		}
		seen[a] = true
	}
	for _, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ip, _, _ := strings.Cut(a, "/")
			if _, got := api.post(t, "POST", "/IpamDriver.ReleaseAddress", `{"PoolID":"`+id+`","Address":"`+ip+`"}`); got["Error"] != nil {
				t.Errorf("release %s: %v", ip, got["Error"])
			}
		}()
	}
	wg.Wait()
	entries, _ := os.ReadDir(filepath.Join(dataDir, "_pools", "shared"))
	for _, e := range entries {
		if _, err := netip.ParseAddr(e.Name()); err == nil {
			t.Errorf("reservation %s left", e.Name())
		}
	}
}
