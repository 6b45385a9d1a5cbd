package dapools

import (
	"errors"

	"go.uber.org/zap"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// validAttachments is the GC input (spec 1.1, "cni.dev/valid-attachments").
type validAttachments struct {
	Valid *[]struct {
		ContainerID string `json:"containerID"`
		IfName      string `json:"ifname"`
	} `json:"cni.dev/valid-attachments"`
}

// cmdGC releases every reservation of this network whose attachment the
// runtime no longer lists. Legacy id-only reservations are kept when any
// listed attachment has their container ID. It keeps going after errors.
func cmdGC(req *plugin.Request) error {
	c, err := parseConfig(req.Conf, req.CNIArgs, false)
	if err != nil {
		return err
	}
	var in validAttachments
	if err := netconf.Decode(req.Conf.Raw, "", &in); err != nil {
		return err
	}
	if in.Valid == nil {
		return cnierr.MissingConfig("cni.dev/valid-attachments")
	}
	live := map[hostlocal.Attachment]bool{}
	liveIDs := map[string]bool{}
	for _, a := range *in.Valid {
		live[hostlocal.Attachment{ContainerID: a.ContainerID, IfName: a.IfName}] = true
		liveIDs[a.ContainerID] = true
	}
	valid := func(a hostlocal.Attachment) bool {
		switch {
		case a.Network != "" && a.Network != c.network:
			return true // another network's reservation in a shared pool
		case a.IfName == "":
			return liveIDs[a.ContainerID]
		}
		return live[a.Key()]
	}
	st, err := openStores(c.dirs(), c.lockTimeout)
	if err != nil {
		return err
	}
	var errs []error
	for _, dir := range st.order {
		released, err := st.allocator(dir).GC(valid)
		errs = append(errs, err)
		if len(released) > 0 {
			req.Log.Info("gc released", zap.String("dir", dir), zap.Any("addresses", released))
		}
	}
	errs = append(errs, st.close())
	return errors.Join(errs...)
}
