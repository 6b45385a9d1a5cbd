package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validate finds each kind of mistake, with file, JSON path and value,
// and passes a correct conflist.
func TestOpsValidate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, content)
		return p
	}
	chain := func(name, ipamRest string) string {
		return `{"cniVersion":"1.0.0","name":"` + name + `","plugins":[{"type":"bridge"},{"type":"bridge","ipam":{"type":"ipam-delegated","delegates":["ipam-ds-static","ipam-da-pools"]` + ipamRest + `}}]}`
	}
	good := write("good.conflist", chain("good", `,"pools":[{"name":"web","subnet":"10.82.0.0/24"},{"name":"db"}],"poolDefinitions":{"db":[{"subnet":"10.82.1.0/24"}]}`))
	if r := cliRun("validate", "--cni-path", binDir, good); r.Exit != 0 || len(r.Stdout) != 0 {
		t.Fatalf("a correct conflist: exit %d\n%s%s", r.Exit, r.Stdout, r.Stderr)
	}
	for _, tt := range []struct {
		name, content    string
		path, value, msg string
	}{
		{"not JSON", `{"cniVersion":"1.0.0",`, "", "", "error parsing configuration list"},
		{"bad CIDR", `{"cniVersion":"1.0.0","name":"n","type":"bridge","ipam":{"type":"ipam-da-pools","ranges":[[{"subnet":"10.82.0.0/33"}]]}}`,
			"ipam.ranges[0][0].subnet", "10.82.0.0/33", "not a valid CIDR"},
		{"overlapping ranges", `{"cniVersion":"1.0.0","name":"n","type":"bridge","ipam":{"type":"host-local","ranges":[[{"subnet":"10.82.0.0/24"},{"subnet":"10.82.0.128/25"}]]}}`,
			"ipam.ranges[0][1]", "10.82.0.129-10.82.0.254", "overlaps ipam.ranges[0][0]"},
		{"delegate not in CNI path", `{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"bridge","ipam":{"type":"ipam-delegated","delegates":["ipam-ds-static","ipam-da-nope"],"pools":[{"name":"a","subnet":"10.82.0.0/24"}]}}]}`,
			"plugins[0].ipam.delegates[1]", "ipam-da-nope", "delegate not found in CNI path"},
		{"pool not defined", chain("n", `,"pools":[{"name":"ghost"}]`),
			"plugins[1].ipam.pools[0].name", "ghost", "unknown pool"},
		{"invalid pool name", chain("n", `,"pools":[{"name":"../x","subnet":"10.82.0.0/24"}]`),
			"plugins[1].ipam.pools[0].name", "../x", "must match"},
		{"pools overlapping in one network", chain("n", `,"pools":[{"name":"a","subnet":"10.82.0.0/24"},{"name":"b","subnet":"10.82.0.0/25"}]`),
			"plugins[1].ipam.pools[1][0]", "10.82.0.1-10.82.0.126", "overlaps ipam.pools[0][0]"},
		{"wrong type", chain("n", `,"pools":{"name":"a"}`), "plugins[1].ipam.pools", "a JSON object", "expected array"},
		{"bad cniVersion", `{"cniVersion":"9.9.9","name":"n","type":"bridge","ipam":{"type":"ipam-da-pools","ranges":[[{"subnet":"10.82.0.0/24"}]]}}`,
			"cniVersion", `"9.9.9"`, "unsupported cniVersion"},
		{"no ranges for a standalone allocator", `{"cniVersion":"1.0.0","name":"n","type":"bridge","ipam":{"type":"ipam-da-pools"}}`,
			"ipam.ranges", "", "missing ipam.ranges"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ext := ".conflist"
			if !strings.Contains(tt.content, `"plugins"`) && strings.HasPrefix(tt.content, "{") && strings.HasSuffix(tt.content, "}") {
				ext = ".conf"
			}
			f := write(strings.ReplaceAll(tt.name, " ", "-")+ext, tt.content)
			before, _ := os.ReadFile(f)
			r := cliRun("validate", "--cni-path", binDir, "-o", "json", f)
			var problems []struct{ File, Path, Value, Message string }
			if err := json.Unmarshal(r.Stdout, &problems); err != nil {
				t.Fatalf("exit %d, stdout %q: %v", r.Exit, r.Stdout, err)
			}
			if r.Exit == 0 || len(problems) == 0 {
				t.Fatalf("exit %d, problems %+v", r.Exit, problems)
			}
			p := problems[0]
			if p.File != f || p.Path != tt.path || (tt.value != "" && !strings.Contains(p.Value, tt.value)) || !strings.Contains(p.Message, tt.msg) {
				t.Errorf("problem %+v; want path %q value %q message ~%q", p, tt.path, tt.value, tt.msg)
			}
			if after, _ := os.ReadFile(f); string(after) != string(before) {
				t.Error("validate changed the file")
			}
		})
	}
	// A shared pool defined differently in two files; and the table form.
	a := write("a.conflist", chain("a", `,"pools":[{"name":"shared","subnet":"10.83.0.0/24"}]`))
	b := write("b.conflist", chain("b", `,"pools":[{"name":"shared","subnet":"10.83.0.0/25"}]`))
	r := cliRun("validate", "--cni-path", binDir, "--no-headers", a, b)
	if r.Exit == 0 || !strings.Contains(string(r.Stdout), b+"  plugins[1].ipam  shared=10.83.0.1-10.83.0.126  pool shared is defined differently in "+a) {
		t.Errorf("shared pool defined twice: exit %d\n%s", r.Exit, r.Stdout)
	}
}
