package alloctest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// CNI is the Subject of an allocator's own commands: each call is one CNI
// command of the personality, run in-process through plugin.Run exactly
// as an exec of the binary runs it (environment and configuration in,
// the printed result or error out), at the call's time. The contract's
// targets arrive as a selector would hand them over: prevResult.pools,
// with the sticky key and the quota of the selection. The operators'
// releases go through Operators, the code behind `cniplugins release`.
type CNI struct {
	// Command is what the next command runs as: the personality and its
	// own keys of the ipam object (dataDir, etcd…; type and sticky are
	// added). It is asked once per command, so that a subject can make
	// one command crash (WithCrashes).
	Command func() (plugin.Personality, map[string]any)
	// Operators are the operators' commands over the same state: the
	// Subject's releases.
	Operators
}

// Operators is what `cniplugins release` does over one store.
type Operators interface {
	ReleaseKey(key, ifname string, now time.Time) error
	ReleaseAddr(ip netip.Addr, now time.Time) error
}

// allPools are the pools every DEL, CHECK and GC of the contract names:
// p with its chain, and the pool of the second target.
func allPools() []alloc.Target { return append(CheckTargets(), second()) }

// Add implements Subject.
func (s CNI) Add(c Call, targets []alloc.Target) ([]netip.Prefix, error) {
	prev := selection(c, targets)
	out, err := s.run("ADD", c, prev)
	if err != nil {
		return nil, err
	}
	var res struct {
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("ADD printed %s: %w", out, err)
	}
	ps := make([]netip.Prefix, len(res.IPs))
	for i, ip := range res.IPs {
		if ps[i], err = netip.ParsePrefix(ip.Address); err != nil {
			return nil, fmt.Errorf("ADD printed %s: %w", out, err)
		}
	}
	return ps, nil
}

// Del implements Subject: hints are prevResult's addresses.
func (s CNI) Del(c Call, hints []netip.Addr) error {
	prev := selection(c, allPools())
	prev["ips"] = ipsOf(hints)
	_, err := s.run("DEL", c, prev)
	return err
}

// Check implements Subject: without addresses, the selection is
// CheckTargets' pools alone, the targets every such CHECK verifies.
func (s CNI) Check(c Call, ips []netip.Addr) error {
	pools := allPools()
	if len(ips) == 0 {
		pools = CheckTargets()
	}
	prev := selection(c, pools)
	prev["ips"] = ipsOf(ips)
	_, err := s.run("CHECK", c, prev)
	return err
}

// GC implements Subject: the live attachments are the runtime's
// cni.dev/valid-attachments.
func (s CNI) GC(live []alloc.Attachment, now time.Time) error {
	refs := []map[string]string{}
	for _, a := range live {
		refs = append(refs, map[string]string{"containerID": a.ContainerID, "ifname": a.IfName})
	}
	c := Call{Att: alloc.Attachment{Network: "net"}, Now: now}
	_, err := s.run("GC", c, selection(c, allPools()), "cni.dev/valid-attachments", refs)
	return err
}

// Status implements Subject: the selection is targets, as a selector
// hands them to STATUS.
func (s CNI) Status(targets []alloc.Target, now time.Time) error {
	c := Call{Att: alloc.Attachment{Network: "net"}, Now: now}
	_, err := s.run("STATUS", c, selection(c, targets))
	return err
}

