package ipamconf

import (
	"net/netip"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// Store is an allocator's state opened for one request, what its CNI
// commands run the engine over once the driver has read the request:
// ADD (all or nothing, for the attachment's sticky key), DEL (everything
// the attachment holds in the scopes the config covers, prevResult's
// addresses as hints; never a failure for an attachment it does not
// know), CHECK (alloc.CheckPrev), GC (alloc.KeepSet's rules) and the
// exhaustion marks STATUS judges (alloc.Config.Status).
type Store interface {
	Add(targets []alloc.Target, keyed alloc.Keyed) ([]*current.IPConfig, error)
	// Del's keyed is nil when the request's key does not read: a DEL
	// finds holds by the records alone, and must not fail on it.
	Del(hints []netip.Addr, keyed *alloc.Keyed) error
	Check(prev []netip.Addr, targets []alloc.Target) error
	GC(valid []alloc.Attachment) error
	Exhausted(targets []alloc.Target) (func(alloc.Target) (bool, error), error)
}

// Opener opens the store of req, whose engine config is c.
type Opener func(req *plugin.Request, c *alloc.Config) (Store, error)

// Personality is an allocator of this engine named name over the stores
// open opens: its five commands, its `cniplugins validate` check (the
// store's own keys by ownKeys, then ADD's parse without a store), and
// the CNI_ARGS every allocator accepts (ArgKeys).
func Personality(name, summary string, open Opener, ownKeys func(*netconf.Envelope) error) plugin.Personality {
	run := commands{open}.run
	validate := func(conf *netconf.Envelope) error {
		if err := ownKeys(conf); err != nil {
			return err
		}
		return validateKeys(conf, name)
	}
	return plugin.Personality{Name: name, Summary: summary, ArgKeys: ArgKeys, Validate: validate,
		Funcs: plugin.Funcs{Add: run, Del: run, Check: run, GC: run, Status: run}}
}

type commands struct{ open Opener }

// run is every command: it reads the request, opens its store and runs
// the command there. ADD, CHECK and STATUS need ranges and get the
// targets they place addresses in, requests assigned; DEL and GC work
// from state alone, even when the config's ranges have changed since
// the ADD (ParseDel).
func (k commands) run(req *plugin.Request) (types.Result, error) {
	stateOnly := req.Command == plugin.CmdDel || req.Command == plugin.CmdGC
	var c *alloc.Config
	var err error
	if stateOnly {
		c, err = ParseDel(req.Conf, req.CNIArgs)
	} else {
		c, err = Parse(req.Conf, req.CNIArgs, true)
	}
	if err != nil {
		return nil, err
	}
	st, err := k.open(req, c)
	if err != nil {
		return nil, err
	}
	// The sticky key is read once, here, for every store. A malformed one
	// (or ipam.sticky) must not fail DEL or GC: DEL then gets none and
	// finds holds by the records alone, and GC never needs it.
	keyed, err := stickyKeyOf(req)
	if err != nil && !stateOnly {
		return nil, err
	}
	var targets []alloc.Target
	if !stateOnly {
		if targets, err = c.AddTargets(); err != nil {
			return nil, err
		}
	}
	switch req.Command {
	case plugin.CmdAdd:
		res, err := c.NewResult()
		if err == nil {
			res.IPs, err = st.Add(targets, *keyed)
		}
		if err != nil {
			return nil, err
		}
		return res, nil
	case plugin.CmdDel:
		hints, err := PrevAddrs(req.Conf) // a malformed prevResult is 6, as for CHECK
		if err != nil {
			return nil, err
		}
		return nil, st.Del(hints, keyed)
	case plugin.CmdCheck:
		prev, err := PrevAddrs(req.Conf)
		if err != nil {
			return nil, err
		}
		return nil, st.Check(prev, targets)
	case plugin.CmdGC:
		valid, err := ValidAttachments(req.Conf)
		if err != nil {
			return nil, err
		}
		return nil, st.GC(valid)
	}
	exhausted, err := st.Exhausted(targets) // STATUS
	if err != nil {
		return nil, err
	}
	choices, err := Choices(req.Conf, c)
	if err != nil {
		return nil, err
	}
	return nil, c.Status(targets, choices, exhausted)
}

// stickyKeyOf is the attachment's sticky key (Key "" none), nil when
// ipam.sticky or the key does not read.
func stickyKeyOf(req *plugin.Request) (*alloc.Keyed, error) {
	s, err := StickyConf(req.Conf)
	if err != nil {
		return nil, err
	}
	k, err := StickyKey(req.Conf, req.CNIArgs, s)
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// validateKeys is ADD's parse without a store or CNI_ARGS: standalone
// (ipam.type is the personality) needs ranges; inside a chain the pools
// arrive later, in prevResult, so only what the config itself says can
// be checked. Where the file has the ranges (standalone, or ipam.pools),
// the addresses it requests must fit them and every overflow chain must
// resolve, as ADD would find.
func validateKeys(conf *netconf.Envelope, name string) error {
	if _, err := StickyConf(conf); err != nil {
		return err
	}
	standalone, err := Standalone(conf, name)
	if err != nil {
		return err
	}
	c, err := Parse(conf, nil, standalone)
	if err != nil || !(standalone || c.PoolMode()) {
		return err
	}
	ts, err := c.AddTargets()
	if err != nil {
		return err
	}
	return alloc.ResolveChains(ts)
}
