package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/registry"
	"github.com/cniplugins/cniplugins/internal/version"
)

func TestResolve(t *testing.T) {
	tests := []struct {
		name        string
		argv        []string
		personality string
		cli         []string
		unknown     string
	}{
		{name: "symlink name", argv: []string{"/opt/cni/bin/ipam-delegated"}, personality: "ipam-delegated"},
		{name: "symlink name wins over argv[1]", argv: []string{"ipam-ds-static", "ipam-delegated"}, personality: "ipam-ds-static"},
		{name: "busybox fallback", argv: []string{"/usr/bin/cniplugins", "ipam-ds-static"}, personality: "ipam-ds-static"},
		{name: "fallback from any name", argv: []string{"./renamed", "ipam-delegated"}, personality: "ipam-delegated"},
		{name: "own name runs the CLI", argv: []string{"cniplugins", "version"}, cli: []string{"version"}},
		{name: "verbose flavour runs the CLI", argv: []string{"bin/cniplugins-verbose", "list"}, cli: []string{"list"}},
		{name: "full flavour runs the CLI", argv: []string{"bin/cniplugins-full", "list"}, cli: []string{"list"}},
		{name: "own name, no args", argv: []string{"cniplugins"}, cli: []string{}},
		{name: "unknown link name", argv: []string{"/opt/cni/bin/ipam-ds-nope"}, unknown: "ipam-ds-nope"},
		{name: "unknown link name with unknown arg", argv: []string{"ipam-ds-nope", "x"}, unknown: "ipam-ds-nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Lean(version.FlavourLean).Resolve(tt.argv)
			switch {
			case tt.personality != "":
				if got.Personality == nil || got.Personality.Name != tt.personality {
					t.Fatalf("got %+v, want personality %s", got, tt.personality)
				}
			case tt.unknown != "":
				if got.Personality != nil || got.Unknown != tt.unknown {
					t.Fatalf("got %+v, want unknown %s", got, tt.unknown)
				}
			default:
				if got.Personality != nil || got.Unknown != "" || strings.Join(got.CLIArgs, " ") != strings.Join(tt.cli, " ") {
					t.Fatalf("got %+v, want CLI %v", got, tt.cli)
				}
			}
		})
	}
}

