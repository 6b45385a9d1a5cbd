package delegated

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// inProcessFixture: a fake "self" binary, a personality link to it, and a
// different executable script; the personality records its calls in
// memory, which only an in-process run can do.
func inProcessFixture(t *testing.T) (SelfExecutor, *[]string, string) {
	t.Helper()
	dir := t.TempDir()
	self := filepath.Join(dir, "cniplugins")
	if err := os.WriteFile(self, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("cniplugins", filepath.Join(dir, "ipam-test")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("cniplugins", filepath.Join(dir, "ipam-unknown")); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("#!/bin/sh\necho '{\"cniVersion\":\"1.0.0\",\"dns\":{\"domain\":\"exec\"}}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var calls []string
	fn := func(req *plugin.Request) (types.Result, error) {
		calls = append(calls, req.Command+" "+req.Getenv("CNI_COMMAND")+" "+req.Getenv("MARK"))
		switch req.Command {
		case "CHECK":
			panic("delegate bug")
		case "DEL":
			return nil, cnierr.New(cnierr.CodeAddrUnavailable, "no", "x")
		}
		return &current.Result{CNIVersion: "1.0.0", DNS: types.DNS{Domain: "in-process"}}, nil
	}
	p := plugin.Personality{Name: "ipam-test", Funcs: plugin.Funcs{Add: fn, Del: fn, Check: fn, GC: fn, Status: fn}}
	lookup := func(name string) (plugin.Personality, bool) { return p, name == "ipam-test" }
	env := []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=c", "CNI_IFNAME=eth0", "CNI_NETNS=/x", "CNI_PATH=" + dir, "MARK=m1"}
	return SelfExecutor{Exec: ExecExecutor{Environ: env, Stderr: os.Stderr}, Self: self, Lookup: lookup, Log: logging.Nop()}, &calls, dir
}

func TestSelfExecutor(t *testing.T) {
	s, calls, dir := inProcessFixture(t)
	conf, err := netconf.Parse([]byte(`{"cniVersion":"1.0.0","name":"n","ipam":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	out, _, err := s.Run(ctx, Delegate{Name: "ipam-test", Path: filepath.Join(dir, "ipam-test")}, "ADD", conf)
	if err != nil || !strings.Contains(string(out), `"domain": "in-process"`) {
		t.Fatalf("in-process ADD = %s, %v", out, err)
	}
	if strings.Join(*calls, ";") != "ADD ADD m1" {
		t.Errorf("calls = %v: want one in-process ADD seeing its env", *calls)
	}

	// The delegate sees its own CNI_COMMAND, and its error keeps its code.
	_, _, err = s.Run(ctx, Delegate{Name: "ipam-test", Path: filepath.Join(dir, "ipam-test")}, "DEL", conf)
	if e := cnierr.As(err); e.Code != cnierr.CodeAddrUnavailable || e.Details != "x" {
		t.Errorf("DEL error = %+v, want the delegate's 101", e)
	}
	if (*calls)[1] != "DEL DEL m1" {
		t.Errorf("DEL call = %q", (*calls)[1])
	}

	// A panic is contained and reported as the delegate's error.
	_, _, err = s.Run(ctx, Delegate{Name: "ipam-test", Path: filepath.Join(dir, "ipam-test")}, "CHECK", conf)
	if e := cnierr.As(err); e.Code != cnierr.CodeInternal || !strings.Contains(e.Details, "delegate bug") {
		t.Errorf("panic became %+v, want 999 with the panic value", e)
	}

	// A different binary is exec'd.
	out, _, err = s.Run(ctx, Delegate{Name: "other", Path: filepath.Join(dir, "other")}, "ADD", conf)
	if err != nil || !strings.Contains(string(out), `"exec"`) {
		t.Errorf("other binary = %s, %v; want it exec'd", out, err)
	}

	// A link to this binary under an unknown name is exec'd too (here the
	// fake self exits 3 with no output, as the real one would exit 1).
	n := len(*calls)
	_, _, err = s.Run(ctx, Delegate{Name: "ipam-unknown", Path: filepath.Join(dir, "ipam-unknown")}, "ADD", conf)
	if err == nil || len(*calls) != n {
		t.Errorf("unknown personality ran in-process (err %v)", err)
	}
}
