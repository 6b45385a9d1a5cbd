package delegated

import (
	"encoding/json"
	"fmt"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// MaxDelegates bounds the chain; real chains have two or three links.
const MaxDelegates = 16

// delegateNames reads ipam.delegates: a non-empty array of plain plugin
// names. Everything else in the config is passed through untouched.
func delegateNames(conf *netconf.Envelope) ([]string, error) {
	var ipam struct {
		Delegates json.RawMessage `json:"delegates"`
	}
	if err := conf.DecodeIPAM(&ipam); err != nil {
		return nil, err
	}
	if len(ipam.Delegates) == 0 || string(ipam.Delegates) == "null" {
		return nil, cnierr.MissingConfig("ipam.delegates")
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(ipam.Delegates, &raw); err != nil {
		return nil, cnierr.InvalidConfig("ipam.delegates", string(ipam.Delegates), "must be an array of plugin names")
	}
	if len(raw) == 0 {
		return nil, cnierr.InvalidConfig("ipam.delegates", "[]", "must name at least one delegate")
	}
	if len(raw) > MaxDelegates {
		return nil, cnierr.InvalidConfig("ipam.delegates", len(raw), fmt.Sprintf("at most %d delegates", MaxDelegates))
	}
	names := make([]string, len(raw))
	for i, r := range raw {
		field := fmt.Sprintf("ipam.delegates[%d]", i)
		if err := json.Unmarshal(r, &names[i]); err != nil {
			return nil, cnierr.InvalidConfig(field, string(r), "must be a string")
		}
		if err := validName(names[i]); err != "" {
			return nil, cnierr.InvalidConfig(field, names[i], err)
		}
		// Every delegate receives this same config, so an ipam-delegated
		// delegate would read these same delegates and run itself again,
		// forever: a stack overflow in-process, a fork bomb exec'd.
		if names[i] == Name {
			return nil, cnierr.InvalidConfig(field, names[i], "ipam-delegated cannot be its own delegate")
		}
	}
	return names, nil
}

// validName keeps a delegate name a plain file name inside CNI_PATH.
func validName(name string) string {
	switch {
	case name == "":
		return "must not be empty"
	case name == "." || name == "..":
		return "must be a plugin name"
	case len(name) > 255:
		return "longer than 255 characters"
	}
	for _, r := range name {
		if r == '/' || r == 0 || r == '\\' {
			return "must be a plain plugin name, not a path"
		}
	}
	return ""
}
