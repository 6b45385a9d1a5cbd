package integration

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// The differential test drives ipam-da-pools and Debian's host-local with
// the same randomized plan of ADD, DEL and CHECK operations. Before every
// operation host-local's state directory is copied over ours, so both
// start from the same state and one difference cannot hide the next. Only
// the differences README's "Where ipam-da-pools differs from host-local"
// documents are tolerated (see tolerated).
var (
	diffSeeds = flag.Int("diff.seeds", 3, "differential test: number of seeds to run (seeds 1..N)")
	diffSeed  = flag.Uint64("diff.seed", 0, "differential test: run only this seed")
	diffOps   = flag.Int("diff.ops", 60, "differential test: operations per seed")
)

func TestDifferentialAgainstHostLocal(t *testing.T) {
	needHostLocal(t)
	seeds := make([]uint64, 0, *diffSeeds)
	for s := 1; s <= *diffSeeds; s++ {
		seeds = append(seeds, uint64(s))
	}
	if *diffSeed != 0 {
		seeds = []uint64{*diffSeed}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runDifferential(t, seed, *diffOps) })
	}
}

// diffNet is one seed's network: range set 0 spans two disjoint IPv4
// subnets, range set 1 is IPv6; all small, so that plans reach exhaustion
// (12 attachments compete for about 6 IPv4 addresses).
type diffNet struct {
	ranges string   // the JSON of ipam.ranges
	addrs  []string // candidate requested addresses: in, around and outside the ranges
}

func newDiffNet(r *rand.Rand) diffNet {
	gw := func(subnet string) string {
		switch r.IntN(4) {
		case 0:
			return fmt.Sprintf(`,"gateway":"%s3"`, subnet) // inside the range
		case 1:
			return `,"gateway":"169.254.1.1"` // outside the subnet (routed set-ups)
		}
		return "" // host-local's default, the first address
	}
	span := func(subnet string) string {
		if r.IntN(2) == 0 {
			return ""
		}
		return fmt.Sprintf(`,"rangeStart":"%s%d","rangeEnd":"%s%d"`, subnet, 1+r.IntN(2), subnet, 5+r.IntN(2))
	}
	set0 := fmt.Sprintf(`[{"subnet":"10.80.0.0/29"%s%s},{"subnet":"10.81.0.0/30"%s}]`,
		gw("10.80.0."), span("10.80.0."), gw("10.81.0."))
	v6gw := ""
	if r.IntN(3) == 0 {
		v6gw = `,"gateway":"fe80::1"`
	}
	set1 := fmt.Sprintf(`[{"subnet":"fd80::/%d"%s}]`, 124+r.IntN(2), v6gw)
	var addrs []string
	for i := range 8 {
		addrs = append(addrs, fmt.Sprintf("10.80.0.%d", i), fmt.Sprintf("fd80::%x", i))
	}
	for i := range 4 {
		addrs = append(addrs, fmt.Sprintf("10.81.0.%d", i))
	}
	addrs = append(addrs, "192.0.2.1", "fd81::1", "10.82.0.2")
	return diffNet{ranges: "[" + set0 + "," + set1 + "]", addrs: addrs}
}

func (n diffNet) conf(version, dataDir, extra string) []byte {
	return []byte(fmt.Sprintf(`{"cniVersion":%q,"name":"diff","ipam":{"type":"host-local","dataDir":%q,"ranges":%s,
		"routes":[{"dst":"0.0.0.0/0"},{"dst":"::/0"}]}%s}`, version, dataDir, n.ranges, extra))
}

// diffOp is one step of a plan.
type diffOp struct {
	cmd, version, id, ifname string
	cniArgs                  string
	extra                    string // top-level keys: args, runtimeConfig
	prev                     string // "": no prevResult; else the prevResult JSON
}

func (o diffOp) String() string {
	s := fmt.Sprintf("%s v%s %s/%s", o.cmd, o.version, o.id, o.ifname)
	if o.cniArgs != "" {
		s += " CNI_ARGS=" + o.cniArgs
	}
	if o.extra != "" {
		s += " " + o.extra
	}
	if o.prev != "" {
		s += " prevResult=" + compact([]byte(o.prev))
	}
	return s
}

// planner draws operations; it remembers each attachment's last ADD
// result for the prevResult of DEL and CHECK, and which addresses are
// taken, to request them again.
type planner struct {
	r     *rand.Rand
	net   diffNet
	added map[string]addResult // "id/ifname" -> last successful ADD
	taken []string
}

type addResult struct{ result, version string }

var diffVersions = []string{"0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"}

