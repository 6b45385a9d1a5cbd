package delegated

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// Delegate is one resolved link of the chain.
type Delegate struct {
	Name string // as configured
	Path string // found in CNI_PATH
}

// Executor runs one delegate with one command and returns what it printed
// on success, or its error (a *types.Error carrying the delegate's own code
// when it printed one).
type Executor interface {
	// Run gives d conf (its bytes on stdin, or conf itself in-process)
	// and returns, with what d printed, the result d built it from when
	// d ran in this process (nil otherwise). The chain hands that result
	// to the next delegate with the bytes (netconf.Envelope.PrevBuilt),
	// which then need not decode them again.
	Run(ctx context.Context, d Delegate, cmd string, conf *netconf.Envelope) ([]byte, types.Result, error)
}

// Resolve finds every delegate in cniPath before any of them runs, so a
// typo in the chain fails cleanly instead of after side effects.
func Resolve(names []string, cniPath string) ([]Delegate, error) {
	dirs := filepath.SplitList(cniPath)
	out := make([]Delegate, len(names))
	for i, name := range names {
		path, err := invoke.FindInPath(name, dirs)
		if err != nil {
			return nil, cnierr.New(cnierr.CodeInvalidConfig, "delegate not found in CNI_PATH", "ipam.delegates: %s not in CNI_PATH=%s", name, cniPath)
		}
		out[i] = Delegate{Name: name, Path: path}
	}
	return out, nil
}

// ExecExecutor runs delegates as child processes, the way a runtime does:
// same environment with CNI_COMMAND replaced, config on stdin.
type ExecExecutor struct {
	Environ []string
	Stderr  io.Writer
}

func (e ExecExecutor) Run(ctx context.Context, d Delegate, cmd string, conf *netconf.Envelope) ([]byte, types.Result, error) {
	raw := invoke.RawExec{Stderr: e.Stderr}
	out, err := raw.ExecPlugin(ctx, d.Path, conf.Raw, WithCommand(e.Environ, cmd))
	if err != nil {
		return nil, nil, normalise(err)
	}
	return out, nil, nil
}

// WithCommand returns environ with CNI_COMMAND set to cmd.
func WithCommand(environ []string, cmd string) []string {
	out := slices.DeleteFunc(slices.Clone(environ), func(kv string) bool { return strings.HasPrefix(kv, "CNI_COMMAND=") })
	return append(out, "CNI_COMMAND="+cmd)
}

// normalise gives a delegate failure that printed no CNI error (it
// crashed, or could not be started) a real code instead of 0.
func normalise(err error) error {
	var e *types.Error
	if errors.As(err, &e) && e.Code != 0 {
		return e
	}
	msg := err.Error()
	if e != nil {
		msg = e.Msg
	}
	return cnierr.Wrap(cnierr.New(cnierr.CodeInternal, "delegate failed without a CNI error", "%s", msg), err)
}
