package dapools

import (
	"encoding/json"
	"errors"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
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
func ValidAttachments(conf *netconf.Envelope) ([]hostlocal.Attachment, error) {
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
	out := make([]hostlocal.Attachment, len(refs))
	for i, r := range refs {
		out[i] = hostlocal.Attachment{ContainerID: r.ContainerID, IfName: r.IfName}
	}
	return out, nil
}

// cmdGC releases every reservation of this network whose attachment the
// runtime no longer lists (hostlocal.KeepSet has the rules). It keeps
// going after errors.
func cmdGC(req *plugin.Request) error {
	c, err := parseConfig(req.Conf, req.CNIArgs, false)
	if err != nil {
		return err
	}
	live, err := ValidAttachments(req.Conf)
	if err != nil {
		return err
	}
	valid := hostlocal.NewKeepSet(c.network, live).Keeps
	st, err := openStores(c.dirs(), c.lockTimeout)
	if err != nil {
		return err
	}
	var errs []error
	for _, dir := range st.order {
		released, err := st.allocator(dir).GC(valid)
		errs = append(errs, err)
		if len(released) > 0 {
			req.Log.Info("gc released", logging.String("dir", dir), logging.Any("addresses", released))
		}
	}
	errs = append(errs, st.close())
	return errors.Join(errs...)
}
