package ops

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// DefaultMaxConfNum is how many network configurations a CRI runtime loads
// from its conf dir unless told otherwise: containerd's max_conf_num
// default, and CRI-O's one default network.
const DefaultMaxConfNum = 1

// CheckMaxConfNum refuses a negative count of files a runtime loads (0
// loads all); name is what the caller calls the count, in the error.
func CheckMaxConfNum(name string, max int) error {
	if max < 0 {
		return fmt.Errorf("invalid %s %d: want 0 (all, as containerd's max_conf_num 0) or more", name, max)
	}
	return nil
}

// RuntimeNetworks names the networks a CRI runtime attaches its pod
// sandboxes to, read from its CNI conf dir the way containerd's CRI (through
// go-cni) loads it: the .conf, .conflist and .json files sorted by name, the
// first max of them (0: all, as containerd's max_conf_num 0 means), each
// one network under its "name".
//
// A file among those the runtime would load that cannot be parsed is an
// error rather than a file to skip: containerd then refuses the whole
// directory and keeps whatever it loaded before, so which networks it
// serves cannot be told from here, and a GC must release nothing. A dir
// with no configuration at all is an error too: it is not the runtime's
// conf dir, and a GC scoped to no network would silently do nothing.
func RuntimeNetworks(dir string, max int) ([]string, error) {
	if err := CheckMaxConfNum("max", max); err != nil {
		return nil, err
	}
	files, err := ConfFiles(dir)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no network configuration (.conflist, .conf, .json) in %s", dir)
	}
	if max > 0 && len(files) > max {
		files = files[:max]
	}
	var names []string
	for _, f := range files {
		list, err := loadList(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		// containerd refuses a .conf without a type (a conflist saved
		// under the wrong extension) and a list without plugins.
		if filepath.Ext(f) != ".conflist" && (len(list.Plugins) == 0 || list.Plugins[0].Network.Type == "") {
			return nil, fmt.Errorf("%s: network type not found", f)
		}
		if len(list.Plugins) == 0 {
			return nil, fmt.Errorf("%s: no plugins", f)
		}
		if strings.TrimSpace(list.Name) == "" {
			return nil, fmt.Errorf("%s: the network has no name", f)
		}
		if !slices.Contains(names, list.Name) {
			names = append(names, list.Name)
		}
	}
	return names, nil
}
