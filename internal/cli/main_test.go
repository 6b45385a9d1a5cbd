package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/plugin"
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
		{name: "own name, no args", argv: []string{"cniplugins"}, cli: []string{}},
		{name: "unknown link name", argv: []string{"/opt/cni/bin/ipam-ds-nope"}, unknown: "ipam-ds-nope"},
		{name: "unknown link name with unknown arg", argv: []string{"ipam-ds-nope", "x"}, unknown: "ipam-ds-nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Resolve(tt.argv)
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
		{argv: []string{"cniplugins", "ipam-bogus"}, exit: 1, stderr: "known personalities:\n  ipam-delegated", noStdout: true},
		{argv: []string{"ipam-bogus"}, exit: 1, stderr: "unknown personality \"ipam-bogus\"", noStdout: true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			exit := Main(tt.argv, plugin.IO{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr})
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
