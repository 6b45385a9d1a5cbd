package ops

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containernetworking/cni/libcni"
)

// Problem is one thing wrong with a configuration file, located by file
// and JSON path, with the offending value.
type Problem struct {
	File  string `json:"file"`
	Path  string `json:"path"`
	Value string `json:"value"`
	Msg   string `json:"message"`
	// Severity is SeverityProblem (the configuration fails, or does not
	// do what it says) or SeverityWarning (it works as written, and the
	// operator should know what it allows).
	Severity string `json:"severity"`
}

// Severities, of a validate Problem and an fsck Finding: a problem makes
// the command exit non-zero (fsck's: unless --repair fixed it); a warning
// (validate's) only with --strict; a note (fsck's) never.
const (
	SeverityProblem = "problem"
	SeverityWarning = "warning"
	SeverityNote    = "note"
)

// Warning reports whether p is a warning (a zero Severity is a problem).
func (p Problem) Warning() bool { return p.Severity == SeverityWarning }

func (p Problem) String() string {
	s := p.File
	if p.Path != "" {
		s += ": " + p.Path
	}
	if p.Value != "" {
		s += " = " + p.Value
	}
	if p.Warning() {
		s += ": warning"
	}
	return s + ": " + p.Msg
}

// PluginConf is one plugin of a configuration file, as a runtime would
// send it on stdin.
type PluginConf struct {
	File    string
	Network string
	// Path is the plugin's JSON path in the file: "plugins[1]" in a
	// conflist, "" for a single .conf.
	Path string
	Raw  []byte // the plugin's config with name and cniVersion injected, as libcni sends it
}

// ConfFiles lists the configuration files of dir the way libcni finds
// them: .conflist, .conf and .json files, sorted by name.
func ConfFiles(dir string) ([]string, error) {
	files, err := libcni.ConfFiles(dir, []string{".conflist", ".conf", ".json"})
	if err != nil {
		return nil, fmt.Errorf("read conf dir %s: %w", dir, err)
	}
	slices.Sort(files)
	return files, nil
}

// LoadPlugins parses each file with libcni's own parsers (a .conflist as a
// list, anything else as a single config, upconverted as libcni does) and
// returns every plugin in it. A file libcni rejects is a Problem, not an
// error: the other files are still read.
func LoadPlugins(files []string) ([]PluginConf, []Problem) {
	var out []PluginConf
	var problems []Problem
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			problems = append(problems, Problem{File: f, Msg: "cannot read: " + err.Error()})
			continue
		}
		ps, prs := parsePlugins(f, data)
		out, problems = append(out, ps...), append(problems, prs...)
	}
	return out, problems
}

// parsePlugins is every plugin of the file name holding data, as a
// runtime sends it: libcni parses a .conflist as a list, anything else
// as a single config.
func parsePlugins(name string, data []byte) ([]PluginConf, []Problem) {
	single := filepath.Ext(name) != ".conflist"
	var list *libcni.NetworkConfigList
	var err error
	if single {
		var c *libcni.NetworkConfig
		if c, err = libcni.ConfFromBytes(data); err == nil {
			list, err = libcni.ConfListFromConf(c)
		}
	} else {
		list, err = libcni.ConfListFromBytes(data)
	}
	if err != nil {
		return nil, []Problem{{File: name, Msg: err.Error()}}
	}
	var out []PluginConf
	var problems []Problem
	for i, p := range list.Plugins {
		path := fmt.Sprintf("plugins[%d]", i)
		raw, err := libcni.InjectConf(p, map[string]any{"name": list.Name, "cniVersion": list.CNIVersion})
		if err != nil {
			problems = append(problems, Problem{File: name, Path: path, Msg: err.Error()})
			continue
		}
		if single {
			path = ""
		}
		out = append(out, PluginConf{File: name, Network: list.Name, Path: path, Raw: raw.Bytes})
	}
	return out, problems
}

// ipam reads p's IPAM chain without the plugins' parser: the type of its
// ipam section ("" if it has none), then for ipam-delegated each of its
// delegates that is a name (a string: ipam-delegated's own Validate names
// any other entry), in order; delegates are the entries as written. A
// field of the wrong JSON type reads as absent and leaves the other one
// read.
func (p PluginConf) ipam() (chain []string, delegates []any) {
	var c struct {
		IPAM struct {
			Type      string `json:"type"`
			Delegates []any  `json:"delegates"`
		} `json:"ipam"`
	}
	_ = json.Unmarshal(p.Raw, &c)
	chain = []string{c.IPAM.Type}
	if c.IPAM.Type != typeDelegated {
		return chain, nil
	}
	for _, d := range c.IPAM.Delegates {
		if name, isName := d.(string); isName {
			chain = append(chain, name)
		}
	}
	return chain, c.IPAM.Delegates
}

// field joins the plugin's path and a config field into the file's JSON
// path: "plugins[0].ipam.ranges[1]".
func (p PluginConf) field(f string) string {
	switch {
	case p.Path == "":
		return f
	case f == "" || f == "config":
		return p.Path
	}
	return p.Path + "." + f
}

// trimmed shortens a value for a one-line report.
func trimmed(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

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
	plugins, problems := LoadPlugins(files)
	if len(problems) > 0 {
		return nil, errors.New(problems[0].String())
	}
	var names []string
	for _, p := range plugins {
		// containerd refuses a network without a name; libcni has
		// already refused a list without plugins and a .conf without a
		// type (a conflist saved under the wrong extension).
		if strings.TrimSpace(p.Network) == "" {
			return nil, fmt.Errorf("%s: the network has no name", p.File)
		}
		if !slices.Contains(names, p.Network) {
			names = append(names, p.Network)
		}
	}
	return names, nil
}
