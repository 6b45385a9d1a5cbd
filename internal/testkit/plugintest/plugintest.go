// Package plugintest checks the output contract of one plugin invocation,
// for the fuzz targets and hardening tests of every personality: a run
// either succeeds, or prints exactly one CNI error object with a real code.
package plugintest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// ErrorOutput is the error object a failed invocation prints.
type ErrorOutput struct {
	CNIVersion string `json:"cniVersion"`
	types.Error
}

// CheckOutput validates what a run printed for exit status exit. It returns
// the decoded error (nil on success) or a description of the violation:
// a non-zero exit must print exactly one JSON object with a non-zero code
// that is not 999 (a panic or an untyped error is always a defect).
func CheckOutput(exit int, stdout []byte) (*ErrorOutput, error) {
	if exit == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(stdout))
	var e ErrorOutput
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("exit %d but stdout is not a JSON error object: %v: %q", exit, err, stdout)
	}
	if dec.More() {
		return &e, fmt.Errorf("more than one JSON value on stdout: %q", stdout)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(stdout), []byte("{")) {
		return &e, fmt.Errorf("error output is not a JSON object: %q", stdout)
	}
	switch e.Code {
	case 0:
		return &e, fmt.Errorf("error object without a code: %q", stdout)
	case cnierr.CodeInternal:
		return &e, fmt.Errorf("internal error (code 999: a panic or an untyped error): %q", stdout)
	}
	if e.Msg == "" {
		return &e, fmt.Errorf("error object without a message: %q", stdout)
	}
	return &e, nil
}

// PinDataDir rewrites a config so that whatever it says, ipam.dataDir is
// dir: a fuzzed config must never reach the host's state directories.
// encoding/json matches keys case-insensitively, so every spelling of
// "ipam" and "dataDir" is replaced. Anything that is not a JSON object
// with an ipam object is returned unchanged (it cannot reach the disk).
func PinDataDir(stdin []byte, dir string) []byte {
	var top map[string]json.RawMessage
	if json.Unmarshal(stdin, &top) != nil || top == nil {
		return stdin
	}
	pinned, _ := json.Marshal(dir)
	for k, v := range top {
		if !strings.EqualFold(k, "ipam") {
			continue
		}
		var ipam map[string]json.RawMessage
		if json.Unmarshal(v, &ipam) != nil || ipam == nil {
			continue
		}
		for ik := range ipam {
			if strings.EqualFold(ik, "dataDir") {
				delete(ipam, ik)
			}
		}
		ipam["dataDir"] = pinned
		top[k], _ = json.Marshal(ipam)
	}
	out, err := json.Marshal(top)
	if err != nil {
		return stdin
	}
	return out
}

// Reservations lists, relative to root, every reservation file under root
// (a file named by a canonical IP address), sorted.
func Reservations(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if a, perr := netip.ParseAddr(d.Name()); perr == nil && a.String() == d.Name() && d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, path)
			out = append(out, rel)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return out, err
}

// ParsePrevResult parses conf and decodes its prevResult, as the next
// delegate of a chain does.
func ParsePrevResult(conf []byte) (*current.Result, error) {
	env, err := netconf.Parse(conf)
	if err != nil {
		return nil, err
	}
	return env.Result()
}

// AddThrough runs ADD for container cid (interface eth0, CNI_ARGS
// cniArgs) through ps in-process, as ipam-delegated threads a chain: each
// personality gets conf (a JSON object) with the previous one's result as
// its prevResult. It returns the last result, or the first failure with
// what that personality printed.
func AddThrough(conf []byte, cid, cniArgs string, ps ...plugin.Personality) ([]byte, error) {
	environ := []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=" + cid, "CNI_IFNAME=eth0", "CNI_NETNS=/x", "CNI_PATH=/nonexistent", "CNI_ARGS=" + cniArgs}
	var prev []byte
	for _, p := range ps {
		stdin := conf
		if prev != nil {
			// A new slice: appending to conf's would write into the caller's.
			stdin = fmt.Appendf(nil, `%s,"prevResult":%s}`, bytes.TrimSuffix(bytes.TrimSpace(conf), []byte("}")), prev)
		}
		var stdout, stderr bytes.Buffer
		if exit := plugin.Run(p, plugin.IO{Environ: environ, Stdin: bytes.NewReader(stdin), Stdout: &stdout, Stderr: &stderr}); exit != 0 {
			return nil, fmt.Errorf("%s ADD %s: exit %d: %s %s", p.Name, cid, exit, stdout.Bytes(), stderr.Bytes())
		}
		prev = bytes.TrimSpace(stdout.Bytes())
	}
	return prev, nil
}
