package cri

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit"
)

// The conflist's "cniVersions": ["1.0.0", "1.1.0"] is safe only when
// every plugin of the list speaks 1.1.0: containerd 2.x picks 1.1.0, and
// Debian 12's bridge (plugins 1.1.1, which stop at 1.0.0) then refuses
// every ADD, before any IPAM runs.
func TestCNIVersionsNeedsEveryPluginAt11(t *testing.T) {
	needCRI(t)
	rel := *rels[len(rels)-1] // containerd 2.x, with Debian's plugins
	rel.upstream = "/usr/lib/cni"
	rel.cniBin = filepath.Join(t.TempDir(), "bin")
	if err := testkit.Install(fullBin, rel.cniBin); err != nil {
		t.Fatal(err)
	}
	if err := rel.linkUpstream("bridge", "loopback"); err != nil {
		t.Fatal(err)
	}
	c := extraContainerd(t, &rel, network{name: "cnpcriv", bridge: "cnpcri8"}, tenantsIPAM("ipam-da-pools", 245, ""))
	s := &stack{name: "versions", c: c, second: 245, storeFlags: storeFlags(c, "", "")}
	if err := os.MkdirAll(c.net.dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := c.runPod(context.Background(), "default", "v-1", nil)
	if !errHas(err, "incompatible CNI versions") {
		t.Fatalf("RunPodSandbox on %s with Debian's bridge and a conflist offering 1.1.0: %v, want the bridge's incompatible CNI versions", rel.label, err)
	}
	if ls := s.leases(t); len(ls) != 0 {
		t.Errorf("the refused pod left reservations: %+v", ls)
	}
}
