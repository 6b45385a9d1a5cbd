package dockeripam

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/pool"
)

const (
	// DefaultSocket is where dockerd looks for plugin sockets; the file's
	// base name is the driver name (`--ipam-driver cniplugins`).
	DefaultSocket = "/run/docker/plugins/cniplugins.sock"
	// DefaultDataDir is ipam-da-pools' default, so both share pools
	// without configuration.
	DefaultDataDir = dapools.DefaultDataDir
)

// DefaultAddressPools are where subnets come from when Docker asks for a
// pool without naming one, like dockerd's own default-address-pools but
// away from the 172.17-31 and 192.168 ranges dockerd itself uses.
func DefaultAddressPools() []AddressPool {
	return []AddressPool{
		{Base: "10.222.0.0/16", Size: 24},
		{Base: "fd63:6e69:706c::/48", Size: 64},
	}
}

// AddressPool is one entry of defaultAddressPools: subnets of Size bits
// carved from Base, dockerd's daemon.json format.
type AddressPool struct {
	Base string `json:"base"`
	Size int    `json:"size"`
}

// fileConfig is the config file as written.
type fileConfig struct {
	DataDir             string                     `json:"dataDir"`
	LockTimeout         string                     `json:"lockTimeout"`
	PoolDefinitions     map[string]json.RawMessage `json:"poolDefinitions"`
	DefaultAddressPools []AddressPool              `json:"defaultAddressPools"`
}

// Config is the driver's validated configuration.
type Config struct {
	DataDir     string
	LockTimeout time.Duration
	// Pools are the defined pools, by name, as conflists define them.
	Pools map[string]pool.Definition
	// Defaults are the default address pools, validated.
	Defaults []defaultPool
}

type defaultPool struct {
	base netip.Prefix
	size int
}

// LoadConfig reads the config file at path ("" means none: every default)
// and applies dataDir when it is not empty (the --data-dir flag wins over
// the file).
func LoadConfig(path, dataDir string) (Config, error) {
	var fc fileConfig
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("config file: %w", err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fc); err != nil {
			return Config{}, fmt.Errorf("config file %s: %w", path, err)
		}
	}
	if dataDir != "" {
		fc.DataDir = dataDir
	}
	c, err := fc.validate()
	if err != nil && path != "" {
		return Config{}, fmt.Errorf("config file %s: %w", path, err)
	}
	return c, err
}

func (fc fileConfig) validate() (Config, error) {
	c := Config{DataDir: fc.DataDir, LockTimeout: dapools.DefaultLockTimeout}
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if !filepath.IsAbs(c.DataDir) {
		return Config{}, fmt.Errorf("dataDir %q: must be an absolute path", c.DataDir)
	}
	c.DataDir = filepath.Clean(c.DataDir)
	if fc.LockTimeout != "" {
		d, err := time.ParseDuration(fc.LockTimeout)
		if err != nil || d <= 0 || d > 5*time.Minute {
			return Config{}, fmt.Errorf("lockTimeout %q: must be a duration between 1ms and 5m, like \"10s\"", fc.LockTimeout)
		}
		c.LockTimeout = d
	}
	var err error
	// The one parser of poolDefinitions, ipam-da-pools' too, so that a pool
	// means the same ranges and exclusions to Docker and to CNI.
	if c.Pools, err = pool.ParseDefinitions("poolDefinitions", fc.PoolDefinitions); err != nil {
		return Config{}, err
	}
	defaults := fc.DefaultAddressPools
	if defaults == nil {
		defaults = DefaultAddressPools()
	}
	for i, d := range defaults {
		dp, err := d.validate(fmt.Sprintf("defaultAddressPools[%d]", i))
		if err != nil {
			return Config{}, err
		}
		c.Defaults = append(c.Defaults, dp)
	}
	return c, nil
}

func (a AddressPool) validate(field string) (defaultPool, error) {
	base, err := netip.ParsePrefix(a.Base)
	if err != nil || base.Masked() != base {
		return defaultPool{}, fmt.Errorf("%s.base %q: not a network CIDR", field, a.Base)
	}
	if a.Size < base.Bits() || a.Size > base.Addr().BitLen()-2 {
		return defaultPool{}, fmt.Errorf("%s.size %d: must be between the base's prefix length %d and %d", field, a.Size, base.Bits(), base.Addr().BitLen()-2)
	}
	return defaultPool{base: base, size: a.Size}, nil
}