func (p *planner) next() diffOp {
	r := p.r
	o := diffOp{version: diffVersions[r.IntN(len(diffVersions))], id: fmt.Sprintf("c%d", r.IntN(6)), ifname: []string{"eth0", "eth1"}[r.IntN(2)]}
	switch n := r.IntN(10); {
	case n < 5:
		o.cmd = "ADD"
	case n < 8:
		o.cmd = "DEL"
	default:
		o.cmd = "CHECK"
		if r.IntN(5) > 0 {
			o.version = []string{"0.4.0", "1.0.0"}[r.IntN(2)]
		}
	}
	if o.cmd == "ADD" {
		var args []string
		var cniIPs, rtIPs []string
		for range []int{0, 0, 0, 0, 1, 1, 1, 2}[r.IntN(8)] {
			a := p.request()
			switch r.IntN(3) {
			case 0:
				args = append(args, "IP="+a)
			case 1:
				cniIPs = append(cniIPs, fmt.Sprintf("%q", a))
			default:
				if r.IntN(2) == 0 {
					a += map[bool]string{true: "/29", false: "/125"}[!strings.Contains(a, ":")]
				}
				rtIPs = append(rtIPs, fmt.Sprintf("%q", a))
			}
		}
		if len(args) > 1 { // host-local 1.1.1 reads one IP from CNI_ARGS
			args = args[:1]
		}
		o.cniArgs = strings.Join(args, ";")
		if len(cniIPs) > 0 {
			o.extra += fmt.Sprintf(`,"args":{"cni":{"ips":[%s]}}`, strings.Join(cniIPs, ","))
		}
		if len(rtIPs) > 0 {
			o.extra += fmt.Sprintf(`,"runtimeConfig":{"ips":[%s]}`, strings.Join(rtIPs, ","))
		}
	}
	// Unknown CNI_ARGS keys, with and without IgnoreUnknown, and
	// malformed pairs, on every command.
	switch r.IntN(12) {
	case 0:
		o.cniArgs = join(o.cniArgs, "K8S_POD_NAME=pod")
	case 1, 2:
		o.cniArgs = join(join("IgnoreUnknown=1", o.cniArgs), "K8S_POD_NAME=pod;K8S_POD_NAMESPACE=ns")
	case 3:
		o.cniArgs = join(o.cniArgs, []string{"IgnoreUnknown=maybe", "A=b=c", "", "=x"}[r.IntN(4)]) + ";"
	}
	if o.cmd != "ADD" {
		key := o.id + "/" + o.ifname
		if o.cmd == "CHECK" && r.IntN(6) == 0 {
			key = p.anyAdded() // someone else's addresses: a stale prevResult
		}
		if prev, ok := p.added[key]; ok && r.IntN(4) > 0 && (o.cmd == "DEL" || prev.version >= "0.4.0") {
			// A runtime sends DEL and CHECK with the ADD's config, so in
			// the ADD result's version.
			o.prev, o.version = prev.result, prev.version
		} else if r.IntN(3) == 0 {
			o.prev = `{"cniVersion":"` + o.version + `"}`
		}
	}
	return o
}

// anyAdded is a random attachment holding addresses ("" when none).
func (p *planner) anyAdded() string {
	keys := slices.Sorted(maps.Keys(p.added))
	if len(keys) == 0 {
		return ""
	}
	return keys[p.r.IntN(len(keys))]
}

func join(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + ";" + b
}

// request picks a requested address: usually one that is taken, in a
// range, a gateway, or outside every range.
func (p *planner) request() string {
	if len(p.taken) > 0 && p.r.IntN(4) == 0 {
		return p.taken[p.r.IntN(len(p.taken))]
	}
	return p.net.addrs[p.r.IntN(len(p.net.addrs))]
}

// diffSide is one plugin with its own data directory.
type diffSide struct {
	name, dataDir string
	hostLocal     bool
}

func (s diffSide) dir() string { return filepath.Join(s.dataDir, "diff") }

func (s diffSide) run(t *testing.T, n diffNet, o diffOp) testbin.Reply {
	conf := n.conf(o.version, s.dataDir, o.extra)
	if o.prev != "" {
		conf = withPrevResult(t, conf, []byte(o.prev))
	}
	c := testbin.Call{Plugin: "ipam-da-pools", Command: o.cmd, ContainerID: o.id, IfName: o.ifname, Netns: "/var/run/netns/x",
		Path: binDir, Args: o.cniArgs, Stdin: conf}
	if s.hostLocal {
		c = hostLocal(c)
	}
	return testbin.Run(c)
}

