package etcd

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// The two allocators proven alike: the real ipam-da-pools and ipam-da-etcd
// binaries driven by the same seeded random sequence (ADD with and
// without a sticky key or a requested address, DEL with and without
// prevResult and the key, GC, the operators' release of an address and of
// a key's hold, and configuration changes that drop a held address from
// the ranges), compared step by step: the same exit and CNI error code,
// and each address what a model of the engine's rules says. make test runs
// a few seeds; `make differential` runs -alike.seeds of -alike.steps each.
//
// What differs on purpose is stated here, not discovered: the search
// order (ipam-da-pools goes round robin from host-local's cursor,
// ipam-da-etcd starts where a hash of the node and attachment says, so
// that hosts do not contend for one address), so a fresh address is only
// checked to be one the model has free; and the scope of holds (the node
// for ipam-da-pools, the cluster for ipam-da-etcd), which one host does
// not see. Requested addresses are chosen by meaning on each side (a
// free address of both, or the address a given container has there).
func TestAllocatorsAlike(t *testing.T) {
	needCluster(t)
	seen := map[string]int{}
	for seed := range uint64(*alikeSeeds) {
		t.Run(fmt.Sprint(seed+1), func(t *testing.T) { runAlike(t, seed+1, *alikeSteps, seen, 0) })
	}
	// The sequences must have reached every outcome they are meant to
	// compare, or the comparison proves less than it says.
	wantOutcomes(t, seen, "ADD", "ADD held again", "ADD requested", "ADD after DROP", "ADD of a VM's second pod", "DEL of a migration's owner", "100", "101", "105", "107", "DEL", "DEL without key", "DEL without prevResult", "GC", "OPERATORS GC", "CHECK", "CHECK without addresses", "CHECK without addresses: 3", "DROP", "RELEASE", "RELEASE KEY")
}

// The same with a tenant quota: pool mode, the selection (as ipam-ds-args
// sends it) carrying a quota of alikeQuota of the five addresses, so that
// both allocators count reservations and sticky holds alike, refuse a new
// address at the quota (106) and give a key its held address back there.
// Every ADD and DEL sends the selection, so no step sends an ADD's result
// as prevResult: no CHECK, GC (the CNI's or the operators') or DROP.
func TestAllocatorsAlikeQuota(t *testing.T) {
	needCluster(t)
	seen := map[string]int{}
	for seed := range uint64(*alikeSeeds) {
		t.Run(fmt.Sprint(seed+1), func(t *testing.T) { runAlike(t, seed+1, *alikeSteps, seen, alikeQuota) })
	}
	wantOutcomes(t, seen, "ADD", "ADD held again", "ADD requested", "106", "DEL", "DEL without key", "RELEASE", "RELEASE KEY")
}

// alikeQuota is TestAllocatorsAlikeQuota's max: below the five addresses,
// so that the quota, not exhaustion, refuses most.
const alikeQuota = 3

// wantOutcomes fails t unless the sequences reached every outcome of want.
func wantOutcomes(t *testing.T, seen map[string]int, want ...string) {
	t.Helper()
	t.Logf("outcomes: %v", seen)
	for _, o := range want {
		if seen[o] == 0 {
			t.Errorf("no step reached %q: %v", o, seen)
		}
	}
}

var (
	alikeSeeds = flag.Int("alike.seeds", 6, "TestAllocatorsAlike: how many seeded sequences (seeds 1..N)")
	alikeSteps = flag.Int("alike.steps", 40, "TestAllocatorsAlike: steps per sequence")
)

// diffNet is the network both sides serve: a /29, five usable addresses
// (.2-.6), so that exhaustion comes too.
var diffNet = netip.MustParsePrefix("10.214.90.0/29")

// side is one allocator under test and the model of its state.
type side struct {
	plugin  string
	cli     []string                                        // the operators' commands' flags naming this side's state
	gc      []string                                        // and `cniplugins gc`'s, naming this host's
	conf    func(ranges []map[string]string) map[string]any // the ipam section
	live    map[string]liveAtt                              // by container ID
	held    map[string]netip.Addr                           // by sticky key
	dropped []netip.Addr                                    // left out of the ranges
	quota   int                                             // the selection's max; 0: no selection
}

