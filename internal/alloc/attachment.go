package alloc

import (
	"strings"

	"github.com/containernetworking/cni/pkg/utils"
)

// Attachment identifies who owns a reservation: the CNI container ID and
// interface name. IfName == "" is a legacy reservation written by a
// host-local older than 0.8, which recorded only the container ID.
//
// Network is recorded only where several networks share a scope (pools),
// so that one network's GC can leave another's reservations alone. It is
// not part of the identity: (container ID, ifname) names one attachment
// whatever network it is on, so comparisons go through Is and Key.
type Attachment struct {
	ContainerID, IfName string
	Network             string
}

// Key is the attachment's identity, without the recorded network.
func (a Attachment) Key() Attachment { return Attachment{ContainerID: a.ContainerID, IfName: a.IfName} }

// Is reports whether a and b are the same attachment.
func (a Attachment) Is(b Attachment) bool { return a.Key() == b.Key() }

// Owns reports whether a reservation recorded for owner may be released
// or checked on a's behalf: the same attachment and, where both name one,
// the same network. A runtime that wrongly reuses (container ID, ifname)
// on a second network sharing the pool gets 102 on ADD, and its rollback
// DEL must not free the first network's address.
func (a Attachment) Owns(owner Attachment) bool {
	return a.Is(owner) && (a.Network == "" || owner.Network == "" || a.Network == owner.Network)
}

// Checks is CHECK's verdict on one address, asked on node: whether a
// reservation recorded for owner on ownerNode, and shared with second on
// secondNode as a migration target (the zero Attachment when it is shared
// with nobody), is a's. Its owner's, the id-only legacy reservation of its
// container (host-local's DEL falls back to it, so CHECK accepts it too),
// or its share; each only on a's node, since a container ID names one
// container only on its node (the same ID and interface on another node
// are another attachment). Every store asks here; one with a single node
// passes "" for every node.
func (a Attachment) Checks(node string, owner Attachment, ownerNode string, second Attachment, secondNode string) bool {
	return (ownerNode == node && (a.Owns(owner) || owner.Is(a.Legacy()))) ||
		(secondNode == node && second.ContainerID != "" && a.Owns(second))
}

// Legacy is the id-only attachment an old host-local would have recorded
// for a; host-local's DEL falls back to it when nothing matched exactly.
func (a Attachment) Legacy() Attachment { return Attachment{ContainerID: a.ContainerID} }

// Recordable reports whether a can be written as host-local's reservation
// ("<containerID>\r\n<ifname>", plus "\r\n<network>") and read back as
// itself. Every store keeps to it, so that an attachment one store takes
// is one any other could record.
func (a Attachment) Recordable() bool {
	return a.ContainerID != "" && strings.TrimSpace(a.ContainerID) == a.ContainerID &&
		!strings.Contains(a.ContainerID, "\r\n") && strings.TrimSpace(a.IfName) == a.IfName &&
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

// Problem says why a is not an owner any plugin writes ("" if it is): a
// CNI container ID, interface name and network name as the CNI library
// validates them; for another owner kind ('_' + kind), a kind of the same
// syntax and a one-field second line.
func (a Attachment) Problem() string {
	switch {
	case a.ContainerID == "":
		return "is empty"
	case !a.Recordable():
		return "has more than three lines or stray white space"
	}
	if kind := a.Kind(); kind != "cni" && kind != "legacy" {
		if !isName(kind) {
			return "names an invalid owner kind"
		}
		return ""
	}
	if !isName(a.ContainerID) {
		return "does not hold a valid container ID"
	}
	if a.IfName != "" && utils.ValidateInterfaceName(a.IfName) != nil {
		return "does not hold a valid interface name"
	}
	if a.Network != "" && !isName(a.Network) {
		return "does not hold a valid network name"
	}
	return ""
}

// isName is the CNI library's rule for container IDs and network names,
// [a-zA-Z0-9][a-zA-Z0-9_.-]*, without its regexp: checked for each of
// 60,000 files, the regexp was a tenth of a listing's time.
func isName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || (c != '_' && c != '.' && c != '-')) {
			return false
		}
	}
	return s != ""
}
