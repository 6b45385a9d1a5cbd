package etcdkv

// The JSON shapes of etcd's v3 gateway (served under /v3/ since etcd
// 3.4): etcdserverpb's protobuf messages as grpc-gateway encodes them.
// bytes fields are base64 (encoding/json's []byte), int64 fields are
// decimal strings, and zero values are omitted in answers.

type wireHeader struct {
	Revision int64 `json:"revision,string"`
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
	Kvs    []KV       `json:"kvs"`
	More   bool       `json:"more"`
}

type wirePut struct {
	Key   []byte `json:"key"`
	Value []byte `json:"value"`
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
	Range       *wireRange `json:"request_range,omitempty"`
	Put         *wirePut   `json:"request_put,omitempty"`
	DeleteRange *wireRange `json:"request_delete_range,omitempty"`
	Txn         *wireTxn   `json:"request_txn,omitempty"`
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
	w := wireTxn{Compare: make([]wireCompare, len(t.If)), Success: wireOps(t.Then), Failure: wireOps(t.Else)}
	for i, c := range t.If {
		w.Compare[i] = c.w
	}
	return w
}

func wireOps(ops []Op) []wireOp {
	out := make([]wireOp, len(ops))
	for i, op := range ops {
		out[i] = op.w
	}
	return out
}

func (w *wireTxnResponse) response() *Response {
	return &Response{Revision: w.Header.Revision, Succeeded: w.Succeeded, results: w.Responses}
}
