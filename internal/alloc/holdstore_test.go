package alloc

import (
	"strings"
	"testing"
)

var holdID = StickyID("ns/web-0", "eth0")

func cidOn(id, ifname string) Attachment { return Attachment{ContainerID: id, IfName: ifname} }

// The reconciliation rule, one row per (record, file) pair a completed
// operation or a kill -9 between two writes can leave.
func TestJudge(t *testing.T) {
	reserved := Hold{Key: "k", IfName: "eth0", Address: "10.0.0.2", Network: "n", Owner: "c1"}
	held := Hold{Key: "k", IfName: "eth0", Address: "10.0.0.2", Network: "n", LastOwner: "c1"}
	claimedMid := held
	claimedMid.Owner = "c2"
	for _, tt := range []struct {
		name      string
		h         Hold
		owner     Attachment
		exists    bool
		wantOwner string
		stale     bool
	}{
		{"reserved", reserved, cidOn("c1", "eth0"), true, "c1", false},
		{"held", held, HoldOwner(holdID), true, "", false},
		{"claim: record written, file not yet", claimedMid, HoldOwner(holdID), true, "", false},
		{"claim done", claimedMid, cidOn("c2", "eth0"), true, "c2", false},
		{"DEL: record written, file not yet", held, cidOn("c1", "eth0"), true, "c1", false},
		{"expiry: file removed, record not yet", held, Attachment{}, false, "", true},
		{"new: record removed on rollback", reserved, Attachment{}, false, "", true},
		{"someone else's file", reserved, cidOn("c9", "eth0"), true, "", true},
		{"held record, other container's file", held, cidOn("c9", "eth0"), true, "", true},
		{"another hold's file", held, HoldOwner(strings.Repeat("0", 32)), true, "", true},
		{"other interface", reserved, cidOn("c1", "net1"), true, "", true},
		{"other network in a pool", reserved, Attachment{ContainerID: "c1", IfName: "eth0", Network: "m"}, true, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, stale := judgeHold(holdID, tt.h, tt.owner, tt.exists)
			if (stale != "") != tt.stale || (!tt.stale && got.Owner != tt.wantOwner) {
				t.Errorf("judge = %+v, %q; want owner %q stale %v", got, stale, tt.wantOwner, tt.stale)
			}
		})
	}
}

// A versioned store's hold pins its address only while the address's
// claim carries the hold's own version, and only when it decodes.
func TestVersionedHold(t *testing.T) {
	h := Hold{Key: "k", IfName: "eth0", Address: "10.0.0.2", Owner: "c1"}
	if e := VersionedHold(h, true, 7, 7); e == nil || e.Hold != h || e.Stale != "" {
		t.Errorf("same version: %+v", e)
	}
	for _, tt := range []struct {
		ok             bool
		version, claim int64
	}{{true, 7, 8}, {true, 7, 0}, {false, 7, 7}, {false, 0, 0}} {
		if e := VersionedHold(h, tt.ok, tt.version, tt.claim); e != nil {
			t.Errorf("VersionedHold(ok %v, %d, claim %d) = %+v, want nil", tt.ok, tt.version, tt.claim, e)
		}
	}
}
