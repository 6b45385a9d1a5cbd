package k8sinstall

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cniversion "github.com/containernetworking/cni/pkg/version"

	"github.com/cniplugins/cniplugins/internal/version"
)

// DefaultVersionTimeout bounds a foreign plugin's answer to VERSION.
const DefaultVersionTimeout = 5 * time.Second

// maxVersionOutput bounds what is kept of a plugin's VERSION output: a
// version list is a few hundred bytes.
const maxVersionOutput = 64 << 10

// Runtime checks a configuration file as the runtime that loads it from
// net.d will run it, beyond what validate parses: a file that passes
// validate can still fail every pod's ADD (a plugin type that is no file
// of the bin dir, or one that does not speak the file's version), and
// once installed it replaces the configuration that worked.
type Runtime struct {
	// BinDir is the node's CNI bin dir, where the runtime finds plugins.
	BinDir string
	// Ours are the personalities of the binary being installed: known to
	// speak version.SpecVersions without being asked.
	Ours []string
	// VersionTimeout bounds each foreign plugin's answer to VERSION
	// (0: DefaultVersionTimeout).
	VersionTimeout time.Duration
}

// pluginVersions is what one plugin answered, kept for the pass: several
// files and plugins name the same one.
type pluginVersions struct {
	versions []string // nil: not known (see note)
	note     string   // why the versions are not known, for the log
	err      error    // the plugin cannot serve this file
}

// check returns the problems of file f (each naming its JSON path) and
// notes for the log. It asks each foreign plugin once per pass (asked).
// Only ctx's end is returned as an error: the pass stops.
func (r Runtime) check(ctx context.Context, f sourceFile, asked map[string]pluginVersions) (problems, notes []string, err error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(f.data, &top); err != nil {
		return []string{err.Error()}, nil, nil // validate names it too
	}
	var cniVersion string
	_ = json.Unmarshal(top["cniVersion"], &cniVersion)
	type want struct{ v, field string }
	var wants []want
	if cniVersion != "" {
		wants = append(wants, want{cniVersion, "cniVersion"})
	}
	var plugins []json.RawMessage
	if filepath.Ext(f.name) == ".conflist" {
		// containerd 2.x runs the list at the highest of cniVersions it
		// knows, so every plugin must speak each of them.
		var vs []string
		_ = json.Unmarshal(top["cniVersions"], &vs)
		for i, v := range vs {
			wants = append(wants, want{v, fmt.Sprintf("cniVersions[%d]", i)})
		}
		_ = json.Unmarshal(top["plugins"], &plugins)
	} else {
		plugins = []json.RawMessage{f.data}
	}
	prefix := func(i int) string {
		if filepath.Ext(f.name) == ".conflist" {
			return fmt.Sprintf("plugins[%d].", i)
		}
		return ""
	}
	problem := func(field, value, msg string) {
		s := f.name + ": " + field
		if value != "" {
			s += " = " + value
		}
		problems = append(problems, s+": "+msg)
	}
	needs := func(field, typ string) error {
		if !plainName(typ) {
			problem(field, typ, "a plugin type is a file name of the bin dir, without '/' and not '.' or '..'")
			return nil
		}
		pv, err := r.versions(ctx, typ, asked)
		if err != nil {
			return err
		}
		switch {
		case pv.err != nil:
			problem(field, typ, pv.err.Error())
		case pv.versions == nil:
			if pv.note != "" {
				notes = append(notes, fmt.Sprintf("%s: %s = %s: %s", f.name, field, typ, pv.note))
			}
		default:
			for _, w := range wants {
				if !slices.Contains(pv.versions, w.v) {
					problem(field, typ, fmt.Sprintf("the plugin does not support version %s (%s); it supports %s", w.v, w.field, strings.Join(pv.versions, ", ")))
				}
			}
		}
		return nil
	}
	for i, raw := range plugins {
		var p map[string]json.RawMessage
		if json.Unmarshal(raw, &p) != nil {
			continue // validate names it
		}
		var typ string
		if json.Unmarshal(p["type"], &typ) != nil || typ == "" {
			problem(prefix(i)+"type", "", "every plugin needs a type")
		} else if err := needs(prefix(i)+"type", typ); err != nil {
			return nil, nil, err
		}
		rawIPAM, ok := p["ipam"]
		if !ok {
			continue // a plugin without IPAM (loopback; an L2-only bridge)
		}
		var ipam map[string]json.RawMessage
		var ipamType string
		if json.Unmarshal(rawIPAM, &ipam) != nil {
			problem(prefix(i)+"ipam", "", "ipam must be an object")
			continue
		}
		if json.Unmarshal(ipam["type"], &ipamType) != nil || ipamType == "" {
			// The plugin would run no IPAM and the pod would get no
			// address: an ipam object always names its plugin.
			problem(prefix(i)+"ipam.type", "", "an ipam object needs a type (to run no IPAM, leave ipam out)")
		} else if err := needs(prefix(i)+"ipam.type", ipamType); err != nil {
			return nil, nil, err
		}
		// ipam-delegated runs its delegates with the same configuration
		// and version; validate checks that they exist.
		var delegates []json.RawMessage
		_ = json.Unmarshal(ipam["delegates"], &delegates)
		for j, d := range delegates {
			var name string
			if json.Unmarshal(d, &name) != nil {
				continue
			}
			if err := needs(fmt.Sprintf("%sipam.delegates[%d]", prefix(i), j), name); err != nil {
				return nil, nil, err
			}
		}
		for _, path := range zeroQuotas(rawIPAM, prefix(i)+"ipam") {
			problem(path, "0", "a quota of 0 refuses every ADD of the pods it applies to; k8s-install does not install it (give the rule a quota of at least 1, or remove the rule)")
		}
	}
	return problems, notes, nil
}

