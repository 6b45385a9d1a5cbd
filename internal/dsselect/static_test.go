package dsselect

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/plugin"
)

func runStatic(t *testing.T, cmd, conf string) (int, map[string]any) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := []string{"CNI_COMMAND=" + cmd, "CNI_CONTAINERID=c1", "CNI_IFNAME=eth0", "CNI_NETNS=/x", "CNI_PATH=/opt/cni/bin"}
	exit := plugin.Run(Static(), plugin.IO{Environ: env, Stdin: strings.NewReader(conf), Stdout: &stdout, Stderr: &stderr})
	var out map[string]any
	if stdout.Len() > 0 {
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatalf("stdout not JSON: %s", stdout.String())
		}
	}
	return exit, out
}

func TestStaticSelects(t *testing.T) {
	conf := `{"cniVersion":"1.0.0","name":"n","ipam":{"type":"ipam-ds-static","pools":[
		{"name":"blue","requested_ip":"10.10.1.30","subnet":"10.10.0.0/16","rangeStart":"10.10.1.20","rangeEnd":"10.10.3.50","gateway":"10.10.0.254"},
		{"name":"green","ranges":[{"subnet":"10.20.0.0/24"},{"subnet":"172.16.5.0/24"}]},
		{"name":"defined.elsewhere"}]},
		"prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"eth0"}],"ips":[{"address":"10.10.1.30/16","interface":0}]}}`
	for _, cmd := range []string{"ADD", "DEL", "CHECK"} {
		exit, out := runStatic(t, cmd, conf)
		if exit != 0 {
			t.Fatalf("%s: exit %d: %v", cmd, exit, out)
		}
		pools, _ := json.Marshal(out["pools"])
		// (keys sorted: the test re-marshals through a map)
		want := `[{"gateway":"10.10.0.254","name":"blue","rangeEnd":"10.10.3.50","rangeStart":"10.10.1.20","requested-ip":"10.10.1.30","subnet":"10.10.0.0/16"},{"name":"green","ranges":[{"subnet":"10.20.0.0/24"},{"subnet":"172.16.5.0/24"}]},{"name":"defined.elsewhere"}]`
		if string(pools) != want {
			t.Errorf("%s pools:\n got %s\nwant %s", cmd, pools, want)
		}
		ips, _ := json.Marshal(out["ips"])
		if string(ips) != `[{"address":"10.10.1.30/16"}]` {
			t.Errorf("%s ips = %s, want prevResult's copied (without an interface index)", cmd, ips)
		}
	}
}

func TestStaticOldVersionKeepsPools(t *testing.T) {
	exit, out := runStatic(t, "ADD", `{"cniVersion":"0.3.1","name":"n","ipam":{"pools":[{"name":"p"}]}}`)
	if exit != 0 || out["cniVersion"] != "0.3.1" || out["pools"] == nil {
		t.Errorf("exit %d, out %v; want a 0.3.1 result with pools", exit, out)
	}
}

func TestStaticRejects(t *testing.T) {
	tests := []struct {
		name, pools, field string
	}{
		{"missing", ``, "ipam.pools"},
		{"empty", `"pools":[]`, "ipam.pools"},
		{"not an array", `"pools":{"name":"x"}`, "ipam.pools"},
		{"no name", `"pools":[{"subnet":"10.0.0.0/24"}]`, "ipam.pools[0].name"},
		{"name escapes", `"pools":[{"name":"../x"}]`, "ipam.pools[0].name"},
		{"name with slash", `"pools":[{"name":"a/b"}]`, "ipam.pools[0].name"},
		{"name too long", `"pools":[{"name":"` + strings.Repeat("p", 65) + `"}]`, "ipam.pools[0].name"},
		{"name wrong type", `"pools":[{"name":5}]`, "ipam.pools"},
		{"duplicate", `"pools":[{"name":"a"},{"name":"a"}]`, "ipam.pools[1].name"},
		{"bad requested ip", `"pools":[{"name":"a","requested-ip":"10.0.0.300"}]`, "ipam.pools[0].requested-ip"},
		{"bad subnet", `"pools":[{"name":"a","subnet":"10.0.0.0/33"}]`, "ipam.pools[0]"},
		{"host bits", `"pools":[{"name":"a","subnet":"10.0.0.1/24"}]`, "ipam.pools[0]"},
		{"range without subnet", `"pools":[{"name":"a","rangeStart":"10.0.0.5"}]`, "ipam.pools[0].subnet"},
		{"overlapping ranges", `"pools":[{"name":"a","ranges":[{"subnet":"10.0.0.0/24"},{"subnet":"10.0.0.0/25"}]}]`, "ipam.pools[0].ranges"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ipam := `{"type":"ipam-ds-static"}`
			if tt.pools != "" {
				ipam = `{"type":"ipam-ds-static",` + tt.pools + `}`
			}
			exit, out := runStatic(t, "ADD", `{"cniVersion":"1.0.0","name":"n","ipam":`+ipam+`}`)
			text, _ := json.Marshal(out)
			if exit != 1 || out["code"] != float64(7) || !strings.Contains(string(text), tt.field) {
				t.Errorf("exit %d, %s; want code 7 naming %s", exit, text, tt.field)
			}
		})
	}
}
