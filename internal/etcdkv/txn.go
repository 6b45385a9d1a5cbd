package etcdkv

import (
	"encoding/base64"
	"slices"
	"strconv"
)

// Txn is one transaction: when every comparison in If holds, the
// operations in Then run, otherwise those in Else; all at one revision.
type Txn struct {
	If   []Cmp
	Then []Op
	Else []Op
}

// Cmp is one condition of a transaction, as the gateway's JSON (wire.go).
type Cmp struct{ json string }

func newCmp(key, target, result, operand string) Cmp {
	return Cmp{`{"key":` + b64([]byte(key)) + `,"target":"` + target + `","result":"` + result + `"` + operand + `}`}
}

// Absent holds while key does not exist.
func Absent(key string) Cmp { return newCmp(key, "CREATE", "EQUAL", `,"create_revision":"0"`) }

func valueCmp(key, result string, v []byte) Cmp {
	if len(v) == 0 {
		return newCmp(key, "VALUE", result, "")
	}
	return newCmp(key, "VALUE", result, `,"value":`+b64(v))
}

func modCmp(key, result string, rev int64) Cmp {
	return newCmp(key, "MOD", result, `,"mod_revision":"`+strconv.FormatInt(rev, 10)+`"`)
}

// ValueIs holds while key holds exactly v.
func ValueIs(key string, v []byte) Cmp { return valueCmp(key, "EQUAL", v) }

// ValueAbove holds while key exists and its value sorts after v, byte by
// byte; ValueBelow while it sorts before. A missing key fails both.
func ValueAbove(key string, v []byte) Cmp { return valueCmp(key, "GREATER", v) }

// ValueBelow: see ValueAbove.
func ValueBelow(key string, v []byte) Cmp { return valueCmp(key, "LESS", v) }

// ModIs holds while key was last written at revision rev.
func ModIs(key string, rev int64) Cmp { return modCmp(key, "EQUAL", rev) }

// ModBelow holds while key was last written before revision rev, or does
// not exist.
func ModBelow(key string, rev int64) Cmp { return modCmp(key, "LESS", rev) }

// Op is one operation of a transaction, as the gateway's JSON (wire.go);
// budget is what a nested transaction needs of --max-txn-ops (see Budget).
type Op struct {
	json   string
	budget int
}

// Get reads one key.
func Get(key string) Op { return Op{json: `{"request_range":{"key":` + b64([]byte(key)) + `}}`} }

// GetPrefix reads every key under prefix in one answer. It is for ranges
// known to be small (one attachment's keys); List pages large ones.
func GetPrefix(prefix string) Op {
	return Op{json: `{"request_range":{"key":` + b64([]byte(prefix)) + `,"range_end":` + b64(PrefixEnd(prefix)) + `}}`}
}

// Put writes v to key.
func Put(key string, v []byte) Op {
	return Op{json: `{"request_put":{"key":` + b64([]byte(key)) + `,"value":` + b64(v) + `}}`}
}

// Delete removes key.
func Delete(key string) Op {
	return Op{json: `{"request_delete_range":{"key":` + b64([]byte(key)) + `}}`}
}

// Nested runs t inside the enclosing transaction, with its own
// conditions, in the same round trip and at the same revision.
func Nested(t Txn) Op {
	return Op{json: `{"request_txn":` + string(t.appendJSON(nil)) + `}`, budget: t.Budget()}
}

// b64 is bytes as the gateway's JSON holds them (encoding/json's []byte).
func b64(v []byte) string {
	if v == nil {
		return "null"
	}
	return `"` + base64.StdEncoding.EncodeToString(v) + `"`
}

// Budget is what etcd counts of t against --max-txn-ops: its widest part
// (its comparisons, or a branch), plus the most any transaction nested in
// it needs, since a nested one gets only what its parent left.
func (t Txn) Budget() int {
	nested := 0
	for _, op := range slices.Concat(t.Then, t.Else) {
		nested = max(nested, op.budget)
	}
	return max(len(t.If), len(t.Then), len(t.Else)) + nested
}

// PrefixEnd is the range end that covers every key starting with prefix.
func PrefixEnd(prefix string) []byte {
	end := []byte(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0} // every key
}

// KV is one key as etcd holds it (and as the gateway encodes it).
type KV struct {
	Key            []byte `json:"key"`
	Value          []byte `json:"value"`
	CreateRevision int64  `json:"create_revision,string"`
	ModRevision    int64  `json:"mod_revision,string"`
}

// Response is a transaction's answer: Succeeded tells which branch ran,
// and result i belongs to that branch's operation i.
type Response struct {
	Revision  int64
	Succeeded bool
	results   []wireResponseOp
}

// KVs returns the keys operation i read (nil when it was not a Get).
func (r *Response) KVs(i int) []KV {
	if i >= len(r.results) || r.results[i].Range == nil {
		return nil
	}
	return r.results[i].Range.Kvs
}

// First returns the one key operation i found, if any.
func (r *Response) First(i int) (KV, bool) {
	kvs := r.KVs(i)
	if len(kvs) == 0 {
		return KV{}, false
	}
	return kvs[0], true
}

// Nested returns the answer of operation i when it was a nested
// transaction (nil otherwise).
func (r *Response) Nested(i int) *Response {
	if i >= len(r.results) || r.results[i].Txn == nil {
		return nil
	}
	return r.results[i].Txn.response()
}
