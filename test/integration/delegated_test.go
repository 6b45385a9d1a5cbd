package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// recorded is one call a test delegate saw.
type recorded struct {
	Call       string // "name CMD"
	PrevResult string // compact prevResult JSON, "" if none
}

func delegatedConf(version string, delegates ...string) []byte {
	d, _ := json.Marshal(delegates)
	return []byte(fmt.Sprintf(`{"cniVersion":%q,"name":"seed","type":"bridge","ipam":{"type":"ipam-delegated","delegates":%s}}`, version, d))
}

func addCall(t *testing.T, plugin string, stdin []byte) (testbin.Call, string) {
	rec := t.TempDir()
	return testbin.Call{
		Plugin: plugin, Command: "ADD", ContainerID: "ctr1", IfName: "eth0", Netns: "/var/run/netns/test",
		Path: binDir, Stdin: stdin, Env: []string{"TEST_RECORD=" + rec},
	}, rec
}

func readRecord(t *testing.T, rec string) []recorded {
	t.Helper()
	log, _ := os.ReadFile(filepath.Join(rec, "log"))
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	out := make([]recorded, len(lines))
	for i, l := range lines {
		b, err := os.ReadFile(filepath.Join(rec, fmt.Sprintf("%d.json", i)))
		if err != nil {
			t.Fatal(err)
		}
		var conf struct {
			PrevResult json.RawMessage `json:"prevResult"`
		}
		if err := json.Unmarshal(b, &conf); err != nil {
			t.Fatalf("delegate %s got invalid JSON: %v", l, err)
		}
		out[i] = recorded{Call: l, PrevResult: compact(conf.PrevResult)}
	}
	return out
}

func compact(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	c, _ := json.Marshal(v)
	return string(c)
}

const (
	seedPools  = `{"cniVersion":"1.0.0","pools":[{"name":"local-pool","subnet":"192.168.0.0/24"}]}`
	seedResult = `{"cniVersion":"1.0.0","ips":[{"address":"192.168.0.23/24","gateway":"192.168.0.1"}],"routes":[{"dst":"0.0.0.0/0"}]}`
)

// The seed's example flow: a selector returns local-pool, the allocator
// reads it from prevResult and answers 192.168.0.23/24 with a default route.
func TestSeedFlowThroughInstalledSymlinks(t *testing.T) {
	c, rec := addCall(t, "ipam-delegated", delegatedConf("1.0.0", "test-select", "test-alloc"))
	r := testbin.MustSucceed(t, c)
	if got := strings.TrimSpace(string(r.Stdout)); got != seedResult {
		t.Errorf("result:\n got %s\nwant %s (the last delegate's, verbatim)", got, seedResult)
	}
	want := []recorded{{"test-select ADD", ""}, {"test-alloc ADD", compact([]byte(seedPools))}}
	if got := readRecord(t, rec); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("calls:\n got %v\nwant %v", got, want)
	}

	// The busybox form behaves exactly like the symlink.
	c.Plugin, c.Argv = "cniplugins", []string{"ipam-delegated"}
	if r2 := testbin.MustSucceed(t, c); string(r2.Stdout) != string(r.Stdout) {
		t.Errorf("`cniplugins ipam-delegated` printed %s, the symlink %s", r2.Stdout, r.Stdout)
	}
}

func TestResultConvertedToConfigVersion(t *testing.T) {
	for _, v := range []string{"0.4.0", "1.0.0", "0.3.1"} {
		t.Run(v, func(t *testing.T) {
			c, _ := addCall(t, "ipam-delegated", delegatedConf(v, "test-select", "test-alloc"))
			r := testbin.MustSucceed(t, c)
			var res struct {
				CNIVersion string `json:"cniVersion"`
				IPs        []struct {
					Version string `json:"version"`
					Address string `json:"address"`
				} `json:"ips"`
			}
			if err := json.Unmarshal(r.Stdout, &res); err != nil {
				t.Fatal(err)
			}
			wantIPVersion := "4"
			if v == "1.0.0" {
				wantIPVersion = ""
			}
			if res.CNIVersion != v || len(res.IPs) != 1 || res.IPs[0].Address != "192.168.0.23/24" || res.IPs[0].Version != wantIPVersion {
				t.Errorf("result %s, want cniVersion %s with the allocator's address", r.Stdout, v)
			}
		})
	}
}

