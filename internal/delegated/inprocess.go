package delegated

import (
	"bytes"
	"context"
	"encoding/json"
	"os"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// EnvForceExec, set to any non-empty value, makes ipam-delegated exec every
// delegate even when it is this same binary: for debugging with strace, or
// to rule the in-process path out.
const EnvForceExec = "CNIPLUGINS_EXEC_DELEGATES"

// SelfExecutor runs a delegate that is this very executable (a symlink or
// hard link to it in CNI_PATH) in-process, and execs anything else. Three
// process starts would cost more than the whole allocation; in-process,
// the delegate still sees exactly what an exec would give it: its own
// CNI_COMMAND and environment, the config on its stdin, its stdout
// captured and its exit status turned into the same error, a panic
// contained by plugin.Run as that delegate's error.
type SelfExecutor struct {
	Exec ExecExecutor
	// Self is this executable (os.Executable), compared by inode with
	// each delegate's path.
	Self string
	// Lookup finds a personality by the name the delegate is called by.
	Lookup func(name string) (plugin.Personality, bool)
	Log    *logging.Logger
}

func (s SelfExecutor) Run(ctx context.Context, d Delegate, cmd string, conf *netconf.Envelope) ([]byte, types.Result, error) {
	p, ok := s.local(d)
	if !ok {
		return s.Exec.Run(ctx, d, cmd, conf)
	}
	s.Log.Debug("delegate runs in-process", logging.String("delegate", d.Name), logging.String("command", cmd))
	var stdout bytes.Buffer
	var printed types.Result
	exit := plugin.Run(p, plugin.IO{
		Environ: WithCommand(s.Exec.Environ, cmd),
		Stdin:   bytes.NewReader(conf.Raw),
		Conf:    conf,
		Stdout:  &stdout,
		Stderr:  s.Exec.Stderr,
		Printed: &printed,
	})
	if exit != 0 {
		return nil, nil, exitError(stdout.Bytes())
	}
	return stdout.Bytes(), printed, nil
}

// local reports whether d is this executable under a personality's name.
// A link to this binary under a name it does not know is exec'd, so that
// it fails exactly as it would for a runtime.
func (s SelfExecutor) local(d Delegate) (plugin.Personality, bool) {
	if s.Self == "" || s.Lookup == nil || !sameFile(s.Self, d.Path) {
		return plugin.Personality{}, false
	}
	return s.Lookup(d.Name)
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// exitError is what an exec would have made of a failed delegate's stdout.
func exitError(stdout []byte) error {
	var e types.Error
	if err := json.Unmarshal(stdout, &e); err != nil || e.Code == 0 {
		return cnierr.New(cnierr.CodeInternal, "delegate failed without a CNI error", "%s", stdout)
	}
	return &e
}
