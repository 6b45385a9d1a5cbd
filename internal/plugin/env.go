package plugin

import (
	"strings"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/utils"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// MaxContainerIDLen bounds CNI_CONTAINERID: it becomes part of file names
// (see internal/hostlocal), which must fit in 255 bytes with the ifname.
const MaxContainerIDLen = 200

// Commands a personality can be asked for.
const (
	CmdAdd     = "ADD"
	CmdDel     = "DEL"
	CmdCheck   = "CHECK"
	CmdGC      = "GC"
	CmdStatus  = "STATUS"
	CmdVersion = "VERSION"
)

// envVar is one row of the environment table: which commands require the
// variable and how a present value is validated.
type envVar struct {
	name     string
	required map[string]bool
	validate func(string) *types.Error
	set      func(*skel.CmdArgs, string)
}

// envTable mirrors skel's: GC and STATUS need no attachment, so libcni can
// send them without CNI_CONTAINERID and CNI_IFNAME.
func envTable() []envVar {
	allButVersion := map[string]bool{CmdAdd: true, CmdDel: true, CmdCheck: true, CmdGC: true, CmdStatus: true}
	attachment := map[string]bool{CmdAdd: true, CmdDel: true, CmdCheck: true}
	addCheck := map[string]bool{CmdAdd: true, CmdCheck: true}
	return []envVar{
		{"CNI_CONTAINERID", attachment, validateContainerID, func(a *skel.CmdArgs, v string) { a.ContainerID = v }},
		{"CNI_NETNS", addCheck, nil, func(a *skel.CmdArgs, v string) { a.Netns = v }},
		{"CNI_IFNAME", attachment, validateIfName, func(a *skel.CmdArgs, v string) { a.IfName = v }},
		{"CNI_ARGS", nil, nil, func(a *skel.CmdArgs, v string) { a.Args = v }},
		{"CNI_PATH", allButVersion, nil, func(a *skel.CmdArgs, v string) { a.Path = v }},
		{"CNI_NETNS_OVERRIDE", nil, nil, func(a *skel.CmdArgs, v string) { a.NetnsOverride = v }},
	}
}

// readEnv validates the CNI_* variables for cmd and fills CmdArgs.
func readEnv(cmd string, getenv func(string) string) (skel.CmdArgs, error) {
	var args skel.CmdArgs
	var missing []string
	for _, v := range envTable() {
		val := getenv(v.name)
		if val == "" {
			if v.required[cmd] {
				missing = append(missing, v.name)
			}
			continue
		}
		// Validate whenever present: a hostile value must not reach disk
		// even on a command that does not require it.
		if v.validate != nil {
			if err := v.validate(val); err != nil {
				return args, err
			}
		}
		v.set(&args, val)
	}
	if len(missing) > 0 {
		return args, cnierr.New(cnierr.CodeInvalidEnv, "required environment variables missing", "%s", strings.Join(missing, ","))
	}
	return args, nil
}

func validateContainerID(id string) *types.Error {
	if len(id) > MaxContainerIDLen {
		return cnierr.InvalidEnv("CNI_CONTAINERID", id[:32]+"...", "longer than 200 characters")
	}
	if err := utils.ValidateContainerID(id); err != nil {
		return cnierr.InvalidEnv("CNI_CONTAINERID", id, "must match [a-zA-Z0-9][a-zA-Z0-9_.-]*")
	}
	return nil
}

func validateIfName(name string) *types.Error {
	if strings.ContainsRune(name, 0) {
		return cnierr.InvalidEnv("CNI_IFNAME", name, "contains NUL")
	}
	if err := utils.ValidateInterfaceName(name); err != nil {
		return cnierr.InvalidEnv("CNI_IFNAME", name, err.Msg)
	}
	return nil
}
