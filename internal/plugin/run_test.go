package plugin

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/netconf"
)

// testPersonality returns one address, panics on CHECK when asked, and
// logs a warning on every call (which must never reach stdout).
func testPersonality(calls *[]string) Personality {
	fn := func(req *Request) (types.Result, error) {
		*calls = append(*calls, req.Command)
		req.Log.Warn("a warning that belongs on stderr")
		if req.Command == CmdCheck && req.Getenv("PANIC") != "" {
			panic("kaboom")
		}
		if req.Command != CmdAdd {
			return nil, nil
		}
		_, ipn, _ := net.ParseCIDR("10.1.2.3/24")
		ipn.IP = net.ParseIP("10.1.2.3")
		return &current.Result{CNIVersion: current.ImplementedSpecVersion, IPs: []*current.IPConfig{{Address: *ipn}}}, nil
	}
	return Personality{Name: "test", Funcs: Funcs{Add: fn, Del: fn, Check: fn, GC: fn, Status: fn},
		ArgKeys: func(*netconf.Envelope) ([]string, error) { return []string{"IP"}, nil }}
}

func TestRun(t *testing.T) {
	conf := func(v string) string { return `{"cniVersion":"` + v + `","name":"net","ipam":{}}` }
	base := []string{"CNI_CONTAINERID=abc", "CNI_NETNS=/var/run/netns/x", "CNI_IFNAME=eth0", "CNI_PATH=/opt/cni/bin"}
	tests := []struct {
		name    string
		env     []string
		stdin   string
		exit    int
		code    uint   // error code when exit == 1
		detail  string // substring of the error
		stdout  string // substring of a success output
		called  string
		noCalls bool
	}{
		{name: "ADD 1.0.0", env: append([]string{"CNI_COMMAND=ADD"}, base...), stdin: conf("1.0.0"), stdout: `"address": "10.1.2.3/24"`, called: "ADD"},
		{name: "ADD converted to 0.4.0", env: append([]string{"CNI_COMMAND=ADD"}, base...), stdin: conf("0.4.0"), stdout: `"version": "4"`, called: "ADD"},
		{name: "ADD converted to 0.3.0", env: append([]string{"CNI_COMMAND=ADD"}, base...), stdin: conf("0.3.0"), stdout: `"cniVersion": "0.3.0"`, called: "ADD"},
		{name: "VERSION", env: []string{"CNI_COMMAND=VERSION"}, stdout: `"supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]`, noCalls: true},
		{name: "no command", env: base, stdin: conf("1.0.0"), exit: 1, code: 4, detail: "CNI_COMMAND", noCalls: true},
		{name: "unknown command", env: append([]string{"CNI_COMMAND=FROB"}, base...), stdin: conf("1.0.0"), exit: 1, code: 4, detail: "FROB", noCalls: true},
		{name: "ADD without container ID", env: []string{"CNI_COMMAND=ADD", "CNI_NETNS=/x", "CNI_IFNAME=eth0", "CNI_PATH=/p"}, stdin: conf("1.0.0"), exit: 1, code: 4, detail: "CNI_CONTAINERID", noCalls: true},
		{name: "ADD without netns", env: []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=a", "CNI_IFNAME=eth0", "CNI_PATH=/p"}, stdin: conf("1.0.0"), exit: 1, code: 4, detail: "CNI_NETNS", noCalls: true},
		{name: "DEL without netns is fine", env: []string{"CNI_COMMAND=DEL", "CNI_CONTAINERID=a", "CNI_IFNAME=eth0", "CNI_PATH=/p"}, stdin: conf("1.0.0"), called: "DEL"},
		{name: "container ID escaping", env: append(append([]string{"CNI_COMMAND=DEL"}, base...), "CNI_CONTAINERID=../../etc"), stdin: conf("1.0.0"), exit: 1, code: 4, detail: "CNI_CONTAINERID", noCalls: true},
		{name: "container ID with CRLF", env: append(append([]string{"CNI_COMMAND=DEL"}, base...), "CNI_CONTAINERID=a\r\nb"), stdin: conf("1.0.0"), exit: 1, code: 4, detail: "CNI_CONTAINERID", noCalls: true},
		{name: "container ID oversize", env: append(append([]string{"CNI_COMMAND=DEL"}, base...), "CNI_CONTAINERID="+strings.Repeat("a", 201)), stdin: conf("1.0.0"), exit: 1, code: 4, detail: "CNI_CONTAINERID", noCalls: true},
		// NUL cannot pass through execve, but an in-process delegate gets
		// its environment as Go strings: it must be refused all the same.
		{name: "container ID with NUL", env: append(append([]string{"CNI_COMMAND=ADD"}, base...), "CNI_CONTAINERID=a\x00b"), stdin: conf("1.0.0"), exit: 1, code: 4, detail: "CNI_CONTAINERID", noCalls: true},
		{name: "ifname with NUL", env: append(append([]string{"CNI_COMMAND=ADD"}, base...), "CNI_IFNAME=eth\x000"), stdin: conf("1.0.0"), exit: 1, code: 4, detail: "CNI_IFNAME", noCalls: true},
		{name: "network name with NUL", env: append([]string{"CNI_COMMAND=ADD"}, base...), stdin: `{"cniVersion":"1.0.0","name":"n\u0000../x","ipam":{}}`, exit: 1, code: 7, detail: "name", noCalls: true},
		{name: "ifname with slash", env: append(append([]string{"CNI_COMMAND=ADD"}, base...), "CNI_IFNAME=a/b"), stdin: conf("1.0.0"), exit: 1, code: 4, detail: "CNI_IFNAME", noCalls: true},
		{name: "ifname too long", env: append(append([]string{"CNI_COMMAND=ADD"}, base...), "CNI_IFNAME=0123456789abcdef"), stdin: conf("1.0.0"), exit: 1, code: 4, detail: "CNI_IFNAME", noCalls: true},
		{name: "ifname dotdot", env: append(append([]string{"CNI_COMMAND=ADD"}, base...), "CNI_IFNAME=.."), stdin: conf("1.0.0"), exit: 1, code: 4, detail: "CNI_IFNAME", noCalls: true},
		{name: "GC needs no attachment", env: []string{"CNI_COMMAND=GC", "CNI_PATH=/p"}, stdin: conf("1.1.0"), called: "GC"},
		{name: "STATUS needs no attachment", env: []string{"CNI_COMMAND=STATUS", "CNI_PATH=/p"}, stdin: conf("1.1.0"), called: "STATUS"},
		{name: "STATUS needs 1.1.0", env: []string{"CNI_COMMAND=STATUS", "CNI_PATH=/p"}, stdin: conf("1.0.0"), exit: 1, code: 1, detail: "STATUS", noCalls: true},
		{name: "CHECK needs 0.4.0", env: append([]string{"CNI_COMMAND=CHECK"}, base...), stdin: conf("0.3.1"), exit: 1, code: 1, detail: "CHECK", noCalls: true},
		{name: "unknown CNI_ARGS key", env: append(append([]string{"CNI_COMMAND=DEL"}, base...), "CNI_ARGS=IP=10.1.2.3;FOO=bar"), stdin: conf("1.0.0"), exit: 1, code: 4, detail: "FOO", noCalls: true},
		{name: "IgnoreUnknown lets unknown keys through", env: append(append([]string{"CNI_COMMAND=ADD"}, base...), "CNI_ARGS=IgnoreUnknown=1;FOO=bar"), stdin: conf("1.0.0"), stdout: "10.1.2.3/24", called: "ADD"},
		{name: "bad CNI_ARGS", env: append(append([]string{"CNI_COMMAND=ADD"}, base...), "CNI_ARGS=junk"), stdin: conf("1.0.0"), exit: 1, code: 4, detail: "CNI_ARGS", noCalls: true},
		{name: "oversize stdin", env: append([]string{"CNI_COMMAND=ADD"}, base...), stdin: `{"cniVersion":"1.0.0","name":"n","x":"` + strings.Repeat("x", MaxConfigSize) + `"}`, exit: 1, code: 7, detail: "stdin", noCalls: true},
		{name: "panic contained", env: append([]string{"CNI_COMMAND=CHECK", "PANIC=1"}, base...), stdin: conf("1.0.0"), exit: 1, code: 999, detail: "kaboom", called: "CHECK"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls []string
			var stdout, stderr bytes.Buffer
			exit := Run(testPersonality(&calls), IO{Environ: tt.env, Stdin: strings.NewReader(tt.stdin), Stdout: &stdout, Stderr: &stderr})
			if exit != tt.exit {
				t.Fatalf("exit = %d, want %d; stdout %s", exit, tt.exit, stdout.String())
			}
			if strings.Contains(stdout.String(), "warning") {
				t.Errorf("a log line reached stdout: %s", stdout.String())
			}
			if tt.noCalls && len(calls) > 0 {
				t.Errorf("personality called (%v) despite invalid input", calls)
			}
			if tt.called != "" && strings.Join(calls, ",") != tt.called {
				t.Errorf("calls = %v, want %s", calls, tt.called)
			}
			if tt.exit == 0 {
				if !strings.Contains(stdout.String(), tt.stdout) {
					t.Errorf("stdout = %s, want %s", stdout.String(), tt.stdout)
				}
				return
			}
			var e struct {
				types.Error
				CNIVersion string `json:"cniVersion"`
			}
			dec := json.NewDecoder(&stdout)
			if err := dec.Decode(&e); err != nil {
				t.Fatalf("stdout is not one JSON error: %v", err)
			}
			if dec.More() {
				t.Errorf("more than one JSON object on stdout")
			}
			if e.Code != tt.code || !strings.Contains(e.Msg+" "+e.Details, tt.detail) {
				t.Errorf("error = %+v, want code %d mentioning %q", e.Error, tt.code, tt.detail)
			}
		})
	}
}

