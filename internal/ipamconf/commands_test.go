package ipamconf_test

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// handed is what the driver handed a store: the one place every
// allocator learns the attachment's sticky key and DEL's hints.
type handed struct {
	called string
	keyed  *alloc.Keyed
	hints  []netip.Addr
}

func (h *handed) Add(_ []alloc.Target, k alloc.Keyed) ([]*current.IPConfig, error) {
	h.called, h.keyed = "ADD", &k
	return nil, nil
}

func (h *handed) Del(hints []netip.Addr, k *alloc.Keyed) error {
	h.called, h.keyed, h.hints = "DEL", k, hints
	return nil
}

func (h *handed) Check([]netip.Addr, []alloc.Target) error { h.called = "CHECK"; return nil }
func (h *handed) GC([]alloc.Attachment) error              { h.called = "GC"; return nil }
func (h *handed) Exhausted([]alloc.Target) (func(alloc.Target) (bool, error), error) {
	return func(alloc.Target) (bool, error) { return false, nil }, nil
}

// The driver reads the sticky key and DEL's hints once for every store:
// ADD refuses a malformed ipam.sticky or key (7, before the store
// allocates), while DEL and GC, which never need it, run without it (DEL
// gets no key and finds holds by the records alone); a prevResult whose
// addresses do not read is 6 for DEL as for CHECK.
func TestDriverReadsTheKeyOnce(t *testing.T) {
	const prev = `"prevResult":{"cniVersion":"1.1.0","ips":[{"address":"10.214.0.9/24"}]},"cni.dev/valid-attachments":[]`
	for _, tt := range []struct {
		name, cmd, sticky, args string
		code                    uint
		called, key             string // key "-": the store gets none (nil)
	}{
		{"ADD, a key", "ADD", `{"by":["arg"]}`, "K8S_POD_NAMESPACE=ns;CNIPLUGINS_STICKY_KEY=db-0", 0, "ADD", "ns/db-0"},
		{"ADD, no key", "ADD", `{"by":["arg"]}`, "", 0, "ADD", ""},
		{"ADD, malformed ipam.sticky", "ADD", `{"by":["nowhere"]}`, "", cnierr.CodeInvalidConfig, "", ""},
		{"ADD, malformed key", "ADD", `{"by":["arg"]}`, "CNIPLUGINS_STICKY_KEY=" + strings.Repeat("k", 300), cnierr.CodeInvalidConfig, "", ""},
		{"DEL, a key", "DEL", `{"by":["arg"]}`, "K8S_POD_NAMESPACE=ns;CNIPLUGINS_STICKY_KEY=db-0", 0, "DEL", "ns/db-0"},
		{"DEL, malformed ipam.sticky", "DEL", `{"by":["nowhere"]}`, "", 0, "DEL", "-"},
		{"DEL, malformed key", "DEL", `{"by":["arg"]}`, "CNIPLUGINS_STICKY_KEY=" + strings.Repeat("k", 300), 0, "DEL", "-"},
		{"GC, malformed ipam.sticky", "GC", `{"by":["nowhere"]}`, "", 0, "GC", "-"},
		{"DEL, malformed prevResult", "DEL", `{"by":["arg"]}`, "", cnierr.CodeDecoding, "", "-"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &handed{}
			p := ipamconf.Personality("ipam-da-test", "", func(*plugin.Request, *alloc.Config) (ipamconf.Store, error) { return h, nil },
				func(*netconf.Envelope) error { return nil })
			given := prev
			if tt.code == cnierr.CodeDecoding {
				given = `"prevResult":{"cniVersion":"1.1.0","ips":[{"gateway":"10.214.0.1"}]}`
			}
			conf := `{"cniVersion":"1.1.0","name":"n",` + given + `,"ipam":{"type":"ipam-da-test","ranges":[[{"subnet":"10.214.0.0/24"}]],"sticky":` + tt.sticky + `}}`
			env := []string{"CNI_COMMAND=" + tt.cmd, "CNI_PATH=/nonexistent", "CNI_ARGS=" + tt.args}
			if tt.cmd != "GC" {
				env = append(env, "CNI_CONTAINERID=c1", "CNI_IFNAME=eth0", "CNI_NETNS=/var/run/netns/x")
			}
			var out, errOut bytes.Buffer
			exit := plugin.Run(p, plugin.IO{Environ: env, Stdin: strings.NewReader(conf), Stdout: &out, Stderr: &errOut})
			if got := errCode(out.String(), exit); got != tt.code {
				t.Fatalf("code %d, want %d: %s %s", got, tt.code, out.String(), errOut.String())
			}
			if h.called != tt.called {
				t.Fatalf("the store ran %q, want %q", h.called, tt.called)
			}
			switch {
			case tt.called != "ADD" && tt.called != "DEL":
			case tt.key == "-" && h.keyed != nil:
				t.Errorf("the store got key %+v, want none", *h.keyed)
			case tt.key != "-" && (h.keyed == nil || h.keyed.Key != tt.key):
				t.Errorf("the store got key %+v, want %q", h.keyed, tt.key)
			}
			if tt.called == "DEL" && !(len(h.hints) == 1 && h.hints[0] == netip.MustParseAddr("10.214.0.9")) {
				t.Errorf("DEL's hints %v, want prevResult's 10.214.0.9", h.hints)
			}
		})
	}
}

// errCode is the code of the CNI error printed, 0 for a success, and
// no code at all for a failure that printed none.
func errCode(out string, exit int) uint {
	e := types.Error{}
	if exit == 0 {
		return 0
	}
	if json.Unmarshal([]byte(out), &e) != nil || e.Code == 0 {
		return ^uint(0)
	}
	return e.Code
}
