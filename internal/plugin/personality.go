// Package plugin is the CNI plumbing every personality shares: the
// environment table, the dispatcher, result printing and panic containment.
//
// It does the job of containernetworking/cni's skel, reusing skel's CmdArgs,
// the version package and the utils validators, but reads nothing from os.*:
// everything the process boundary carries arrives in an IO value. That seam
// is what lets ipam-delegated run a delegate of this same binary in-process
// with exactly the behaviour of an exec.
package plugin

import (
	"io"
	"os"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// Func handles one CNI command. A nil result prints nothing (the spec's
// DEL, GC and STATUS); a non-nil result is printed in the config's
// cniVersion.
type Func func(*Request) (types.Result, error)

// IPAMFuncs are the commands of an IPAM plugin: ADD answers a result,
// the others print nothing when they succeed.
func IPAMFuncs(add Func, del, check, gc, status func(*Request) error) Funcs {
	none := func(f func(*Request) error) Func {
		return func(req *Request) (types.Result, error) { return nil, f(req) }
	}
	return Funcs{Add: add, Del: none(del), Check: none(check), GC: none(gc), Status: none(status)}
}

// Funcs holds a personality's commands. Every personality implements all
// of them: the spec's commands are not optional for an IPAM plugin that may
// sit anywhere in a delegate chain.
type Funcs struct {
	Add, Del, Check, GC, Status Func
}

// Personality is one name the binary answers to.
type Personality struct {
	Name    string
	Summary string // one line for `cniplugins list -l` and the README
	Funcs   Funcs
	// ArgKeys lists the CNI_ARGS keys the personality understands, given
	// its configuration. The dispatcher then applies the cni library's
	// CNI_ARGS rules before any command runs, as host-local does: a key
	// outside the list is code 4 unless IgnoreUnknown is true. Nil means
	// CNI_ARGS passes through unchecked (and Request.CNIArgs stays empty):
	// ipam-delegated hands it to delegates that check it against their
	// own keys.
	ArgKeys func(*netconf.Envelope) ([]string, error)
	// Validate checks the personality's own configuration keys the way
	// its ADD would, touching neither the state on disk nor the host, for
	// `cniplugins validate`. A config inside an ipam-delegated chain has
	// no prevResult yet, so pool-mode keys are checked as far as they can
	// be without one.
	Validate func(*netconf.Envelope) error
}

// Request is one invocation as a personality sees it.
type Request struct {
	Command string
	Args    skel.CmdArgs
	// CNIArgs is CNI_ARGS parsed and checked against the personality's
	// ArgKeys, in order (empty when it has none).
	CNIArgs []netconf.CNIArg
	Conf    *netconf.Envelope
	// Environ is the full environment the invocation got, for passing on to
	// delegates with only CNI_COMMAND changed.
	Environ []string
	Getenv  func(string) string
	Stderr  io.Writer
	Log     *logging.Logger
	// Now is the time the command runs at: every expiry and record time
	// of one command is this one instant.
	Now time.Time
}

// IO is the process boundary: what skel would read from os.*.
type IO struct {
	Environ []string
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	// Conf, when set, is the configuration already parsed (a delegate
	// run in-process): it stands for Stdin, which is then not read.
	Conf *netconf.Envelope
	// Printed, when set, receives the result Run printed to Stdout, as
	// the personality built it (a delegate run in-process, whose result
	// the next delegate need not decode again).
	Printed *types.Result
	// Now, when set, is the clock (nil: time.Now), so that a test can
	// run commands at the times it chooses (holds expire, records age).
	Now func() time.Time
}

// Getenv looks a variable up in Environ (the last assignment wins, as with
// execve).
func (p IO) Getenv(key string) string {
	for i := len(p.Environ) - 1; i >= 0; i-- {
		kv := p.Environ[i]
		if len(kv) > len(key) && kv[len(key)] == '=' && kv[:len(key)] == key {
			return kv[len(key)+1:]
		}
	}
	return ""
}

// ProcessIO is the IO of this process: what a main hands to the CLI.
func ProcessIO() IO {
	return IO{Environ: os.Environ(), Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
}
