package alloc

import (
	"net/netip"
	"testing"
	"time"
)

func TestPlanRelease(t *testing.T) {
	ip := netip.MustParseAddr("10.1.0.5")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c1 := Attachment{ContainerID: "c1", IfName: "eth0"}
	keyed := &HoldRecord{Hold: Hold{Key: "vm", IfName: "eth0", Address: "10.1.0.5", Owner: "c1"}, Addr: ip}
	shared := &HoldRecord{Hold: Hold{Key: "vm", IfName: "eth0", Address: "10.1.0.5", Owner: "c1", Second: "c2"}, Addr: ip}
	held := &HoldRecord{Hold: Hold{Key: "vm", IfName: "eth0", Address: "10.1.0.5"}, Addr: ip}
	heldNet1 := HoldRecord{Hold: Hold{Key: "vm", IfName: "net1", Address: "10.1.0.6"}, Addr: netip.MustParseAddr("10.1.0.6")}
	stale := HoldRecord{Hold: Hold{Key: "vm", IfName: "eth0", Address: "10.1.0.7"}, Stale: "its address is not reserved"}
	addr := func(c, ifn string) ReleaseRequest {
		return ReleaseRequest{Addr: ip, Container: c, IfName: ifn, Where: "net1"}
	}
	sharedNodes := &HoldRecord{Hold: Hold{Key: "vm", IfName: "eth0", Address: "10.1.0.5", Owner: "c1", Node: "n1", Second: "c2", SecondNode: "n2"}, Addr: ip}
	onNode := func(c, node string) ReleaseRequest { r := addr(c, ""); r.Node = node; return r }
	key := func(k, ifn string) ReleaseRequest { return ReleaseRequest{Key: k, IfName: ifn, Where: "net1"} }
	for _, tc := range []struct {
		name    string
		v       ReleaseView
		r       ReleaseRequest
		want    DelStep
		record  *HoldRecord
		holds   int
		wantErr string
	}{
		{"no address", ReleaseView{}, ReleaseRequest{Where: "net1"}, 0, nil, 0, "no address given"},
		{"not reserved", ReleaseView{}, addr("", ""), 0, nil, 0, "10.1.0.5 is not reserved in net1"},
		{"held for a key", ReleaseView{Reserved: true, Owner: HoldOwner("x"), Record: held}, addr("", ""), 0, nil, 0,
			`10.1.0.5 in net1 is held for sticky key "vm": release the hold (--sticky-key)`},
		{"held for a key, etcd's bytes", ReleaseView{Reserved: true, NoOwner: true, Record: held}, addr("c1", ""), 0, nil, 0,
			`10.1.0.5 in net1 is held for sticky key "vm": release the hold (--sticky-key)`},
		{"no owner record", ReleaseView{Reserved: true, NoOwner: true}, addr("", ""), 0, nil, 0, "10.1.0.5 in net1 holds no owner record; refusing"},
		{"another container", ReleaseView{Reserved: true, Owner: c1}, addr("c9", ""), 0, nil, 0, `10.1.0.5 in net1 is held by container "c1", not "c9"`},
		{"another interface", ReleaseView{Reserved: true, Owner: c1}, addr("c1", "net1"), 0, nil, 0,
			`10.1.0.5 in net1 is held by interface "eth0" of container "c1", not "net1"`},
		{"free", ReleaseView{Reserved: true, Owner: c1}, addr("", ""), DelFree, nil, 0, ""},
		{"free, the owner named", ReleaseView{Reserved: true, Owner: c1}, addr("c1", "eth0"), DelFree, nil, 0, ""},
		{"a held address no record names", ReleaseView{Reserved: true, Owner: HoldOwner("x")}, addr("", ""), DelFree, nil, 0, ""},
		{"keyed: becomes a hold", ReleaseView{Reserved: true, Owner: c1, Record: keyed}, addr("c1", ""), DelToHold, keyed, 0, ""},
		{"shared, no container: handed over", ReleaseView{Reserved: true, Owner: c1, Record: shared}, addr("", ""), DelHandOver, shared, 0, ""},
		{"shared, the owner: handed over", ReleaseView{Reserved: true, Owner: c1, Record: shared}, addr("c1", "eth0"), DelHandOver, shared, 0, ""},
		{"shared, the target: its share ends", ReleaseView{Reserved: true, Owner: c1, Record: shared}, addr("c2", ""), DelDropSecond, shared, 0, ""},
		{"shared, the target and its interface", ReleaseView{Reserved: true, Owner: c1, Record: shared}, addr("c2", "eth0"), DelDropSecond, shared, 0, ""},
		{"shared, the target on another interface", ReleaseView{Reserved: true, Owner: c1, Record: shared}, addr("c2", "net1"), 0, nil, 0,
			`10.1.0.5 in net1 is held by container "c1", not "c2"`},
		{"shared, a third container", ReleaseView{Reserved: true, Owner: c1, Record: shared}, addr("c3", ""), 0, nil, 0,
			`10.1.0.5 in net1 is held by container "c1", not "c3"`},
		{"the owner's node", ReleaseView{Reserved: true, Owner: c1, OwnerNode: "n1"}, onNode("", "n1"), DelFree, nil, 0, ""},
		{"another node", ReleaseView{Reserved: true, Owner: c1, OwnerNode: "n1"}, onNode("c1", "n2"), 0, nil, 0, `10.1.0.5 in net1 is held by node "n1", not "n2"`},
		{"shared, the target's node", ReleaseView{Reserved: true, Owner: c1, OwnerNode: "n1", Record: sharedNodes}, onNode("c2", "n2"), DelDropSecond, sharedNodes, 0, ""},
		{"shared, the target on the owner's node", ReleaseView{Reserved: true, Owner: c1, OwnerNode: "n1", Record: sharedNodes}, onNode("c2", "n1"), 0, nil, 0,
			`10.1.0.5 in net1 is held by node "n2", not "n1"`},
		{"shared, the owner on its node", ReleaseView{Reserved: true, Owner: c1, OwnerNode: "n1", Record: sharedNodes}, onNode("c1", "n1"), DelHandOver, sharedNodes, 0, ""},
		{"key: every hold", ReleaseView{Holds: []HoldRecord{*held, heldNet1, stale}}, key("vm", ""), DelSkip, nil, 2, ""},
		{"key: one interface", ReleaseView{Holds: []HoldRecord{*held, heldNet1}}, key("vm", "net1"), DelSkip, nil, 1, ""},
		{"key: a container has it", ReleaseView{Holds: []HoldRecord{heldNet1, *keyed}}, key("vm", ""), 0, nil, 0,
			`sticky key "vm" in net1: 10.1.0.5 is reserved by container c1; delete it first, or release the address (it becomes a hold), then the key`},
		{"key: holds nothing", ReleaseView{Holds: []HoldRecord{stale}}, key("vm", ""), 0, nil, 0, `sticky key "vm" holds no address in net1`},
		{"key: another key's", ReleaseView{Holds: []HoldRecord{*held}}, key("other", ""), 0, nil, 0, `sticky key "other" holds no address in net1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanRelease(tc.v, tc.r, now)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Del.Step != tc.want || p.Record != tc.record || len(p.Holds) != tc.holds {
				t.Fatalf("plan %+v, want step %d record %v, %d holds", p, tc.want, tc.record, tc.holds)
			}
			// The owner's release is its DEL's: the key's hold from now, or
			// the target's alone.
			if tc.want == DelToHold && p.Del.Hold != tc.record.HeldFrom(now) || tc.want == DelHandOver && p.Del.Hold != tc.record.HandedOver() {
				t.Fatalf("plan's record %+v", p.Del.Hold)
			}
		})
	}
}
