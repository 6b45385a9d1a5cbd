package etcdkv

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// Seen is how a key was last seen: the revision of its last write and its
// value. The zero Seen is a key not seen, or seen absent.
type Seen struct {
	Rev   int64  `json:"rev"`
	Value string `json:"value,omitempty"`
}

// revMemory is what a caller remembers of keys between execs: one small
// file per key, named by Config.StateKey and the key alone, so that it is
// the caller's (the node's) whichever endpoints or user reach the
// cluster. A file per key needs no lock and no merge: concurrent execs
// that learn of different keys write different files, and of one key the
// last writer wins, as it should (see Remember). Each file is rewritten
// in place at a fixed size, never truncated or renamed, so that a DEL's
// one write is a single pwrite: a rename or a truncate would make some
// file systems (ext4's auto_da_alloc) start writing the data back at
// once, which a busy disk makes an exec wait for. A reader that meets a
// half-written record finds its checksum wrong and knows nothing, which
// costs a failed comparison, never a wrong answer.
type revMemory struct {
	dir  string // "" for none (no StateDir, or a fork)
	key  string
	seen map[string]Seen // this exec's reads and writes
}

// seenSize is every record's size on disk: a checksum, the JSON of a
// Seen, spaces up to it. A Seen too long for it is not remembered.
const seenSize = 256

func (r *revMemory) path(key string) string {
	h := sha256.Sum256([]byte("seen\x00" + r.key + "\x00" + key))
	return filepath.Join(r.dir, "seen-"+hex.EncodeToString(h[:12]))
}

// read is key's record, the zero Seen when there is none or it does not
// check out.
func (r *revMemory) read(key string) Seen {
	if r.dir == "" {
		return Seen{}
	}
	b, err := os.ReadFile(r.path(key))
	if err != nil || len(b) != seenSize {
		return Seen{}
	}
	var s Seen
	if sum, err := strconv.ParseUint(string(b[:8]), 16, 32); err != nil || crc32.ChecksumIEEE(b[8:]) != uint32(sum) || json.Unmarshal(b[8:], &s) != nil {
		return Seen{}
	}
	return s
}

// write replaces key's record; one that does not fit is written empty, so
// that what was there before is not taken for it.
func (r *revMemory) write(key string, s Seen) {
	if r.dir == "" {
		return
	}
	rec := bytes.Repeat([]byte{' '}, seenSize)
	if js, _ := json.Marshal(s); 8+len(js) <= seenSize {
		copy(rec[8:], js)
	}
	copy(rec, fmt.Appendf(nil, "%08x", crc32.ChecksumIEEE(rec[8:])))
	p := r.path(key)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o600)
	if errors.Is(err, fs.ErrNotExist) && os.MkdirAll(r.dir, 0o700) == nil {
		f, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o600)
	}
	if err != nil {
		return
	}
	_, _ = f.WriteAt(rec, 0)
	_ = f.Close()
}

// Recall is how this host last saw key (zero: not known). A hint: a
// caller compares it in a transaction and learns the truth when the
// comparison fails.
func (c *Client) Recall(key string) Seen {
	s, ok := c.revs.seen[key]
	if !ok {
		s = c.revs.read(key)
		c.revs.seen[key] = s
	}
	return s
}

// Remember notes how keys were seen, for this exec and the next ones.
// The last exec to learn of a key sets it (not the highest revision: a
// cluster restored from a backup goes back in revisions); a stale one
// costs a failed comparison. A key this exec already knows as seen is
// not written again.
func (c *Client) Remember(seen map[string]Seen) {
	for k, v := range seen {
		if old, ok := c.revs.seen[k]; ok && old == v {
			continue
		}
		c.revs.seen[k] = v
		c.revs.write(k, v)
	}
}