type liveAtt struct {
	addr netip.Addr
	key  string
	mig  string // a VM pod's migration name ("" none)
	res  []byte // the ADD's result, for DEL's and CHECK's prevResult
}

// vmKey is the key of VM vm1's virt-launcher pods: by "kubevirt", from
// the pod's namespace and its kubevirt.io/domain annotation. Only such a
// key has a live migration (two owners of one address).
const vmKey = "ns/vm/vm1"

// owner is the live attachment that holds key's address other than cid
// ("" none): during a live migration, the other owner.
func (s *side) owner(key, cid string) string {
	for other, l := range s.live {
		if other != cid && key != "" && l.key == key {
			return other
		}
	}
	return ""
}

func newSide(plugin string, conf func([]map[string]string) map[string]any) *side {
	return &side{plugin: plugin, conf: conf, live: map[string]liveAtt{}, held: map[string]netip.Addr{}}
}

// usable are diffNet's addresses an allocator may hand out.
func usable() []netip.Addr {
	var out []netip.Addr
	for a := netip.MustParseAddr("10.214.90.2"); diffNet.Contains(a.Next()); a = a.Next() {
		out = append(out, a)
	}
	return out
}

// ranges is the range set without the dropped addresses: one range per
// run of addresses left.
func (s *side) ranges() []map[string]string {
	var out []map[string]string
	var start, last netip.Addr
	flush := func() {
		if start.IsValid() {
			out = append(out, map[string]string{"subnet": diffNet.String(), "rangeStart": start.String(), "rangeEnd": last.String(), "gateway": "10.214.90.1"})
		}
		start = netip.Addr{}
	}
	for _, a := range usable() {
		if slices.Contains(s.dropped, a) {
			flush()
			continue
		}
		if !start.IsValid() {
			start = a
		}
		last = a
	}
	flush()
	return out
}

// taken reports whether a is the model's: reserved, held or dropped.
func (s *side) taken(a netip.Addr) bool {
	for _, l := range s.live {
		if l.addr == a {
			return true
		}
	}
	for _, h := range s.held {
		if h == a {
			return true
		}
	}
	return slices.Contains(s.dropped, a)
}

// step is one operation, the same on both sides.
type step struct {
	cmd      string // ADD, DEL, GC, CHECK, DROP, RELEASE (an address), RELEASE KEY (a hold)
	cid      string
	key      string // sticky key ("" none)
	mig      string // ADD of a VM pod: its migration name ("" none)
	sendKey  bool   // DEL: CNI_ARGS with the key
	withPrev bool   // DEL: prevResult
	// requested: "" none, "free" an address free on both sides, or a
	// container ID whose address each side requests.
	requested string
	valid     []string // GC
	// noAddrs (CHECK): "" sends the ADD's result as prevResult, "no ips"
	// a prevResult without addresses, "none" no prevResult.
	noAddrs string
}

