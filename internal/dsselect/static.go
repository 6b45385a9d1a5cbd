// Package dsselect holds the pool selectors (ipam-ds-*): personalities that
// decide which pools an attachment draws from and answer with an IPAM
// result carrying a pools array (docs/ipam-ds-static.md, "The Pool object").
package dsselect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// StaticName is ipam-ds-static's personality name.
const StaticName = "ipam-ds-static"

// Static returns ipam-ds-static: it selects the pools listed in ipam.pools,
// the same on every command, so DEL and CHECK reach the allocator with the
// pools (and, copied from prevResult, the addresses) that ADD used.
func Static() plugin.Personality {
	static := func(req *plugin.Request) (pool.Selection, error) { return poolsOnly(StaticPools(req.Conf)) }
	return plugin.Personality{
		Name:     StaticName,
		Summary:  "selects the pools listed in ipam.pools",
		Funcs:    selectorFuncs(static, static, nil),
		ArgKeys:  func(*netconf.Envelope) ([]string, error) { return chainArgKeys(), nil },
		Validate: parsesWith(StaticPools),
	}
}

// parsesWith is a selector's `cniplugins validate` check: its keys parse
// as every command parses them, without looking at any attachment or host.
func parsesWith[T any](parse func(*netconf.Envelope) (T, error)) func(*netconf.Envelope) error {
	return func(conf *netconf.Envelope) error {
		_, err := parse(conf)
		return err
	}
}

// chainArgKeys are the CNI_ARGS keys every selector accepts besides those
// its own config names: a chain hands one CNI_ARGS to all its delegates,
// so a selector must let through what the allocator after it reads (IP,
// host-local's requested addresses; the sticky keys' sources), or a
// runtime's IP=… would fail in the selector before reaching the allocator.
func chainArgKeys() []string { return append([]string{"IP"}, ipamconf.StickyArgKeys()...) }

// StaticPools are ipam.pools as ipam-ds-static selects them, each with its
// overflow chain resolved: what `cniplugins pools` lists of them too.
func StaticPools(conf *netconf.Envelope) ([]pool.Pool, error) {
	var ipam struct {
		Pools           json.RawMessage            `json:"pools"`
		PoolDefinitions map[string]json.RawMessage `json:"poolDefinitions"`
	}
	if err := conf.DecodeIPAM(&ipam); err != nil {
		return nil, err
	}
	pools, err := pool.ParseList(ipam.Pools, "ipam.pools")
	if err != nil {
		return nil, err
	}
	return resolveStaticChains(pools, ipam.PoolDefinitions)
}

// resolveStaticChains gives each pool its overflow chain: the pool's own
// overflowPools, then ipam.poolDefinitions (pool.Catalog). Pools without
// an overflow anywhere cost nothing.
func resolveStaticChains(pools []pool.Pool, rawDefs map[string]json.RawMessage) ([]pool.Pool, error) {
	if !chainsNamed(pools, rawDefs) {
		return pools, nil
	}
	defs, err := pool.ParseOverflows("ipam.poolDefinitions", rawDefs)
	if err != nil {
		return nil, err
	}
	for i, p := range pools {
		cat := pool.Catalog{Pools: p.OverflowPools, Overflows: defs}
		if pools[i], err = cat.Resolve(fmt.Sprintf("ipam.pools[%d]", i), p); err != nil {
			return nil, err
		}
	}
	return pools, nil
}

// chainsNamed: a pool or a definition may name an overflow. Without one
// the chains need no parsing of poolDefinitions.
func chainsNamed(pools []pool.Pool, defs map[string]json.RawMessage) bool {
	for _, d := range defs {
		if bytes.Contains(d, []byte(`"overflow"`)) {
			return true
		}
	}
	return slices.ContainsFunc(pools, func(p pool.Pool) bool { return p.Overflow != "" })
}

// chooseFunc is a selector's choice for one request: the selection's
// pools, sticky key, STATUS's sets and quota, without the result that
// selection puts around them.
type chooseFunc func(*plugin.Request) (pool.Selection, error)

// selectorFuncs turns a selector's choices into the five CNI commands,
// each answering with the selection: ipam-delegated chains it into the
// allocator's prevResult, which is how a DEL, GC or STATUS reaches the
// allocator with the pools it concerns. attached serves ADD and CHECK,
// which concern one attachment; every serves DEL and GC, and STATUS
// unless status is set: every pool the selector could have chosen, since
// a DEL may carry less than its ADD did (CNI_ARGS or annotations dropped)
// and must still free what the ADD reserved.
func selectorFuncs(attached, every, status chooseFunc) plugin.Funcs {
	answer := func(choose chooseFunc) plugin.Func {
		return func(req *plugin.Request) (types.Result, error) {
			ch, err := choose(req)
			if err != nil {
				return nil, err
			}
			return selection(req, ch)
		}
	}
	if status == nil {
		status = every
	}
	return plugin.Funcs{Add: answer(attached), Check: answer(attached), Del: answer(every), GC: answer(every), Status: answer(status)}
}

// poolsOnly is a choice of pools alone, never sticky.
func poolsOnly(pools []pool.Pool, err error) (pool.Selection, error) {
	return pool.Selection{Pools: pools}, err
}

// selection is the result: the choice, with prevResult.ips copied so that
// DEL and CHECK reach the allocator with the addresses it handed out. The
// sticky key is the choice's own, else prevResult's (passed on like the
// addresses, for a selector chained after another).
func selection(req *plugin.Request, sel pool.Selection) (types.Result, error) {
	res := &current.Result{CNIVersion: current.ImplementedSpecVersion}
	prev, err := req.Conf.Result()
	if err != nil {
		return nil, err
	}
	if prev != nil {
		for _, ip := range prev.IPs {
			c := *ip
			c.Interface = nil // this result lists no interfaces to point at
			res.IPs = append(res.IPs, &c)
		}
		if sel.Sticky == nil {
			sel.Sticky = prevSticky(req.Conf)
		}
	}
	sel.Inner = res
	return &sel, nil
}

// prevSticky is prevResult's "sticky" object when it names a key, else
// nil. A "sticky" of another shape is not passed on: the allocator would
// ignore it too (ipamconf.StickyKey).
func prevSticky(conf *netconf.Envelope) *pool.Sticky {
	var prev struct {
		Sticky *pool.Sticky `json:"sticky"`
	}
	if json.Unmarshal(conf.PrevResult, &prev) != nil || prev.Sticky == nil || prev.Sticky.Key == "" {
		return nil
	}
	return prev.Sticky
}
