package hostlocal

// KeepSet is GC's rule for which reservations stay, shared by the CNI GC
// command and the operators' `cniplugins gc`: a reservation stays when
// its attachment is live, when it is a legacy id-only file of a container
// that has any live attachment, when it records another network than the
// one being collected (a shared pool), or when its owner is not a CNI
// attachment at all (a '_'-kind owner such as a Docker endpoint: CNI's
// list of valid attachments can never name it). A live attachment given
// without an ifname keeps every reservation of its container: the safe
// reading of an incomplete entry.
type KeepSet struct {
	network string
	live    map[Attachment]bool
	liveIDs map[string]bool
	wholeID map[string]bool
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

// Keeps reports whether GC must leave a reservation of owner alone.
func (k KeepSet) Keeps(owner Attachment) bool {
	switch kind := owner.Kind(); {
	case kind != "cni" && kind != "legacy":
		return true
	case k.network != "" && owner.Network != "" && owner.Network != k.network:
		return true
	case k.wholeID[owner.ContainerID]:
		return true
	case kind == "legacy":
		return k.liveIDs[owner.ContainerID]
	}
	return k.live[owner.Key()]
}
