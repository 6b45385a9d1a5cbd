package hostlocal

import (
	"hash/fnv"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// IndexDir is the index of state directory dir: a sibling "_index" tree,
// which host-local never walks and no network or pool name can shadow.
func IndexDir(dir string) string {
	dir = filepath.Clean(dir)
	return child(child(filepath.Dir(dir), "_index"), filepath.Base(dir))
}

// numBuckets is the number of bucket files an index is spread over.
const numBuckets = 256

// bucketOf is the bucket holding a's entry: the low byte of the FNV-1a
// hash of its identity (never its network).
func bucketOf(a alloc.Attachment) uint8 {
	h := fnv.New32a()
	h.Write([]byte(a.ContainerID + "\x00" + a.IfName))
	return uint8(h.Sum32() & 0xff)
}

// bucketName is the file name of bucket b: "b00" ... "bff".
func bucketName(b uint8) string {
	const hex = "0123456789abcdef"
	return string([]byte{'b', hex[b>>4], hex[b&0xf]})
}

// entryKey is a's key "<containerID>@<ifname>" in a bucket line, or false
// when a cannot be indexed: the key must be one white-space-free field,
// and forbidding '@' in the ID makes it injective. A leading '.' is
// refused too, as it always was.
func entryKey(a alloc.Attachment) (string, bool) {
	id := a.ContainerID
	if !a.Recordable() || id == "" || id[0] == '.' || strings.ContainsAny(id, "@\x00") || strings.ContainsRune(a.IfName, 0) ||
		strings.ContainsFunc(id, unicode.IsSpace) || strings.ContainsFunc(a.IfName, unicode.IsSpace) {
		return "", false
	}
	return id + "@" + a.IfName, true
}

// rebuildDirs are the trees a rebuild writes the new index in and moves
// the old one to, beside the index directory (rebuild.go).
func (d stateDir) rebuildDirs() (fresh, old string) {
	parent, base := filepath.Split(d.idx)
	return filepath.Join(parent, "."+base+".new"), filepath.Join(parent, "."+base+".old")
}

// bucketFormat reports whether the index directory was written in the
// bucket layout (it has b00): an index left by a version that kept one
// file per attachment can carry a valid stamp but no buckets, which would
// read as "nobody holds anything".
func (d stateDir) bucketFormat() bool {
	_, err := os.Lstat(child(d.idx, bucketName(0)))
	return err == nil
}

// bucket is the cached content of one bucket file: its lines by key, as
// read, or as a change of its attachment's addresses wrote them (set):
// what Close writes back. The bucket lines are the one copy of the
// index in memory; an attachment the index cannot name has its
// addresses in Disk.unindexed instead.
type bucket struct {
	lines    map[string]string // by key: the address list, "\n" included unless torn
	verified map[string]bool   // the keys whose line was checked against D (verify), or written since
	dirty    bool              // differs from the file: Close rewrites it
}

// load parses the bucket file data. Lines that are no entry are dropped,
// and so is the second line of a key; a torn last line is kept for its
// addresses, which verify checks, but never written back as it is.
func (b *bucket) load(data string) {
	for line := range strings.Lines(data) {
		if key, list, ok := strings.Cut(line, " "); ok && strings.Contains(key, "@") {
			if _, dup := b.lines[key]; !dup {
				b.lines[key] = list
			}
		}
	}
}

// joinAddrs is ips, each as a string, separated by sep.
func joinAddrs(ips []netip.Addr, sep string) string {
	s := make([]string, len(ips))
	for i, ip := range ips {
		s[i] = ip.String()
	}
	return strings.Join(s, sep)
}

// content is the bucket file: its lines sorted by key, a torn one left
// out (set rewrites it whole once its attachment is used).
func (b *bucket) content() string {
	var s strings.Builder
	for _, key := range slices.Sorted(maps.Keys(b.lines)) {
		if list := b.lines[key]; strings.HasSuffix(list, "\n") {
			s.WriteString(key + " " + list)
		}
	}
	return s.String()
}

// bucket returns the cached bucket n, loaded from the index on first use
// unless the cache is complete (then it starts with no line).
func (d *Disk) bucket(n uint8) (*bucket, error) {
	b := d.buckets[n]
	if b == nil {
		b = &bucket{lines: map[string]string{}, verified: map[string]bool{}}
		if !d.complete {
			data, err := readFile(child(d.idx, bucketName(n)))
			if err != nil {
				return nil, err
			}
			b.load(string(data))
		}
		d.buckets[n] = b
	}
	return b, nil
}

// fill replaces the cache with the result of a full scan. Only a bucket
// changed since Open is written back (emptied or not): the scan of a
// trusted index finds what its files say, and a rebuild marks the rest.
func (d *Disk) fill(all map[netip.Addr]alloc.Attachment) {
	old := d.buckets
	d.buckets, d.unindexed, d.complete = make(map[uint8]*bucket, numBuckets), map[alloc.Attachment][]netip.Addr{}, true
	for n := range old {
		d.bucket(n) // a complete cache reads nothing: no error
	}
	for _, ip := range slices.SortedFunc(maps.Keys(all), netip.Addr.Compare) {
		d.track(all[ip], ip, true) // reads nothing either
	}
	for n, b := range d.buckets {
		b.dirty = old[n] != nil && old[n].dirty
	}
}

// addrs returns a's addresses, sorted. In a complete cache (built from a
// scan) they are as it says; otherwise a's bucket is loaded from the
// index on first use and a's line is verified the first time it is
// read. An attachment the index cannot name first makes the cache
// complete: only a scan of D finds its addresses.
func (d *Disk) addrs(a alloc.Attachment) ([]netip.Addr, error) {
	a = a.Key()
	key, ok := entryKey(a)
	if !ok {
		if !d.complete {
			all, err := d.scan()
			if err != nil {
				return nil, err
			}
			d.fill(all)
		}
		return slices.Clone(d.unindexed[a]), nil
	}
	b, err := d.bucket(bucketOf(a))
	if err != nil {
		return nil, err
	}
	raw, found := b.lines[key]
	if !found || b.verified[key] || d.complete {
		return parseAddrs(raw), nil
	}
	b.verified[key] = true
	return d.verify(a, raw)
}

// parseAddrs is the addresses of a bucket line's list, in its order.
func parseAddrs(list string) []netip.Addr {
	var out []netip.Addr
	for f := range strings.FieldsSeq(list) {
		if ip, err := netip.ParseAddr(f); err == nil {
			out = append(out, ip)
		}
	}
	return out
}

// verify returns the addresses of raw, a's bucket line, whose file still
// names a as owner; a stale address is dropped, never released. A line
// that is not what set now writes (stale, torn, unsorted) is rewritten
// by Close.
func (d *Disk) verify(a alloc.Attachment, raw string) ([]netip.Addr, error) {
	var addrs []netip.Addr
	for _, ip := range parseAddrs(raw) {
		owner, ok, err := d.Owner(ip)
		if err != nil {
			return nil, err
		}
		if ok && owner.Is(a) {
			addrs = append(addrs, ip)
		}
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	addrs = slices.Compact(addrs)
	if len(addrs) == 0 || joinAddrs(addrs, " ")+"\n" != raw {
		d.set(a, addrs)
		d.dirty = true
	}
	return addrs, nil
}

// set makes ips (sorted) a's addresses in the cache: its bucket line,
// where it has one (none while it holds nothing), or Disk.unindexed.
func (d *Disk) set(a alloc.Attachment, ips []netip.Addr) {
	a = a.Key()
	key, ok := entryKey(a)
	if !ok {
		d.unindexed[a] = ips
		return
	}
	b, _ := d.bucket(bucketOf(a)) // loaded already: no error
	b.dirty, b.verified[key] = true, true
	if len(ips) > 0 {
		b.lines[key] = joinAddrs(ips, " ") + "\n"
	} else {
		delete(b.lines, key)
	}
}

// flush writes every changed bucket into the index directory idx (D's,
// or the fresh tree of a rebuild) in place: the stamp, not atomic
// replacement, protects buckets from torn writes. An emptied bucket stays
// as an empty file.
func (d *Disk) flush(idx string) error {
	for n, b := range d.buckets {
		if !b.dirty {
			continue
		}
		if err := overwrite(child(idx, bucketName(n)), b.content(), modePrivate); err != nil {
			return err
		}
		b.dirty = false
	}
	return nil
}
