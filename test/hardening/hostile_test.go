package hardening

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/testkit/plugintest"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// In hostile configs, @DATA@ is the case's dataDir and @ROOT@ its sandbox.
const (
	hRanges = `"ranges":[[{"subnet":"10.66.0.0/24"}]]`
	hOK     = `{"cniVersion":"1.0.0","name":"hostile","ipam":{"type":"ipam-da-pools","dataDir":"@DATA@",` + hRanges + `}}`
	hChain  = `{"cniVersion":"1.0.0","name":"hostile","ipam":{"type":"ipam-delegated","delegates":["ipam-ds-static","ipam-da-pools"],"dataDir":"@DATA@",`
)

// hIPAM is a standalone config with the given ipam keys (after dataDir).
func hIPAM(keys string) string {
	return `{"cniVersion":"1.0.0","name":"hostile","ipam":{"type":"ipam-da-pools","dataDir":"@DATA@",` + keys + `}}`
}

// hTop is the standard config with extra top-level keys.
func hTop(keys string) string {
	return `{"cniVersion":"1.0.0","name":"hostile",` + keys + `,"ipam":{"type":"ipam-da-pools","dataDir":"@DATA@",` + hRanges + `}}`
}

// hPrev is ipam-da-pools in pool mode with the given prevResult.
func hPrev(prev string) string {
	return `{"cniVersion":"1.0.0","name":"hostile","ipam":{"type":"ipam-da-pools","dataDir":"@DATA@"},"prevResult":` + prev + `}`
}

type hostileCase struct {
	name   string
	plugin string                // default ipam-da-pools
	cmd    string                // default ADD
	stdin  string                // default hOK
	edit   func(c *testbin.Call) // environment changes
	setup  func(t *testing.T, root, dataDir string)
	code   uint   // 0: must succeed
	field  string // must appear in the error's msg or details
}

