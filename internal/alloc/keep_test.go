package alloc_test

import (
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// TestRuntimeKeepSet: `gc --cri`'s keep set, reservation by reservation.
func TestRuntimeKeepSet(t *testing.T) {
	att := func(id, ifname, network string) alloc.Attachment {
		return alloc.Attachment{ContainerID: id, IfName: ifname, Network: network}
	}
	now := time.Now()
	// An hour old, and a minute: one past the minimum age, one not.
	old, young := now.Add(-time.Hour), now.Add(-time.Minute)
	k := alloc.NewRuntimeKeepSet(alloc.Runtime{
		Ready:    map[string]bool{"live-1": true},
		Networks: []string{"lan", ""},
		Reserved: map[alloc.Attachment]time.Time{
			att("live-1", "eth0", ""): old, att("gone-1", "eth0", ""): old, att("gone-2", "eth0", ""): young,
			att("gone-3", "", ""): old, att("nomad-1", "eth0", ""): old, att("gone-5", "eth0", ""): old,
			att("gone-6", "eth0", ""): {},
		},
		MinAge: 10 * time.Minute,
		Now:    now,
	})
	for _, tt := range []struct {
		name  string
		keep  alloc.KeepSet
		owner alloc.Attachment
		want  alloc.Verdict
	}{
		{"a ready sandbox's", k, att("live-1", "eth0", "lan"), alloc.KeptLive},
		{"a ready sandbox's other interface", k, att("live-1", "eth1", "lan"), alloc.KeptLive},
		{"a ready sandbox's legacy file", k, att("live-1", "", "lan"), alloc.KeptLive},
		{"no sandbox, old", k, att("gone-1", "eth0", "lan"), alloc.Collected},
		{"no sandbox, young (an ADD in flight)", k, att("gone-2", "eth0", "lan"), alloc.KeptYoung},
		{"no sandbox, age not known", k, att("gone-6", "eth0", "lan"), alloc.KeptYoung},
		{"reserved after the runtime was read", k, att("new-1", "eth0", "lan"), alloc.KeptYoung},
		{"a gone container's legacy file", k, att("gone-3", "", "lan"), alloc.Collected},
		{"another network's", k, att("nomad-1", "eth0", "nomad"), alloc.KeptOtherNetwork},
		{"no network recorded", k, att("gone-5", "eth0", ""), alloc.KeptOtherNetwork},
		{"in the served network's own directory", k.In("lan"), att("gone-5", "eth0", ""), alloc.Collected},
		{"in another network's own directory", k.In("podman"), att("gone-5", "eth0", ""), alloc.KeptOtherNetwork},
		{"the Docker driver's", k, att("_docker", "ep1", "lan"), alloc.KeptNotCNI},
		{"no owner", k, alloc.Attachment{}, alloc.KeptNotCNI},
	} {
		if got := tt.keep.Verdict(tt.owner); got != tt.want {
			t.Errorf("%s: Verdict(%+v) = %v, want %v", tt.name, tt.owner, got, tt.want)
		}
		if got := tt.keep.Keeps(tt.owner); got != (tt.want != alloc.Collected) {
			t.Errorf("%s: Keeps(%+v) = %v", tt.name, tt.owner, got)
		}
	}
}
