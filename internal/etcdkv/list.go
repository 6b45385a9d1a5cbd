package etcdkv

import (
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// pageSize bounds one page of List: small enough for every gateway's
// answer limit (4 MiB before etcd 3.4.17) with owner records of a few
// hundred bytes, large enough that 100,000 keys take a hundred round trips.
const pageSize = 1000

// List reads every key under prefix, page by page, all at the revision of
// the first page, so the listing is one consistent view however long it
// is. keysOnly leaves the values out.
func (c *Client) List(prefix string, keysOnly bool) ([]KV, error) {
	var out []KV
	end := PrefixEnd(prefix)
	req := wireRange{Key: []byte(prefix), RangeEnd: end, Limit: pageSize, KeysOnly: keysOnly}
	for restarted := false; ; {
		var page wireRangeResponse
		err := c.do("/v3/kv/range", req, &page, true)
		if err != nil && !restarted && compacted(err) {
			// The revision was compacted between two pages: start again
			// at the newest.
			restarted, out, req.Key, req.Revision = true, nil, []byte(prefix), 0
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, kvs(page.Kvs)...)
		if !page.More || len(page.Kvs) == 0 {
			return out, nil
		}
		req.Revision = page.Header.Revision
		last := page.Kvs[len(page.Kvs)-1].Key
		req.Key = append(slices.Clip(last), 0) // the next key after the last one read
	}
}

func compacted(err error) bool {
	e := cnierr.As(err)
	return e != nil && strings.Contains(e.Details, "required revision has been compacted")
}
