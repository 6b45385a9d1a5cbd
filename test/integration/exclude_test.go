package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// A pool's exclude (in the selector's Pool object and in the allocator's
// poolDefinitions) is never handed out: not in order, not on request, not
// once the pool is exhausted down to the excluded addresses.
func TestPoolExcludeNeverHandedOut(t *testing.T) {
	dataDir := t.TempDir()
	conf := func(pools string) []byte {
		return []byte(fmt.Sprintf(`{"cniVersion":"1.1.0","name":"excl","ipam":{"type":"ipam-delegated",
			"delegates":["ipam-ds-static","ipam-da-pools"],"dataDir":%q,"pools":%s,
			"poolDefinitions":{"defd":{"ranges":[{"subnet":"fd00:212::/125"}],"exclude":["fd00:212::2/127","fd00:212::5"]}}}}`, dataDir, pools))
	}
	// 10.212.7.0/29: .2-.6 allocatable (gateway .1); .3 and .5 excluded.
	// defd: fd00:212::2-::7 (gateway ::1); ::2, ::3, ::5 excluded.
	pools := conf(`[{"name":"inl","subnet":"10.212.7.0/29","exclude":["10.212.7.3","10.212.7.4/31","10.212.7.5"]},{"name":"defd"}]`)

	// (Each request is tried alone: a failed ADD's rollback is not what
	// this test is about.)
	r := testbin.Run(call("ipam-delegated", "ADD", "req", conf(`[{"name":"inl","requested-ip":"10.212.7.5","subnet":"10.212.7.0/29","exclude":["10.212.7.5"]}]`)))
	if e := r.Err(); e == nil || e.Code != 101 || !strings.Contains(e.Msg, "excluded") || !strings.Contains(e.Details, "10.212.7.5") {
		t.Fatalf("requested excluded address: exit %d %s; want 101 naming it", r.Exit, r.Stdout)
	}
	viaArgs := call("ipam-delegated", "ADD", "req6", conf(`[{"name":"defd"}]`))
	viaArgs.Args = "IP=fd00:212::5"
	r = testbin.Run(viaArgs)
	if e := r.Err(); e == nil || e.Code != 101 || !strings.Contains(e.Details, "fd00:212::5") {
		t.Fatalf("requested excluded address via CNI_ARGS: exit %d %s; want 101", r.Exit, r.Stdout)
	}

	var got []string
	for i := range 3 {
		r := testbin.Run(call("ipam-delegated", "ADD", fmt.Sprintf("c%d", i), pools))
		if i == 2 {
			// inl holds .2 and .6 only: the third ADD finds it exhausted.
			if e := r.Err(); e == nil || e.Code != 100 || !strings.Contains(e.Details, "pool inl") {
				t.Fatalf("third ADD: exit %d %s; want 100 naming pool inl", r.Exit, r.Stdout)
			}
			break
		}
		if r.Exit != 0 {
			t.Fatalf("ADD %d: %s", i, r.Stdout)
		}
		got = append(got, parseResult(t, r.Stdout).addrs())
	}
	want := []string{"10.212.7.2/29 gw 10.212.7.1, fd00:212::4/125 gw fd00:212::1", "10.212.7.6/29 gw 10.212.7.1, fd00:212::6/125 gw fd00:212::1"}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Fatalf("allocated\n %v\nwant\n %v", got, want)
	}
	if got := reservations(t, filepath.Join(dataDir, "_pools", "inl")); got != "10.212.7.2 10.212.7.6" {
		t.Errorf("inl reservations after the failed ADD: %s", got)
	}
	if got := reservations(t, filepath.Join(dataDir, "_pools", "defd")); got != "fd00:212::4 fd00:212::6" {
		t.Errorf("defd reservations after the failed ADD: %s", got)
	}
	// A malformed exclude is rejected before anything is touched.
	r = testbin.Run(call("ipam-delegated", "ADD", "bad", conf(`[{"name":"inl","subnet":"10.212.7.0/29","exclude":["10.212.7.300"]}]`)))
	if e := r.Err(); e == nil || e.Code != 7 || !strings.Contains(e.Msg+e.Details, "exclude[0]") || !strings.Contains(e.Details, "10.212.7.300") {
		t.Fatalf("malformed exclude: exit %d %s; want 7 naming the field and value", r.Exit, r.Stdout)
	}
}
