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

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// Func handles one CNI command. A nil result prints nothing (the spec's
// DEL, GC and STATUS); a non-nil result is printed in the config's
// cniVersion.
type Func func(*Request) (types.Result, error)

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
}

// Request is one invocation as a personality sees it.
type Request struct {
	Command string
	Args    skel.CmdArgs
	// CNIArgs is CNI_ARGS parsed, in order.
	CNIArgs []netconf.CNIArg
	Conf    *netconf.Envelope
	// Environ is the full environment the invocation got, for passing on to
	// delegates with only CNI_COMMAND changed.
	Environ []string
	Getenv  func(string) string
	Stderr  io.Writer
	Log     *logging.Logger
}

// IO is the process boundary: what skel would read from os.*.
type IO struct {
	Environ []string
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
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
