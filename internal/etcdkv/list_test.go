package etcdkv

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"
)

// rangeServer serves /v3/kv/range over keys at revision rev, as etcd
// does: limit, a continuation key, and a revision that may be compacted.
func rangeServer(t *testing.T, keys []string, rev int64, compactOnce bool, maxKvs int) *member {
	sort.Strings(keys)
	return newMemberFunc(t, func(_ int, r *http.Request, body string) answer {
		var req wireRange
		if err := json.Unmarshal([]byte(body), &req); err != nil || r.URL.Path != "/v3/kv/range" {
			return gatewayError(400, 3, "bad request")
		}
		if req.Revision != 0 && compactOnce {
			compactOnce = false
			return gatewayError(400, 11, "etcdserver: mvcc: required revision has been compacted")
		}
		if req.Revision != 0 && req.Revision != rev {
			return gatewayError(400, 3, fmt.Sprintf("unexpected revision %d", req.Revision))
		}
		var page wireRangeResponse
		page.Header.Revision = rev
		for _, k := range keys {
			if k < string(req.Key) || k >= string(req.RangeEnd) {
				continue
			}
			if int64(len(page.Kvs)) == req.Limit {
				page.More = true
				break
			}
			kv := KV{Key: []byte(k), ModRevision: rev}
			if !req.KeysOnly {
				kv.Value = []byte("v:" + k)
			}
			page.Kvs = append(page.Kvs, kv)
		}
		if maxKvs > 0 && len(page.Kvs) > maxKvs {
			return tooLong
		}
		b, _ := json.Marshal(page)
		return answer{status: 200, body: string(b)}
	})
}

func TestListPages(t *testing.T) {
	var keys []string
	for i := range 2*pageSize + 17 {
		keys = append(keys, fmt.Sprintf("/p/%05d", i))
	}
	keys = append(keys, "/o/before", "/q/after", "/p") // outside the prefix /p/
	for _, tc := range []struct {
		name      string
		compact   bool
		keysOnly  bool
		maxKvs    int
		wantPages int
	}{
		{"three pages at one revision", false, false, 0, 3},
		{"keys only: larger pages", false, true, 0, 1},
		{"compacted between pages: starts again", true, false, 0, 5},
		{"answers too large: smaller pages", false, false, 1500, 2 + 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := rangeServer(t, append([]string(nil), keys...), 42, tc.compact, tc.maxKvs)
			got, err := client(t, 2*time.Second, m).List("/p/", tc.keysOnly)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2*pageSize+17 || string(got[0].Key) != "/p/00000" || string(got[len(got)-1].Key) != fmt.Sprintf("/p/%05d", 2*pageSize+16) {
				t.Fatalf("got %d keys (%q … %q)", len(got), got[0].Key, got[len(got)-1].Key)
			}
			for i := 1; i < len(got); i++ {
				if string(got[i-1].Key) >= string(got[i].Key) {
					t.Fatalf("key %d out of order or repeated: %q after %q", i, got[i].Key, got[i-1].Key)
				}
			}
			if (got[0].Value == nil) != tc.keysOnly {
				t.Errorf("value %q with keysOnly=%v", got[0].Value, tc.keysOnly)
			}
			if n := m.sent(); n != tc.wantPages {
				t.Errorf("%d requests, want %d", n, tc.wantPages)
			}
		})
	}
}

// TestWireShape pins the gateway's JSON for every kind of condition and
// operation, and reads a nested answer back.
func TestWireShape(t *testing.T) {
	txn := Txn{
		If:   []Cmp{Absent("a"), ValueIs("b", []byte("x")), ModIs("c", 7), ModBelow("d", 9), ValueAbove("e", []byte("y")), ValueBelow("e", []byte("z"))},
		Then: []Op{Put("a", []byte("v")), Delete("b"), Nested(Txn{If: []Cmp{Absent("f")}, Then: []Op{Get("f")}})},
		Else: []Op{Get("a"), GetPrefix("p/")},
	}
	b := txn.appendJSON(nil)
	want := `{"compare":[{"key":"YQ==","target":"CREATE","result":"EQUAL","create_revision":"0"},` +
		`{"key":"Yg==","target":"VALUE","result":"EQUAL","value":"eA=="},` +
		`{"key":"Yw==","target":"MOD","result":"EQUAL","mod_revision":"7"},` +
		`{"key":"ZA==","target":"MOD","result":"LESS","mod_revision":"9"},` +
		`{"key":"ZQ==","target":"VALUE","result":"GREATER","value":"eQ=="},` +
		`{"key":"ZQ==","target":"VALUE","result":"LESS","value":"eg=="}],` +
		`"success":[{"request_put":{"key":"YQ==","value":"dg=="}},{"request_delete_range":{"key":"Yg=="}},` +
		`{"request_txn":{"compare":[{"key":"Zg==","target":"CREATE","result":"EQUAL","create_revision":"0"}],"success":[{"request_range":{"key":"Zg=="}}]}}],` +
		`"failure":[{"request_range":{"key":"YQ=="}},{"request_range":{"key":"cC8=","range_end":"cDA="}}]}`
	if string(b) != want {
		t.Errorf("wire =\n%s\nwant\n%s", b, want)
	}
	var w wireTxnResponse
	answer := `{"header":{"revision":"12"},"succeeded":true,"responses":[{"response_put":{}},{"response_txn":{"succeeded":true,"responses":[{"response_range":{"kvs":[{"key":"Zg==","value":"MQ==","mod_revision":"11"}]}}]}}]}`
	if err := json.Unmarshal([]byte(answer), &w); err != nil {
		t.Fatal(err)
	}
	r := w.response()
	kv, ok := r.Nested(1).First(0)
	if r.Revision != 12 || !r.Succeeded || r.KVs(0) != nil || !ok || string(kv.Value) != "1" || kv.ModRevision != 11 {
		t.Errorf("response = %+v, nested first = %+v %v", r, kv, ok)
	}
	if string(PrefixEnd("a\xff\xff")) != "b" || string(PrefixEnd("\xff")) != "\x00" {
		t.Errorf("PrefixEnd carries wrong: %q %q", PrefixEnd("a\xff\xff"), PrefixEnd("\xff"))
	}
}
