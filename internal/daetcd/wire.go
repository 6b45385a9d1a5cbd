package daetcd

// The JSON shapes of etcd's v3 gateway (etcd 3.4 serves it under /v3/):
// the protobuf messages of etcdserverpb as grpc-gateway encodes them.
// bytes fields are base64 (encoding/json's []byte), int64 fields are
// decimal strings, and zero values are omitted in answers.

type header struct {
	Revision int64 `json:"revision,string"`
}

type keyValue struct {
	Key            []byte `json:"key"`
	Value          []byte `json:"value"`
	CreateRevision int64  `json:"create_revision,string"`
	ModRevision    int64  `json:"mod_revision,string"`
}

type rangeRequest struct {
	Key      []byte `json:"key"`
	RangeEnd []byte `json:"range_end,omitempty"`
	KeysOnly bool   `json:"keys_only,omitempty"`
}

type rangeResponse struct {
	Header header     `json:"header"`
	Kvs    []keyValue `json:"kvs"`
}

type putRequest struct {
	Key   []byte `json:"key"`
	Value []byte `json:"value"`
}

type deleteRequest struct {
	Key      []byte `json:"key"`
	RangeEnd []byte `json:"range_end,omitempty"`
}

// compare is one condition of a transaction. Target and Result are the
// enum names; exactly one of the value fields matters, by Target.
type compare struct {
	Key            []byte `json:"key"`
	Target         string `json:"target"` // CREATE, MOD, VALUE
	Result         string `json:"result"` // EQUAL, GREATER, LESS
	CreateRevision string `json:"create_revision,omitempty"`
	ModRevision    string `json:"mod_revision,omitempty"`
	Value          []byte `json:"value,omitempty"`
}

type requestOp struct {
	Range       *rangeRequest  `json:"request_range,omitempty"`
	Put         *putRequest    `json:"request_put,omitempty"`
	DeleteRange *deleteRequest `json:"request_delete_range,omitempty"`
	Txn         *txnRequest    `json:"request_txn,omitempty"`
}

type txnRequest struct {
	Compare []compare   `json:"compare,omitempty"`
	Success []requestOp `json:"success,omitempty"`
	Failure []requestOp `json:"failure,omitempty"`
}

// writes reports whether t puts or deletes anything, at any depth.
func (t txnRequest) writes() bool {
	for _, ops := range [][]requestOp{t.Success, t.Failure} {
		for _, op := range ops {
			if op.Put != nil || op.DeleteRange != nil || (op.Txn != nil && op.Txn.writes()) {
				return true
			}
		}
	}
	return false
}

type responseOp struct {
	Range *rangeResponse `json:"response_range"`
	Txn   *txnResponse   `json:"response_txn"`
}

type txnResponse struct {
	Header    header       `json:"header"`
	Succeeded bool         `json:"succeeded"`
	Responses []responseOp `json:"responses"`
}

// gatewayError is the body of a non-200 answer.
type gatewayError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	Code    int    `json:"code"` // a gRPC status code
}

// Helpers that build the operations this package uses.

func absent(key string) compare {
	return compare{Key: []byte(key), Target: "CREATE", Result: "EQUAL", CreateRevision: "0"}
}

func valueIs(key string, v []byte) compare {
	return compare{Key: []byte(key), Target: "VALUE", Result: "EQUAL", Value: v}
}

// valueHasPrefix holds when key's value starts with p and goes on with a
// byte below 0xff: p < value < p+"\xff", two byte-wise comparisons (etcd
// has no prefix condition). Owner records are JSON, so the byte after the
// owner's fields is always '"'.
func valueHasPrefix(key string, p []byte) []compare {
	upper := append(append([]byte(nil), p...), 0xff)
	return []compare{
		{Key: []byte(key), Target: "VALUE", Result: "GREATER", Value: p},
		{Key: []byte(key), Target: "VALUE", Result: "LESS", Value: upper},
	}
}

func modIs(key string, rev int64) compare {
	return compare{Key: []byte(key), Target: "MOD", Result: "EQUAL", ModRevision: itoa(rev)}
}

func get(key string) requestOp { return requestOp{Range: &rangeRequest{Key: []byte(key)}} }

func getPrefix(prefix string) requestOp {
	return requestOp{Range: &rangeRequest{Key: []byte(prefix), RangeEnd: prefixEnd(prefix)}}
}

func put(key string, v []byte) requestOp {
	return requestOp{Put: &putRequest{Key: []byte(key), Value: v}}
}

func del(key string) requestOp { return requestOp{DeleteRange: &deleteRequest{Key: []byte(key)}} }

// prefixEnd is the range end that covers every key starting with prefix.
// Prefixes here always end in '/', so the increment never carries.
func prefixEnd(prefix string) []byte {
	end := []byte(prefix)
	end[len(end)-1]++
	return end
}

// kvs returns the i-th response's keys (nil when it is not a range).
func (r *txnResponse) kvs(i int) []keyValue {
	if i >= len(r.Responses) || r.Responses[i].Range == nil {
		return nil
	}
	return r.Responses[i].Range.Kvs
}

// first returns the single key the i-th range response found, if any.
func (r *txnResponse) first(i int) (keyValue, bool) {
	kvs := r.kvs(i)
	if len(kvs) == 0 {
		return keyValue{}, false
	}
	return kvs[0], true
}
