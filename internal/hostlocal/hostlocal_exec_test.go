package hostlocal

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/testkit"
)

// upstreamHostLocal is where Debian's containernetworking-plugins installs
// the real plugin; the interop test runs only where it exists.
const upstreamHostLocal = "/usr/lib/cni/host-local"

// runHostLocal execs the real plugin on dataDir/net and returns its stdout.
func runHostLocal(t *testing.T, dataDir, cmd string, a Attachment, subnet string) string {
	t.Helper()
	conf, _ := json.Marshal(map[string]any{
		"cniVersion": "1.0.0", "name": "net", "type": "bridge",
		"ipam": map[string]any{"type": "host-local", "dataDir": dataDir,
			"ranges": [][]addrspace.RangeConfig{{{Subnet: subnet}}}},
	})
	c := exec.Command(upstreamHostLocal)
	c.Env = []string{"CNI_COMMAND=" + cmd, "CNI_CONTAINERID=" + a.ContainerID, "CNI_IFNAME=" + a.IfName,
		"CNI_NETNS=/tmp/nonexistent-netns", "CNI_PATH=/usr/lib/cni"}
	c.Stdin = bytes.NewReader(conf)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		t.Fatalf("host-local %s: %v: %s %s", cmd, err, out.String(), errOut.String())
	}
	return out.String()
}

func TestInteropWithRealHostLocal(t *testing.T) {
	_, missing := os.Stat(upstreamHostLocal)
	testkit.NeedComponent(t, missing)
	dataDir := t.TempDir()
	dir := filepath.Join(dataDir, "net")
	h := diskHarness{dir}
	const subnet = "10.7.0.0/29"
	rs := alloctest.MustSet(t, addrspace.RangeConfig{Subnet: subnet})
	hl := Attachment{ContainerID: "cid-hl", IfName: "eth0"}

	// We allocate first; host-local must continue our round robin.
	if got := mustAlloc(t, h, alloctest.CidA, rs); got != netip.MustParseAddr("10.7.0.2") {
		t.Fatalf("we got %v", got)
	}
	if out := runHostLocal(t, dataDir, "ADD", hl, subnet); !strings.Contains(out, `"10.7.0.3/29"`) {
		t.Fatalf("host-local ADD after us: %s", out)
	}
	// We must notice host-local's file: duplicate, and the next address.
	_, err := allocate(t, h, hl, 0, rs)
	if cnierr.Code(err) != cnierr.CodeDuplicateAttach {
		t.Fatalf("duplicate of host-local's allocation: %v", err)
	}
	if got := mustAlloc(t, h, alloctest.CidB, rs); got != netip.MustParseAddr("10.7.0.4") {
		t.Fatalf("we got %v after host-local", got)
	}
	// host-local's CHECK and DEL find what we wrote.
	runHostLocal(t, dataDir, "DEL", alloctest.CidB, subnet)
	if exists(filepath.Join(dir, "10.7.0.4")) {
		t.Fatal("host-local DEL did not release our reservation")
	}
	// Our index must not still believe alloctest.CidB holds 10.7.0.4.
	h.with(t, func(al *alloc.Allocator, s *Disk) {
		if got, _ := s.ByAttachment(alloctest.CidB); len(got) != 0 {
			t.Fatalf("index still lists %v", got)
		}
		if rel, err := alloc.Release(s, hl, nil); err != nil || len(rel) != 1 || rel[0] != netip.MustParseAddr("10.7.0.3") {
			t.Fatalf("releasing host-local's allocation: %v %v", rel, err)
		}
	})
	if out := runHostLocal(t, dataDir, "ADD", hl, subnet); !strings.Contains(out, `"10.7.0.5/29"`) {
		t.Fatalf("host-local ADD round robin: %s", out)
	}
}
