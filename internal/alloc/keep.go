package alloc

import (
	"cmp"
	"time"
)

// KeepSet is GC's rule for which reservations stay, shared by the CNI GC
// command, the operators' `cniplugins gc` and `gc --cri`: a reservation
// stays when its attachment is live, when it is a legacy id-only file of
// a container that has any live attachment, when it records another
// network than the one being collected (a shared pool), or when its owner
// is not a CNI attachment at all (a '_'-kind owner such as a Docker
// endpoint: CNI's list of valid attachments can never name it). A live
// attachment given without an ifname keeps every reservation of its
// container: the safe reading of an incomplete entry. A runtime's keep
// set (NewRuntimeKeepSet) adds its own scope and the minimum age.
type KeepSet struct {
	network string
	live    map[Attachment]bool
	liveIDs map[string]bool
	wholeID map[string]bool
	// runtime is set in a runtime's keep set only.
	runtime *runtimeScope
}

// runtimeScope is what a runtime's keep set adds to the CNI GC's rule.
type runtimeScope struct {
	served   map[string]bool
	reserved map[Attachment]time.Time
	youngAt  time.Time
}

// NewKeepSet keeps the live attachments on network ("" collects every
// network's reservations, for a pool collected as a whole).
func NewKeepSet(network string, live []Attachment) KeepSet {
	k := KeepSet{network: network, live: map[Attachment]bool{}, liveIDs: map[string]bool{}, wholeID: map[string]bool{}}
	for _, a := range live {
		k.live[a.Key()] = true
		k.liveIDs[a.ContainerID] = true
		if a.IfName == "" {
			k.wholeID[a.ContainerID] = true
		}
	}
	return k
}

// Runtime is what a container runtime says of its attachments, which
// `gc --cri` collects by: its ready sandboxes, the networks it attaches
// them to, and when each attachment's reservations were made.
type Runtime struct {
	// Ready holds the container IDs of the sandboxes it lists as ready.
	Ready map[string]bool
	// Networks are the networks it serves. Its list of sandboxes says
	// nothing about another runtime's containers (podman, Nomad, a
	// second CRI runtime sharing the data dir), whose IDs it never
	// lists, so their reservations are never its to collect.
	Networks []string
	// Reserved is when each attachment's newest reservation was made, as
	// read before the GC (its Key; absent: not known).
	Reserved map[Attachment]time.Time
	// MinAge protects an ADD in flight, whose sandbox the runtime lists
	// as ready only once the ADD has returned.
	MinAge time.Duration
	Now    time.Time
}

// NewRuntimeKeepSet keeps what the CNI GC's rule keeps with every ready
// sandbox's container live as a whole, and also: every reservation of a
// network r does not serve, or that records none (nothing says which
// runtime made it), and every attachment not known to be older than
// r.MinAge (one reserved after r was read included). Use In for a
// network's own directory.
func NewRuntimeKeepSet(r Runtime) KeepSet {
	var live []Attachment
	for id := range r.Ready {
		live = append(live, Attachment{ContainerID: id})
	}
	k := NewKeepSet("", live)
	k.runtime = &runtimeScope{served: map[string]bool{}, reserved: r.Reserved, youngAt: r.Now.Add(-r.MinAge)}
	for _, n := range r.Networks {
		if n != "" {
			k.runtime.served[n] = true
		}
	}
	return k
}

// In is k for a network's own state directory, whose reservations
// record no network: the CNI GC's keep set collects that network, and a
// runtime's reads them as that network's.
func (k KeepSet) In(network string) KeepSet {
	k.network = network
	return k
}

// Verdict is why a GC keeps a reservation, or that it does not.
type Verdict int

const (
	// Collected: nothing keeps it.
	Collected Verdict = iota
	// KeptNotCNI: its owner is no CNI attachment.
	KeptNotCNI
	// KeptOtherNetwork: it is another network's, or, for a runtime's
	// keep set, one whose network it cannot tell.
	KeptOtherNetwork
	// KeptLive: its attachment, or its container, is live.
	KeptLive
	// KeptYoung: a runtime's keep set does not know it to be older than
	// the minimum age.
	KeptYoung
)

// Verdict is k's decision on a reservation of owner.
func (k KeepSet) Verdict(owner Attachment) Verdict {
	switch kind := owner.Kind(); {
	case kind != "cni" && kind != "legacy", k.runtime != nil && owner.ContainerID == "":
		// A file naming no container is no runtime's sandbox either:
		// gc --cri leaves it to fsck. The CNI GC frees it, as
		// host-local's does: no valid attachment can name it.
		return KeptNotCNI
	case k.otherNetwork(owner):
		return KeptOtherNetwork
	case k.wholeID[owner.ContainerID],
		kind == "legacy" && k.liveIDs[owner.ContainerID],
		kind == "cni" && k.live[owner.Key()]:
		return KeptLive
	case k.runtime != nil && k.runtime.young(owner):
		return KeptYoung
	}
	return Collected
}

func (k KeepSet) otherNetwork(owner Attachment) bool {
	if k.runtime != nil {
		return !k.runtime.served[cmp.Or(owner.Network, k.network)]
	}
	return k.network != "" && owner.Network != "" && owner.Network != k.network
}

func (r *runtimeScope) young(owner Attachment) bool {
	since, ok := r.reserved[owner.Key()]
	return !ok || since.IsZero() || since.After(r.youngAt)
}

// Keeps reports whether GC must leave a reservation of owner alone.
func (k KeepSet) Keeps(owner Attachment) bool { return k.Verdict(owner) != Collected }
