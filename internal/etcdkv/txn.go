package etcdkv

// Txn is one transaction: when every comparison in If holds, the
// operations in Then run, otherwise those in Else; all at one revision.
type Txn struct {
	If   []Cmp
	Then []Op
	Else []Op
}

// Cmp is one condition of a transaction.
type Cmp struct {
	key    string
	target string // CREATE, MOD, VALUE
	result string // EQUAL, GREATER, LESS
	value  []byte
	rev    int64
}

// Absent holds while key does not exist.
func Absent(key string) Cmp { return Cmp{key: key, target: "CREATE", result: "EQUAL"} }

// ValueIs holds while key holds exactly v.
func ValueIs(key string, v []byte) Cmp {
	return Cmp{key: key, target: "VALUE", result: "EQUAL", value: v}
}

// ValueAbove holds while key exists and its value sorts after v, byte by
// byte; ValueBelow while it sorts before. A missing key fails both.
func ValueAbove(key string, v []byte) Cmp {
	return Cmp{key: key, target: "VALUE", result: "GREATER", value: v}
}

// ValueBelow: see ValueAbove.
func ValueBelow(key string, v []byte) Cmp {
	return Cmp{key: key, target: "VALUE", result: "LESS", value: v}
}

// ModIs holds while key was last written at revision rev.
func ModIs(key string, rev int64) Cmp { return Cmp{key: key, target: "MOD", result: "EQUAL", rev: rev} }

// ModBelow holds while key was last written before revision rev, or does
// not exist.
func ModBelow(key string, rev int64) Cmp {
	return Cmp{key: key, target: "MOD", result: "LESS", rev: rev}
}

// Op is one operation of a transaction.
type Op struct {
	kind     opKind
	key      string
	end      []byte
	value    []byte
	keysOnly bool
	txn      *Txn
}

type opKind uint8

const (
	opGet opKind = iota
	opPut
	opDelete
	opTxn
)

// Get reads one key.
func Get(key string) Op { return Op{kind: opGet, key: key} }

// GetPrefix reads every key under prefix in one answer. It is for ranges
// known to be small (one attachment's keys); List pages large ones.
func GetPrefix(prefix string) Op { return Op{kind: opGet, key: prefix, end: PrefixEnd(prefix)} }

// Put writes v to key.
func Put(key string, v []byte) Op { return Op{kind: opPut, key: key, value: v} }

// Delete removes key.
func Delete(key string) Op { return Op{kind: opDelete, key: key} }

// Nested runs t inside the enclosing transaction, with its own
// conditions, in the same round trip and at the same revision.
func Nested(t Txn) Op { return Op{kind: opTxn, txn: &t} }

// Budget is what etcd counts of t against --max-txn-ops: its widest part
// (its comparisons, or a branch), plus the most any transaction nested in
// it needs, since a nested one gets only what its parent left.
func (t Txn) Budget() int {
	nested := 0
	for _, ops := range [][]Op{t.Then, t.Else} {
		for _, op := range ops {
			if op.txn != nil {
				nested = max(nested, op.txn.Budget())
			}
		}
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

// KV is one key as etcd holds it.
type KV struct {
	Key            []byte
	Value          []byte
	CreateRevision int64
	ModRevision    int64
}

// Response is a transaction's answer: Succeeded tells which branch ran,
// and result i belongs to that branch's operation i.
type Response struct {
	Revision  int64
	Succeeded bool
	results   []result
}

type result struct {
	kvs    []KV
	nested *Response
}

// KVs returns the keys operation i read (nil when it was not a Get).
func (r *Response) KVs(i int) []KV {
	if i >= len(r.results) {
		return nil
	}
	return r.results[i].kvs
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
	if i >= len(r.results) {
		return nil
	}
	return r.results[i].nested
}
