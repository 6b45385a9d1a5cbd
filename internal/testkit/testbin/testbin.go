// Package testbin execs the real cniplugins binary the way a CNI runtime
// does (environment variables plus the config on stdin), after Installed
// built it with the Makefile's recipe and installed it the way an operator
// does (see the testkit package), and gives tests network namespaces to
// exec it in. Every integration, end-to-end, hardening and benchmark test
// goes through it, so what they exercise is the shipped artefact, not a
// test double.
package testbin

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/testkit"
)

// Call is one plugin invocation as a runtime makes it.
type Call struct {
	Plugin      string // the name to exec in Path (a symlink)
	Command     string
	ContainerID string
	IfName      string
	Netns       string
	Args        string   // CNI_ARGS
	Path        string   // CNI_PATH; also where Plugin is looked up
	Env         []string // extra variables
	Stdin       []byte
	Argv        []string // extra arguments (busybox style)
}

// Reply is what the plugin did.
type Reply struct {
	Stdout, Stderr []byte
	Exit           int
}

// Err decodes a CNI error from stdout (nil when the call succeeded).
func (r Reply) Err() *types.Error {
	if r.Exit == 0 {
		return nil
	}
	var e types.Error
	if err := json.Unmarshal(r.Stdout, &e); err != nil {
		return &types.Error{Code: 99999, Msg: "stdout is not a CNI error: " + string(r.Stdout)}
	}
	return &e
}

// Env returns the environment a runtime would set for c.
func (c Call) Environ() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "CNI_COMMAND=" + c.Command, "CNI_PATH=" + c.Path}
	add := func(k, v string) {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	add("CNI_CONTAINERID", c.ContainerID)
	add("CNI_IFNAME", c.IfName)
	add("CNI_NETNS", c.Netns)
	add("CNI_ARGS", c.Args)
	return append(env, c.Env...)
}

// Run execs c and returns what happened; it never fails the test itself.
func Run(c Call) Reply {
	cmd := exec.Command(filepath.Join(strings.SplitN(c.Path, ":", 2)[0], c.Plugin), c.Argv...)
	cmd.Env = c.Environ()
	cmd.Stdin = bytes.NewReader(c.Stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	exit := 0
	if ee, ok := err.(*exec.ExitError); ok {
		exit = ee.ExitCode()
	} else if err != nil {
		exit = -1
		stderr.WriteString(err.Error())
	}
	return Reply{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Exit: exit}
}

// MustSucceed runs c and fails the test unless it exits 0.
func MustSucceed(t testing.TB, c Call) Reply {
	t.Helper()
	r := Run(c)
	if r.Exit != 0 {
		t.Fatalf("%s %s: exit %d\nstdout: %s\nstderr: %s", c.Plugin, c.Command, r.Exit, r.Stdout, r.Stderr)
	}
	return r
}

// Setup is a freshly built binary installed in a temporary CNI bin dir.
type Setup struct {
	Root   string // temporary directory holding everything; Cleanup removes it
	Bin    string // the built binary
	BinDir string // the bin dir install-symlinks.sh installed it into
}

// Installed builds the binary and installs it with install-symlinks.sh
// into a new temporary directory named after prefix: what every exec-level
// test package does once, in TestMain.
func Installed(prefix string) (Setup, error) {
	root, err := os.MkdirTemp("", prefix)
	if err != nil {
		return Setup{}, err
	}
	s := Setup{Root: root, BinDir: filepath.Join(root, "cni-bin")}
	if s.Bin, err = testkit.Build(root, ""); err == nil {
		err = testkit.Install(s.Bin, s.BinDir)
	}
	if err != nil {
		s.Cleanup()
		return Setup{}, err
	}
	return s, nil
}

// Cleanup removes everything Installed made.
func (s Setup) Cleanup() { _ = os.RemoveAll(s.Root) }

// PluginConf is the first plugin of a conflist as a runtime hands it to
// that plugin: its object with the list's name and cniVersion added.
func PluginConf(conflist []byte) (map[string]any, error) {
	var list struct {
		CNIVersion string           `json:"cniVersion"`
		Name       string           `json:"name"`
		Plugins    []map[string]any `json:"plugins"`
	}
	if err := json.Unmarshal(conflist, &list); err != nil {
		return nil, err
	}
	if len(list.Plugins) == 0 {
		return nil, errors.New("the conflist has no plugin")
	}
	conf := list.Plugins[0]
	conf["name"], conf["cniVersion"] = list.Name, list.CNIVersion
	return conf, nil
}