// hostileCases are the invocations of TestHostileInput. Codes are those
// of docs/error-codes.md.
func hostileCases() []hostileCase {
	addOther := func(ip string) func(t *testing.T, root, dataDir string) {
		return func(t *testing.T, root, dataDir string) {
			c := call("ipam-da-pools", "ADD", "other", []byte(strings.ReplaceAll(hOK, "@DATA@", dataDir)))
			c.Args = "IP=" + ip
			testbin.MustSucceed(t, c)
		}
	}
	mkdir := func(rel string) func(t *testing.T, root, dataDir string) {
		return func(t *testing.T, root, dataDir string) {
			if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	return []hostileCase{
		// stdin itself
		{name: "empty stdin", stdin: "", code: 6, field: "stdin"},
		{name: "white space only", stdin: " \n\t", code: 6, field: "stdin"},
		{name: "truncated", stdin: hOK[:60], code: 6, field: "stdin"},
		{name: "array", stdin: `[1,2,3]`, code: 6, field: "stdin"},
		{name: "string", stdin: `"ipam"`, code: 6, field: "stdin"},
		{name: "null", stdin: `null`, code: 6, field: "stdin"},
		{name: "trailing garbage", stdin: hOK + `}`, code: 6, field: "stdin"},
		{name: "10 MB", stdin: `{"cniVersion":"1.0.0","name":"hostile","pad":"` + strings.Repeat("x", 10<<20) + `"}`, code: 7, field: "stdin"},
		// the envelope
		{name: "missing cniVersion", stdin: `{"name":"hostile","ipam":{"dataDir":"@DATA@",` + hRanges + `}}`, code: 7, field: "cniVersion"},
		{name: "cniVersion a number", stdin: `{"cniVersion":1.0,"name":"hostile","ipam":{}}`, code: 7, field: "cniVersion"},
		{name: "cniVersion unknown", stdin: strings.Replace(hOK, "1.0.0", "2.0.0", 1), code: 1, field: "cniVersion"},
		{name: "cniVersion malformed", stdin: strings.Replace(hOK, "1.0.0", "1.0", 1), code: 1, field: "cniVersion"},
		{name: "missing name", stdin: strings.Replace(hOK, `"name":"hostile",`, "", 1), code: 7, field: "name"},
		{name: "name an object", stdin: strings.Replace(hOK, `"name":"hostile"`, `"name":{}`, 1), code: 7, field: "name"},
		{name: "name escapes dataDir", stdin: strings.Replace(hOK, `"name":"hostile"`, `"name":"../escape"`, 1), code: 7, field: "name"},
		{name: "name is a path", stdin: strings.Replace(hOK, `"name":"hostile"`, `"name":"a/../../b"`, 1), code: 7, field: "name"},
		{name: "name shadows the pools dir", stdin: strings.Replace(hOK, `"name":"hostile"`, `"name":"_pools"`, 1), code: 7, field: "name"},
		{name: "name is dot", stdin: strings.Replace(hOK, `"name":"hostile"`, `"name":"."`, 1), code: 7, field: "name"},
		{name: "missing ipam", stdin: `{"cniVersion":"1.0.0","name":"hostile"}`, code: 7, field: "ipam"},
		{name: "ipam a string", stdin: `{"cniVersion":"1.0.0","name":"hostile","ipam":"x"}`, code: 7, field: "ipam"},
		// ranges
		{name: "ranges a string", stdin: hIPAM(`"ranges":"10.66.0.0/24"`), code: 7, field: "ipam.ranges"},
		{name: "no ranges", stdin: hIPAM(`"routes":[]`), code: 7, field: "ipam.ranges"},
		{name: "range without subnet", stdin: hIPAM(`"ranges":[[{"rangeStart":"10.66.0.5"}]]`), code: 7, field: "ipam.ranges[0][0].subnet"},
		{name: "subnet a number", stdin: hIPAM(`"ranges":[[{"subnet":24}]]`), code: 7, field: "subnet"},
		{name: "prefix out of range", stdin: hIPAM(`"ranges":[[{"subnet":"10.66.0.0/33"}]]`), code: 7, field: "ipam.ranges[0][0].subnet"},
		{name: "not a CIDR", stdin: hIPAM(`"ranges":[[{"subnet":"banana"}]]`), code: 7, field: "ipam.ranges[0][0].subnet"},
		{name: "host bits set", stdin: hIPAM(`"ranges":[[{"subnet":"10.66.0.1/24"}]]`), code: 7, field: "ipam.ranges[0][0].subnet"},
		{name: "IPv4 prefix too small", stdin: hIPAM(`"ranges":[[{"subnet":"10.66.0.0/31"}]]`), code: 7, field: "ipam.ranges[0][0].subnet"},
		{name: "IPv6 prefix too small", stdin: hIPAM(`"ranges":[[{"subnet":"fd00::/127"}]]`), code: 7, field: "ipam.ranges[0][0].subnet"},
		{name: "overlapping ranges", stdin: hIPAM(`"ranges":[[{"subnet":"10.66.0.0/24"},{"subnet":"10.66.0.0/25"}]]`), code: 7, field: "ipam.ranges[0][1]"},
		{name: "overlapping range sets", stdin: hIPAM(`"ranges":[[{"subnet":"10.66.0.0/24"}],[{"subnet":"10.66.0.0/24","rangeStart":"10.66.0.100"}]]`), code: 7, field: "ipam.ranges[1][0]"},
		{name: "mixed families", stdin: hIPAM(`"ranges":[[{"subnet":"10.66.0.0/24"},{"subnet":"fd00::/64"}]]`), code: 7, field: "ipam.ranges[0][1].subnet"},
		{name: "rangeStart outside subnet", stdin: hIPAM(`"ranges":[[{"subnet":"10.66.0.0/24","rangeStart":"10.67.0.5"}]]`), code: 7, field: "ipam.ranges[0][0].rangeStart"},
		{name: "rangeEnd outside subnet", stdin: hIPAM(`"ranges":[[{"subnet":"10.66.0.0/24","rangeEnd":"10.67.0.5"}]]`), code: 7, field: "ipam.ranges[0][0].rangeEnd"},
		{name: "IPv4-mapped IPv6 subnet", stdin: hIPAM(`"ranges":[[{"subnet":"::ffff:10.66.0.0/120"}]]`), code: 7, field: "ipam.ranges[0][0].subnet"},
		{name: "65 range sets", stdin: hIPAM(`"ranges":[` + strings.Repeat(`[{"subnet":"10.66.0.0/24"}],`, 64) + `[{"subnet":"10.66.0.0/24"}]]`), code: 7, field: "at most 64 range sets"},
		{name: "gateway of the other family", stdin: hIPAM(`"ranges":[[{"subnet":"10.66.0.0/24","gateway":"fd00::1"}]]`), code: 7, field: "ipam.ranges[0][0].gateway"},
		{name: "rangeStart after rangeEnd", stdin: hIPAM(`"ranges":[[{"subnet":"10.66.0.0/24","rangeStart":"10.66.0.9","rangeEnd":"10.66.0.5"}]]`), code: 7, field: "ipam.ranges[0][0].rangeEnd"},
		{name: "4 MiB of ranges, the last overlapping the first", stdin: hIPAM(`"ranges":[` + manyRanges(140000) + `]`), code: 7, field: "ipam.ranges[0][139999]"},
		{name: "legacy range overlapping ranges", stdin: hIPAM(`"subnet":"10.66.0.0/24","ranges":[[{"subnet":"10.66.0.0/25"}]]`), code: 7, field: "ipam.ranges[0][0]: overlaps ipam"},
		{name: "legacy subnet with host bits", stdin: hIPAM(`"subnet":"10.66.0.5/24"`), code: 7, field: "ipam.subnet"},
		{name: "lockTimeout not a duration", stdin: hIPAM(hRanges + `,"lockTimeout":"forever"`), code: 7, field: "ipam.lockTimeout"},
		{name: "lockTimeout negative", stdin: hIPAM(hRanges + `,"lockTimeout":"-1s"`), code: 7, field: "ipam.lockTimeout"},
		// dataDir and resolvConf
		{name: "dataDir relative", stdin: strings.Replace(hOK, "@DATA@", "var/lib/cni", 1), code: 7, field: "ipam.dataDir"},
		{name: "dataDir a file", stdin: strings.Replace(hOK, "@DATA@", "@ROOT@/file", 1), code: 7, field: "ipam.dataDir",
			setup: func(t *testing.T, root, _ string) { writeFile(t, filepath.Join(root, "file"), "keep") }},
		{name: "dataDir below a file", stdin: strings.Replace(hOK, "@DATA@", "@ROOT@/file/data", 1), code: 7, field: "ipam.dataDir",
			setup: func(t *testing.T, root, _ string) { writeFile(t, filepath.Join(root, "file"), "keep") }},
		{name: "dataDir a symlink", stdin: strings.Replace(hOK, "@DATA@", "@ROOT@/link", 1), code: 7, field: "ipam.dataDir",
			setup: func(t *testing.T, root, _ string) {
				mkdir("elsewhere")(t, root, "")
				if err := os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(root, "link")); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "resolvConf a directory", stdin: hIPAM(hRanges + `,"resolvConf":"@ROOT@/etc"`), code: 7, field: "ipam.resolvConf", setup: mkdir("etc")},
		{name: "resolvConf missing", stdin: hIPAM(hRanges + `,"resolvConf":"@ROOT@/nope.conf"`), code: 7, field: "ipam.resolvConf"},
		{name: "resolvConf /dev/zero", stdin: hIPAM(hRanges + `,"resolvConf":"/dev/zero"`), code: 7, field: "ipam.resolvConf"},
		{name: "resolvConf a number", stdin: hIPAM(hRanges + `,"resolvConf":5`), code: 7, field: "ipam.resolvConf"},
		// pool and network names that try to escape dataDir
		{name: "prevResult pool escapes", stdin: hPrev(`{"pools":[{"name":"../../escape","subnet":"10.66.0.0/24"}]}`), code: 7, field: "prevResult.pools[0].name"},
		{name: "prevResult pool shadows the index", stdin: hPrev(`{"pools":[{"name":"_index","subnet":"10.66.0.0/24"}]}`), code: 7, field: "prevResult.pools[0].name"},
		{name: "prevResult pool name too long", stdin: hPrev(`{"pools":[{"name":"` + strings.Repeat("p", 65) + `","subnet":"10.66.0.0/24"}]}`), code: 7, field: "prevResult.pools[0].name"},
		{name: "prevResult pools not an array", stdin: hPrev(`{"pools":{"name":"a"}}`), code: 7, field: "prevResult.pools"},
		{name: "prevResult pool unknown", stdin: hPrev(`{"pools":[{"name":"undefined"}]}`), code: 7, field: "prevResult.pools[0].name"},
		{name: "selector pool subnet with host bits", plugin: "ipam-delegated", stdin: hChain + `"pools":[{"name":"a","subnet":"10.66.0.1/24"}]}}`, code: 7, field: "ipam.pools[0].subnet"},
		{name: "selector pool rangeEnd outside", plugin: "ipam-delegated", stdin: hChain + `"pools":[{"name":"a","subnet":"10.66.0.0/24","rangeEnd":"10.67.0.1"}]}}`, code: 7, field: "ipam.pools[0].rangeEnd"},
		{name: "selector pool ranges overlap", plugin: "ipam-delegated", stdin: hChain + `"pools":[{"name":"a","ranges":[{"subnet":"10.66.0.0/24"},{"subnet":"10.66.0.0/28"}]}]}}`, code: 7, field: "ipam.pools[0].ranges[1]"},
		{name: "selector pool escapes", plugin: "ipam-delegated", stdin: hChain + `"pools":[{"name":"../x","subnet":"10.66.0.0/24"}]}}`, code: 7, field: "ipam.pools[0].name"},
		{name: "selector pool with a slash", plugin: "ipam-delegated", stdin: hChain + `"pools":[{"name":"a/b","subnet":"10.66.0.0/24"}]}}`, code: 7, field: "ipam.pools[0].name"},
		{name: "poolDefinitions name escapes", plugin: "ipam-delegated", stdin: hChain + `"pools":[{"name":"a"}],"poolDefinitions":{"../x":[{"subnet":"10.66.0.0/24"}]}}}`, code: 7, field: "ipam.poolDefinitions"},
		{name: "poolDefinitions shadows the pools dir", plugin: "ipam-delegated", stdin: hChain + `"pools":[{"name":"a"}],"poolDefinitions":{"_pools":[{"subnet":"10.66.0.0/24"}]}}}`, code: 7, field: "ipam.poolDefinitions"},
		// delegates
		{name: "delegates itself", plugin: "ipam-delegated", stdin: `{"cniVersion":"1.0.0","name":"hostile","ipam":{"delegates":["ipam-delegated"]}}`, code: 7, field: "ipam.delegates[0]"},
		{name: "delegate a path", plugin: "ipam-delegated", stdin: `{"cniVersion":"1.0.0","name":"hostile","ipam":{"delegates":["../../../bin/sh"]}}`, code: 7, field: "ipam.delegates[0]"},
		{name: "delegate not in CNI_PATH", plugin: "ipam-delegated", stdin: `{"cniVersion":"1.0.0","name":"hostile","ipam":{"delegates":["ipam-ds-static","nope"]}}`, code: 7, field: "nope"},
		{name: "delegates missing", plugin: "ipam-delegated", stdin: `{"cniVersion":"1.0.0","name":"hostile","ipam":{}}`, code: 7, field: "ipam.delegates"},
		{name: "delegates a string", plugin: "ipam-delegated", stdin: `{"cniVersion":"1.0.0","name":"hostile","ipam":{"delegates":"ipam-da-pools"}}`, code: 7, field: "ipam.delegates"},
		// the environment
		{name: "CNI_COMMAND missing", cmd: "-", code: 4, field: "CNI_COMMAND"},
		{name: "CNI_COMMAND unknown", cmd: "FROB", code: 4, field: "CNI_COMMAND"},
		{name: "CNI_COMMAND lower case", cmd: "add", code: 4, field: "CNI_COMMAND"},
		{name: "container ID empty", edit: func(c *testbin.Call) { c.ContainerID = "" }, code: 4, field: "CNI_CONTAINERID"},
		{name: "container ID oversize", edit: func(c *testbin.Call) { c.ContainerID = strings.Repeat("c", 300) }, code: 4, field: "CNI_CONTAINERID"},
		{name: "container ID with a slash", edit: func(c *testbin.Call) { c.ContainerID = "a/b" }, code: 4, field: "CNI_CONTAINERID"},
		{name: "container ID escapes", edit: func(c *testbin.Call) { c.ContainerID = "../../etc" }, code: 4, field: "CNI_CONTAINERID"},
		{name: "container ID with CRLF", edit: func(c *testbin.Call) { c.ContainerID = "a\r\nb" }, code: 4, field: "CNI_CONTAINERID"},
		{name: "ifname empty", edit: func(c *testbin.Call) { c.IfName = "" }, code: 4, field: "CNI_IFNAME"},
		{name: "ifname oversize", edit: func(c *testbin.Call) { c.IfName = "eth0123456789abc" }, code: 4, field: "CNI_IFNAME"},
		{name: "ifname with a slash", edit: func(c *testbin.Call) { c.IfName = "a/b" }, code: 4, field: "CNI_IFNAME"},
		{name: "ifname dot-dot", edit: func(c *testbin.Call) { c.IfName = ".." }, code: 4, field: "CNI_IFNAME"},
		{name: "ifname with CRLF", edit: func(c *testbin.Call) { c.IfName = "e\r\nx" }, code: 4, field: "CNI_IFNAME"},
		{name: "CNI_NETNS missing on ADD", edit: func(c *testbin.Call) { c.Netns = "" }, code: 4, field: "CNI_NETNS"},
		{name: "CNI_ARGS without =", edit: func(c *testbin.Call) { c.Args = "junk" }, code: 4, field: "CNI_ARGS"},
		{name: "CNI_ARGS empty key", edit: func(c *testbin.Call) { c.Args = "=x;IP=10.66.0.5" }, code: 4, field: "CNI_ARGS"},
		{name: "CNI_ARGS IP not an address", edit: func(c *testbin.Call) { c.Args = "IgnoreUnknown=1;IP=10.66.0.256" }, code: 4, field: "CNI_ARGS"},
		{name: "CNI_ARGS IP with a zone", edit: func(c *testbin.Call) { c.Args = "IP=fe80::1%eth0" }, code: 4, field: "CNI_ARGS"},
		{name: "CNI_ARGS oversize", edit: func(c *testbin.Call) { c.Args = strings.Repeat("K=v;", 20000) }, code: 4, field: "CNI_ARGS"},
		{name: "args an array", stdin: hTop(`"args":[]`), code: 7, field: "args"},
		{name: "args.cni.ips a string", stdin: hTop(`"args":{"cni":{"ips":"10.66.0.5"}}`), code: 7, field: "args"},
		{name: "args.cni.ips not an address", stdin: hTop(`"args":{"cni":{"ips":["10.66.0.x"]}}`), code: 7, field: "args.cni.ips[0]"},
		{name: "runtimeConfig an array", stdin: hTop(`"runtimeConfig":[1]`), code: 7, field: "runtimeConfig"},
		{name: "runtimeConfig.ips not an address", stdin: hTop(`"runtimeConfig":{"ips":["nope/24"]}`), code: 7, field: "runtimeConfig.ips[0]"},
		{name: "runtimeConfig.ipRanges bad subnet", stdin: hTop(`"runtimeConfig":{"ipRanges":[[{"subnet":"10.66.0.0/99"}]]}`), code: 7, field: "runtimeConfig.ipRanges[0][0].subnet"},
		// requested addresses
		{name: "requested the network address", edit: func(c *testbin.Call) { c.Args = "IP=10.66.0.0" }, code: 101, field: "10.66.0.0"},
		{name: "requested the gateway", edit: func(c *testbin.Call) { c.Args = "IP=10.66.0.1" }, code: 101, field: "10.66.0.1"},
		{name: "requested the broadcast address", edit: func(c *testbin.Call) { c.Args = "IP=10.66.0.255" }, code: 101, field: "10.66.0.255"},
		{name: "requested outside every range", edit: func(c *testbin.Call) { c.Args = "IP=192.0.2.1" }, code: 101, field: "192.0.2.1"},
		{name: "requested taken", edit: func(c *testbin.Call) { c.Args = "IP=10.66.0.5" }, setup: addOther("10.66.0.5"), code: 101, field: "10.66.0.5"},
		{name: "args.cni.ips taken", stdin: hTop(`"args":{"cni":{"ips":["10.66.0.7"]}}`), setup: addOther("10.66.0.7"), code: 101, field: "10.66.0.7"},
		{name: "pool requested-ip outside the pool", plugin: "ipam-delegated", stdin: hChain + `"pools":[{"name":"a","subnet":"10.66.0.0/24","requested-ip":"10.99.0.5"}]}}`, code: 101, field: "10.99.0.5"},
		{name: "pool requested-ip the gateway", plugin: "ipam-delegated", stdin: hChain + `"pools":[{"name":"a","subnet":"10.66.0.0/24","requested-ip":"10.66.0.1"}]}}`, code: 101, field: "10.66.0.1"},
		// commands, versions and prevResult
		{name: "CHECK on 0.3.1", cmd: "CHECK", stdin: strings.Replace(hOK, "1.0.0", "0.3.1", 1), code: 1, field: "CHECK"},
		{name: "GC on 1.0.0", cmd: "GC", stdin: strings.Replace(hOK, `"name":"hostile"`, `"name":"hostile","cni.dev/valid-attachments":[]`, 1), code: 1, field: "GC"},
		{name: "STATUS on 0.4.0", cmd: "STATUS", stdin: strings.Replace(hOK, "1.0.0", "0.4.0", 1), code: 1, field: "STATUS"},
		{name: "CHECK without prevResult, nothing held", cmd: "CHECK", code: 3, field: "holds no address"},
		{name: "prevResult an array", cmd: "DEL", stdin: hTop(`"prevResult":[]`), code: 7, field: "prevResult"},
		{name: "prevResult ip without address", cmd: "DEL", stdin: hTop(`"prevResult":{"cniVersion":"1.0.0","ips":[{"gateway":"10.66.0.1"}]}`), code: 6, field: "prevResult"},
		{name: "GC without valid-attachments", cmd: "GC", stdin: strings.Replace(hOK, "1.0.0", "1.1.0", 1), code: 7, field: "cni.dev/valid-attachments"},
		{name: "GC valid-attachments an object", cmd: "GC", stdin: strings.Replace(strings.Replace(hOK, "1.0.0", "1.1.0", 1), `"name":"hostile"`, `"name":"hostile","cni.dev/valid-attachments":{}`, 1), code: 7, field: "cni.dev/valid-attachments"},
		// Configs host-local accepts pass validation: CHECK (which parses
		// the ranges and reserves nothing) reaches the state and finds
		// nothing held.
		{name: "gateway outside subnet", cmd: "CHECK", stdin: hIPAM(`"ranges":[[{"subnet":"10.66.0.0/24","gateway":"169.254.1.1"}]]`), code: 3, field: "holds no address"},
		{name: "rangeStart the network address", cmd: "CHECK", stdin: hIPAM(`"ranges":[[{"subnet":"10.66.0.0/24","rangeStart":"10.66.0.0"}]]`), code: 3, field: "holds no address"},
		{name: "rangeEnd the broadcast address", cmd: "CHECK", stdin: hIPAM(`"ranges":[[{"subnet":"10.66.0.0/24","rangeEnd":"10.66.0.255"}]]`), code: 3, field: "holds no address"},
		// spec-mandated successes
		{name: "DEL of an unknown attachment", cmd: "DEL"},
		{name: "DEL of an unknown attachment, no dataDir yet", cmd: "DEL", stdin: strings.Replace(hOK, "@DATA@", "@DATA@/not/yet", 1)},
		{name: "DEL of an unknown attachment through the chain", cmd: "DEL", plugin: "ipam-delegated", stdin: hChain + `"pools":[{"name":"a","subnet":"10.66.0.0/24"}]}}`},
		{name: "DEL naming another's address releases nothing", cmd: "DEL", setup: addOther("10.66.0.9"),
			stdin: hTop(`"prevResult":{"cniVersion":"1.0.0","ips":[{"address":"10.66.0.9/24"}]}`)},
	}
}

// manyRanges is one range set of n disjoint /30s, the last a copy of the
// first: close to the 4 MiB stdin limit, to catch a quadratic check.
func manyRanges(n int) string {
	var b strings.Builder
	b.WriteString("[")
	for i := range n - 1 {
		fmt.Fprintf(&b, `{"subnet":"10.%d.%d.%d/30"},`, i>>14&255, i>>6&255, i&63<<2)
	}
	b.WriteString(`{"subnet":"10.0.0.0/30"}]`)
	return b.String()
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHostileInput runs each hostile invocation through the real binary in
// a sandbox of its own: it must print exactly one JSON error object with
// the documented code and a message naming the field (or succeed where the
// spec says so), never panic, change nothing in the sandbox outside its
// dataDir, and leave no reservation behind.
func TestHostileInput(t *testing.T) {
	cases := hostileCases()
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dataDir := filepath.Join(root, "data")
			if tc.setup != nil {
				tc.setup(t, root, dataDir)
			}
			stdin := tc.stdin
			if stdin == "" && tc.name != "empty stdin" {
				stdin = hOK
			}
			stdin = strings.NewReplacer("@DATA@", dataDir, "@ROOT@", root).Replace(stdin)
			plugin, cmd := tc.plugin, tc.cmd
			if plugin == "" {
				plugin = "ipam-da-pools"
			}
			if cmd == "" {
				cmd = "ADD"
			}
			c := call(plugin, cmd, "hostile", []byte(stdin))
			if cmd == "-" {
				c.Command = ""
			}
			if tc.edit != nil {
				tc.edit(&c)
			}
			before := snapshot(t, root)
			held, err := plugintest.Reservations(root)
			if err != nil {
				t.Fatal(err)
			}

			start := time.Now()
			r := testbin.Run(c)
			// No hostile input may make a plugin hang: it answers within
			// its lock timeout (the default) plus the exec margin.
			if took := time.Since(start); took > dapools.DefaultLockTimeout+execMargin {
				t.Errorf("took %v to answer", took)
			}

			if strings.Contains(string(r.Stderr), "panic") || strings.Contains(string(r.Stderr), "goroutine ") {
				t.Errorf("crashed: %s", r.Stderr)
			}
			e, err := plugintest.CheckOutput(r.Exit, r.Stdout)
			if err != nil {
				t.Fatalf("%v\nstderr: %s", err, r.Stderr)
			}
			switch {
			case tc.code == 0 && r.Exit != 0:
				t.Errorf("want success, got %s", r.Stdout)
			case tc.code != 0 && r.Exit == 0:
				t.Errorf("want code %d, succeeded: %s", tc.code, r.Stdout)
			case tc.code != 0 && (e.Code != tc.code || !strings.Contains(e.Msg+" "+e.Details, tc.field)):
				t.Errorf("got code %d %q (%s), want code %d naming %q", e.Code, e.Msg, e.Details, tc.code, tc.field)
			}
			if d := diff(before, snapshot(t, root), "data"); len(d) > 0 {
				t.Errorf("changed outside its dataDir:\n%s", strings.Join(d, "\n"))
			}
			after, err := plugintest.Reservations(root)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(held, after) {
				t.Errorf("reservations %v -> %v", held, after)
			}
		})
	}
}
