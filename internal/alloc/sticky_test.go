package alloc

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

func TestParseSticky(t *testing.T) {
	for _, tc := range []struct {
		name    string
		k       *StickyKeys
		want    Sticky
		wantErr string
	}{
		{"absent", nil, Sticky{HoldFor: DefaultHoldFor}, ""},
		{"pod, default hold", &StickyKeys{By: []string{"pod"}}, Sticky{By: []string{"pod"}, HoldFor: DefaultHoldFor}, ""},
		{"forever", &StickyKeys{By: []string{"arg", "pod"}, HoldFor: "0"}, Sticky{By: []string{"arg", "pod"}}, ""},
		{"an hour", &StickyKeys{By: []string{"annotation"}, HoldFor: "1h"}, Sticky{By: []string{"annotation"}, HoldFor: time.Hour}, ""},
		{"no by: the selector's keys only", &StickyKeys{HoldFor: "1h"}, Sticky{HoldFor: time.Hour}, ""},
		{"unknown source", &StickyKeys{By: []string{"pod", "label"}}, Sticky{}, "ipam.sticky.by[1]"},
		{"kubevirt", &StickyKeys{By: []string{"kubevirt"}, HoldFor: "0"}, Sticky{By: []string{"kubevirt"}}, ""},
		{"bad duration", &StickyKeys{By: []string{"pod"}, HoldFor: "soon"}, Sticky{}, "ipam.sticky.holdFor"},
		{"negative", &StickyKeys{By: []string{"pod"}, HoldFor: "-1m"}, Sticky{}, "ipam.sticky.holdFor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSticky(tc.k)
			if tc.wantErr != "" {
				if e := cnierr.As(err); e == nil || e.Code != cnierr.CodeInvalidConfig || !strings.Contains(e.Msg+e.Details, tc.wantErr) {
					t.Fatalf("err = %v, want 7 naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || got.HoldFor != tc.want.HoldFor || strings.Join(got.By, ",") != strings.Join(tc.want.By, ",") {
				t.Fatalf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}

func TestStickyKey(t *testing.T) {
	pod := []netconf.CNIArg{{Key: "K8S_POD_NAMESPACE", Value: "db"}, {Key: "K8S_POD_NAME", Value: "pg-0"}, {Key: "CNIPLUGINS_STICKY_KEY", Value: "vm-7"}}
	withAnnotations := func(extra string) string {
		return `{"cniVersion":"1.1.0","name":"n","ipam":{},"runtimeConfig":{"io.kubernetes.cri.pod-annotations":{` + extra + `}}}`
	}
	fromSelector := func(sticky string) string {
		return `{"cniVersion":"1.1.0","name":"n","ipam":{},"prevResult":{"cniVersion":"1.1.0","sticky":` + sticky + `},` +
			`"runtimeConfig":{"io.kubernetes.cri.pod-annotations":{"kubevirt.io/migrationJobName":"m1"}}}`
	}
	annotated := withAnnotations(`"cniplugins.io/sticky-key":"tenant/a"`)
	plain := `{"cniVersion":"1.1.0","name":"n","ipam":{}}`
	kubevirt := withAnnotations(`"kubevirt.io/domain":"pg"`)
	migrating := withAnnotations(`"kubevirt.io/domain":"pg","kubevirt.io/migrationJobName":"m1","cniplugins.io/sticky-key":"pg-0"`)
	nomadJob := []netconf.CNIArg{{Key: "K8S_POD_NAMESPACE", Value: "prod"}, {Key: "K8S_POD_NAME", Value: "pg-0"}, {Key: "NOMAD_NAMESPACE", Value: "dev"}}
	for _, tc := range []struct {
		name    string
		conf    string
		args    []netconf.CNIArg
		by      []string
		from    string // ipam.namespaceFrom
		want    string
		wantMig string
		wantErr bool
	}{
		{name: "pod", conf: plain, args: pod, by: []string{"pod"}, want: "db/pg-0"},
		{name: "first found wins, scoped to the namespace", conf: annotated, args: pod, by: []string{"annotation", "pod"}, want: "db/tenant/a"},
		{name: "annotation without a namespace: as written", conf: annotated, by: []string{"annotation"}, want: "tenant/a"},
		{name: "annotation already in its namespace", conf: annotated, args: []netconf.CNIArg{{Key: "K8S_POD_NAMESPACE", Value: "tenant"}}, by: []string{"annotation"}, want: "tenant/a"},
		{name: "arg, scoped", conf: plain, args: pod, by: []string{"arg", "pod"}, want: "db/vm-7"},
		{name: "arg without a namespace: as written", conf: plain, args: pod[2:], by: []string{"arg"}, want: "vm-7"},
		{name: "arg, Nomad's namespace", conf: plain, args: []netconf.CNIArg{{Key: "NOMAD_NAMESPACE", Value: "prod"}, pod[2]}, by: []string{"arg"}, want: "prod/vm-7"},
		{name: "two namespaces that differ", conf: plain, args: []netconf.CNIArg{{Key: "NOMAD_NAMESPACE", Value: "prod"}, pod[0], pod[2]}, by: []string{"arg"}, wantErr: true},
		{name: "annotation missing, then pod", conf: plain, args: pod, by: []string{"annotation", "pod"}, want: "db/pg-0"},
		{name: "nothing found", conf: plain, by: []string{"pod", "arg"}},
		{name: "pod needs both", conf: plain, args: pod[1:2], by: []string{"pod"}},
		{name: "the selector's key first", conf: fromSelector(`{"key":"sel/key"}`), args: pod, by: []string{"pod"}, want: "sel/key"},
		{name: "the selector's key without ipam.sticky", conf: fromSelector(`{"key":"sel/key"}`), want: "sel/key"},
		{name: "off", conf: plain, args: pod},
		{name: "kubevirt", conf: kubevirt, args: pod, by: []string{"kubevirt", "pod"}, want: "db/vm/pg"},
		{name: "kubevirt needs the domain", conf: annotated, args: pod, by: []string{"kubevirt", "pod"}, want: "db/pg-0"},
		{name: "kubevirt needs the namespace", conf: kubevirt, args: pod[1:2], by: []string{"kubevirt"}},
		{name: "control character", conf: plain, args: []netconf.CNIArg{{Key: "CNIPLUGINS_STICKY_KEY", Value: "a\x01b"}}, by: []string{"arg"}, wantErr: true},
		{name: "too long", conf: plain, args: []netconf.CNIArg{{Key: "CNIPLUGINS_STICKY_KEY", Value: strings.Repeat("k", 254)}}, by: []string{"arg"}, wantErr: true},

		// Who the attachment is: netconf.IdentityOf, as a selector reads it.
		{name: "pod: a Nomad job posing as another namespace", conf: plain, args: nomadJob, by: []string{"pod"}, wantErr: true},
		{name: "pod: namespaceFrom nomad, a job's K8S_POD_NAMESPACE", conf: plain, args: nomadJob, by: []string{"pod"}, from: "nomad", wantErr: true},
		{name: "pod: namespaceFrom nomad, the job's own namespace", conf: plain, args: nomadJob[1:], by: []string{"pod"}, from: "nomad", want: "dev/pg-0"},
		{name: "pod: namespaceFrom kubernetes, a Nomad key alone", conf: plain, args: nomadJob[1:], by: []string{"pod"}, from: "kubernetes", wantErr: true},
		{name: "pod: the namespace twice", conf: plain, args: append([]netconf.CNIArg{{Key: "K8S_POD_NAMESPACE", Value: "prod"}}, pod...), by: []string{"pod"}, wantErr: true},
		{name: "pod: the pod name twice", conf: plain, args: append([]netconf.CNIArg{{Key: "K8S_POD_NAME", Value: "web-0"}}, pod...), by: []string{"pod"}, wantErr: true},
		{name: "pod: the namespace twice alike", conf: plain, args: append([]netconf.CNIArg{pod[0]}, pod...), by: []string{"pod"}, want: "db/pg-0"},
		{name: "kubevirt: a Nomad job posing", conf: kubevirt, args: nomadJob, by: []string{"kubevirt"}, wantErr: true},
		{name: "annotation: namespaceFrom nomad scopes to Nomad's", conf: annotated, args: nomadJob[2:], by: []string{"annotation"}, from: "nomad", want: "dev/tenant/a"},

		// A migration name counts for a VM's key alone.
		{name: "kubevirt, a migration target", conf: migrating, args: pod, by: []string{"kubevirt"}, want: "db/vm/pg", wantMig: "m1"},
		{name: "annotation key, a migration name ignored", conf: migrating, args: pod, by: []string{"annotation"}, want: "db/pg-0"},
		{name: "pod key, a migration name ignored", conf: migrating, args: pod, by: []string{"pod"}, want: "db/pg-0"},
		{name: "arg key, a migration name ignored", conf: migrating, args: pod, by: []string{"arg"}, want: "db/vm-7"},
		{name: "kubevirt, a malformed migration name", conf: withAnnotations(`"kubevirt.io/domain":"pg","kubevirt.io/migrationJobName":"m\u0001"`), args: pod, by: []string{"kubevirt"}, wantErr: true},
		{name: "annotation key, a malformed migration name never read", conf: withAnnotations(`"cniplugins.io/sticky-key":"pg-0","kubevirt.io/migrationJobName":"m\u0001"`), args: pod, by: []string{"annotation"}, want: "db/pg-0"},
		{name: "a selector's VM key", conf: fromSelector(`{"key":"db/vm/pg","by":"kubevirt"}`), want: "db/vm/pg", wantMig: "m1"},
		{name: "a selector's key shaped like a VM's", conf: fromSelector(`{"key":"db/vm/pg","by":"annotation"}`), want: "db/vm/pg"},
		{name: "a selector's key of no source", conf: fromSelector(`{"key":"db/vm/pg"}`), want: "db/vm/pg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf, err := netconf.Parse([]byte(tc.conf))
			if err != nil {
				t.Fatal(err)
			}
			got, err := StickyKey(conf, tc.args, Sticky{By: tc.by, HoldFor: time.Hour, NamespaceFrom: tc.from})
			if tc.wantErr {
				if cnierr.Code(err) != cnierr.CodeInvalidConfig {
					t.Fatalf("err = %v, want 7", err)
				}
				return
			}
			if err != nil || got.Key != tc.want || got.Migration != tc.wantMig {
				t.Fatalf("got %+v %v, want key %q migration %q", got, err, tc.want, tc.wantMig)
			}
			if got.Key != "" && got.HoldFor != time.Hour {
				t.Errorf("holdFor %s, want the config's 1h", got.HoldFor)
			}
		})
	}
}

func TestStickyConf(t *testing.T) {
	for _, tc := range []struct {
		name, ipam string
		want       Sticky
		wantErr    string
	}{
		{name: "none", ipam: `{}`, want: Sticky{HoldFor: DefaultHoldFor}},
		{name: "namespaceFrom nomad", ipam: `{"namespaceFrom":"nomad","sticky":{"by":["pod"]}}`, want: Sticky{By: []string{"pod"}, HoldFor: DefaultHoldFor, NamespaceFrom: "nomad"}},
		{name: "namespaceFrom kubernetes", ipam: `{"namespaceFrom":"kubernetes"}`, want: Sticky{HoldFor: DefaultHoldFor, NamespaceFrom: "kubernetes"}},
		{name: "namespaceFrom misspelt", ipam: `{"namespaceFrom":"k8s","sticky":{"by":["pod"]}}`, wantErr: "ipam.namespaceFrom"},
		{name: "namespaceFrom not a string", ipam: `{"namespaceFrom":1}`, wantErr: "ipam.namespaceFrom"},
		{name: "sticky malformed", ipam: `{"sticky":{"by":["label"]}}`, wantErr: "ipam.sticky.by[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf, err := netconf.Parse([]byte(`{"cniVersion":"1.1.0","name":"n","ipam":` + tc.ipam + `}`))
			if err != nil {
				t.Fatal(err)
			}
			got, err := StickyConf(conf)
			if tc.wantErr != "" {
				if e := cnierr.As(err); e == nil || e.Code != cnierr.CodeInvalidConfig || !strings.Contains(e.Msg+e.Details, tc.wantErr) {
					t.Fatalf("err = %v, want 7 naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || got.HoldFor != tc.want.HoldFor || got.NamespaceFrom != tc.want.NamespaceFrom || strings.Join(got.By, ",") != strings.Join(tc.want.By, ",") {
				t.Fatalf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}

func TestStickyAddr(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	a := netip.MustParseAddr("10.0.0.7")
	held := &Hold{Key: "db/pg-0", IfName: "eth0", Address: a.String(), LastOwner: "old", Expires: now.Add(time.Minute)}
	reserved := &Hold{Key: "db/pg-0", IfName: "eth0", Address: a.String(), Owner: "live"}
	for _, tc := range []struct {
		name      string
		h         *Hold
		cid       string
		requested netip.Addr
		want      netip.Addr
		wantCode  uint
	}{
		{"no hold", nil, "new", netip.Addr{}, netip.Addr{}, 0},
		{"held: given again to a new container", held, "new", netip.Addr{}, a, 0},
		{"held, asked for by address", held, "new", a, a, 0},
		{"held, another address asked for", held, "new", netip.MustParseAddr("10.0.0.8"), netip.Addr{}, cnierr.CodeAddrUnavailable},
		{"expired: allocate as usual", &Hold{Key: "k", Address: a.String(), Expires: now}, "new", netip.Addr{}, netip.Addr{}, 0},
		{"held until released", &Hold{Key: "k", Address: a.String()}, "new", netip.Addr{}, a, 0},
		{"reserved by a live container", reserved, "new", netip.Addr{}, netip.Addr{}, cnierr.CodeStickyHeld},
		{"reserved by this container (a retried ADD)", reserved, "live", netip.Addr{}, a, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := StickyAddr(tc.h, "", tc.cid, tc.requested, now)
			if cnierr.Code(err) != tc.wantCode || got != tc.want {
				t.Fatalf("got %s %v, want %s code %d", got, err, tc.want, tc.wantCode)
			}
			if tc.wantCode == cnierr.CodeStickyHeld && !strings.Contains(cnierr.As(err).Msg, "sticky key db/pg-0 is held by live attachment live") {
				t.Errorf("105 says %q", cnierr.As(err).Msg)
			}
		})
	}
	for _, tc := range []struct {
		holdFor string
		want    time.Time // zero: until released
	}{
		{"1h0m0s", now.Add(time.Hour)},
		{"0s", time.Time{}},
		{"", now.Add(DefaultHoldFor)},     // a record from before holdFor was kept
		{"soon", now.Add(DefaultHoldFor)}, // a record is never refused
		{"-1h", now.Add(DefaultHoldFor)},
	} {
		live := *reserved
		live.HoldFor = tc.holdFor
		r := live.HeldFrom(now)
		if !r.Held() || r.LastOwner != "live" || !r.Expires.Equal(tc.want) || r.Expired(now) {
			t.Errorf("release with holdFor %q: %+v, want expiry %v", tc.holdFor, r, tc.want)
		}
		if r.Expired(now.Add(1000*time.Hour)) == tc.want.IsZero() {
			t.Errorf("release with holdFor %q: expired at +1000h = %v", tc.holdFor, !tc.want.IsZero())
		}
	}
	if !reserved.For("db/pg-0", "eth0") || reserved.For("db/pg-0", "net1") || reserved.For("db/pg-1", "eth0") {
		t.Error("Hold.For must compare key and interface")
	}
	if StickyID("k", "eth0") == StickyID("k", "net1") || StickyID("ab", "c") == StickyID("a", "bc") || len(StickyID("a/../b", "eth0")) != 32 {
		t.Error("StickyID must differ per interface and be a fixed-length name")
	}
}

// A hold lasts at least its holdFor, whatever the sub-second part of the
// moment it was made: the expiry is rounded up to the second, never down.
func TestHoldExpiryLastsAtLeastHoldFor(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		offset  time.Duration // below the second
		holdFor time.Duration
		want    time.Time
	}{
		{"on the second", 0, time.Second, base.Add(time.Second)},
		{"just after the second", time.Nanosecond, time.Second, base.Add(2 * time.Second)},
		{"half a second in", 500 * time.Millisecond, time.Second, base.Add(2 * time.Second)},
		{"just before the next", 999 * time.Millisecond, 3 * time.Second, base.Add(4 * time.Second)},
		{"a sub-second holdFor", 200 * time.Millisecond, 300 * time.Millisecond, base.Add(time.Second)},
		{"until released", 500 * time.Millisecond, 0, time.Time{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := base.Add(tc.offset)
			got := HoldExpiry(now, tc.holdFor)
			if !got.Equal(tc.want) {
				t.Fatalf("HoldExpiry(%s, %s) = %s, want %s", now.Format(time.RFC3339Nano), tc.holdFor, got, tc.want)
			}
			if tc.holdFor == 0 {
				return
			}
			h := Hold{Key: "k", Owner: "c1", HoldFor: tc.holdFor.String()}.HeldFrom(now)
			if h.Expired(now.Add(tc.holdFor - time.Nanosecond)) {
				t.Errorf("hold made at %s for %s expired %s later (expires %s)", now.Format(time.RFC3339Nano), tc.holdFor, tc.holdFor-time.Nanosecond, h.Expires.Format(time.RFC3339Nano))
			}
			if !h.Expired(tc.want) {
				t.Errorf("hold not expired at its expiry %s", tc.want)
			}
		})
	}
}

// fsck's check of a migration target: none, a valid one, or why not.
func TestSecondProblem(t *testing.T) {
	base := Hold{Owner: "src", IfName: "eth0", Key: "vms/vm/pg", Address: "10.0.0.2"}
	for _, tc := range []struct {
		second string
		node   string
		want   string
	}{
		{"", "", ""},
		{"tgt", "", ""},
		{"src", "", "its owner"},
		{"src", "node-b", ""},
		{"bad id!", "", "migration target that"},
	} {
		h := base
		h.Second, h.SecondNode = tc.second, tc.node
		if got := h.SecondProblem(); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("second %q on %q: %q, want %q", tc.second, tc.node, got, tc.want)
		}
	}
	held := base
	held.Owner, held.Second = "", "src"
	if p := held.SecondProblem(); p != "" {
		t.Errorf("a held record's second: %q", p)
	}
}
