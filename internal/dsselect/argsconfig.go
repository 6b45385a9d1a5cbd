package dsselect

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// maxRules bounds ipam.rules: matching is linear, and a config with
// thousands of rules is a mistake better caught than executed.
const maxRules = 1024

// argsConfig is ipam-ds-args' ipam section, validated: every pattern
// compiles and every pool is well formed before any attachment is looked
// at, so a typo fails every command the same way (code 7).
type argsConfig struct {
	rules    []rule
	defaults []pool.Pool
	catalogue
	// definitions is ipam.poolDefinitions, read for overflow chains and
	// to place the cniplugins.io/ip addresses (alloc.RequestPools).
	definitions map[string]json.RawMessage
	// namespaceFrom is ipam.namespaceFrom (netconf.IdentityOf).
	namespaceFrom string
}

// rule is one entry of ipam.rules.
type rule struct {
	field     string // "ipam.rules[2]": how errors name the rule
	pools     []pool.Pool
	podChoice []string
	// sticky: an attachment this rule selects for gets a sticky key
	// (stickyOf), passed on to the allocator in the selection: "" none,
	// stickyPod ("sticky": true) or alloc.StickyByKubevirt.
	sticky string
	// quota, when set, bounds each tenant's addresses (quota.go).
	quota *ruleQuota

	namespace, podName, ifname string // "" = not matched on
	args, labels, annotations  map[string]string
}

