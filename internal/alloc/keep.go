package alloc

import (
	"encoding/json"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// validAttachments is the GC input (spec 1.1, "cni.dev/valid-attachments").
type validAttachments struct {
	Valid json.RawMessage `json:"cni.dev/valid-attachments"`
}

type attachmentRef struct {
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifname"`
}

// ValidAttachments decodes GC's cni.dev/valid-attachments. Absent is an
// error (collecting everything on a typo is not an option); null, as
// libcni sends it when nothing runs, is an empty list.
func ValidAttachments(conf *netconf.Envelope) ([]Attachment, error) {
	var in validAttachments
	if err := netconf.Decode(conf.Raw, "", &in); err != nil {
		return nil, err
	}
	if len(in.Valid) == 0 {
		return nil, cnierr.MissingConfig("cni.dev/valid-attachments")
	}
	var refs []attachmentRef
	if err := netconf.Decode(in.Valid, "cni.dev/valid-attachments", &refs); err != nil {
		return nil, err
	}
	out := make([]Attachment, len(refs))
	for i, r := range refs {
		out[i] = Attachment{ContainerID: r.ContainerID, IfName: r.IfName}
	}
	return out, nil
}

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
