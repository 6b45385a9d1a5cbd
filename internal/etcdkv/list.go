package etcdkv

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
)

// Page sizes: as large as fits comfortably in the 4 MiB answer of etcd
// 3.4's gateway before 3.4.17 (owner records are a few hundred bytes),
// because etcd 3.4 walks the whole rest of the range for every page, so
// a listing costs about keys² / page. An answer refused as too large
// halves the page.
const (
	pageSize     = 4000
	keysPageSize = 10000
	minPageSize  = 50
)

// List reads every key under prefix, page by page, all at the revision of
// the first page, so the listing is one consistent view however long it
// is. keysOnly leaves the values out.
func (c *Client) List(prefix string, keysOnly bool) ([]KV, error) {
	var out []KV
	req := wireRange{Key: []byte(prefix), RangeEnd: PrefixEnd(prefix), Limit: pageSize, KeysOnly: keysOnly}
	if keysOnly {
		req.Limit = keysPageSize
	}
	for restarted := false; ; {
		var page wireRangeResponse
		body, _ := json.Marshal(req)
		err := c.do("/v3/kv/range", body, &page, true)
		switch {
		case err != nil && errors.Is(err, errTooLarge) && req.Limit > minPageSize:
			req.Limit /= 2
			continue
		case err != nil && !restarted && strings.Contains(err.Error(), "required revision has been compacted"):
			// The revision was compacted between two pages: start again
			// at the newest.
			restarted, out, req.Key, req.Revision = true, nil, []byte(prefix), 0
			continue
		case err != nil:
			return nil, err
		}
		out = append(out, page.Kvs...)
		if !page.More || len(page.Kvs) == 0 {
			return out, nil
		}
		req.Revision = page.Header.Revision
		last := page.Kvs[len(page.Kvs)-1].Key
		req.Key = append(slices.Clip(last), 0) // the next key after the last one read
	}
}