// TestRunUncheckedArgs: a personality without ArgKeys (ipam-delegated)
// gets CNI_ARGS untouched in its environment, however malformed, and no
// parsed pairs.
func TestRunUncheckedArgs(t *testing.T) {
	var got *Request
	p := Personality{Name: "pass", Funcs: Funcs{Del: func(req *Request) (types.Result, error) { got = req; return nil, nil }}}
	env := []string{"CNI_COMMAND=DEL", "CNI_CONTAINERID=abc", "CNI_IFNAME=eth0", "CNI_PATH=/p", "CNI_ARGS=;;A=b=c;FOO"}
	var stdout bytes.Buffer
	if exit := Run(p, IO{Environ: env, Stdin: strings.NewReader(`{"cniVersion":"1.0.0","name":"n","ipam":{}}`), Stdout: &stdout, Stderr: io.Discard}); exit != 0 {
		t.Fatalf("exit %d: %s", exit, stdout.String())
	}
	if got == nil || got.CNIArgs != nil || got.Args.Args != ";;A=b=c;FOO" || got.Getenv("CNI_ARGS") != ";;A=b=c;FOO" {
		t.Fatalf("request = %+v", got)
	}
}

func TestIOGetenvLastWins(t *testing.T) {
	p := IO{Environ: []string{"A=1", "AB=2", "A=3", "B"}}
	if p.Getenv("A") != "3" || p.Getenv("AB") != "2" || p.Getenv("B") != "" || p.Getenv("C") != "" {
		t.Errorf("Getenv wrong: A=%q AB=%q", p.Getenv("A"), p.Getenv("AB"))
	}
}

// TestRunClock: a command runs at IO.Now's instant when it is set, and at
// the time it starts otherwise.
func TestRunClock(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		now  func() time.Time
		want func(time.Time) bool
	}{
		"IO.Now":   {func() time.Time { return at }, func(got time.Time) bool { return got.Equal(at) }},
		"time.Now": {nil, func(got time.Time) bool { return time.Since(got) >= 0 && time.Since(got) < time.Minute }},
	} {
		var got time.Time
		p := Personality{Name: "clock", Funcs: Funcs{Del: func(req *Request) (types.Result, error) { got = req.Now; return nil, nil }}}
		env := []string{"CNI_COMMAND=DEL", "CNI_CONTAINERID=abc", "CNI_IFNAME=eth0", "CNI_PATH=/p"}
		var stdout bytes.Buffer
		if exit := Run(p, IO{Environ: env, Stdin: strings.NewReader(`{"cniVersion":"1.0.0","name":"n","ipam":{}}`), Stdout: &stdout, Stderr: io.Discard, Now: tc.now}); exit != 0 {
			t.Fatalf("%s: exit %d: %s", name, exit, stdout.String())
		}
		if !tc.want(got) {
			t.Errorf("%s: the command ran at %v", name, got)
		}
	}
}
