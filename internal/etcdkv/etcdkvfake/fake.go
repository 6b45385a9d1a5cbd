// Package etcdkvfake is an in-memory etcd for unit tests: it serves the
// part of etcd's v3 JSON gateway that internal/etcdkv speaks (range, put,
// delete range, transactions with nested transactions) over httptest, so a real etcdkv.Client, and everything built on
// it, runs against it with no etcd binary. It keeps etcd's semantics
// where callers rely on them: one revision per write transaction, create
// and mod revisions, comparisons on value, version and revisions (a value
// comparison on a missing key fails, as in etcd), reads inside a
// transaction that see its earlier writes, the refusal of a transaction
// that writes one key twice or has more operations than etcd's default
// --max-txn-ops (128) allows, counted as etcd does.
package etcdkvfake

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync"
)

// TB is what New needs of a test: testing.TB's Cleanup.
type TB interface{ Cleanup(func()) }

// Fake is one in-memory etcd.
type Fake struct {
	srv *httptest.Server

	mu  sync.Mutex
	log []Request
	rev int64
	kvs map[string]kv
}

type kv struct {
	value            []byte
	create, mod, ver int64
}

// New starts a Fake; it stops at the test's cleanup.
func New(t TB) *Fake {
	f := &Fake{rev: 1, kvs: map[string]kv{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the endpoint to give a client.
func (f *Fake) URL() string { return f.srv.URL }

// Values returns every key under prefix with its value.
func (f *Fake) Values(prefix string) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for k, v := range f.kvs {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			out[k] = string(v.value)
		}
	}
	return out
}

// Revision is the store's current revision.
func (f *Fake) Revision() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rev
}

// The gateway's JSON: etcdserverpb's messages as grpc-gateway encodes
// them (bytes base64, int64 as decimal strings, zero values omitted).
type (
	rangeReq struct {
		Key       []byte `json:"key"`
		RangeEnd  []byte `json:"range_end"`
		Limit     int64  `json:"limit,string"`
		KeysOnly  bool   `json:"keys_only"`
		CountOnly bool   `json:"count_only"`
	}
	putReq struct {
		Key   []byte `json:"key"`
		Value []byte `json:"value"`
	}
	deleteReq struct {
		Key      []byte `json:"key"`
		RangeEnd []byte `json:"range_end"`
	}
	compare struct {
		Key            []byte `json:"key"`
		Target         string `json:"target"`
		Result         string `json:"result"`
		CreateRevision int64  `json:"create_revision,string"`
		ModRevision    int64  `json:"mod_revision,string"`
		Version        int64  `json:"version,string"`
		Value          []byte `json:"value"`
	}
	requestOp struct {
		Range  *rangeReq  `json:"request_range"`
		Put    *putReq    `json:"request_put"`
		Delete *deleteReq `json:"request_delete_range"`
		Txn    *txnReq    `json:"request_txn"`
	}
	txnReq struct {
		Compare []compare   `json:"compare"`
		Success []requestOp `json:"success"`
		Failure []requestOp `json:"failure"`
	}
	header  map[string]string
	kvJSON  map[string]any
	respMap map[string]any
)

// Request is one request the fake served.
type Request struct {
	Path string
	Body []byte
}

// Requests returns what the fake was sent, in order.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.log...)
}

// Deliver applies a request again, as a copy that reached etcd late
// would be, and returns the answer's status and body.
func (f *Fake) Deliver(r Request) (int, []byte) {
	rec := httptest.NewRecorder()
	f.serve(rec, httptest.NewRequest(http.MethodPost, r.Path, bytes.NewReader(r.Body)))
	return rec.Code, rec.Body.Bytes()
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, Request{Path: r.URL.Path, Body: body})
	var out any
	var err error
	switch r.URL.Path {
	case "/v3/kv/range":
		var q rangeReq
		if err = json.Unmarshal(body, &q); err == nil {
			out = f.rangeOp(q)
		}
	case "/v3/kv/put", "/v3/kv/deleterange", "/v3/kv/txn":
		out, err = f.write(r.URL.Path, body)
	default:
		http.Error(w, `{"error":"Not Found","code":5,"message":"Not Found"}`, http.StatusNotFound)
		return
	}
	if err != nil {
		status, code := http.StatusBadRequest, 3
		if e, ok := err.(gatewayErr); ok {
			status, code = e.status, e.code
		}
		w.WriteHeader(status)
		b, _ := json.Marshal(respMap{"error": err.Error(), "message": err.Error(), "code": code})
		_, _ = w.Write(b)
		return
	}
	b, _ := json.Marshal(out)
	_, _ = w.Write(b)
}