func (s *side) run(t *testing.T, st step, conf []byte) testbin.Reply {
	var argv []string
	switch st.cmd {
	case "RELEASE":
		argv = append([]string{"release", s.live[st.cid].addr.String(), "--container", st.cid}, s.scopeFlag()...)
	case "RELEASE KEY":
		argv = append([]string{"release", "--sticky-key", st.key}, s.scopeFlag()...)
	case "OPERATORS GC":
		// The live attachments as a keep file: an empty one says, as the
		// operator must, that none lives.
		var keep strings.Builder
		for _, cid := range st.valid {
			keep.WriteString(cid + "@eth0\n")
		}
		file := filepath.Join(t.TempDir(), "keep")
		if err := os.WriteFile(file, []byte(keep.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		argv = append([]string{"gc", "--apply", "--keep-file", file}, s.gc...)
	}
	if argv != nil {
		return testbin.Run(testbin.Call{Plugin: "cniplugins", Path: binDir, Argv: append(argv, s.cli...)})
	}
	args := "IgnoreUnknown=1"
	switch {
	case st.key == "" || (st.cmd == "DEL" && !st.sendKey):
	case st.key == vmKey:
		args += ";K8S_POD_NAMESPACE=ns;K8S_POD_NAME=virt-launcher-" + st.cid
	default:
		args += ";CNIPLUGINS_STICKY_KEY=" + st.key
	}
	return call(s.plugin, st.cmd, st.cid, conf, args)
}

// scopeFlag names the side's state to the operators' release: the pool
// under a quota (pool mode), else the network.
func (s *side) scopeFlag() []string {
	if s.quota > 0 {
		return []string{"--pool", "alike"}
	}
	return []string{"--network", "alike"}
}

func (s *side) config(t *testing.T, st step, requested netip.Addr) []byte {
	ipam := s.conf(s.ranges())
	m := map[string]any{"cniVersion": "1.1.0", "name": "alike", "ipam": ipam}
	if s.quota > 0 {
		delete(ipam, "ranges")
		m["prevResult"] = map[string]any{"cniVersion": "1.1.0", "pools": []map[string]any{{"name": "alike", "ranges": s.ranges()}},
			"quota": map[string]any{"tenant": "namespace=alike", "rule": "ipam.rules[0]", "max": s.quota}}
		st.withPrev = false // the DEL's prevResult is the selection
	}
	rc := map[string]any{}
	if requested.IsValid() {
		rc["ips"] = []string{requested.String() + "/29"}
	}
	if st.key == vmKey && (st.cmd != "DEL" || st.sendKey) {
		ann := map[string]string{"kubevirt.io/domain": "vm1"}
		if st.mig != "" {
			ann["kubevirt.io/migrationJobName"] = st.mig
		}
		rc["io.kubernetes.cri.pod-annotations"] = ann
	}
	if len(rc) > 0 {
		m["runtimeConfig"] = rc
	}
	switch {
	case st.cmd == "CHECK" && st.noAddrs == "no ips":
		m["prevResult"] = map[string]any{"cniVersion": "1.1.0"}
	case st.cmd == "CHECK" && st.noAddrs == "none":
	case st.cmd == "DEL" && st.withPrev, st.cmd == "CHECK":
		var prev map[string]any
		if err := json.Unmarshal(s.live[st.cid].res, &prev); err != nil {
			t.Fatal(err)
		}
		m["prevResult"] = prev
	case st.cmd == "GC":
		refs := []map[string]string{}
		for _, v := range st.valid {
			refs = append(refs, map[string]string{"containerID": v, "ifname": "eth0"})
		}
		m["cni.dev/valid-attachments"] = refs
	}
	return mustJSON(t, m)
}

func runAlike(t *testing.T, seed uint64, steps int, seen map[string]int, quota int) {
	pools, etcd := newHost(t, "alike-pools"), newHost(t, "alike-etcd")
	sticky := map[string]any{"by": []string{"arg", "kubevirt"}, "holdFor": "1h"}
	a := newSide("ipam-da-pools", func(r []map[string]string) map[string]any {
		return map[string]any{"type": "ipam-da-pools", "dataDir": pools.dir, "ranges": [][]map[string]string{r}, "sticky": sticky}
	})
	b := newSide("ipam-da-etcd", func(r []map[string]string) map[string]any {
		return map[string]any{"type": "ipam-da-etcd", "dataDir": etcd.dir, "etcd": etcdKeys(t, etcd, nil), "ranges": [][]map[string]string{r}, "sticky": sticky}
	})
	a.quota, b.quota = quota, quota
	a.cli = []string{"--data-dir", pools.dir}
	b.cli = []string{"--etcd", strings.Join(cluster.Endpoints(), ","), "--prefix", prefix(t)}
	// The etcd side's node is alive (it just ran a command): an
	// operator's gc of it is forced.
	a.gc, b.gc = []string{"--network", "alike"}, []string{"--node", etcd.node, "--network", "alike", "--force"}
	rng := rand.New(rand.NewPCG(seed, 27))
	keys := []string{"", "", "ns/db-0", "ns/db-1", "vm/a", vmKey, vmKey}
	if quota > 0 {
		// A VM's two pods hold one address between them, and its
		// migration target's 107 comes before 106: the quota's model
		// counts neither, so the quota's sequences have no VM.
		keys = keys[:5]
	}
	n := 0
	var dropKeys []string // keys whose held address was dropped, until their next ADD
	for i := range steps {
		st := nextStep(rng, a, keys, &n)
		if st.cmd == "" || (quota > 0 && (st.cmd == "CHECK" || st.cmd == "GC" || st.cmd == "OPERATORS GC" || st.cmd == "DROP")) {
			continue
		}
		what := fmt.Sprintf("seed %d step %d %+v", seed, i, st)
		outcome := st.cmd
		if st.cmd == "ADD" {
			switch _, held := a.held[st.key]; {
			case st.key == vmKey && a.owner(vmKey, "") != "":
				outcome = "ADD of a VM's second pod"
			case held:
				outcome = "ADD held again"
			case slices.Contains(dropKeys, st.key) && st.key != "":
				outcome = "ADD after DROP"
			case st.requested != "":
				outcome = "ADD requested"
			}
		}
		if (st.cmd == "DEL" || st.cmd == "RELEASE") && st.key == vmKey && a.owner(vmKey, st.cid) != "" {
			outcome = st.cmd + " of a migration's owner"
		} else if st.cmd == "DEL" && !st.sendKey && st.key != "" {
			outcome = "DEL without key"
		} else if st.cmd == "DEL" && !st.withPrev {
			outcome = "DEL without prevResult"
		}
		if st.cmd == "DROP" {
			dropKeys = append(dropKeys, st.key)
			seen["DROP"]++
			// Leave K's held address out of the ranges: K's next ADD
			// frees it and allocates anew, on both.
			a.dropped = append(a.dropped, a.held[st.key])
			b.dropped = append(b.dropped, b.held[st.key])
			delete(a.held, st.key)
			delete(b.held, st.key)
			continue
		}
		// A requested address means the same on both sides: the lowest
		// free on both, or the address a given container has on each.
		reqA, reqB := netip.Addr{}, netip.Addr{}
		switch st.requested {
		case "":
		case "free":
			reqA = a.freeOfBoth(b)
			reqB = reqA
		default:
			reqA, reqB = a.live[st.requested].addr, b.live[st.requested].addr
		}
		// The quota's own rule, on the model: a new address is refused
		// once the tenant's reservations and holds reach the quota; a
		// key that holds an address (a hold or a live attachment's, which
		// is 105) is never checked.
		_, keyHeld := a.held[st.key]
		for _, l := range a.live {
			keyHeld = keyHeld || l.key == st.key
		}
		want106 := quota > 0 && st.cmd == "ADD" && !(st.key != "" && keyHeld) && len(a.live)+len(a.held) >= quota
		ra, rb := a.apply(t, st, what, reqA), b.apply(t, st, what, reqB)
		if code := codeOf(ra); code != 0 {
			outcome = fmt.Sprint(code)
		}
		if quota > 0 && st.cmd == "ADD" && (codeOf(ra) == 106) != want106 {
			t.Fatalf("%s: ipam-da-pools answered code %d (%s); the model, with %d reserved and %d held at max %d, wants 106: %v",
				what, codeOf(ra), ra.Stdout, len(a.live), len(a.held), quota, want106)
		}
		if ra.Exit == rb.Exit && codeOf(ra) == codeOf(rb) {
			seen[outcome]++
			if outcome == "ADD after DROP" {
				dropKeys = slices.DeleteFunc(dropKeys, func(k string) bool { return k == st.key })
			}
		} else {
			t.Fatalf("%s: ipam-da-pools exit %d code %d (%s %s), ipam-da-etcd exit %d code %d (%s %s)",
				what, ra.Exit, codeOf(ra), ra.Stdout, ra.Stderr, rb.Exit, codeOf(rb), rb.Stdout, rb.Stderr)
		}
		if st.cmd == "CHECK" {
			checkWithoutAddrs(t, a, b, st.cid, what, seen)
		}
	}
}

// checkWithoutAddrs runs CHECK of live attachment cid with a prevResult
// without addresses and with none, and CHECK of an attachment that never
// was, on both sides: the engine's one rule (alloc.CheckHeld), so the
// same answer, code and message; success for cid, 3 for the other.
func checkWithoutAddrs(t *testing.T, a, b *side, cid, what string, seen map[string]int) {
	t.Helper()
	for _, st := range []step{{cmd: "CHECK", cid: cid, noAddrs: "no ips"}, {cmd: "CHECK", cid: cid, noAddrs: "none"}, {cmd: "CHECK", cid: "gone", noAddrs: "none"}} {
		ra, rb := a.apply(t, st, what, netip.Addr{}), b.apply(t, st, what, netip.Addr{})
		want, outcome := uint(0), "CHECK without addresses"
		if st.cid == "gone" {
			want, outcome = 3, "CHECK without addresses: 3"
		}
		if codeOf(ra) != want || codeOf(rb) != want || (want != 0 && ra.Err().Msg != rb.Err().Msg) {
			t.Fatalf("%s, then CHECK %s without addresses (prevResult %s): ipam-da-pools exit %d %s, ipam-da-etcd exit %d %s; want code %d on both",
				what, st.cid, st.noAddrs, ra.Exit, ra.Stdout, rb.Exit, rb.Stdout, want)
		}
		seen[outcome]++
	}
}

func codeOf(r testbin.Reply) uint {
	if r.Exit == 0 {
		return 0
	}
	var e struct {
		Code uint `json:"code"`
	}
	_ = json.Unmarshal(r.Stdout, &e)
	return e.Code
}

// nextStep draws an operation from the model of side m (both models
// agree on everything but the addresses themselves).
func nextStep(rng *rand.Rand, m *side, keys []string, n *int) step {
	lives := slices.Sorted(func(yield func(string) bool) {
		for cid := range m.live {
			if !yield(cid) {
				return
			}
		}
	})
	switch r := rng.IntN(22); {
	case r < 9 || len(lives) == 0:
		*n++
		st := step{cmd: "ADD", cid: fmt.Sprintf("c%d", *n), key: keys[rng.IntN(len(keys))]}
		if st.key == vmKey {
			// A migration's target (a new name, or the one a pod of the
			// VM already carries), or a plain virt-launcher pod.
			switch rng.IntN(3) {
			case 0:
				st.mig = fmt.Sprintf("m%d", *n)
			case 1:
				if o := m.owner(vmKey, ""); o != "" {
					st.mig = m.live[o].mig
				}
			}
		}
		switch rng.IntN(6) {
		case 0:
			st.requested = "free"
		case 1:
			if len(lives) > 0 {
				st.requested = lives[rng.IntN(len(lives))]
			}
		}
		return st
	case r < 15:
		cid := lives[rng.IntN(len(lives))]
		return step{cmd: "DEL", cid: cid, key: m.live[cid].key, sendKey: rng.IntN(3) > 0, withPrev: rng.IntN(2) == 0}
	case r < 16:
		return step{cmd: "CHECK", cid: lives[rng.IntN(len(lives))]}
	case r < 18:
		var valid []string
		for _, cid := range lives {
			if rng.IntN(3) > 0 {
				valid = append(valid, cid)
			}
		}
		if r == 17 {
			return step{cmd: "OPERATORS GC", valid: valid}
		}
		return step{cmd: "GC", valid: valid}
	case r < 20:
		held := m.heldKeys()
		if len(held) == 0 || len(m.dropped) >= 2 {
			return step{}
		}
		return step{cmd: "DROP", key: held[rng.IntN(len(held))]}
	case r < 21:
		return step{cmd: "RELEASE", cid: lives[rng.IntN(len(lives))]}
	default:
		held := m.heldKeys()
		if len(held) == 0 {
			return step{}
		}
		return step{cmd: "RELEASE KEY", key: held[rng.IntN(len(held))]}
	}
}

// heldKeys are the keys the model holds an address for, sorted.
func (s *side) heldKeys() []string {
	return slices.Sorted(maps.Keys(s.held))
}

// apply runs st on s (requested: the address it asks for, if any),
// checks the outcome against s's model, and updates it.
func (s *side) apply(t *testing.T, st step, what string, requested netip.Addr) testbin.Reply {
	t.Helper()
	r := s.run(t, st, s.config(t, st, requested))
	if r.Exit != 0 {
		return r
	}
	switch st.cmd {
	case "ADD":
		got := addrsOf(t, r.Stdout)
		if len(got) != 1 || !diffNet.Contains(got[0]) {
			t.Fatalf("%s: %s gave %v", what, s.plugin, got)
		}
		want, ok := s.held[st.key]
		if o := s.owner(st.key, st.cid); st.key == vmKey && o != "" {
			want, ok = s.live[o].addr, true // a migration's target shares it
		}
		switch {
		case requested.IsValid() && got[0] != requested:
			t.Fatalf("%s: %s gave %s, asked for %s", what, s.plugin, got[0], requested)
		case st.key != "" && ok && got[0] != want:
			t.Fatalf("%s: %s gave key %s %s, it held %s", what, s.plugin, st.key, got[0], want)
		case !(st.key != "" && ok) && s.taken(got[0]):
			t.Fatalf("%s: %s gave %s, which is not free", what, s.plugin, got[0])
		}
		delete(s.held, st.key)
		s.live[st.cid] = liveAtt{addr: got[0], key: st.key, mig: st.mig, res: r.Stdout}
	case "DEL", "RELEASE":
		s.release(st.cid)
	case "RELEASE KEY":
		delete(s.held, st.key)
	case "GC", "OPERATORS GC":
		for _, cid := range slices.Collect(func(yield func(string) bool) {
			for cid := range s.live {
				if !yield(cid) {
					return
				}
			}
		}) {
			if !slices.Contains(st.valid, cid) {
				s.release(cid)
			}
		}
	}
	return r
}

// release is a DEL's, GC's or an operator's release's effect on the
// model: a keyed reservation becomes its key's hold, unless a live
// migration's other owner keeps the address (the hand-over, or the end of
// the target's share).
func (s *side) release(cid string) {
	l := s.live[cid]
	if l.key != "" && s.owner(l.key, cid) == "" {
		s.held[l.key] = l.addr
	}
	delete(s.live, cid)
}

// freeOfBoth is the lowest address free in s and in other; the zero
// Addr when there is none (the ADD then asks for nothing).
func (s *side) freeOfBoth(other *side) netip.Addr {
	for _, a := range usable() {
		if !s.taken(a) && !other.taken(a) {
			return a
		}
	}
	return netip.Addr{}
}

// CHECK without addresses on both allocators, where they once differed:
// once an operator's release took one of an attachment's two addresses
// (one family's, one pool's), the attachment no longer has what its ADD
// gave it. Both answer CHECK without addresses (no prevResult; in pool
// mode a selector's prevResult, which lists pools and no addresses) with
// the same 3, message and details, naming the target that lost its
// address; before the release, both succeed (ipam-da-etcd once accepted
// any claim, ipam-da-pools wanted one per target).
func TestAllocatorsAlikeCheckWithoutAddresses(t *testing.T) {
	needCluster(t)
	for _, tc := range []struct {
		name    string
		ipam    map[string]any
		prev    map[string]any // the selector's, in pool mode
		where   []string       // release's flags for the second address
		details string         // CHECK's after the release
	}{
		{"two range sets", map[string]any{"ranges": []any{[]map[string]string{{"subnet": "10.214.91.0/29"}}, []map[string]string{{"subnet": "fd14:91::/125"}}}}, nil,
			[]string{"--network", "alike"}, "range set 1 (fd14:91::1-fd14:91::7): containerID=c1 ifname=eth0"},
		{"two pools", map[string]any{}, map[string]any{"cniVersion": "1.1.0", "pools": []map[string]string{{"name": "pa", "subnet": "10.214.92.0/29"}, {"name": "pb", "subnet": "10.214.93.0/29"}}},
			[]string{"--pool", "pb"}, "pool pb: containerID=c1 ifname=eth0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pools, etcd := newHost(t, "alike-pools"), newHost(t, "alike-etcd")
			conf := func(typ string, h host) []byte {
				ipam := maps.Clone(tc.ipam)
				ipam["type"], ipam["dataDir"] = typ, h.dir
				if typ == "ipam-da-etcd" {
					ipam["etcd"] = etcdKeys(t, h, nil)
				}
				m := map[string]any{"cniVersion": "1.1.0", "name": "alike", "ipam": ipam}
				if tc.prev != nil {
					m["prevResult"] = tc.prev
				}
				return mustJSON(t, m)
			}
			a, b := conf("ipam-da-pools", pools), conf("ipam-da-etcd", etcd)
			both := func(cmd, cid string) (testbin.Reply, testbin.Reply) {
				return call("ipam-da-pools", cmd, cid, a, ""), call("ipam-da-etcd", cmd, cid, b, "")
			}
			ra, rb := both("ADD", "c1")
			got := addrsOf(t, rb.Stdout)
			if ra.Exit != 0 || rb.Exit != 0 || len(addrsOf(t, ra.Stdout)) != 2 || len(got) != 2 {
				t.Fatalf("ADD: %s / %s", ra.Stdout, rb.Stdout)
			}
			alike := func(when string, want uint, details string) {
				t.Helper()
				ra, rb := both("CHECK", "c1")
				if codeOf(ra) != want || codeOf(rb) != want {
					t.Fatalf("CHECK %s: ipam-da-pools %s, ipam-da-etcd %s; want code %d on both", when, ra.Stdout, rb.Stdout, want)
				}
				if ea, eb := ra.Err(), rb.Err(); want != 0 && (*ea != *eb || ea.Msg != "attachment holds no address" || ea.Details != details) {
					t.Fatalf("CHECK %s: ipam-da-pools %+v, ipam-da-etcd %+v; want both %q, %q", when, ea, eb, "attachment holds no address", details)
				}
			}
			alike("after ADD", 0, "")
			if ra, rb := both("CHECK", "gone"); codeOf(ra) != 3 || ra.Err().Msg != rb.Err().Msg || ra.Err().Details != rb.Err().Details {
				t.Fatalf("CHECK of an attachment that never was: %s / %s", ra.Stdout, rb.Stdout)
			}
			local := testbin.Run(testbin.Call{Plugin: "cniplugins", Path: binDir,
				Argv: append([]string{"release", addrsOf(t, ra.Stdout)[1].String(), "--data-dir", pools.dir}, tc.where...)})
			if shared := cli(t, append([]string{"release", got[1].String()}, tc.where...)...); local.Exit != 0 || shared.Exit != 0 {
				t.Fatalf("release: %s%s / %s%s", local.Stdout, local.Stderr, shared.Stdout, shared.Stderr)
			}
			alike("after one address's release", 3, tc.details)
		})
	}
}

// `leases --container` answers alike of both stores, where they once
// differed: a sticky key's hold is listed under the container that last
// had it (ipam-da-pools listed it under none), beside the containers
// that still have their addresses.
func TestAllocatorsAlikeLeasesByContainer(t *testing.T) {
	needCluster(t)
	pools, etcd := newHost(t, "alike-pools"), newHost(t, "alike-etcd")
	sticky := map[string]any{"by": []string{"arg"}, "holdFor": "1h"}
	ranges := [][]map[string]string{{{"subnet": diffNet.String()}}}
	a := mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "alike", "ipam": map[string]any{"type": "ipam-da-pools", "dataDir": pools.dir, "ranges": ranges, "sticky": sticky}})
	b := mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "alike", "ipam": map[string]any{"type": "ipam-da-etcd", "dataDir": etcd.dir, "etcd": etcdKeys(t, etcd, nil), "ranges": ranges, "sticky": sticky}})
	const key = "IgnoreUnknown=1;CNIPLUGINS_STICKY_KEY=ns/db-0"
	for _, st := range [][3]string{{"ADD", "c1", key}, {"ADD", "c2", ""}, {"DEL", "c1", key}} {
		if ra, rb := call("ipam-da-pools", st[0], st[1], a, st[2]), call("ipam-da-etcd", st[0], st[1], b, st[2]); ra.Exit != 0 || rb.Exit != 0 {
			t.Fatalf("%s %s: %s / %s", st[0], st[1], ra.Stdout, rb.Stdout)
		}
	}
	rows := func(argv ...string) string {
		r := testbin.Run(testbin.Call{Plugin: "cniplugins", Path: binDir, Argv: append([]string{"leases", "-o", "json"}, argv...)})
		var ls []struct{ Owner, ContainerID, LastOwner string }
		if err := json.Unmarshal(r.Stdout, &ls); r.Exit != 0 || err != nil {
			t.Fatalf("leases %v: exit %d %s %s", argv, r.Exit, r.Stdout, r.Stderr)
		}
		var out []string
		for _, l := range ls {
			out = append(out, l.Owner+" "+l.ContainerID+" last "+l.LastOwner)
		}
		slices.Sort(out) // each store places a fresh address its own way
		return strings.Join(out, ", ")
	}
	for q, want := range map[string]string{"c1": "sticky  last c1", "c": "cni c2 last , sticky  last c1", "c2": "cni c2 last ", "x": ""} {
		local := rows("--container", q, "--data-dir", pools.dir)
		shared := rows("--container", q, "--etcd", strings.Join(cluster.Endpoints(), ","), "--prefix", prefix(t))
		if local != want || shared != want {
			t.Errorf("leases --container %s: ipam-da-pools %q, ipam-da-etcd %q; want %q on both", q, local, shared, want)
		}
	}
}
