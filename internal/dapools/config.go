package dapools

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

const (
	// DefaultDataDir is host-local's.
	DefaultDataDir = "/var/lib/cni/networks"
	// DefaultLockTimeout bounds the wait for a state directory's lock.
	DefaultLockTimeout = 10 * time.Second
	// maxLockTimeout keeps a typo from hanging a runtime for hours.
	maxLockTimeout = 5 * time.Minute
	// poolsDir holds one state directory per pool, beside the networks'.
	// Network names cannot start with '_', so it never collides with one.
	poolsDir = "_pools"
	// maxRangeSets bounds the range sets of one attachment (the legacy
	// top-level range counts): each costs an address and two files per
	// ADD, and no real attachment needs more. Pools have the same bound,
	// pool.MaxPerAttachment.
	maxRangeSets = pool.MaxPerAttachment
)

// ipamConf is the ipam section: host-local's keys plus this project's.
type ipamConf struct {
	Ranges [][]addrspace.RangeConfig `json:"ranges"`
	// The deprecated single range at the top level of ipam.
	addrspace.RangeConfig
	Routes     []*types.Route `json:"routes"`
	ResolvConf string         `json:"resolvConf"`
	DataDir    string         `json:"dataDir"`

	// Each entry is a range set or {"ranges": [...], "exclude": [...]}.
	PoolDefinitions map[string]json.RawMessage `json:"poolDefinitions"`
	LockTimeout     string                     `json:"lockTimeout"`
}

// netArgs is what the rest of the config says about requested addresses
// and runtime-supplied ranges.
type netArgs struct {
	Args struct {
		CNI struct {
			IPs []string `json:"ips"`
		} `json:"cni"`
	}
	RuntimeConfig struct {
		IPs      []string                  `json:"ips"`
		IPRanges [][]addrspace.RangeConfig `json:"ipRanges"`
	}
}

// config is everything ipam-da-pools needs, validated.
type config struct {
	network     string
	dataDir     string
	lockTimeout time.Duration
	routes      []*types.Route
	resolvConf  string

	// standalone range sets (host-local mode); nil in pool mode
	rangeSets []addrspace.RangeSet
	// pools selected by prevResult.pools; nil in standalone mode
	pools []pool.Pool
	// poolDefs are ipam.poolDefinitions, validated
	poolDefs map[string]pool.Definition
	// requested are the addresses asked for outside Pool objects, in order:
	// CNI_ARGS IP, args.cni.ips, runtimeConfig.ips.
	requested []netip.Addr
}

// parseConfig reads and validates everything before anything touches disk.
// needRanges is false for DEL and GC, which must work from state alone
// even when the ranges in the config have since changed.
func parseConfig(conf *netconf.Envelope, cniArgs []netconf.CNIArg, needRanges bool) (*config, error) {
	var ipam ipamConf
	if err := conf.DecodeIPAM(&ipam); err != nil {
		return nil, err
	}
	var extra netArgs
	if err := conf.DecodeArgs(&extra.Args); err != nil {
		return nil, err
	}
	if err := conf.DecodeRuntimeConfig(&extra.RuntimeConfig); err != nil {
		return nil, err
	}
	c := &config{network: conf.Name, routes: ipam.Routes, resolvConf: ipam.ResolvConf}
	var err error
	if c.dataDir, err = dataDir(ipam.DataDir); err != nil {
		return nil, err
	}
	if c.lockTimeout, err = lockTimeout(ipam.LockTimeout); err != nil {
		return nil, err
	}
	if c.requested, err = requestedAddrs(cniArgs, extra); err != nil {
		return nil, err
	}
	if c.poolDefs, err = pool.ParseDefinitions("ipam.poolDefinitions", ipam.PoolDefinitions); err != nil {
		return nil, err
	}
	pools, poolMode, err := pool.FromPrevResult(conf)
	if err != nil {
		return nil, err
	}
	if poolMode {
		c.pools = pools
		return c, nil
	}
	if !needRanges {
		return c, nil
	}
	c.rangeSets, err = standaloneRanges(ipam, extra)
	return c, err
}

// dataDir validates ipam.dataDir before anything touches the disk. A
// dataDir that exists must be a real directory: a file would only fail
// later as an I/O error (code 5) when it is a mistake in the config, and a
// symbolic link would let whoever controls it redirect every state
// directory (and the removals GC makes there) to another place, a change
// the flock and the index stamps cannot notice. A missing dataDir is
// created on first use, as host-local does.
func dataDir(dir string) (string, error) {
	if dir == "" {
		dir = DefaultDataDir
	}
	if !filepath.IsAbs(dir) {
		return "", cnierr.InvalidConfig("ipam.dataDir", dir, "must be an absolute path")
	}
	dir = filepath.Clean(dir)
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return dir, nil
	case errors.Is(err, syscall.ENOTDIR):
		return "", cnierr.InvalidConfig("ipam.dataDir", dir, "a parent of it is not a directory")
	case err != nil:
		return "", cnierr.IO("stat", dir, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return "", cnierr.InvalidConfig("ipam.dataDir", dir, "is a symbolic link; name the directory it points to")
	case !fi.IsDir():
		return "", cnierr.InvalidConfig("ipam.dataDir", dir, "is not a directory")
	}
	return dir, nil
}

func lockTimeout(s string) (time.Duration, error) {
	if s == "" {
		return DefaultLockTimeout, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > maxLockTimeout {
		return 0, cnierr.InvalidConfig("ipam.lockTimeout", s, "must be a duration between 1ms and 5m, like \"10s\"")
	}
	return d, nil
}

// standaloneRanges follows host-local: runtimeConfig.ipRanges replaces
// ipam.ranges; the deprecated top-level range comes first; sets must not
// overlap one another.
func standaloneRanges(ipam ipamConf, extra netArgs) ([]addrspace.RangeSet, error) {
	cfgs, field := ipam.Ranges, "ipam.ranges"
	if len(extra.RuntimeConfig.IPRanges) > 0 {
		cfgs, field = extra.RuntimeConfig.IPRanges, "runtimeConfig.ipRanges"
	}
	var sets []addrspace.RangeSet
	legacy := 0
	if ipam.Subnet != "" {
		legacy = 1
	}
	if n := len(cfgs) + legacy; n > maxRangeSets {
		return nil, cnierr.InvalidConfig(field, fmt.Sprintf("%d range sets", n), fmt.Sprintf("at most %d range sets", maxRangeSets))
	}
	if legacy == 1 {
		// The legacy keys sit in ipam itself: errors name ipam.subnet,
		// not a range-set element that does not exist in the config.
		r, err := ipam.RangeConfig.Canonicalize("ipam")
		if err != nil {
			return nil, err
		}
		sets = append(sets, addrspace.RangeSet{r})
	}
	for i, cfg := range cfgs {
		rs, err := addrspace.ParseRangeSet(fmt.Sprintf("%s[%d]", field, i), cfg)
		if err != nil {
			return nil, err
		}
		sets = append(sets, rs)
	}
	if len(sets) == 0 {
		return nil, cnierr.MissingConfig("ipam.ranges")
	}
	return sets, addrspace.CheckDisjoint(sets, func(set, idx int) string {
		if set < legacy {
			return "ipam" // the legacy range's keys sit in ipam itself
		}
		return fmt.Sprintf("%s[%d][%d]", field, set-legacy, idx)
	})
}

// definedPools lists, sorted, the pools of ipam.poolDefinitions.
func (c *config) definedPools() []string { return slices.Sorted(maps.Keys(c.poolDefs)) }