func runDifferential(t *testing.T, seed uint64, ops int) {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	p := &planner{r: r, net: newDiffNet(r), added: map[string]addResult{}}
	hl := diffSide{name: "host-local", dataDir: t.TempDir(), hostLocal: true}
	ours := diffSide{name: "ipam-da-pools", dataDir: t.TempDir()}
	var transcript []string
	outcomes := map[string]int{}
	fail := func(i int, o diffOp, format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d op %d: %s\nranges: %s\n%s\nplan so far:\n%s\n(reproduce: go test ./test/integration/ -run TestDifferentialAgainstHostLocal -diff.seed=%d -diff.ops=%d)",
			seed, i, o, p.net.ranges, fmt.Sprintf(format, args...), strings.Join(transcript, "\n"), seed, i+1)
	}
	for i := range ops {
		o := p.next()
		copyState(t, hl.dir(), ours.dir())
		before := snapshot(t, hl.dir())
		h := hl.run(t, p.net, o)
		hAfter := snapshot(t, hl.dir())
		g := ours.run(t, p.net, o)
		gAfter := snapshot(t, ours.dir())
		line := fmt.Sprintf("%3d %s -> host-local exit %d, ours exit %d", i, o, h.Exit, g.Exit)
		if g.Exit != 0 {
			line += fmt.Sprintf(" (code %d %s)", g.Err().Code, g.Err().Msg)
		}
		transcript = append(transcript, line)

		if g.Exit != 0 {
			if e := g.Err(); !slices.Contains([]uint{1, 3, 4, 7, 100, 101, 102}, e.Code) {
				fail(i, o, "unexpected error code: %s", g.Stdout)
			}
			// A failed ADD may leave the state directory it had to lock
			// (empty, as host-local's would be); nothing else.
			created := o.cmd == "ADD" && before == "" && gAfter == `lock=""`
			if gAfter != before && !created {
				fail(i, o, "a failed %s changed our state:\nbefore:\n%s\nafter:\n%s", o.cmd, before, gAfter)
			}
		}
		switch {
		case h.Exit == 0 && g.Exit == 0:
			outcomes["ok"]++
			if o.cmd == "ADD" {
				if a, b := noEmptyDNS(compact(g.Stdout)), noEmptyDNS(compact(h.Stdout)); a != b {
					fail(i, o, "results differ:\nours:       %s\nhost-local: %s", a, b)
				}
			} else if len(g.Stdout) != 0 {
				fail(i, o, "%s printed %s", o.cmd, g.Stdout)
			}
			if gAfter != hAfter {
				fail(i, o, "state differs:\nours:\n%s\nhost-local:\n%s", gAfter, hAfter)
			}
		case h.Exit != 0 && g.Exit != 0:
			outcomes["fail"]++
			outcomes[fmt.Sprintf("%s %d", o.cmd, g.Err().Code)]++
			// Both refuse. host-local may have changed its state (cursors
			// moved, or a failed duplicate ADD freeing the container's
			// addresses); ours did not (checked above). Codes differ:
			// host-local answers 999 for most errors.
		default:
			if !tolerated(o, g, h) {
				fail(i, o, "one side failed:\nours:       %s\nhost-local: %s", compact(g.Stdout), compact(h.Stdout))
			}
			outcomes["tolerated"]++
		}
		// Continue from host-local's state, remembering results for
		// later DEL and CHECK.
		key := o.id + "/" + o.ifname
		switch {
		case o.cmd == "ADD" && h.Exit == 0:
			p.added[key] = addResult{string(h.Stdout), o.version}
		case o.cmd == "DEL" && h.Exit == 0:
			delete(p.added, key)
		}
		p.taken = reservationsList(t, hl.dir())
	}
	t.Logf("seed %d: %d operations: both succeeded %d, both failed %d, tolerated CHECK difference %d; our codes when both failed: %v",
		seed, ops, outcomes["ok"], outcomes["fail"], outcomes["tolerated"], failCodes(outcomes))
}

func failCodes(outcomes map[string]int) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(outcomes)) {
		if strings.Contains(k, " ") {
			out = append(out, fmt.Sprintf("%s×%d", k, outcomes[k]))
		}
	}
	return strings.Join(out, ", ")
}

// tolerated lists the one documented difference where one side succeeds
// and the other fails: CHECK with addresses in prevResult verifies each
// of them (code 3 when one is not this attachment's), where host-local's
// CHECK only asks whether the attachment holds any address at all.
func tolerated(o diffOp, ours, hl testbin.Reply) bool {
	return o.cmd == "CHECK" && hl.Exit == 0 && ours.Err().Code == 3 && strings.Contains(o.prev, `"ip`)
}

// noEmptyDNS drops an empty "dns" object, which one side may print and
// the other omit depending on the spec version and the cni library each
// was built with: the same result.
func noEmptyDNS(s string) string {
	s = strings.Replace(s, `,"dns":{}`, "", 1)
	return strings.Replace(s, `"dns":{},`, "", 1)
}

// copyState makes dst an exact copy of src (files and contents; missing
// src: no dst). Recreating the directory also changes its mtime, so our
// index is rebuilt from what was copied.
func copyState(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func reservationsList(t *testing.T, dir string) []string {
	t.Helper()
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return nil
	}
	if s := reservations(t, dir); s != "" {
		return strings.Split(s, " ")
	}
	return nil
}
