package dsselect

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// defaultLink is the ipam.interface value meaning "the link holding the
// default route of each family".
const defaultLink = "default"

// maxLinkName is IFNAMSIZ less the terminating NUL.
const maxLinkName = 15

// ifaceKeys are ipam-ds-iface's keys in the ipam section.
type ifaceKeys struct {
	Interface     string                 `json:"interface"`
	InterfacePool string                 `json:"interfacePool"`
	Families      []string               `json:"families"`
	FamilyRanges  map[string]familyRange `json:"familyRanges"`
	Exclude       []string               `json:"exclude"`
}

// familyRange carves the containers' share out of the LAN's subnet.
type familyRange struct {
	RangeStart string `json:"rangeStart"`
	RangeEnd   string `json:"rangeEnd"`
}

// ifaceSpec is the validated configuration.
type ifaceSpec struct {
	link     string // a link name or defaultLink
	base     string // pools are base-v4 and base-v6
	families []int  // as configured, in order 4, 6; nil: every family found
	ranges   map[int]familyRange
	exclude  []string
}

// parseIface reads and validates the keys without touching the host.
func parseIface(conf *netconf.Envelope) (*ifaceSpec, error) {
	var k ifaceKeys
	if err := conf.DecodeIPAM(&k); err != nil {
		return nil, err
	}
	s := &ifaceSpec{link: k.Interface, base: k.InterfacePool, exclude: k.Exclude}
	if err := validLinkName(k.Interface); err != nil {
		return nil, err
	}
	if s.base == "" {
		s.base = "iface-" + k.Interface
		if pool.ValidName("", s.poolName(6)) != nil {
			return nil, cnierr.InvalidConfig("ipam.interface", k.Interface, "cannot name a pool; set ipam.interfacePool")
		}
	} else if err := pool.ValidName("ipam.interfacePool", s.poolName(6)); err != nil {
		return nil, cnierr.InvalidConfig("ipam.interfacePool", k.InterfacePool,
			fmt.Sprintf("with -v4/-v6 appended must be a pool name ([A-Za-z0-9][A-Za-z0-9_.-]*, at most %d characters)", pool.MaxNameLen))
	}
	if k.Families != nil {
		if len(k.Families) == 0 {
			return nil, cnierr.InvalidConfig("ipam.families", "[]", `must list "4", "6" or both`)
		}
		for i, f := range k.Families {
			fam, ok := map[string]int{"4": 4, "6": 6}[f]
			if !ok {
				return nil, cnierr.InvalidConfig(fmt.Sprintf("ipam.families[%d]", i), f, `must be "4" or "6"`)
			}
			if !slices.Contains(s.families, fam) {
				s.families = append(s.families, fam)
			}
		}
		slices.Sort(s.families)
	}
	var err error
	if s.ranges, err = parseFamilyRanges(k.FamilyRanges, s.families); err != nil {
		return nil, err
	}
	if _, err := addrspace.ParseExclusions("ipam.exclude", k.Exclude); err != nil {
		return nil, err
	}
	return s, nil
}

// validLinkName is the kernel's rule for interface names (dev_valid_name).
func validLinkName(name string) error {
	switch {
	case name == "":
		return cnierr.MissingConfig("ipam.interface")
	case len(name) > maxLinkName:
		return cnierr.InvalidConfig("ipam.interface", name, fmt.Sprintf("longer than %d characters", maxLinkName))
	case name == "." || name == ".." || strings.ContainsAny(name, "/: \t\n\r\x00"):
		return cnierr.InvalidConfig("ipam.interface", name, "not a link name")
	}
	return nil
}

func parseFamilyRanges(in map[string]familyRange, families []int) (map[int]familyRange, error) {
	keys := slices.Sorted(maps.Keys(in)) // deterministic errors
	out := make(map[int]familyRange, len(in))
	for _, k := range keys {
		field := "ipam.familyRanges." + k
		fam, ok := map[string]int{"4": 4, "6": 6}[k]
		if !ok {
			return nil, cnierr.InvalidConfig("ipam.familyRanges", k, `keys must be "4" or "6"`)
		}
		if families != nil && !slices.Contains(families, fam) {
			return nil, cnierr.InvalidConfig(field, k, "family not in ipam.families")
		}
		r := in[k]
		for _, v := range []struct{ key, s string }{{"rangeStart", r.RangeStart}, {"rangeEnd", r.RangeEnd}} {
			if v.s == "" {
				continue
			}
			a, err := netip.ParseAddr(v.s)
			if err != nil || a.Zone() != "" || a.Unmap().Is4() != (fam == 4) {
				return nil, cnierr.InvalidConfig(field+"."+v.key, v.s, fmt.Sprintf("not an IPv%d address", fam))
			}
		}
		out[fam] = r
	}
	return out, nil
}

// poolName is the pool of one family.
func (s *ifaceSpec) poolName(family int) string { return fmt.Sprintf("%s-v%d", s.base, family) }

// every lists the pools an ADD could have chosen, by name only: what DEL
// and GC name (see Iface).
func (s *ifaceSpec) every() []pool.Pool {
	var out []pool.Pool
	for _, f := range s.wanted() {
		out = append(out, pool.Pool{Name: s.poolName(f)})
	}
	return out
}

// wanted are the families looked for: those configured, else both.
func (s *ifaceSpec) wanted() []int {
	if s.families == nil {
		return []int{4, 6}
	}
	return s.families
}
