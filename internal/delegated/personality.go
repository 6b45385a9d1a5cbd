// Package delegated is the delegation core and the ipam-delegated
// personality: an IPAM plugin that stacks IPAM delegates (ipam.delegates),
// runs them in order threading prevResult, and rolls back a failed ADD.
package delegated

import (
	"context"
	"os"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// Name is the personality's name.
const Name = "ipam-delegated"

// NewExecutor builds the executor for one request. The registry injects it
// so that delegates of this same binary can later run in-process.
type NewExecutor func(req *plugin.Request) Executor

// Personality returns ipam-delegated running delegates with newExec.
func Personality(newExec NewExecutor) plugin.Personality {
	each := func(cmd string) func(*plugin.Request) error {
		return func(req *plugin.Request) error {
			c, err := newChain(req, newExec)
			if err != nil {
				return err
			}
			return c.Each(context.Background(), cmd)
		}
	}
	add := func(req *plugin.Request) (types.Result, error) {
		c, err := newChain(req, newExec)
		if err != nil {
			return nil, err
		}
		return c.Add(context.Background())
	}
	return plugin.Personality{
		Name:    Name,
		Summary: "runs the IPAM delegates in ipam.delegates in order, threading prevResult, with rollback",
		Funcs:   plugin.IPAMFuncs(add, each(plugin.CmdDel), each(plugin.CmdCheck), each(plugin.CmdGC), each(plugin.CmdStatus)),
		// ArgKeys stays nil: CNI_ARGS passes through to the delegates,
		// each of which checks it against its own keys.
		Validate: func(conf *netconf.Envelope) error {
			_, err := delegateNames(conf)
			return err
		},
	}
}

func newChain(req *plugin.Request, newExec NewExecutor) (*Chain, error) {
	names, err := delegateNames(req.Conf)
	if err != nil {
		return nil, err
	}
	delegates, err := Resolve(names, req.Args.Path)
	if err != nil {
		return nil, err
	}
	return &Chain{Conf: req.Conf, Delegates: delegates, Exec: newExec(req), Log: req.Log}, nil
}

// InProcess returns the NewExecutor that runs delegates of this same
// binary in-process (see SelfExecutor), unless EnvForceExec is set.
func InProcess(lookup func(string) (plugin.Personality, bool)) NewExecutor {
	return func(req *plugin.Request) Executor {
		execer := ExecExecutor{Environ: req.Environ, Stderr: req.Stderr}
		if req.Getenv(EnvForceExec) != "" {
			return execer
		}
		self, err := os.Executable()
		if err != nil {
			return execer
		}
		return SelfExecutor{Exec: execer, Self: self, Lookup: lookup, Log: req.Log}
	}
}