// ruleJSON is a rule as written; unknown keys are rejected so that a
// misspelt match key ("namepsace") cannot silently widen a rule.
type ruleJSON struct {
	Pools       json.RawMessage   `json:"pools"`
	PodChoice   []string          `json:"podChoice"`
	Sticky      json.RawMessage   `json:"sticky"`
	Quota       json.RawMessage   `json:"quota"`
	Namespace   *string           `json:"namespace"`
	PodName     *string           `json:"podName"`
	IfName      *string           `json:"ifname"`
	Args        map[string]string `json:"args"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// knownKeys is the object raw's values, raw; a key that is not in known
// is code 7 naming it.
func knownKeys(raw json.RawMessage, field string, known []string) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, cnierr.InvalidConfig(field, "the given value", "must be a JSON object")
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if !slices.Contains(known, k) {
			return nil, cnierr.InvalidConfig(field+"."+k, "", "unknown key; a rule holds "+strings.Join(known, ", "))
		}
	}
	return obj, nil
}

// argsConfigKey is parseArgsConfig's netconf.Memo key.
type argsConfigKey struct{}

// parseArgsConfig reads ipam.rules and ipam.defaultPools, once per
// configuration (ArgKeys and the command both need them).
func parseArgsConfig(conf *netconf.Envelope) (*argsConfig, error) {
	return netconf.Memo(conf, argsConfigKey{}, readArgsConfig)
}

func readArgsConfig(conf *netconf.Envelope) (*argsConfig, error) {
	var ipam struct {
		Rules           []json.RawMessage          `json:"rules"`
		DefaultPools    json.RawMessage            `json:"defaultPools"`
		PoolDefinitions map[string]json.RawMessage `json:"poolDefinitions"`
		NamespaceFrom   string                     `json:"namespaceFrom"`
	}
	if err := conf.DecodeIPAM(&ipam); err != nil {
		return nil, err
	}
	hasDefaults := len(ipam.DefaultPools) > 0 && string(ipam.DefaultPools) != "null"
	if len(ipam.Rules) == 0 && !hasDefaults {
		// Nothing could ever be selected: every ADD would fail with 103.
		return nil, cnierr.MissingConfig("ipam.rules")
	}
	if len(ipam.Rules) > maxRules {
		return nil, cnierr.InvalidConfig("ipam.rules", len(ipam.Rules), fmt.Sprintf("more than %d rules", maxRules))
	}
	if err := netconf.ParseNamespaceFrom(ipam.NamespaceFrom); err != nil {
		return nil, err
	}
	c := &argsConfig{definitions: ipam.PoolDefinitions, namespaceFrom: ipam.NamespaceFrom}
	add := func(field string, pools []pool.Pool) error {
		for j, p := range pools {
			if err := c.add(p, fmt.Sprintf("%s[%d]", field, j)); err != nil {
				return err
			}
		}
		return nil
	}
	for i, raw := range ipam.Rules {
		r, err := parseRule(fmt.Sprintf("ipam.rules[%d]", i), raw)
		if err != nil {
			return nil, err
		}
		if err := add(r.field+".pools", r.pools); err != nil {
			return nil, err
		}
		c.rules = append(c.rules, r)
	}
	if hasDefaults {
		var err error
		if c.defaults, err = pool.ParseRefs(ipam.DefaultPools, "ipam.defaultPools"); err != nil {
			return nil, err
		}
		if err := add("ipam.defaultPools", c.defaults); err != nil {
			return nil, err
		}
	}
	// podChoice names that no rule or default describes are bare names:
	// the allocator's poolDefinitions gives their ranges.
	for _, r := range c.rules {
		for j, name := range r.podChoice {
			if err := c.add(pool.Pool{Name: name}, fmt.Sprintf("%s.podChoice[%d]", r.field, j)); err != nil {
				return nil, err
			}
		}
	}
	if err := c.resolveChains(); err != nil {
		return nil, err
	}
	for _, r := range c.rules {
		c.resolve(r.pools)
	}
	c.resolve(c.defaults)
	return c, nil
}

// resolveChains gives every pool of the catalogue its overflow chain
// (pool.Catalog): the pools of the rules and defaults, then
// ipam.poolDefinitions. The selection carries it, so the allocator needs
// nothing else; DEL and GC, which name the catalogue, reach every pool of
// every chain. A config without overflow skips it.
func (c *argsConfig) resolveChains() error {
	if !chainsNamed(c.pools, c.definitions) {
		return nil
	}
	defs, err := pool.ParseOverflows("ipam.poolDefinitions", c.definitions)
	if err != nil {
		return err
	}
	chains := pool.Catalog{Pools: slices.Clone(c.pools), Overflows: defs}
	for i := range c.pools {
		if c.pools[i], err = chains.Resolve(c.fields[i], c.pools[i]); err != nil {
			return err
		}
	}
	return nil
}

func parseRule(field string, raw json.RawMessage) (rule, error) {
	var rj ruleJSON
	if err := netconf.Decode(raw, field, &rj); err != nil {
		return rule{}, err
	}
	known := []string{"pools", "podChoice", "sticky", "quota", "namespace", "podName", "ifname", "args", "labels", "annotations"}
	if _, err := knownKeys(raw, field, known); err != nil {
		return rule{}, err
	}
	r := rule{field: field, args: rj.Args, labels: rj.Labels, annotations: rj.Annotations}
	var err error
	if r.sticky, err = parseRuleSticky(field+".sticky", rj.Sticky); err != nil {
		return rule{}, err
	}
	if r.pools, err = pool.ParseRefs(rj.Pools, field+".pools"); err != nil {
		return rule{}, err
	}
	for i, name := range rj.PodChoice {
		f := fmt.Sprintf("%s.podChoice[%d]", field, i)
		if err := pool.ValidName(f, name); err != nil {
			return rule{}, err
		}
		if slices.Contains(rj.PodChoice[:i], name) {
			return rule{}, cnierr.InvalidConfig(f, name, "pool listed twice")
		}
	}
	r.podChoice = rj.PodChoice
	if r.quota, err = parseQuota(field+".quota", rj.Quota); err != nil {
		return rule{}, err
	}
	for _, s := range []struct {
		key string
		in  *string
		out *string
	}{{"namespace", rj.Namespace, &r.namespace}, {"podName", rj.PodName, &r.podName}, {"ifname", rj.IfName, &r.ifname}} {
		if s.in == nil {
			continue
		}
		if err := checkPattern(field+"."+s.key, *s.in); err != nil {
			return rule{}, err
		}
		*s.out = *s.in
	}
	for _, m := range []struct {
		key string
		m   map[string]string
	}{{"args", r.args}, {"labels", r.labels}, {"annotations", r.annotations}} {
		for _, k := range slices.Sorted(maps.Keys(m.m)) {
			if k == "" {
				return rule{}, cnierr.InvalidConfig(field+"."+m.key, `""`, "empty key")
			}
			if err := checkPattern(field+"."+m.key+"."+k, m.m[k]); err != nil {
				return rule{}, err
			}
		}
	}
	return r, nil
}

// checkPattern rejects what path.Match would reject at match time, and the
// empty pattern, which could only ever match a value that is never
// considered present.
func checkPattern(field, pattern string) error {
	if pattern == "" {
		return cnierr.InvalidConfig(field, `""`, "empty pattern")
	}
	if _, err := path.Match(pattern, ""); err != nil {
		return cnierr.InvalidConfig(field, pattern, "malformed glob pattern")
	}
	return nil
}

// catalogue holds every pool any rule or default names, each name once,
// in order of first appearance: DEL, GC and STATUS name all of it, and a
// podChoice name resolves to its entry here. A bare name refers to the
// pool of that name defined elsewhere in the config (or, if nowhere, in
// the allocator's poolDefinitions). A name defined twice must be defined
// alike: DEL names each pool once, so a second definition would be
// unreachable.
type catalogue struct {
	pools []pool.Pool
	// fields are where the config writes each entry (the first place
	// that gives it ranges, else the first that names it): errors, and
	// `cniplugins pools` and validate (Selectable), name a pool by it.
	fields []string
}

// find is the index of the pool named name, -1 when none (every
// podChoice name has one).
func (c *catalogue) find(name string) int {
	return slices.IndexFunc(c.pools, func(p pool.Pool) bool { return p.Name == name })
}

// named is the pool named name, which the catalogue holds.
func (c *catalogue) named(name string) pool.Pool { return c.pools[c.find(name)] }

func (c *catalogue) add(p pool.Pool, field string) error {
	i := c.find(p.Name)
	switch {
	case i < 0:
		c.pools = append(c.pools, p)
		c.fields = append(c.fields, field)
	case bare(c.pools[i]) && !bare(p):
		c.pools[i], c.fields[i] = p, field
	case bare(p):
	default:
		a, _ := json.Marshal(c.pools[i])
		b, _ := json.Marshal(p)
		if string(a) != string(b) {
			return cnierr.InvalidConfig(field, p.Name, "pool defined differently elsewhere in ipam.rules or ipam.defaultPools")
		}
	}
	return nil
}

// resolve replaces the bare names in pools by their definitions.
func (c *catalogue) resolve(pools []pool.Pool) {
	for i, p := range pools {
		pools[i] = c.named(p.Name)
	}
}

// bare: the pool is only a name.
func bare(p pool.Pool) bool {
	a, _ := json.Marshal(p)
	b, _ := json.Marshal(pool.Pool{Name: p.Name})
	return string(a) == string(b)
}

// sets lists, once each, the pool sets an ADD can be given: each rule's
// pools, each pool a rule lets the attachment choose (the least it can
// ask for is one of them), and the defaults.
func (c *argsConfig) sets() [][]string {
	var out [][]string
	seen := map[string]bool{}
	add := func(names ...string) {
		key := strings.Join(names, "/") // "/" is in no pool name
		if len(names) > 0 && !seen[key] {
			seen[key] = true
			out = append(out, names)
		}
	}
	for _, r := range c.rules {
		add(pool.Names(r.pools)...)
		for _, name := range r.podChoice {
			add(name)
		}
	}
	add(pool.Names(c.defaults)...)
	return out
}

// stickyPod is a rule's "sticky": true: the key "<namespace>/<podName>".
const stickyPod = "pod"

// parseRuleSticky reads a rule's "sticky": true, false, null or
// "kubevirt" (the key alloc.KubevirtKey).
func parseRuleSticky(field string, raw json.RawMessage) (string, error) {
	switch strings.TrimSpace(string(raw)) {
	case "", "null", "false":
		return "", nil
	case "true":
		return stickyPod, nil
	case `"` + alloc.StickyByKubevirt + `"`:
		return alloc.StickyByKubevirt, nil
	}
	return "", cnierr.InvalidConfig(field, string(raw), `must be true, false or "kubevirt"`)
}