// run runs one command for c with prev as prevResult (and extra
// top-level keys of the configuration, in pairs), and returns what it
// printed, or its CNI error.
func (s CNI) run(cmd string, c Call, prev map[string]any, extra ...any) ([]byte, error) {
	p, own := s.Command()
	ipam := map[string]any{"type": p.Name}
	for k, v := range own {
		ipam[k] = v
	}
	if c.Key != "" {
		ipam["sticky"] = map[string]any{"by": []string{alloc.StickyByArg}, "holdFor": c.HoldFor.String()}
	}
	conf := map[string]any{"cniVersion": "1.1.0", "name": c.Att.Network, "ipam": ipam, "prevResult": prev}
	if c.Migration != "" {
		conf["runtimeConfig"] = map[string]any{"io.kubernetes.cri.pod-annotations": map[string]string{alloc.AnnotationMigrationJob: c.Migration}}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		conf[extra[i].(string)] = extra[i+1]
	}
	stdin, err := json.Marshal(conf)
	if err != nil {
		return nil, err
	}
	environ := []string{"CNI_COMMAND=" + cmd, "CNI_PATH=/nonexistent"}
	if cmd != "GC" && cmd != "STATUS" {
		environ = append(environ, "CNI_CONTAINERID="+c.Att.ContainerID, "CNI_IFNAME="+c.Att.IfName, "CNI_NETNS=/var/run/netns/contract")
	}
	var stdout, stderr bytes.Buffer
	exit := plugin.Run(p, plugin.IO{Environ: environ, Stdin: bytes.NewReader(stdin), Stdout: &stdout, Stderr: &stderr,
		Now: func() time.Time { return c.Now }})
	if exit == 0 {
		return stdout.Bytes(), nil
	}
	e := &types.Error{}
	if err := json.Unmarshal(stdout.Bytes(), e); err != nil || e.Code == 0 {
		return nil, fmt.Errorf("%s exit %d: %s %s", cmd, exit, stdout.Bytes(), stderr.Bytes())
	}
	return nil, e
}

// selection is what a selector hands the allocator for targets: each a
// pool (its ranges, exclusions, requested address and overflow chain),
// with c's sticky key and quota.
func selection(c Call, targets []alloc.Target) map[string]any {
	pools := make([]map[string]any, len(targets))
	for i, t := range targets {
		pools[i] = poolOf(t)
		// Each pool names the next of the chain; the chain's pools come
		// with it, as a selector resolves them.
		var chain []map[string]any
		prev := pools[i]
		for _, o := range t.Overflow {
			prev["overflow"] = o.Scope.Pool
			prev = poolOf(o)
			chain = append(chain, prev)
		}
		if chain != nil {
			pools[i]["overflowPools"] = chain
		}
	}
	prev := map[string]any{"cniVersion": "1.1.0", "pools": pools}
	if c.Key != "" {
		by := alloc.StickyByArg
		if c.Migration != "" {
			by = alloc.StickyByKubevirt // the one source whose migration name is read
		}
		prev["sticky"] = map[string]string{"key": c.Key, "by": by}
	}
	if c.Quota != nil {
		prev["quota"] = c.Quota
	}
	return prev
}

// poolOf is target t as a Pool object.
func poolOf(t alloc.Target) map[string]any {
	var ranges []addrspace.RangeConfig
	var excluded []string
	for _, r := range t.Set {
		rc := addrspace.RangeConfig{Subnet: r.Subnet.String(), RangeStart: r.Start.String(), RangeEnd: r.End.String()}
		if r.Gateway.IsValid() {
			rc.Gateway = r.Gateway.String()
		}
		ranges = append(ranges, rc)
		// The contract's subnets are a handful of addresses: each
		// excluded one is listed.
		for a := r.Subnet.Masked().Addr(); r.Subnet.Contains(a); a = a.Next() {
			if t.Exclude.Contains(a) && !slices.Contains(excluded, a.String()) {
				excluded = append(excluded, a.String())
			}
		}
	}
	p := map[string]any{"name": t.Scope.Pool, "ranges": ranges}
	if excluded != nil {
		p["exclude"] = excluded
	}
	if t.Requested.IsValid() {
		p["requested-ip"] = t.Requested.String()
	}
	return p
}

// ipsOf is addrs as a result's ips, each in its /29.
func ipsOf(addrs []netip.Addr) []map[string]string {
	out := []map[string]string{}
	for _, a := range addrs {
		out = append(out, map[string]string{"address": netip.PrefixFrom(a, 29).String()})
	}
	return out
}
