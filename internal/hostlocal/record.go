package hostlocal

import (
	"strings"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// lineBreak separates container ID and interface name in a reservation
// file, exactly as host-local writes it.
const lineBreak = "\r\n"

// reservationContent is the byte-exact body host-local writes, plus the
// network where one is recorded: a third line, written only in directories
// shared by several networks (pools). The caller has checked that a is
// alloc.Attachment.Recordable.
func reservationContent(a alloc.Attachment) string {
	if a.Network != "" {
		return a.ContainerID + lineBreak + a.IfName + lineBreak + a.Network
	}
	return a.ContainerID + lineBreak + a.IfName
}

// parseReservation reverses reservationContent the way host-local compares
// contents: surrounding white space is ignored and a body without a line
// break is a legacy id-only reservation.
func parseReservation(data []byte) alloc.Attachment {
	id, rest, _ := strings.Cut(strings.TrimSpace(string(data)), lineBreak)
	ifname, network, _ := strings.Cut(rest, lineBreak)
	return alloc.Attachment{ContainerID: id, IfName: ifname, Network: network}
}