// gatewayErr is a refusal as the gateway sends it: HTTP status, gRPC code.
type gatewayErr struct {
	msg          string
	status, code int
}

func (e gatewayErr) Error() string { return e.msg }

var (
	errDuplicateKey = gatewayErr{"etcdserver: duplicate key given in txn request", http.StatusBadRequest, 3}
	errTooManyOps   = gatewayErr{"etcdserver: too many operations in txn request", http.StatusBadRequest, 3}
)

// maxTxnOps is etcd's default --max-txn-ops. As etcd counts it, a
// transaction's widest part (its comparisons, or either branch) may hold
// that many, and a transaction nested in it only what the outer one left:
// so that what passes here passes on a cluster with defaults.
const maxTxnOps = 128

func checkTxnOps(t txnReq, budget int) error {
	width := max(len(t.Compare), len(t.Success), len(t.Failure))
	if width > budget {
		return errTooManyOps
	}
	for _, ops := range [][]requestOp{t.Success, t.Failure} {
		for _, op := range ops {
			if op.Txn == nil {
				continue
			}
			if err := checkTxnOps(*op.Txn, budget-width); err != nil {
				return err
			}
		}
	}
	return nil
}

// write applies a put, delete or transaction whole or not at all: the
// operations run on a copy of the keys, which replaces them only when
// every one succeeded.
func (f *Fake) write(path string, body []byte) (any, error) {
	var t txnReq
	switch path {
	case "/v3/kv/put":
		var p putReq
		if err := json.Unmarshal(body, &p); err != nil {
			return nil, err
		}
		t.Success = []requestOp{{Put: &p}}
	case "/v3/kv/deleterange":
		var d deleteReq
		if err := json.Unmarshal(body, &d); err != nil {
			return nil, err
		}
		t.Success = []requestOp{{Delete: &d}}
	default:
		if err := json.Unmarshal(body, &t); err != nil {
			return nil, err
		}
	}
	if err := checkTxnOps(t, maxTxnOps); err != nil {
		return nil, err
	}
	if _, err := checkDuplicates(t.Success); err != nil {
		return nil, err
	}
	if _, err := checkDuplicates(t.Failure); err != nil {
		return nil, err
	}
	saved := make(map[string]kv, len(f.kvs))
	for k, v := range f.kvs {
		saved[k] = v
	}
	w := &writer{f: f, rev: f.rev + 1}
	resp, err := w.txn(t)
	if err != nil {
		f.kvs = saved
		return nil, err
	}
	if w.wrote {
		f.rev++
	}
	resp["header"] = f.header()
	switch path {
	case "/v3/kv/put", "/v3/kv/deleterange":
		return respMap{"header": f.header()}, nil
	}
	return resp, nil
}

// writer is one write transaction: every change it makes carries rev.
type writer struct {
	f     *Fake
	rev   int64
	wrote bool
}

func (w *writer) txn(t txnReq) (respMap, error) {
	ok := true
	for _, c := range t.Compare {
		ok = ok && w.f.holds(c)
	}
	ops := t.Failure
	if ok {
		ops = t.Success
	}
	var resps []respMap
	for _, op := range ops {
		switch {
		case op.Range != nil:
			resps = append(resps, respMap{"response_range": w.f.rangeOp(*op.Range)})
		case op.Put != nil:
			w.put(*op.Put)
			resps = append(resps, respMap{"response_put": respMap{}})
		case op.Delete != nil:
			for _, k := range w.f.keysIn(op.Delete.Key, op.Delete.RangeEnd) {
				delete(w.f.kvs, k)
				w.wrote = true
			}
			resps = append(resps, respMap{"response_delete_range": respMap{}})
		case op.Txn != nil:
			r, err := w.txn(*op.Txn)
			if err != nil {
				return nil, err
			}
			resps = append(resps, respMap{"response_txn": r})
		}
	}
	return respMap{"succeeded": ok, "responses": resps}, nil
}

