package etcdkv

import "strconv"

// The JSON shapes of etcd's v3 gateway (served under /v3/ since etcd
// 3.4): etcdserverpb's protobuf messages as grpc-gateway encodes them.
// bytes fields are base64 (encoding/json's []byte), int64 fields are
// decimal strings, and zero values are omitted in answers.

type wireHeader struct {
	Revision int64 `json:"revision,string"`
}

type wireKV struct {
	Key            []byte `json:"key"`
	Value          []byte `json:"value"`
	CreateRevision int64  `json:"create_revision,string"`
	ModRevision    int64  `json:"mod_revision,string"`
}

type wireRange struct {
	Key      []byte `json:"key"`
	RangeEnd []byte `json:"range_end,omitempty"`
	Limit    int64  `json:"limit,string,omitempty"`
	Revision int64  `json:"revision,string,omitempty"`
	KeysOnly bool   `json:"keys_only,omitempty"`
}

type wireRangeResponse struct {
	Header wireHeader `json:"header"`
	Kvs    []wireKV   `json:"kvs"`
	More   bool       `json:"more"`
}

type wirePut struct {
	Key   []byte `json:"key"`
	Value []byte `json:"value"`
}

type wireDelete struct {
	Key []byte `json:"key"`
}

type wireCompare struct {
	Key            []byte `json:"key"`
	Target         string `json:"target"`
	Result         string `json:"result"`
	CreateRevision string `json:"create_revision,omitempty"`
	ModRevision    string `json:"mod_revision,omitempty"`
	Value          []byte `json:"value,omitempty"`
}

type wireOp struct {
	Range       *wireRange  `json:"request_range,omitempty"`
	Put         *wirePut    `json:"request_put,omitempty"`
	DeleteRange *wireDelete `json:"request_delete_range,omitempty"`
	Txn         *wireTxn    `json:"request_txn,omitempty"`
}

type wireTxn struct {
	Compare []wireCompare `json:"compare,omitempty"`
	Success []wireOp      `json:"success,omitempty"`
	Failure []wireOp      `json:"failure,omitempty"`
}

type wireResponseOp struct {
	Range *wireRangeResponse `json:"response_range"`
	Txn   *wireTxnResponse   `json:"response_txn"`
}

type wireTxnResponse struct {
	Header    wireHeader       `json:"header"`
	Succeeded bool             `json:"succeeded"`
	Responses []wireResponseOp `json:"responses"`
}

// wireError is the body of a non-200 answer.
type wireError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	Code    int    `json:"code"` // a gRPC status code
}

func (t Txn) wire() wireTxn {
	w := wireTxn{Success: wireOps(t.Then), Failure: wireOps(t.Else)}
	for _, c := range t.If {
		wc := wireCompare{Key: []byte(c.key), Target: c.target, Result: c.result}
		switch c.target {
		case "CREATE":
			wc.CreateRevision = strconv.FormatInt(c.rev, 10)
		case "MOD":
			wc.ModRevision = strconv.FormatInt(c.rev, 10)
		case "VALUE":
			wc.Value = c.value
		}
		w.Compare = append(w.Compare, wc)
	}
	return w
}

func wireOps(ops []Op) []wireOp {
	out := make([]wireOp, len(ops))
	for i, op := range ops {
		switch op.kind {
		case opGet:
			out[i].Range = &wireRange{Key: []byte(op.key), RangeEnd: op.end, KeysOnly: op.keysOnly}
		case opPut:
			out[i].Put = &wirePut{Key: []byte(op.key), Value: op.value}
		case opDelete:
			out[i].DeleteRange = &wireDelete{Key: []byte(op.key)}
		case opTxn:
			t := op.txn.wire()
			out[i].Txn = &t
		}
	}
	return out
}

func (w *wireTxnResponse) response() *Response {
	r := &Response{Revision: w.Header.Revision, Succeeded: w.Succeeded, results: make([]result, len(w.Responses))}
	for i, op := range w.Responses {
		switch {
		case op.Range != nil:
			r.results[i].kvs = kvs(op.Range.Kvs)
		case op.Txn != nil:
			r.results[i].nested = op.Txn.response()
		}
	}
	return r
}

func kvs(w []wireKV) []KV {
	out := make([]KV, len(w))
	for i, kv := range w {
		out[i] = KV(kv)
	}
	return out
}
