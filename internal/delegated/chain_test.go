package delegated

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// call is what the fake executor saw.
type call struct {
	delegate, cmd string
	prev          string // prevResult as received ("" = none)
}

// fakeExec answers ADD with a result naming the delegate (so chaining is
// visible), fails where told, and prints on DEL only where told.
type fakeExec struct {
	calls    []call
	failAdd  string          // delegate whose ADD fails
	failCmd  map[string]uint // "name/CMD" -> error code
	delPrint map[string]bool // delegates that print a result on every command
}

func (f *fakeExec) Run(_ context.Context, d Delegate, cmd string, in *netconf.Envelope) ([]byte, types.Result, error) {
	out, err := f.run(d, cmd, in)
	return out, nil, err
}

func (f *fakeExec) run(d Delegate, cmd string, in *netconf.Envelope) ([]byte, error) {
	stdin := in.Raw
	var conf struct {
		PrevResult json.RawMessage `json:"prevResult"`
	}
	if err := json.Unmarshal(stdin, &conf); err != nil {
		return nil, fmt.Errorf("fake got invalid stdin: %w", err)
	}
	f.calls = append(f.calls, call{d.Name, cmd, tag(conf.PrevResult)})
	if code, ok := f.failCmd[d.Name+"/"+cmd]; ok {
		return nil, types.NewError(code, "boom", "from "+d.Name)
	}
	if cmd == "ADD" && f.failAdd == d.Name {
		return nil, types.NewError(101, "requested address unavailable", "10.0.0.5")
	}
	if cmd == "ADD" || f.delPrint[d.Name] {
		return result(d.Name + "-" + strings.ToLower(cmd)), nil
	}
	return nil, nil
}

// result is a 1.0.0 result whose DNS domain carries a tag.
func result(t string) []byte {
	return []byte(fmt.Sprintf(`{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24"}],"dns":{"domain":%q}}`, t))
}

// tag extracts the tag from a prevResult, "runtime" for the runtime's own.
func tag(prev json.RawMessage) string {
	if len(prev) == 0 {
		return ""
	}
	var r struct {
		DNS struct{ Domain string } `json:"dns"`
	}
	_ = json.Unmarshal(prev, &r)
	return r.DNS.Domain
}

func newTestChain(t *testing.T, f *fakeExec, withRuntimePrev bool) *Chain {
	t.Helper()
	conf := `{"cniVersion":"1.0.0","name":"net","ipam":{"type":"ipam-delegated","delegates":["a","b","c"]}`
	if withRuntimePrev {
		conf += `,"prevResult":` + string(result("runtime"))
	}
	env, err := netconf.Parse([]byte(conf + "}"))
	if err != nil {
		t.Fatal(err)
	}
	return &Chain{Conf: env, Delegates: []Delegate{{Name: "a"}, {Name: "b"}, {Name: "c"}}, Exec: f, Log: logging.Nop()}
}