func (w *writer) put(p putReq) {
	k := string(p.Key)
	old, exists := w.f.kvs[k]
	n := kv{value: p.Value, create: w.rev, mod: w.rev, ver: 1}
	if exists {
		n.create, n.ver = old.create, old.ver+1
	}
	w.f.kvs[k] = n
	w.wrote = true
}

// holds evaluates one comparison as etcd does: a missing key has zero
// revisions and version, and fails every value comparison.
func (f *Fake) holds(c compare) bool {
	cur, ok := f.kvs[string(c.Key)]
	var cmp int
	switch c.Target {
	case "VALUE":
		if !ok {
			return false
		}
		cmp = bytes.Compare(cur.value, c.Value)
	case "CREATE":
		cmp = compareInt(cur.create, c.CreateRevision)
	case "MOD":
		cmp = compareInt(cur.mod, c.ModRevision)
	case "VERSION", "":
		cmp = compareInt(cur.ver, c.Version)
	default:
		return false
	}
	switch c.Result {
	case "EQUAL", "":
		return cmp == 0
	case "GREATER":
		return cmp > 0
	case "LESS":
		return cmp < 0
	case "NOT_EQUAL":
		return cmp != 0
	}
	return false
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// keysIn lists the keys in [key, end) in order; no end: key alone; end
// "\x00": every key from key on.
func (f *Fake) keysIn(key, end []byte) []string {
	if len(end) == 0 {
		if _, ok := f.kvs[string(key)]; ok {
			return []string{string(key)}
		}
		return nil
	}
	var out []string
	for k := range f.kvs {
		if k >= string(key) && (bytes.Equal(end, []byte{0}) || k < string(end)) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func (f *Fake) rangeOp(q rangeReq) respMap {
	keys := f.keysIn(q.Key, q.RangeEnd)
	out := respMap{"header": f.header(), "count": strconv.Itoa(len(keys))}
	if q.CountOnly {
		return out
	}
	if q.Limit > 0 && int64(len(keys)) > q.Limit {
		keys, out["more"] = keys[:q.Limit], true
	}
	var kvs []kvJSON
	for _, k := range keys {
		v := f.kvs[k]
		j := kvJSON{"key": []byte(k), "create_revision": strconv.FormatInt(v.create, 10),
			"mod_revision": strconv.FormatInt(v.mod, 10), "version": strconv.FormatInt(v.ver, 10)}
		if !q.KeysOnly && len(v.value) > 0 {
			j["value"] = v.value
		}
		kvs = append(kvs, j)
	}
	if kvs != nil {
		out["kvs"] = kvs
	}
	return out
}

func (f *Fake) header() header { return header{"revision": strconv.FormatInt(f.rev, 10)} }

// checkDuplicates refuses what etcd refuses: a key put twice, or put and
// deleted, at one level or in nested transactions of it (the two
// branches of one nested transaction exclude each other). It returns the
// keys the operations put.
func checkDuplicates(ops []requestOp) (map[string]bool, error) {
	puts := map[string]bool{}
	var dels []deleteReq
	for _, op := range ops {
		if op.Delete != nil {
			dels = append(dels, *op.Delete)
		}
	}
	deleted := func(k string) bool {
		for _, d := range dels {
			if k == string(d.Key) || (len(d.RangeEnd) > 0 && k >= string(d.Key) && (bytes.Equal(d.RangeEnd, []byte{0}) || k < string(d.RangeEnd))) {
				return true
			}
		}
		return false
	}
	for _, op := range ops {
		if op.Txn == nil {
			continue
		}
		then, err := checkDuplicates(op.Txn.Success)
		if err != nil {
			return nil, err
		}
		els, err := checkDuplicates(op.Txn.Failure)
		if err != nil {
			return nil, err
		}
		for k := range then {
			if puts[k] || deleted(k) {
				return nil, errDuplicateKey
			}
		}
		for k := range els {
			if (puts[k] && !then[k]) || deleted(k) {
				return nil, errDuplicateKey
			}
		}
		for k := range then {
			puts[k] = true
		}
		for k := range els {
			puts[k] = true
		}
	}
	for _, op := range ops {
		if op.Put == nil {
			continue
		}
		k := string(op.Put.Key)
		if puts[k] || deleted(k) {
			return nil, errDuplicateKey
		}
		puts[k] = true
	}
	return puts, nil
}
