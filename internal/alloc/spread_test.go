package alloc_test

import (
	"fmt"
	"testing"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
)

// SpreadStart must land inside the set, and different attachments must start
// spread over it rather than on the same address.
func TestSpreadStart(t *testing.T) {
	sets := map[string][]addrspace.RangeConfig{
		"v4 /24":            {{Subnet: "10.214.0.0/24"}},
		"v4 narrow range":   {{Subnet: "10.214.0.0/24", RangeStart: "10.214.0.100", RangeEnd: "10.214.0.101"}},
		"v4 two ranges":     {{Subnet: "10.214.1.0/30"}, {Subnet: "10.214.2.0/24"}},
		"v6 /64 (2^64)":     {{Subnet: "fd00:214::/64"}},
		"v6 /48 (> 2^64)":   {{Subnet: "fd00:214::/48"}},
		"v6 single address": {{Subnet: "fd00:214::/120", RangeStart: "fd00:214::7", RangeEnd: "fd00:214::7"}},
	}
	for name, cfgs := range sets {
		t.Run(name, func(t *testing.T) {
			rs, err := addrspace.ParseRangeSet("r", cfgs)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for i := 0; i < 200; i++ {
				a := alloc.SpreadStart(rs, fmt.Sprintf("node-%d", i%2), alloc.Attachment{ContainerID: fmt.Sprintf("c%d", i)}, alloc.Scope{})
				if !rs.Contains(a) {
					t.Fatalf("start %s outside %s", a, rs)
				}
				seen[a.String()] = true
			}
			if size := rs[0].End.Compare(rs[0].Start); size != 0 && len(seen) < 2 {
				t.Fatalf("200 attachments all start at %v", seen)
			}
			if name == "v4 /24" && len(seen) < 100 {
				t.Fatalf("200 attachments start on only %d of 254 addresses", len(seen))
			}
		})
	}
}

// The start is a function of who asks alone, and stays the one etcd's
// store has always used: a node's pods keep starting where they did.
func TestSpreadStartStable(t *testing.T) {
	a := alloc.Attachment{ContainerID: "c0", IfName: "eth0", Network: "net1"}
	for _, tt := range []struct {
		subnets []string
		scope   alloc.Scope
		want    string
	}{
		{[]string{"10.214.0.0/24"}, alloc.Scope{Pool: "p"}, "10.214.0.39"},
		{[]string{"10.214.0.0/24"}, alloc.Scope{Network: "net1"}, "10.214.0.185"},
		{[]string{"10.214.1.0/30", "10.214.2.0/24"}, alloc.Scope{Pool: "p"}, "10.214.1.1"},
		{[]string{"10.214.1.0/30", "10.214.2.0/24"}, alloc.Scope{Network: "net1"}, "10.214.2.185"},
		{[]string{"fd00:214::/48"}, alloc.Scope{Pool: "p"}, "fd00:214::1fe6:b7e1:d37e:8aa1"},
		{[]string{"fd00:214::/48"}, alloc.Scope{Network: "net1"}, "fd00:214::fd86:d5bf:ea0a:e447"},
	} {
		var cfgs []addrspace.RangeConfig
		for _, s := range tt.subnets {
			cfgs = append(cfgs, addrspace.RangeConfig{Subnet: s})
		}
		rs, err := addrspace.ParseRangeSet("r", cfgs)
		if err != nil {
			t.Fatal(err)
		}
		if got := alloc.SpreadStart(rs, "node-1", a, tt.scope); got.String() != tt.want {
			t.Errorf("SpreadStart(%s, %+v) = %s, want %s", rs, tt.scope, got, tt.want)
		}
	}
}
