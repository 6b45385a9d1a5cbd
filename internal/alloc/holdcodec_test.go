package alloc

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzEncodeHold: the hand-written record encoder writes what
// encoding/json writes, byte for byte, whatever the strings hold.
func FuzzEncodeHold(f *testing.F) {
	f.Add("default/db-0", "eth0", "10.1.0.7", "net", "", "c1", "30m0s", int64(0), "", "")
	f.Add("ns/pod", "net1", "2001:db8::7", "", "c2", "", "", int64(1795617918), "n1", "2026-11-25T12:00:00.000000000Z")
	f.Add("a\"b\\c\x00\x1f\x7f<>&\u2028\u2029é\xff\xfe", "\b\f\n\r\t", "", "ü", "\xed\xa0\x80", "日本", "0s", int64(-62135596800), "\x00", "<")
	f.Fuzz(func(t *testing.T, key, ifname, address, network, owner, lastOwner, holdFor string, expires int64, node, stamp string) {
		h := Hold{Key: key, IfName: ifname, Address: address, Network: network, Owner: owner, LastOwner: lastOwner, HoldFor: holdFor,
			Node: node, LastNode: node, Time: stamp, Migration: holdFor, SecondNode: node, Second: lastOwner, SecondMigration: stamp}
		if expires != 0 {
			h.Expires = time.Unix(expires%253402300799, 0).UTC()
		}
		want, err := json.Marshal(h)
		if err != nil {
			return // encoding/json refuses it too: nothing to compare
		}
		if got := h.AppendJSON(nil); string(got) != string(want) {
			t.Fatalf("AppendJSON(%+v)\n got %s\nwant %s", h, got, want)
		}
		// Its first fields, up to holdFor, are how every record with them
		// begins: a store compares a value with them without reading it.
		first := Hold{Node: node, Owner: owner, IfName: ifname, Network: network, Address: address,
			SecondNode: node, Second: lastOwner, SecondMigration: stamp, Key: key, HoldFor: holdFor}.AppendJSON(nil)
		if p := first[:len(first)-1]; len(p) >= len(want) || string(want[:len(p)]) != string(p) {
			t.Fatalf("first fields %s of %s", p, want)
		}
	})
}