// plainName reports whether a plugin type names a file of the bin dir:
// libcni joins it to each directory of CNI_PATH, so a '/' or a '..'
// would reach outside it.
func plainName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\x00")
}

// zeroQuotas lists the JSON paths of every "quota" object under raw whose
// "max" is 0 (ipam-ds-args' rules: a quota of 0 refuses every ADD).
func zeroQuotas(raw json.RawMessage, path string) []string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			if q, ok := v["quota"].(map[string]any); ok {
				if m, ok := q["max"].(float64); ok && m == 0 {
					out = append(out, path+".quota.max")
				}
			}
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k], path+"."+k)
			}
		case []any:
			for i, e := range v {
				walk(e, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	walk(v, path)
	return out
}

// versions finds what plugin typ speaks: ours without asking, a foreign
// one by asking it VERSION as libcni does (once per pass).
func (r Runtime) versions(ctx context.Context, typ string, asked map[string]pluginVersions) (pluginVersions, error) {
	if slices.Contains(r.Ours, typ) {
		return pluginVersions{versions: version.SpecVersions()}, nil
	}
	if pv, ok := asked[typ]; ok {
		return pv, nil
	}
	pv, err := r.ask(ctx, typ)
	if err != nil {
		return pv, err
	}
	asked[typ] = pv
	return pv, nil
}

// ask execs a foreign plugin's VERSION, bounded by VersionTimeout. A
// plugin that is missing, not executable, fails or answers nothing a
// runtime could use cannot serve the file. One the installer's container
// cannot start at all (a dynamically linked plugin, say: the image has no
// C library) is checked for its presence only, and noted.
func (r Runtime) ask(ctx context.Context, typ string) (pluginVersions, error) {
	path := filepath.Join(r.BinDir, typ)
	if lfi, err := os.Lstat(path); err == nil && lfi.Mode()&os.ModeSymlink != 0 {
		// An absolute link (/opt/cni/bin/bridge -> /usr/lib/cni/bridge,
		// as distributions install plugins) names a path of the node,
		// which the installer's container resolves in its own file
		// system: nothing it finds there says what the runtime will run.
		if dest, err := os.Readlink(path); err == nil && filepath.IsAbs(dest) {
			return pluginVersions{note: fmt.Sprintf("a link to %s, a path of the node that the installer's container may not see: checked for its presence only", dest)}, nil
		}
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return pluginVersions{err: fmt.Errorf("no plugin %s in the bin dir %s", typ, r.BinDir)}, nil
	case !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0:
		return pluginVersions{err: fmt.Errorf("%s is not an executable file", path)}, nil
	}
	timeout := r.VersionTimeout
	if timeout <= 0 {
		timeout = DefaultVersionTimeout
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(actx, path)
	// What libcni sends for VERSION, and no more of the installer's own
	// environment than a plugin needs to start.
	cmd.Env = []string{"CNI_COMMAND=VERSION", "CNI_CONTAINERID=", "CNI_NETNS=dummy", "CNI_IFNAME=dummy", "CNI_ARGS=", "CNI_PATH=" + r.BinDir, "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.Stdin = strings.NewReader(fmt.Sprintf(`{"cniVersion":%q}`, cniversion.Current()))
	cmd.Dir = "/"
	var stdout, stderr capped
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A child that keeps the plugin's output open must not hold the
	// installer past the timeout either.
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		return pluginVersions{}, ctx.Err()
	}
	switch {
	case cmd.ProcessState == nil && err != nil:
		return pluginVersions{note: fmt.Sprintf("could not ask its versions (%v): checked for its presence only", err)}, nil
	case actx.Err() != nil:
		return pluginVersions{err: fmt.Errorf("%s did not answer VERSION within %s", path, timeout)}, nil
	case err != nil:
		msg := strings.TrimSpace(stdout.String() + " " + stderr.String())
		return pluginVersions{err: fmt.Errorf("%s VERSION failed (%v): %s", path, err, trim(msg))}, nil
	}
	info, err := (&cniversion.PluginDecoder{}).Decode(stdout.Bytes())
	if err != nil {
		return pluginVersions{err: fmt.Errorf("%s answered VERSION with no version list: %v", path, err)}, nil
	}
	return pluginVersions{versions: info.SupportedVersions()}, nil
}

// capped keeps the first maxVersionOutput bytes written to it and
// discards the rest, so a plugin cannot fill the installer's memory.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := maxVersionOutput - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func trim(s string) string {
	if len(s) > 200 {
		return s[:197] + "..."
	}
	return s
}
