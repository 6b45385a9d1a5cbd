package alloc

import (
	"fmt"
	"net/netip"
	"time"
)

// An operator's release (`cniplugins release`), decided once for every
// store: the store reads a ReleaseView, PlanRelease decides, and the
// store applies the plan its own way (the disk under its lock, in the
// write order of the transitions in holds.go; etcd in a transaction
// guarded by the revisions it read). A dry run plans the same way and
// applies nothing.

// ReleaseRequest is what the operator asked: an address (Addr) or a
// sticky key's holds (Key, instead of Addr). Container and IfName, when
// set, must name the address's owner (or its migration target); with
// Key, IfName narrows the holds to one interface. Node, when set, must
// be the node of the attachment an address's release releases (a store
// whose reservations name nodes: etcd). Where names the scope in
// messages.
type ReleaseRequest struct {
	Addr              netip.Addr
	Key               string
	Container, IfName string
	Node              string
	Where             string
}

// ReleaseView is what the store read for the request. For an address:
// whether it is reserved, by whom, and the record of a key that has it
// (judged, not stale: a hold, or Owner's keyed reservation), nil when no
// key has it. NoOwner marks a reservation whose bytes name no owner;
// OwnerNode is the owner's node, in a store whose reservations name one.
// For a key: Holds, the records read (at least the key's).
type ReleaseView struct {
	Reserved  bool
	Owner     Attachment
	OwnerNode string
	NoOwner   bool
	Record    *HoldRecord
	Holds     []HoldRecord
}

// ReleasePlan is PlanRelease's decision: for an address, the attachment
// the release releases (Owner, on Node: the owner, or the migration
// target whose share ends) and its DEL (Del), over the record of the key
// that has the address (Record, nil when none); for a key, its holds to
// free (Holds).
type ReleasePlan struct {
	Owner  Attachment
	Node   string
	Del    DelPlan
	Record *HoldRecord
	Holds  []HoldRecord
}

// PlanRelease decides an operator's release r over what the store read,
// at now. An address: refused when it is not reserved, held for a key
// (release the key), reserved by bytes that name no owner, or owned by
// another container or interface than r names; else it is the DEL
// (PlanDel) of its migration target when r names that (its share ends),
// else of its owner. A key: its holds are freed, refused while a
// container has one of its addresses (that container's DEL would hold it
// again) and when it holds nothing. An address's release that r.Node
// names is refused when the attachment it releases is another node's.
func PlanRelease(v ReleaseView, r ReleaseRequest, now time.Time) (ReleasePlan, error) {
	if r.Key != "" {
		holds, err := keyHolds(v.Holds, r.Key, r.IfName, r.Where)
		return ReleasePlan{Holds: holds}, err
	}
	e, a, node := v.Record, v.Owner, v.OwnerNode
	switch {
	case !r.Addr.IsValid():
		return ReleasePlan{}, fmt.Errorf("no address given")
	case !v.Reserved:
		return ReleasePlan{}, fmt.Errorf("%s is not reserved in %s", r.Addr, r.Where)
	case e != nil && e.Held():
		// A hold ends early by releasing its key, which says whose
		// address it is.
		return ReleasePlan{}, fmt.Errorf("%s in %s is held for sticky key %q: release the hold (--sticky-key)", r.Addr, r.Where, e.Key)
	case v.NoOwner:
		return ReleasePlan{}, fmt.Errorf("%s in %s holds no owner record; refusing", r.Addr, r.Where)
	case e != nil && e.Second != "" && r.Container == e.Second && (r.IfName == "" || r.IfName == e.IfName):
		a.ContainerID, node = e.Second, e.SecondNode
	case r.Container != "" && a.ContainerID != r.Container:
		return ReleasePlan{}, fmt.Errorf("%s in %s is held by container %q, not %q", r.Addr, r.Where, a.ContainerID, r.Container)
	case r.IfName != "" && a.IfName != r.IfName:
		return ReleasePlan{}, fmt.Errorf("%s in %s is held by interface %q of container %q, not %q", r.Addr, r.Where, a.IfName, a.ContainerID, r.IfName)
	}
	if r.Node != "" && node != r.Node {
		return ReleasePlan{}, fmt.Errorf("%s in %s is held by node %q, not %q", r.Addr, r.Where, node, r.Node)
	}
	// No network: the operator releases the address whichever network's.
	del := PlanDel(Attachment{ContainerID: a.ContainerID, IfName: a.IfName}, node, DelView{Record: e}, now)
	return ReleasePlan{Owner: a, Node: node, Del: del, Record: e}, nil
}

// keyHolds are the holds of key (on ifname, every interface when "")
// among records; see PlanRelease.
func keyHolds(records []HoldRecord, key, ifname, where string) ([]HoldRecord, error) {
	var found []HoldRecord
	for _, e := range records {
		if e.Stale != "" || e.Key != key || (ifname != "" && e.IfName != ifname) {
			continue
		}
		if !e.Held() {
			return nil, fmt.Errorf("sticky key %q in %s: %s is reserved by container %s; delete it first, or release the address (it becomes a hold), then the key", key, where, e.Address, e.owner())
		}
		found = append(found, e)
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("sticky key %q holds no address in %s", key, where)
	}
	return found, nil
}

// ReadRelease reads r's view from a HoldReader (a HoldStore under its
// lock, or an operator's unlocked view for a dry run).
func ReadRelease(hr HoldReader, r ReleaseRequest) (ReleaseView, error) {
	var v ReleaseView
	var err error
	if r.Key != "" || !r.Addr.IsValid() {
		v.Holds, err = ListHolds(hr)
		return v, err
	}
	v.Owner, v.Reserved, err = hr.Owner(r.Addr)
	if err != nil || !v.Reserved {
		return v, err
	}
	if id, ok := HoldIDOf(v.Owner); ok {
		e, err := LookupHold(hr, id)
		if e != nil && e.Stale == "" {
			v.Record = e
		}
		return v, err
	}
	records, err := KeyedOf(hr, v.Owner)
	for _, e := range records {
		if e.Addr == r.Addr {
			v.Record = &e
		}
	}
	return v, err
}

// OperatorRelease is an operator's release in a HoldStore, under its
// lock: read, plan, and apply in the write order of each transition
// (holds.go).
func OperatorRelease(hs HoldStore, r ReleaseRequest, now time.Time) (ReleaseView, ReleasePlan, error) {
	v, err := ReadRelease(hs, r)
	if err != nil {
		return v, ReleasePlan{}, err
	}
	p, err := PlanRelease(v, r, now)
	switch {
	case err != nil:
	case p.Holds != nil:
		for _, e := range p.Holds {
			if _, err = EndHold(hs, e); err != nil {
				break
			}
		}
	case p.Del.Step == DelFree:
		_, err = Free(hs, v.Owner, []netip.Addr{r.Addr})
	default:
		err = applyDel(hs, *p.Record, p.Del)
	}
	return v, p, err
}
