package hostlocal

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// FuzzEncodeHold: the hand-written record encoder writes what
// encoding/json writes, byte for byte, whatever the strings hold.
func FuzzEncodeHold(f *testing.F) {
	f.Add("default/db-0", "eth0", "10.1.0.7", "net", "", "c1", "30m0s", int64(0))
	f.Add("ns/pod", "net1", "2001:db8::7", "", "c2", "", "", int64(1795617918))
	f.Add("a\"b\\c\x00\x1f\x7f<>&\u2028\u2029é\xff\xfe", "\b\f\n\r\t", "", "ü", "\xed\xa0\x80", "日本", "0s", int64(-62135596800))
	f.Fuzz(func(t *testing.T, key, ifname, address, network, owner, lastOwner, holdFor string, expires int64) {
		h := alloc.Hold{Key: key, IfName: ifname, Address: address, Network: network, Owner: owner, LastOwner: lastOwner, HoldFor: holdFor}
		if expires != 0 {
			h.Expires = time.Unix(expires%253402300799, 0).UTC()
		}
		want, err := json.Marshal(h)
		if err != nil {
			return // encoding/json refuses it too: nothing to compare
		}
		if got := encodeHold(h); string(got) != string(want) {
			t.Fatalf("encodeHold(%+v)\n got %s\nwant %s", h, got, want)
		}
	})
}
