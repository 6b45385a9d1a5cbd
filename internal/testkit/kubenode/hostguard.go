package kubenode

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// A kubelet changes the host outside its root directory: kernel tunables
// it insists on, iptables chains it keeps as canaries, and directories at
// fixed paths. hostGuard records them before the node starts and puts
// them back after it stops; it removes only what was not there before,
// since other tests on the machine keep their own chains and links.
type hostGuard struct {
	sysctls map[string]string   // path under /proc/sys → its value before
	chains  map[string][]string // "iptables/filter" → its chains before
	absent  []string            // fixed paths that did not exist before
}

// kubeletSysctls are the tunables the kubelet's container manager sets
// when protectKernelDefaults is off (it refuses to start with differing
// values when it is on).
var kubeletSysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

// kubeletPaths are the directories a kubelet makes at fixed paths,
// whatever its --root-dir.
var kubeletPaths = []string{
	"/var/lib/kubelet", "/var/log/containers", "/var/log/pods", "/run/mount",
}

// iptablesTables are where the kubelet keeps its canary chains.
var iptablesTables = []string{"filter", "nat", "mangle"}

func guardHost() *hostGuard {
	g := &hostGuard{sysctls: map[string]string{}, chains: map[string][]string{}}
	for _, s := range kubeletSysctls {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil {
			g.sysctls[s] = strings.TrimSpace(string(b))
		}
	}
	for _, cmd := range iptablesCommands() {
		for _, t := range iptablesTables {
			g.chains[cmd+"/"+t] = chainsOf(cmd, t)
		}
	}
	for _, p := range kubeletPaths {
		if _, err := os.Lstat(p); os.IsNotExist(err) {
			g.absent = append(g.absent, p)
		}
	}
	return g
}

// restore puts the host back. root is the node's directory: the kubelet
// links each container's log from /var/log/containers into it, and the
// node is stopped through the CRI, so the kubelet never unlinks them.
func (g *hostGuard) restore(root string) {
	if g == nil {
		return
	}
	for s, v := range g.sysctls {
		_ = os.WriteFile("/proc/sys/"+s, []byte(v), 0o644)
	}
	for key, before := range g.chains {
		cmd, table, _ := strings.Cut(key, "/")
		for _, c := range chainsOf(cmd, table) {
			if !slices.Contains(before, c) && strings.HasPrefix(c, "KUBE-") {
				dropChain(cmd, table, c)
			}
		}
	}
	for _, p := range g.absent {
		_ = os.RemoveAll(p)
	}
	logs, _ := os.ReadDir("/var/log/containers")
	for _, e := range logs {
		link := filepath.Join("/var/log/containers", e.Name())
		if to, err := os.Readlink(link); err == nil && strings.HasPrefix(to, root+string(filepath.Separator)) {
			_ = os.Remove(link)
		}
	}
}

// iptablesCommands are the iptables front ends of the host.
func iptablesCommands() []string {
	var cmds []string
	for _, c := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(c); err == nil {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// chainsOf lists the user chains of one table.
func chainsOf(cmd, table string) []string {
	out, err := exec.Command(cmd, "-w", "-t", table, "-S").Output()
	if err != nil {
		return nil
	}
	var chains []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "-N" {
			chains = append(chains, f[1])
		}
	}
	return chains
}

// dropChain deletes every rule that jumps to chain, then the chain.
func dropChain(cmd, table, chain string) {
	out, _ := exec.Command(cmd, "-w", "-t", table, "-S").Output()
	for _, l := range strings.Split(string(out), "\n") {
		f := ruleWords(l)
		if len(f) > 2 && f[0] == "-A" && slices.Contains(f, "-j") && f[slices.Index(f, "-j")+1] == chain {
			_ = exec.Command(cmd, append([]string{"-w", "-t", table, "-D"}, f[1:]...)...).Run()
		}
	}
	_ = exec.Command(cmd, "-w", "-t", table, "-F", chain).Run()
	_ = exec.Command(cmd, "-w", "-t", table, "-X", chain).Run()
}

// ruleWords splits a line of iptables -S into its words: a comment in
// double quotes is one word, without its quotes.
func ruleWords(line string) []string {
	var words []string
	var w strings.Builder
	quoted, in := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				words = append(words, w.String())
				w.Reset()
			}
			in = false
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}
