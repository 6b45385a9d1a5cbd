package ops

import (
	"errors"
	"fmt"
	"os"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/clusteraccess"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// StateScope is one network's (standalone) or one pool's state: Dir is
// where Describe places it (a directory under the data dir, or an
// ipam-da-etcd network's key prefix), Scope its name as the allocators
// key it.
type StateScope struct {
	Dir string
	alloc.Scope
}

// Label names d in output: the network's name, or "pool/<name>".
func (d StateScope) Label() string {
	if d.Pool != "" {
		return "pool/" + d.Pool
	}
	return d.Network
}

// StateDirs lists the network directories of dataDir, then the pool
// directories under its _pools, each sorted by name. A data dir that does
// not exist is an error: an operator's typo must not read as a node with
// nothing reserved.
func StateDirs(dataDir string) ([]StateScope, error) {
	nets, err := os.ReadDir(dataDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("data dir %s does not exist", dataDir)
	}
	pools, perr := os.ReadDir(dapools.PoolsDir(dataDir))
	if errors.Is(perr, os.ErrNotExist) {
		perr = nil // no pool yet
	}
	if err := errors.Join(err, perr); err != nil {
		return nil, err
	}
	var out []StateScope
	for _, n := range hostlocal.StateDirNames(nets) {
		out = append(out, stateDirOf(dataDir, alloc.Scope{Network: n}))
	}
	for _, p := range hostlocal.StateDirNames(pools) {
		out = append(out, stateDirOf(dataDir, alloc.Scope{Pool: p}))
	}
	return out, nil
}

func stateDirOf(dataDir string, s alloc.Scope) StateScope {
	return StateScope{Scope: s, Dir: dapools.ScopeDir(dataDir, s)}
}

// States reads each scope's directory, without a lock, as the plugins
// leave it.
func (Local) States(scopes []StateScope) ([]alloc.ScopeState, error) {
	out := make([]alloc.ScopeState, len(scopes))
	for i, s := range scopes {
		st := alloc.ScopeState{Place: s.Dir}
		var err error
		if st.Addrs, err = hostlocal.ReservedAddrs(s.Dir); err != nil {
			return nil, err
		}
		if st.Full, err = hostlocal.Exhausted(s.Dir); err != nil {
			return nil, err
		}
		hs, err := alloc.ListHolds(hostlocal.Reader(s.Dir))
		if err != nil {
			return nil, err
		}
		for _, e := range validHolds(hs) {
			if e.Held() {
				st.Held = append(st.Held, e.Addr)
			} else if e.Second != "" {
				st.Migrating = append(st.Migrating, e.Addr)
			}
		}
		if s.Scope.Pool != "" {
			if st.Tenants, err = hostlocal.ReadTenants(s.Dir, st.Addrs); err != nil {
				return nil, err
			}
		}
		out[i] = st
	}
	return out, nil
}

// scopeDir is where scope s keeps its state: dapools.ScopeDir, or for an
// ipam-da-etcd network (etcdPrefix set) the prefix of its claims' keys
// (docs/etcd.md, "Keys in etcd"), which the etcd backend checks against
// its own layout.
func scopeDir(dataDir, etcdPrefix string, s alloc.Scope) string {
	if etcdPrefix == "" {
		return dapools.ScopeDir(dataDir, s)
	}
	return etcdPrefix + "ip/" + s.Path() + "/"
}

// etcdPrefixOf is an ipam-da-etcd configuration's key prefix.
func etcdPrefixOf(env *netconf.Envelope) (string, error) {
	var ipam struct {
		Etcd *struct {
			Prefix string `json:"prefix"`
		} `json:"etcd"`
	}
	if err := env.DecodeIPAM(&ipam); err != nil {
		return "", err
	}
	if ipam.Etcd == nil {
		return "", cnierr.MissingConfig("ipam.etcd")
	}
	return clusteraccess.Prefix(ipam.Etcd.Prefix), nil
}
