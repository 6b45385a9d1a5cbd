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

// bucket is the cached content of one bucket file: its lines by key,
// their address lists as read, or as an entry wrote them (sync) once its
// attachment was used: what Close writes back.
type bucket struct {
	lines   map[string]string           // by key: the address list, "\n" included unless torn; nil until loaded or filled
	entries map[alloc.Attachment]*entry // by Key(): the entries used, or all after a scan
	dirty   bool                        // differs from the file: Close rewrites it
}

// load parses the bucket file data. Lines that are no entry are dropped,
// and so is the second line of a key; a torn last line is kept for its
// addresses, which verify checks, but never written back as it is.
func (b *bucket) load(data string) {
	b.lines = map[string]string{}
	for line := range strings.Lines(data) {
		if key, list, ok := strings.Cut(line, " "); ok && strings.Contains(key, "@") {
			if _, dup := b.lines[key]; !dup {
				b.lines[key] = list
			}
		}
	}
}

// entry is the cached index entry of one attachment, verified against D
// when it was loaded. Each change is written through to its bucket's
// lines (sync), which are then what Close writes back.
type entry struct {
	b     *bucket
	key   string       // its line's key (entryKey); "": it has no line
	addrs []netip.Addr // sorted
}

func (e *entry) add(ip netip.Addr) {
	if i, found := slices.BinarySearchFunc(e.addrs, ip, netip.Addr.Compare); !found {
		e.addrs = slices.Insert(e.addrs, i, ip)
		e.sync()
	}
}

func (e *entry) remove(ip netip.Addr) {
	if i, found := slices.BinarySearchFunc(e.addrs, ip, netip.Addr.Compare); found {
		e.addrs = slices.Delete(e.addrs, i, i+1)
		e.sync()
	}
}

// sync writes e into its bucket's lines: an entry that holds nothing
// (or cannot be indexed: key "", which no line has) has no line.
func (e *entry) sync() {
	e.b.dirty = true
	if e.key != "" && len(e.addrs) > 0 {
		e.b.lines[e.key] = joinAddrs(e.addrs, " ") + "\n"
	} else {
		delete(e.b.lines, e.key)
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
// out (sync rewrites it whole once its attachment is used).
func (b *bucket) content() string {
	var s strings.Builder
	for _, key := range slices.Sorted(maps.Keys(b.lines)) {
		if list := b.lines[key]; strings.HasSuffix(list, "\n") {
			s.WriteString(key + " " + list)
		}
	}
	return s.String()
}

// bucket returns the cached bucket n, creating it: unloaded (lines nil)
// or, in a complete cache, holding no line yet.
func (d *Disk) bucket(n uint8) *bucket {
	b := d.buckets[n]
	if b == nil {
		b = &bucket{entries: map[alloc.Attachment]*entry{}}
		if d.complete {
			b.lines = map[string]string{}
		}
		d.buckets[n] = b
	}
	return b
}

// fill replaces the cache with the result of a full scan. A bucket
// changed since Open is still written back, emptied or not.
func (d *Disk) fill(all map[netip.Addr]alloc.Attachment) {
	old := d.buckets
	d.buckets = make(map[uint8]*bucket, numBuckets)
	d.complete = true
	for n, b := range old {
		d.bucket(n).dirty = b.dirty
	}
	for _, ip := range slices.SortedFunc(maps.Keys(all), netip.Addr.Compare) {
		e, _ := d.tracked(all[ip]) // a complete cache reads nothing: no error
		e.add(ip)
	}
}

// tracked returns a's cached entry, made empty where a holds nothing.
// In a complete cache (built from a scan) every attachment has one;
// otherwise a's bucket is loaded from the index on first use and a's
// addresses are verified. An attachment the index cannot name first
// makes the cache complete: only a scan of D finds its addresses.
func (d *Disk) tracked(a alloc.Attachment) (*entry, error) {
	a = a.Key()
	key, ok := entryKey(a)
	if !ok && !d.complete {
		all, err := d.scan()
		if err != nil {
			return nil, err
		}
		d.fill(all)
	}
	n := bucketOf(a)
	b := d.bucket(n)
	if e := b.entries[a]; e != nil {
		return e, nil
	}
	if b.lines == nil {
		data, _, err := readFile(child(d.idx, bucketName(n)))
		if err != nil {
			return nil, err
		}
		b.load(string(data))
	}
	e := &entry{b: b, key: key}
	if raw, found := b.lines[key]; found { // never in a complete cache
		if err := d.verify(a, e, raw); err != nil {
			return nil, err
		}
	}
	b.entries[a] = e
	return e, nil
}

// verify sets e to the addresses of raw, a's bucket line, whose file
// still names a as owner; a stale address is dropped, never released.
// A line that is not what e now writes (stale, torn, unsorted) is
// rewritten by Close.
func (d *Disk) verify(a alloc.Attachment, e *entry, raw string) error {
	for f := range strings.FieldsSeq(raw) {
		ip, err := netip.ParseAddr(f)
		if err != nil {
			continue
		}
		owner, ok, err := d.Owner(ip)
		if err != nil {
			return err
		}
		if ok && owner.Is(a) {
			e.addrs = append(e.addrs, ip)
		}
	}
	slices.SortFunc(e.addrs, netip.Addr.Compare)
	e.addrs = slices.Compact(e.addrs)
	if len(e.addrs) == 0 || joinAddrs(e.addrs, " ")+"\n" != raw {
		e.sync()
		d.dirty = true
	}
	return nil
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
