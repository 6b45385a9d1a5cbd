package etcdkv

// The JSON shapes of etcd's v3 gateway (served under /v3/ since etcd
// 3.4): etcdserverpb's protobuf messages as grpc-gateway encodes them.
// bytes fields are base64 (encoding/json's []byte), int64 fields are
// decimal strings, and zero values are omitted in answers. A transaction
// is written as it is built (txn.go), as encoding/json would write it but
// without building encoding/json's encoders for its types first: most of
// what a fresh process spent on its one request (some 0.1 ms).

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

// appendJSON appends t as a TxnRequest, its empty parts left out.
func (t Txn) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = appendArray(b, "compare", t.If, func(c Cmp) string { return c.json })
	b = appendArray(b, "success", t.Then, func(op Op) string { return op.json })
	b = appendArray(b, "failure", t.Else, func(op Op) string { return op.json })
	return append(b, '}')
}

func appendArray[T any](b []byte, name string, items []T, json func(T) string) []byte {
	if len(items) == 0 {
		return b
	}
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(append(append(b, '"'), name...), `":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, json(it)...)
	}
	return append(b, ']')
}

func (w *wireTxnResponse) response() *Response {
	return &Response{Revision: w.Header.Revision, Succeeded: w.Succeeded, results: w.Responses}
}