func TestMainExitCodesAndStreams(t *testing.T) {
	tests := []struct {
		argv     []string
		exit     int
		stdout   string // substring
		stderr   string // substring
		noStdout bool
	}{
		{argv: []string{"cniplugins", "list"}, stdout: "ipam-delegated\nipam-ds-static\n"},
		{argv: []string{"cniplugins", "version"}, stdout: "cni spec versions: 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0"},
		{argv: []string{"cniplugins", "version"}, stdout: "\nflavour: lean\n"},
		{argv: []string{"cniplugins", "ipam-bogus"}, exit: 1, stderr: "known personalities:\n  ipam-delegated", noStdout: true},
		{argv: []string{"ipam-bogus"}, exit: 1, stderr: "unknown personality \"ipam-bogus\"", noStdout: true},
		// The full flavour's names: where they live, not "unknown".
		{argv: []string{"cniplugins", "docker-ipam"}, exit: 1, stderr: "docker-ipam lives in the full flavour", noStdout: true},
		{argv: []string{"/opt/cni/bin/ipam-da-etcd"}, exit: 1, stderr: "install-symlinks.sh --flavour full", noStdout: true},
		{argv: []string{"cniplugins", "leases", "--etcd", "http://127.0.0.1:2379"}, exit: 1, stderr: "--etcd needs the full flavour: run cniplugins-full", noStdout: true},
		{argv: []string{"cniplugins", "gc", "--pool", "p", "--keep", "c", "--etcd", "http://127.0.0.1:2379", "--cacert", "ca.pem"}, exit: 1, stderr: "--etcd needs the full flavour", noStdout: true},
		{argv: []string{"cniplugins", "release", "10.0.0.1", "--pool", "p", "--node", "n1"}, exit: 1, stderr: "--node needs --etcd", noStdout: true},
		// gc --cri speaks gRPC: the lean binary says where it lives.
		{argv: []string{"cniplugins", "gc", "--cri", "/run/containerd/containerd.sock"}, exit: 2, stderr: "--cri needs the full flavour: run cniplugins-full", noStdout: true},
		{argv: []string{"cniplugins", "gc", "--cri", "/run/x.sock", "--pool", "p"}, exit: 1, stderr: "drop --pool, --keep", noStdout: true},
		{argv: []string{"cniplugins", "gc", "--pool", "p", "--keep", "c", "--min-age", "1m"}, exit: 1, stderr: "--min-age, --cni-conf-dir and --cni-max-conf-num go with --cri", noStdout: true},
		{argv: []string{"cniplugins", "gc", "--network", "a", "--network", "b", "--keep", "c"}, exit: 1, stderr: "invalid --network a, b: name one network (several go with --cri)", noStdout: true},
		// k8s-install's GC loop is gc --cri: the lean image says where it lives, before installing anything.
		{argv: []string{"cniplugins", "k8s-install", "--bin-dir", "/nonexistent/cniplugins-test", "--watch", "--gc-cri", "/run/x.sock"}, exit: 2, stderr: "--gc-cri needs the full flavour: run the cniplugins-full image", noStdout: true},
		// So is its HTTP server, with or without --watch.
		{argv: []string{"cniplugins", "k8s-install", "--bin-dir", "/nonexistent/cniplugins-test", "--watch", "--metrics-address", "127.0.0.1:0"}, exit: 2, stderr: "--metrics-address needs the full flavour: run the cniplugins-full image", noStdout: true},
		{argv: []string{"cniplugins", "k8s-install", "--bin-dir", "/nonexistent/cniplugins-test", "--metrics-address=:9745"}, exit: 2, stderr: "--metrics-address needs the full flavour", noStdout: true},
		// fsck: 2 when it cannot check, apart from 1 (problems remain).
		{argv: []string{"cniplugins", "fsck", "--data-dir", "/nonexistent/cniplugins-test"}, exit: 2, stderr: "does not exist", noStdout: true},
		{argv: []string{"cniplugins", "fsck", "--bogus"}, exit: 2, stderr: "unknown flag", noStdout: true},
		{argv: []string{"cniplugins", "fsck", "extra"}, exit: 2, stderr: "unknown command", noStdout: true},
		{argv: []string{"cniplugins", "fsck", "-o", "yaml"}, exit: 2, stderr: "invalid --output", noStdout: true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			exit := Main(tt.argv, plugin.IO{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr}, Lean(version.FlavourLean))
			if exit != tt.exit {
				t.Errorf("exit = %d, want %d (stderr %q)", exit, tt.exit, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) || (tt.noStdout && stdout.Len() > 0) {
				t.Errorf("stdout = %q, want %q", stdout.String(), tt.stdout)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr = %q, want %q", stderr.String(), tt.stderr)
			}
		})
	}
}

// TestFlavourComposition: what a flavour's main adds is answered to, listed
// and offered as commands; the lean flavour knows none of it.
func TestFlavourComposition(t *testing.T) {
	extra := plugin.Personality{Name: "ipam-da-extra", Summary: "test personality"}
	full := Flavour{
		Registry: registry.Lean().With(extra),
		Commands: func() []*cobra.Command {
			return []*cobra.Command{{Use: "extra-daemon", Run: func(c *cobra.Command, _ []string) { fmt.Fprint(c.OutOrStdout(), "daemon ran") }}}
		},
	}
	run := func(f Flavour, argv ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		exit := Main(argv, plugin.IO{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr}, f)
		return exit, stdout.String(), stderr.String()
	}
	if exit, out, _ := run(full, "cniplugins-full", "list"); exit != 0 || !strings.HasSuffix(out, "ipam-da-pools\nipam-da-extra\n") {
		t.Errorf("full list: exit %d, %q", exit, out)
	}
	if exit, out, _ := run(full, "cniplugins", "extra-daemon"); exit != 0 || out != "daemon ran" {
		t.Errorf("full command: exit %d, %q", exit, out)
	}
	if got := full.Resolve([]string{"/opt/cni/bin/ipam-da-extra"}); got.Personality == nil || got.Personality.Name != extra.Name {
		t.Errorf("full flavour does not resolve its extra personality: %+v", got)
	}
	if exit, out, _ := run(Lean(version.FlavourLean), "cniplugins", "list"); exit != 0 || strings.Contains(out, "extra") {
		t.Errorf("lean list: exit %d, %q", exit, out)
	}
	if exit, _, stderr := run(Lean(version.FlavourLean), "ipam-da-extra"); exit == 0 || !strings.Contains(stderr, "unknown personality") {
		t.Errorf("lean flavour answered a full-only name: exit %d, %q", exit, stderr)
	}
	if exit, _, stderr := run(Lean(version.FlavourLean), "cniplugins", "extra-daemon"); exit == 0 || !strings.Contains(stderr, "unknown personality") {
		t.Errorf("lean flavour ran a full-only command: exit %d, %q", exit, stderr)
	}
}
