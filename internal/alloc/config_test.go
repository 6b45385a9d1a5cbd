package alloc_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

func mustConfig(t *testing.T, conf, cniArgs string) (*alloc.Config, error) {
	t.Helper()
	env, err := netconf.Parse([]byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := ipamconf.ArgKeys(env)
	args, err := netconf.ParseCNIArgs(cniArgs, keys)
	if err != nil {
		t.Fatal(err)
	}
	return ipamconf.Parse(env, args, true)
}

// summary renders targets as "label scope rangeID requested", a pool's
// scope as "_pools/<name>".
func summary(ts []alloc.Target) string {
	var out []string
	for _, t := range ts {
		req := "-"
		if t.Requested.IsValid() {
			req = t.Requested.String()
		}
		scope := t.Scope.Network
		if t.Scope.Pool != "" {
			scope = "_pools/" + t.Scope.Pool
		}
		out = append(out, fmt.Sprintf("%s@%s#%d=%s", t.Label[:strings.IndexByte(t.Label+" (", ' ')+0], scope, t.RangeID, req))
	}
	return strings.Join(out, " ")
}

func TestTargetsAndRequests(t *testing.T) {
	const ranges = `"ranges":[[{"subnet":"10.1.0.0/24"}],[{"subnet":"10.2.0.0/24"},{"subnet":"10.3.0.0/24"}],[{"subnet":"fd00::/64"}]]`
	tests := []struct {
		name    string
		ipam    string
		extra   string // top-level keys
		cniArgs string
		want    string
		code    uint
		detail  string
	}{
		{name: "standalone, one per range set", ipam: ranges,
			want: "range@n#0=- range@n#1=- range@n#2=-"},
		{name: "requests matched in order to the first set containing them", ipam: ranges, cniArgs: "IP=10.3.0.9",
			extra: `,"args":{"cni":{"ips":["10.1.0.7"]}},"runtimeConfig":{"ips":["fd00::5/64"]}`,
			want:  "range@n#0=10.1.0.7 range@n#1=10.3.0.9 range@n#2=fd00::5"},
		{name: "a request in no set is 101", ipam: ranges, cniArgs: "IP=192.0.2.1", code: 101, detail: "192.0.2.1"},
		{name: "two requests for one set: the second is unserved", ipam: ranges, cniArgs: "IP=10.1.0.5,10.1.0.6", code: 101, detail: "10.1.0.6"},
		{name: "legacy range first", ipam: `"subnet":"10.9.0.0/24",` + ranges,
			want: "range@n#0=- range@n#1=- range@n#2=- range@n#3=-"},
		{name: "runtime ipRanges replace ranges", ipam: ranges, extra: `,"runtimeConfig":{"ipRanges":[[{"subnet":"10.8.0.0/24"}]]}`,
			want: "range@n#0=-"},
		{name: "pool mode: inline, defined, own request wins", ipam: `"poolDefinitions":{"def":[{"subnet":"10.5.0.0/24"}]}`,
			cniArgs: "IP=10.5.0.9",
			extra:   `,"prevResult":{"cniVersion":"1.0.0","pools":[{"name":"in","subnet":"10.4.0.0/24","requested_ip":"10.4.0.4"},{"name":"def"}]}`,
			want:    "pool@_pools/in#0=10.4.0.4 pool@_pools/def#0=10.5.0.9"},
		{name: "pool mode: unknown pool", ipam: `"poolDefinitions":{}`,
			extra: `,"prevResult":{"cniVersion":"1.0.0","pools":[{"name":"ghost"}]}`, code: 7, detail: "ghost"},
		{name: "pool mode: hostile pool name", ipam: `"poolDefinitions":{}`,
			extra: `,"prevResult":{"cniVersion":"1.0.0","pools":[{"name":"../../etc"}]}`, code: 7, detail: "prevResult.pools[0].name"},
		{name: "hostile pool definition name", ipam: `"poolDefinitions":{"../x":[{"subnet":"10.0.0.0/24"}]}`, code: 7, detail: "poolDefinitions"},
		{name: "overlapping range sets", ipam: `"ranges":[[{"subnet":"10.1.0.0/24"}],[{"subnet":"10.1.0.128/25"}]]`, code: 7, detail: "overlap"},
		{name: "mixed families in a set", ipam: `"ranges":[[{"subnet":"10.1.0.0/24"},{"subnet":"fd00::/64"}]]`, code: 7, detail: "ipam.ranges[0]"},
		// Keys that sit directly in an object are named there, not as a
		// range-set element the config does not have.
		{name: "legacy range overlapping a range set", ipam: `"subnet":"10.9.0.0/24",` + ranges + `,"rangeStart":"10.9.0.5"`,
			extra: `,"runtimeConfig":{"ipRanges":[[{"subnet":"10.1.0.0/24"}],[{"subnet":"10.9.0.0/25"}]]}`,
			code:  7, detail: "invalid runtimeConfig.ipRanges[1][0]: overlaps ipam ("},
		{name: "legacy range error names ipam.subnet", ipam: `"subnet":"10.9.0.5/24"`, code: 7, detail: "ipam.subnet="},
		{name: "inline pool range error names the pool's key", ipam: `"poolDefinitions":{}`,
			extra: `,"prevResult":{"cniVersion":"1.0.0","pools":[{"name":"in","subnet":"10.4.0.0/24","rangeStart":"10.5.0.1"}]}`, code: 7, detail: "prevResult.pools[0].rangeStart="},
		// host-local's config validation, matched (issue 9 items 4-6, 8).
		{name: "gateway outside the subnet accepted", ipam: `"ranges":[[{"subnet":"10.1.0.0/24","gateway":"169.254.1.1"}]]`,
			want: "range@n#0=-"},
		{name: "network and broadcast as range bounds accepted", ipam: `"ranges":[[{"subnet":"10.1.0.0/24","rangeStart":"10.1.0.0","rangeEnd":"10.1.0.255"}]]`,
			want: "range@n#0=-"},
		{name: "rangeStart after rangeEnd", ipam: `"ranges":[[{"subnet":"10.1.0.0/24","rangeStart":"10.1.0.9","rangeEnd":"10.1.0.8"}]]`,
			code: 7, detail: "ipam.ranges[0][0].rangeEnd"},
		{name: "IPv4-mapped IPv6 subnet", ipam: `"ranges":[[{"subnet":"::ffff:10.77.0.0/120"}]]`, code: 7, detail: "ipam.ranges[0][0].subnet=::ffff:10.77.0.0/120"},
		{name: "IPv4-mapped legacy subnet", ipam: `"subnet":"::ffff:10.77.0.0/120"`, code: 7, detail: "ipam.subnet"},
		{name: "64 range sets", ipam: `"ranges":` + rangeSets(64), want: strings.TrimSpace(strings.Repeat("range@n#N=- ", 64))},
		{name: "65 range sets", ipam: `"ranges":` + rangeSets(65), code: 7, detail: "at most 64 range sets"},
		{name: "64 range sets and the legacy range", ipam: `"subnet":"10.200.0.0/24","ranges":` + rangeSets(64), code: 7, detail: "65 range sets"},
		{name: "65 runtime ipRanges", ipam: ranges, extra: `,"runtimeConfig":{"ipRanges":` + rangeSets(65) + `}`, code: 7, detail: "runtimeConfig.ipRanges"},
		{name: "65 pools", ipam: `"poolDefinitions":{}`, extra: `,"prevResult":{"cniVersion":"1.0.0","pools":` + pools(65) + `}`, code: 7, detail: "at most 64 pools"},
		{name: "bad requested address", ipam: ranges, cniArgs: "IP=10.1.0.300", code: 4, detail: "CNI_ARGS"},
		{name: "bad args.cni.ips", ipam: ranges, extra: `,"args":{"cni":{"ips":["nope"]}}`, code: 7, detail: "args.cni.ips[0]"},
		{name: "args.cni.ips wrong type", ipam: ranges, extra: `,"args":{"cni":{"ips":"10.1.0.1"}}`, code: 7, detail: "args.cni.ips"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := `{"cniVersion":"1.0.0","name":"n","ipam":{` + tt.ipam + `}` + tt.extra + `}`
			c, err := mustConfig(t, conf, tt.cniArgs)
			var ts []alloc.Target
			if err == nil {
				ts, err = c.AddTargets()
			}
			if tt.code != 0 {
				e := cnierr.As(err)
				if e.Code != tt.code || !strings.Contains(e.Msg+" "+e.Details, tt.detail) {
					t.Fatalf("error = %+v, want code %d mentioning %q", e, tt.code, tt.detail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := summary(ts)
			if strings.HasPrefix(tt.name, "64") {
				got = regexp.MustCompile(`#\d+=`).ReplaceAllString(got, "#N=")
			}
			if got != tt.want {
				t.Errorf("targets:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// rangeSets is n one-range sets, 10.0.i.0/24.
func rangeSets(n int) string {
	sets := make([]string, n)
	for i := range sets {
		sets[i] = fmt.Sprintf(`[{"subnet":"10.0.%d.0/24"}]`, i)
	}
	return "[" + strings.Join(sets, ",") + "]"
}

// pools is n Pool objects with inline subnets.
func pools(n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf(`{"name":"p%d","subnet":"10.0.%d.0/24"}`, i, i)
	}
	return "[" + strings.Join(ps, ",") + "]"
}
