package hostlocal

import "strings"

// lineBreak separates container ID and interface name in a reservation
// file, exactly as host-local writes it.
const lineBreak = "\r\n"

// Attachment identifies who holds a reservation: the CNI container ID and
// interface name. IfName == "" is a legacy reservation written by a
// host-local older than 0.8, whose file holds only the container ID.
//
// Network is recorded, as a third line, only in directories shared by
// several networks (pools), so that one network's GC can leave another's
// reservations alone. It is not part of the identity: (container ID,
// ifname) names one attachment whatever network it is on, so comparisons
// go through Is and Key.
type Attachment struct {
	ContainerID, IfName string
	Network             string
}

// Key is the attachment's identity, without the recorded network.
func (a Attachment) Key() Attachment { return Attachment{ContainerID: a.ContainerID, IfName: a.IfName} }

// Is reports whether a and b are the same attachment.
func (a Attachment) Is(b Attachment) bool { return a.Key() == b.Key() }

// Holds reports whether a reservation recorded for owner may be released
// or checked on a's behalf: the same attachment and, where both name one,
// the same network. A runtime that wrongly reuses (container ID, ifname)
// on a second network sharing the pool gets 102 on ADD, and its rollback
// DEL must not free the first network's address.
func (a Attachment) Holds(owner Attachment) bool {
	return a.Is(owner) && (a.Network == "" || owner.Network == "" || a.Network == owner.Network)
}

// Legacy is the id-only attachment an old host-local would have recorded
// for a; host-local's DEL falls back to it when nothing matched exactly.
func (a Attachment) Legacy() Attachment { return Attachment{ContainerID: a.ContainerID} }

// reservationContent is the byte-exact body host-local writes, plus the
// network where one is recorded.
func reservationContent(a Attachment) string {
	if a.Network != "" {
		return a.ContainerID + lineBreak + a.IfName + lineBreak + a.Network
	}
	return a.ContainerID + lineBreak + a.IfName
}

// parseReservation reverses reservationContent the way host-local compares
// contents: surrounding white space is ignored and a body without a line
// break is a legacy id-only reservation.
func parseReservation(data []byte) Attachment {
	id, rest, _ := strings.Cut(strings.TrimSpace(string(data)), lineBreak)
	ifname, network, _ := strings.Cut(rest, lineBreak)
	return Attachment{ContainerID: id, IfName: ifname, Network: network}
}

// storable reports whether a can be written to a reservation file and read
// back as itself.
func (a Attachment) storable() bool {
	return a.ContainerID != "" && strings.TrimSpace(a.ContainerID) == a.ContainerID &&
		!strings.Contains(a.ContainerID, lineBreak) && strings.TrimSpace(a.IfName) == a.IfName &&
		!strings.ContainsAny(a.IfName, "\r\n") && !strings.ContainsAny(a.Network, " \t\r\n")
}

// Kind names who owns a reservation: "cni" for a CNI attachment
// (container ID and ifname), "legacy" for an id-only file written by a
// host-local older than 0.8, or, for a container-ID field starting with
// '_' (which no CNI container ID can: they start with [A-Za-z0-9]), the
// rest of that field, e.g. "docker" for "_docker".
func (a Attachment) Kind() string {
	if kind, ok := strings.CutPrefix(a.ContainerID, "_"); ok {
		if kind == "" {
			return "unknown"
		}
		return kind
	}
	if a.IfName == "" {
		return "legacy"
	}
	return "cni"
}
