package etcdkv

import (
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

// Cmp is one condition of a transaction, in the gateway's shape.
type Cmp struct{ w wireCompare }

// Absent holds while key does not exist.
func Absent(key string) Cmp {
	return Cmp{wireCompare{Key: []byte(key), Target: "CREATE", Result: "EQUAL", CreateRevision: "0"}}
}

func valueCmp(key, result string, v []byte) Cmp {
	return Cmp{wireCompare{Key: []byte(key), Target: "VALUE", Result: result, Value: v}}
}

func modCmp(key, result string, rev int64) Cmp {
	return Cmp{wireCompare{Key: []byte(key), Target: "MOD", Result: result, ModRevision: strconv.FormatInt(rev, 10)}}
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

// Op is one operation of a transaction, in the gateway's shape; budget is
// what a nested transaction needs of --max-txn-ops (see Budget).
type Op struct {
	w      wireOp
	budget int
}

// Get reads one key.
func Get(key string) Op { return Op{w: wireOp{Range: &wireRange{Key: []byte(key)}}} }

// GetPrefix reads every key under prefix in one answer. It is for ranges
// known to be small (one attachment's keys); List pages large ones.
func GetPrefix(prefix string) Op {
	return Op{w: wireOp{Range: &wireRange{Key: []byte(prefix), RangeEnd: PrefixEnd(prefix)}}}
}

// Put writes v to key.
func Put(key string, v []byte) Op { return Op{w: wireOp{Put: &wirePut{Key: []byte(key), Value: v}}} }

// Delete removes key.
func Delete(key string) Op { return Op{w: wireOp{DeleteRange: &wireRange{Key: []byte(key)}}} }

// Nested runs t inside the enclosing transaction, with its own
// conditions, in the same round trip and at the same revision.
func Nested(t Txn) Op {
	w := t.wire()
	return Op{w: wireOp{Txn: &w}, budget: t.Budget()}
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