func TestAddChainsPrevResultAndReturnsLast(t *testing.T) {
	f := &fakeExec{}
	res, err := newTestChain(t, f, false).Add(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []call{{"a", "ADD", ""}, {"b", "ADD", "a-add"}, {"c", "ADD", "b-add"}}
	assertCalls(t, f.calls, want)
	var buf strings.Builder
	if err := res.PrintTo(&buf); err != nil {
		t.Fatal(err)
	}
	if buf.String() != string(result("c-add")) {
		t.Errorf("result = %s, want c's verbatim", buf.String())
	}
}

func TestAddRollback(t *testing.T) {
	tests := []struct {
		name     string
		failAt   string
		code     uint // failAt's ADD error; 0: 101
		runtime  bool
		delPrint map[string]bool
		want     []call
	}{
		{
			name: "first fails: DEL on it alone with the runtime's input", failAt: "a",
			want: []call{{"a", "ADD", ""}, {"a", "DEL", ""}},
		},
		{
			name: "first fails keeps the runtime's own prevResult", failAt: "a", runtime: true,
			want: []call{{"a", "ADD", "runtime"}, {"a", "DEL", "runtime"}},
		},
		{
			name: "second fails: DEL a then b, both with what b received", failAt: "b",
			want: []call{{"a", "ADD", ""}, {"b", "ADD", "a-add"}, {"a", "DEL", "a-add"}, {"b", "DEL", "a-add"}},
		},
		{
			name: "third fails: DEL a, b, c in order, chaining what DEL printed", failAt: "c",
			delPrint: map[string]bool{"a": true},
			want: []call{
				{"a", "ADD", ""}, {"b", "ADD", "a-add"}, {"c", "ADD", "b-add"},
				{"a", "DEL", "b-add"}, {"b", "DEL", "a-del"}, {"c", "DEL", "a-del"},
			},
		},
		{
			name: "third fails, no DEL prints: prevResult stays", failAt: "c",
			want: []call{
				{"a", "ADD", ""}, {"b", "ADD", "a-add"}, {"c", "ADD", "b-add"},
				{"a", "DEL", "b-add"}, {"b", "DEL", "b-add"}, {"c", "DEL", "b-add"},
			},
		},
		{
			name: "second answers 102: DEL a alone, b's DEL would free the live attachment's address", failAt: "b", code: 102,
			want: []call{{"a", "ADD", ""}, {"b", "ADD", "a-add"}, {"a", "DEL", "a-add"}},
		},
		{
			name: "first answers 102: no DEL", failAt: "a", code: 102,
			want: []call{{"a", "ADD", ""}},
		},
		{
			name: "third answers 106: DEL a, b, c as for any other error", failAt: "c", code: 106,
			want: []call{
				{"a", "ADD", ""}, {"b", "ADD", "a-add"}, {"c", "ADD", "b-add"},
				{"a", "DEL", "b-add"}, {"b", "DEL", "b-add"}, {"c", "DEL", "b-add"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeExec{failAdd: tt.failAt, delPrint: tt.delPrint}
			code := uint(101)
			if tt.code != 0 {
				code = tt.code
				f.failAdd, f.failCmd = "", map[string]uint{tt.failAt + "/ADD": tt.code}
			}
			_, err := newTestChain(t, f, tt.runtime).Add(context.Background())
			e := cnierr.As(err)
			if e.Code != code || !strings.HasPrefix(e.Msg, tt.failAt+": ") {
				t.Errorf("error = %+v, want code %d prefixed with %q", e, code, tt.failAt)
			}
			assertCalls(t, f.calls, tt.want)
		})
	}
}

func TestRollbackIgnoresDelFailures(t *testing.T) {
	f := &fakeExec{failAdd: "c", failCmd: map[string]uint{"a/DEL": 5}}
	_, err := newTestChain(t, f, false).Add(context.Background())
	if e := cnierr.As(err); e.Code != 101 {
		t.Fatalf("error = %+v, want the ADD's code 101", e)
	}
	if n := len(f.calls); n != 6 {
		t.Errorf("%d calls, want 3 ADD + 3 DEL despite a's DEL failing: %+v", n, f.calls)
	}
}

func TestAddRejectsInvalidResult(t *testing.T) {
	for _, bad := range []string{
		"not json",
		// Decodes as a 1.0.0 result, but the ip has no address: passed
		// on, it would print as "<nil>".
		`{"cniVersion":"1.0.0","ips":[{"gateway":"10.0.0.1"}]}`,
		`{"cniVersion":"1.0.0","ips":[null]}`,
	} {
		f := &fakeExec{}
		c := newTestChain(t, f, false)
		c.Exec = execFunc(func(d Delegate, cmd string) ([]byte, error) {
			f.calls = append(f.calls, call{d.Name, cmd, ""})
			if d.Name == "b" && cmd == "ADD" {
				return []byte(bad), nil
			}
			return result(d.Name), nil
		})
		_, err := c.Add(context.Background())
		if e := cnierr.As(err); e.Code != cnierr.CodeDecoding || !strings.HasPrefix(e.Msg, "b: ") {
			t.Errorf("%s: error = %+v, want code 6 naming b", bad, e)
		}
		if got := len(f.calls); got != 4 { // a ADD, b ADD, a DEL, b DEL
			t.Errorf("%s: %d calls, want 4: %+v", bad, got, f.calls)
		}
	}
}

func TestEach(t *testing.T) {
	tests := []struct {
		name     string
		cmd      string
		failCmd  map[string]uint
		delPrint map[string]bool
		want     []call
		wantCode uint
		wantMsg  []string
	}{
		{
			name: "DEL chains what each printed", cmd: "DEL",
			delPrint: map[string]bool{"a": true},
			want:     []call{{"a", "DEL", "runtime"}, {"b", "DEL", "a-del"}, {"c", "DEL", "a-del"}},
		},
		{
			name: "DEL runs all after errors and joins them", cmd: "DEL",
			failCmd:  map[string]uint{"a/DEL": 5, "c/DEL": 11},
			want:     []call{{"a", "DEL", "runtime"}, {"b", "DEL", "runtime"}, {"c", "DEL", "runtime"}},
			wantCode: 5, wantMsg: []string{"a: boom", "c: boom"},
		},
		{
			name: "CHECK error keeps the delegate's code", cmd: "CHECK",
			failCmd:  map[string]uint{"b/CHECK": 3},
			want:     []call{{"a", "CHECK", "runtime"}, {"b", "CHECK", "runtime"}, {"c", "CHECK", "runtime"}},
			wantCode: 3, wantMsg: []string{"b: boom"},
		},
		{
			name: "STATUS forwarded to all, code 50 kept", cmd: "STATUS",
			failCmd:  map[string]uint{"c/STATUS": 50},
			want:     []call{{"a", "STATUS", "runtime"}, {"b", "STATUS", "runtime"}, {"c", "STATUS", "runtime"}},
			wantCode: 50, wantMsg: []string{"c: boom"},
		},
		{
			name: "GC forwarded to all, chaining what was printed", cmd: "GC",
			delPrint: map[string]bool{"a": true},
			want:     []call{{"a", "GC", "runtime"}, {"b", "GC", "a-gc"}, {"c", "GC", "a-gc"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeExec{failCmd: tt.failCmd, delPrint: tt.delPrint}
			err := newTestChain(t, f, true).Each(context.Background(), tt.cmd)
			assertCalls(t, f.calls, tt.want)
			if tt.wantCode == 0 {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			e := cnierr.As(err)
			if e.Code != tt.wantCode {
				t.Errorf("code = %d, want %d", e.Code, tt.wantCode)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(e.Msg, m) {
					t.Errorf("msg %q lacks %q", e.Msg, m)
				}
			}
		})
	}
}

type execFunc func(d Delegate, cmd string) ([]byte, error)

func (f execFunc) Run(_ context.Context, d Delegate, cmd string, _ *netconf.Envelope) ([]byte, types.Result, error) {
	out, err := f(d, cmd)
	return out, nil, err
}

func assertCalls(t *testing.T, got, want []call) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("calls:\n got %v\nwant %v", got, want)
	}
}

// recordExec prints out for delegate "a" on every command and records
// what every delegate got as prevResult.
type recordExec struct {
	out  string
	prev map[string]string // "name CMD" -> prevResult as received
}

func (r *recordExec) Run(_ context.Context, d Delegate, cmd string, in *netconf.Envelope) ([]byte, types.Result, error) {
	out, err := r.run(d, cmd, in)
	return out, nil, err
}

func (r *recordExec) run(d Delegate, cmd string, in *netconf.Envelope) ([]byte, error) {
	stdin := in.Raw
	var conf struct {
		PrevResult json.RawMessage `json:"prevResult"`
	}
	if err := json.Unmarshal(stdin, &conf); err != nil {
		return nil, err
	}
	r.prev[d.Name+" "+cmd] = string(conf.PrevResult)
	if d.Name == "a" {
		return []byte(r.out), nil
	}
	return result(d.Name), nil
}

// A key the chain knows nothing about (a selector's "sticky") reaches the
// next delegate's prevResult byte for byte, on ADD and on DEL.
func TestChainKeepsUnknownResultKeys(t *testing.T) {
	sel := `{"cniVersion":"1.0.0","pools":[{"name":"db"}],"sticky":{"key":"db/pg-0"}}`
	r := &recordExec{out: sel + "\n", prev: map[string]string{}}
	c := newTestChain(t, &fakeExec{}, false)
	c.Exec, c.Delegates = r, c.Delegates[:2]
	if _, err := c.Add(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Each(context.Background(), "DEL"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"b ADD", "b DEL"} {
		if r.prev[k] != sel {
			t.Errorf("%s got prevResult %s, want %s", k, r.prev[k], sel)
		}
	}
}

// builtExec runs delegates as if in-process: each ADD prints a result and hands over
// the object it printed, and every delegate's PrevBuilt is recorded.
type builtExec struct {
	fakeExec
	built map[string]types.Result // what each delegate ADD printed
	got   map[string]types.Result // "name CMD" -> PrevBuilt as received
}

func (b *builtExec) Run(_ context.Context, d Delegate, cmd string, in *netconf.Envelope) ([]byte, types.Result, error) {
	b.got[d.Name+" "+cmd] = in.PrevBuilt
	out, err := b.fakeExec.run(d, cmd, in)
	if err != nil || cmd != "ADD" {
		return out, nil, err
	}
	res := &current.Result{CNIVersion: "1.0.0", DNS: types.DNS{Domain: d.Name}}
	b.built[d.Name] = res
	return out, res, nil
}

// What a delegate run in-process built reaches the next delegate's ADD
// with its bytes; nothing is handed over on a rollback, nor to the first
// delegate (the runtime's prevResult has only its bytes).
func TestChainHandsOverBuiltResults(t *testing.T) {
	b := &builtExec{fakeExec: fakeExec{failAdd: "c"}, built: map[string]types.Result{}, got: map[string]types.Result{}}
	c := newTestChain(t, &b.fakeExec, true)
	c.Exec = b
	if _, err := c.Add(context.Background()); err == nil {
		t.Fatal("ADD succeeded although c fails")
	}
	for k, want := range map[string]types.Result{"a ADD": nil, "b ADD": b.built["a"], "c ADD": b.built["b"], "a DEL": nil, "b DEL": nil, "c DEL": nil} {
		if got, ok := b.got[k]; !ok || got != want {
			t.Errorf("%s: PrevBuilt %v (called %v), want %v", k, got, ok, want)
		}
	}
}