func TestRollbackThroughBinary(t *testing.T) {
	allocated := compact([]byte(seedResult))
	pools := compact([]byte(seedPools))
	tests := []struct {
		name      string
		delegates []string
		want      []recorded
	}{
		{
			name:      "first of three fails",
			delegates: []string{"test-fail", "test-select", "test-alloc"},
			want:      []recorded{{"test-fail ADD", ""}, {"test-fail DEL", ""}},
		},
		{
			name:      "second of three fails",
			delegates: []string{"test-select", "test-fail", "test-alloc"},
			want: []recorded{
				{"test-select ADD", ""}, {"test-fail ADD", pools},
				{"test-select DEL", pools}, {"test-fail DEL", pools},
			},
		},
		{
			name:      "third of three fails; the selector's DEL output is chained",
			delegates: []string{"test-select", "test-alloc", "test-fail"},
			want: []recorded{
				{"test-select ADD", ""}, {"test-alloc ADD", pools}, {"test-fail ADD", allocated},
				{"test-select DEL", allocated}, {"test-alloc DEL", pools}, {"test-fail DEL", pools},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, rec := addCall(t, "ipam-delegated", delegatedConf("1.0.0", tt.delegates...))
			r := testbin.Run(c)
			e := r.Err()
			if r.Exit == 0 || e.Code != 101 || !strings.HasPrefix(e.Msg, "test-fail: ") || e.Details != "10.9.9.9" {
				t.Errorf("exit %d, error %+v; want test-fail's code 101 with its name", r.Exit, e)
			}
			if got := readRecord(t, rec); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("calls:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestDelegatedErrors(t *testing.T) {
	tests := []struct {
		name  string
		ipam  string
		code  uint
		names string // substring of msg+details
	}{
		{"delegates missing", `{"type":"ipam-delegated"}`, 7, "ipam.delegates"},
		{"delegates empty", `{"delegates":[]}`, 7, "ipam.delegates"},
		{"delegates not strings", `{"delegates":["test-select",{"x":1}]}`, 7, "ipam.delegates[1]"},
		{"delegate path", `{"delegates":["/bin/sh"]}`, 7, "ipam.delegates[0]"},
		{"delegate not in CNI_PATH", `{"delegates":["test-select","no-such-plugin"]}`, 7, "no-such-plugin"},
		{"delegate crashes", `{"delegates":["test-select","test-crash"]}`, 999, "test-crash"},
		{"delegate prints garbage", `{"delegates":["test-garbage"]}`, 6, "test-garbage"},
		{"ipam missing", ``, 7, "ipam"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := `{"cniVersion":"1.0.0","name":"n"}`
			if tt.ipam != "" {
				conf = `{"cniVersion":"1.0.0","name":"n","ipam":` + tt.ipam + `}`
			}
			c, rec := addCall(t, "ipam-delegated", []byte(conf))
			r := testbin.Run(c)
			e := r.Err()
			if r.Exit != 1 || e.Code != tt.code || !strings.Contains(e.Msg+" "+e.Details, tt.names) {
				t.Errorf("exit %d, error %+v; want code %d naming %q", r.Exit, e, tt.code, tt.names)
			}
			if tt.code == 7 && len(readRecord(t, rec)) != 0 {
				t.Errorf("a config error still ran delegates: %v", readRecord(t, rec))
			}
		})
	}
}

func TestDelCheckGCStatusForwarding(t *testing.T) {
	prev := `,"prevResult":` + seedResult
	conf := func(v string, ds ...string) []byte {
		b := delegatedConf(v, ds...)
		return append(b[:len(b)-1], []byte(prev+"}")...)
	}
	t.Run("DEL chains and prints nothing", func(t *testing.T) {
		c, rec := addCall(t, "ipam-delegated", conf("1.0.0", "test-select", "test-alloc"))
		c.Command = "DEL"
		r := testbin.MustSucceed(t, c)
		if len(r.Stdout) != 0 {
			t.Errorf("DEL printed %s", r.Stdout)
		}
		want := []recorded{{"test-select DEL", compact([]byte(seedResult))}, {"test-alloc DEL", compact([]byte(seedPools))}}
		if got := readRecord(t, rec); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("calls:\n got %v\nwant %v", got, want)
		}
	})
	t.Run("STATUS keeps code 50", func(t *testing.T) {
		c, rec := addCall(t, "ipam-delegated", conf("1.1.0", "test-select", "test-status"))
		c.Command, c.ContainerID, c.IfName, c.Netns = "STATUS", "", "", ""
		r := testbin.Run(c)
		if e := r.Err(); e == nil || e.Code != 50 || !strings.HasPrefix(e.Msg, "test-status: ") {
			t.Errorf("STATUS error %+v, want 50 from test-status", e)
		}
		if got := readRecord(t, rec); len(got) != 2 {
			t.Errorf("STATUS reached %v, want both delegates", got)
		}
	})
	t.Run("GC forwarded without attachment env", func(t *testing.T) {
		c, rec := addCall(t, "ipam-delegated", conf("1.1.0", "test-select", "test-alloc"))
		c.Command, c.ContainerID, c.IfName, c.Netns = "GC", "", "", ""
		testbin.MustSucceed(t, c)
		got := readRecord(t, rec)
		if len(got) != 2 || got[0].Call != "test-select GC" || got[1].Call != "test-alloc GC" {
			t.Errorf("GC reached %v", got)
		}
	})
}

func TestVersionEverySpecVersion(t *testing.T) {
	for _, v := range []string{"0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"} {
		for _, p := range []string{"ipam-delegated", "ipam-ds-static", "ipam-da-pools"} {
			r := testbin.MustSucceed(t, testbin.Call{Plugin: p, Command: "VERSION", Path: binDir, Stdin: []byte(`{"cniVersion":"` + v + `"}`)})
			var info struct {
				Supported []string `json:"supportedVersions"`
			}
			if err := json.Unmarshal(r.Stdout, &info); err != nil || strings.Join(info.Supported, ",") != "0.1.0,0.2.0,0.3.0,0.3.1,0.4.0,1.0.0,1.1.0" {
				t.Errorf("%s VERSION (%s) = %s", p, v, r.Stdout)
			}
		}
	}
}

// Logs never reach stdout: the verbose flavour logs at debug level to its
// file, warnings go to stderr, and stdout stays exactly the result.
func TestLogsNeverOnStdout(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink(verboseBin, filepath.Join(dir, "ipam-delegated")); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "sub", "delegated.log")
	c, _ := addCall(t, "ipam-delegated", delegatedConf("1.0.0", "test-select", "test-alloc"))
	c.Path = dir + ":" + binDir
	c.Env = append(c.Env, "CNIPLUGINS_LOG_FILE="+logFile)
	r := testbin.MustSucceed(t, c)
	if strings.TrimSpace(string(r.Stdout)) != seedResult {
		t.Errorf("stdout is not exactly the result: %s", r.Stdout)
	}
	log, err := os.ReadFile(logFile)
	if err != nil || !strings.Contains(string(log), `"level":"debug"`) || !strings.Contains(string(log), "test-alloc") {
		t.Errorf("verbose log missing debug lines: %v %s", err, log)
	}

	// A failing call: the warning goes to stderr, stdout is one JSON error.
	c.Stdin = delegatedConf("1.0.0", "test-fail")
	r = testbin.Run(c)
	if e := r.Err(); e.Code != 101 || !strings.Contains(string(r.Stderr), "failed") {
		t.Errorf("error %+v, stderr %q", e, r.Stderr)
	}

	// An unopenable log file never fails the operation.
	c.Stdin = delegatedConf("1.0.0", "test-select", "test-alloc")
	c.Env = append(c.Env, "CNIPLUGINS_LOG_FILE=/proc/nope/x.log")
	r = testbin.MustSucceed(t, c)
	if !strings.Contains(string(r.Stderr), "cannot open log file") {
		t.Errorf("no warning about the log file on stderr: %q", r.Stderr)
	}
}

// Standard CNI IPAM plugins work as delegates: upstream host-local as the
// last delegate answers ADD, and prints nothing on DEL.
func TestUpstreamHostLocalAsDelegate(t *testing.T) {
	needHostLocal(t)
	dataDir := t.TempDir()
	conf := []byte(fmt.Sprintf(`{"cniVersion":"1.0.0","name":"upstream","ipam":{"type":"ipam-delegated",
		"delegates":["ipam-ds-static","host-local"],"pools":[{"name":"ignored-by-host-local"}],
		"dataDir":%q,"ranges":[[{"subnet":"10.44.0.0/24"}]]}}`, dataDir))
	c := call("ipam-delegated", "ADD", "up1", conf)
	c.Path = binDir + ":" + filepath.Dir(upstreamHostLocal)
	r := testbin.MustSucceed(t, c)
	if got := parseResult(t, r.Stdout).addrs(); got != "10.44.0.2/24 gw 10.44.0.1" {
		t.Errorf("ADD through host-local = %s", got)
	}
	if b, err := os.ReadFile(filepath.Join(dataDir, "upstream", "10.44.0.2")); err != nil || string(b) != "up1\r\neth0" {
		t.Errorf("host-local's reservation = %q, %v", b, err)
	}
	c.Command, c.Stdin = "DEL", append(conf[:len(conf)-1], []byte(`,"prevResult":`+string(r.Stdout)+`}`)...)
	if r := testbin.MustSucceed(t, c); len(r.Stdout) != 0 {
		t.Errorf("DEL printed %q", r.Stdout)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "upstream", "10.44.0.2")); !os.IsNotExist(err) {
		t.Errorf("reservation still there after DEL: %v", err)
	}
}

// A passcod-style selector writes requested_ip; the allocator honours it.
func TestPasscodStyleSelector(t *testing.T) {
	dataDir := t.TempDir()
	conf := []byte(fmt.Sprintf(`{"cniVersion":"1.0.0","name":"passcod","ipam":{"type":"ipam-delegated",
		"delegates":["test-passcod","ipam-da-pools"],"dataDir":%q}}`, dataDir))
	r := testbin.MustSucceed(t, call("ipam-delegated", "ADD", "pc1", conf))
	if got := parseResult(t, r.Stdout).addrs(); got != "192.168.7.77/24 gw 192.168.7.1" {
		t.Errorf("requested_ip not honoured: %s", got)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "_pools", "passcod-pool", "192.168.7.77")); err != nil {
		t.Errorf("no reservation in the pool directory: %v", err)
	}
}
