package ipamconf

import (
	"encoding/json"

	"github.com/cniplugins/cniplugins/internal/alloc"
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
func ValidAttachments(conf *netconf.Envelope) ([]alloc.Attachment, error) {
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
	out := make([]alloc.Attachment, len(refs))
	for i, r := range refs {
		out[i] = alloc.Attachment{ContainerID: r.ContainerID, IfName: r.IfName}
	}
	return out, nil
}
