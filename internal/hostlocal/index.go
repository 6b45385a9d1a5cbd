package hostlocal

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// indexDir is the index of state directory dir: a sibling "_index" tree,
// which host-local never walks and no network or pool name can shadow.
func indexDir(dir string) string {
	return filepath.Join(filepath.Dir(dir), "_index", filepath.Base(dir))
}

// maxNameLen is the usual NAME_MAX.
const maxNameLen = 255

// entryName is a's index file name "<containerID>@<ifname>", or false when
// that would not be one safe, unambiguous file name. Forbidding '@' in the
// ID makes the name injective; forbidding a leading '.' keeps entries
// apart from scratch files.
func entryName(a Attachment) (string, bool) {
	id := a.ContainerID
	if !a.storable() || strings.HasPrefix(id, ".") || strings.ContainsAny(id, "/@\x00\n") ||
		strings.ContainsAny(a.IfName, "/\x00\n") || len(id)+1+len(a.IfName) > maxNameLen {
		return "", false
	}
	return id + "@" + a.IfName, true
}

// entry is the cached index entry of one attachment.
type entry struct {
	addrs  []netip.Addr // sorted
	dirty  bool         // differs from the file: Close rewrites it
	onDisk bool         // the entry file exists
}

func (e *entry) add(ip netip.Addr) {
	if i, found := slices.BinarySearchFunc(e.addrs, ip, netip.Addr.Compare); !found {
		e.addrs = slices.Insert(e.addrs, i, ip)
		e.dirty = true
	}
}

func (e *entry) remove(ip netip.Addr) {
	if i, found := slices.BinarySearchFunc(e.addrs, ip, netip.Addr.Compare); found {
		e.addrs = slices.Delete(e.addrs, i, i+1)
		e.dirty = true
	}
}

func (e *entry) content() string {
	var b strings.Builder
	for _, ip := range e.addrs {
		b.WriteString(ip.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// fill replaces the cache with the result of a full scan.
func (d *Disk) fill(all map[netip.Addr]Attachment) {
	d.entries = make(map[Attachment]*entry, len(all))
	for ip, a := range all {
		e := d.entries[a.Key()]
		if e == nil {
			e = &entry{}
			d.entries[a.Key()] = e
		}
		e.addrs = append(e.addrs, ip)
	}
	for _, e := range d.entries {
		slices.SortFunc(e.addrs, netip.Addr.Compare)
	}
	d.complete = true
}

// tracked returns a's cached entry, loading it from the index on first
// use, or nil when a is not indexed (the caller then scans D).
func (d *Disk) tracked(a Attachment) (*entry, error) {
	a = a.Key()
	if e, ok := d.entries[a]; ok {
		return e, nil
	}
	if d.complete {
		e := &entry{}
		d.entries[a] = e
		return e, nil
	}
	name, ok := entryName(a)
	if !ok {
		return nil, nil
	}
	e, err := d.loadEntry(a, filepath.Join(d.idx, name))
	if err != nil {
		return nil, err
	}
	d.entries[a] = e
	return e, nil
}

// loadEntry reads an index entry and keeps only the addresses whose file
// still names a as owner; a stale address is dropped, never released.
func (d *Disk) loadEntry(a Attachment, path string) (*entry, error) {
	data, err := readSmall(path)
	if errors.Is(err, os.ErrNotExist) {
		return &entry{}, nil
	}
	if err != nil {
		return nil, cnierr.IO("read", path, err)
	}
	e := &entry{onDisk: true}
	for line := range strings.Lines(string(data)) {
		ip, err := netip.ParseAddr(strings.TrimSpace(line))
		if err != nil {
			e.dirty = true
			continue
		}
		owner, ok, err := d.Owner(ip)
		if err != nil {
			return nil, err
		}
		if !ok || !owner.Is(a) {
			e.dirty = true
			continue
		}
		e.addrs = append(e.addrs, ip)
	}
	slices.SortFunc(e.addrs, netip.Addr.Compare)
	e.addrs = slices.Compact(e.addrs)
	if e.dirty {
		d.dirty = true
	}
	return e, nil
}

// flush writes every changed entry back (removing emptied ones), in
// place: the stamp, not atomic replacement, protects entries from torn
// writes.
func (d *Disk) flush() error {
	for a, e := range d.entries {
		if !e.dirty {
			continue
		}
		name, ok := entryName(a)
		if !ok {
			continue
		}
		path := filepath.Join(d.idx, name)
		var err error
		switch {
		case len(e.addrs) == 0 && e.onDisk:
			err = retireEntry(d.idx, path)
		case len(e.addrs) > 0 && !e.onDisk:
			if err = reviveEntry(d.idx, path); err == nil {
				err = overwrite(path, e.content())
			}
		case len(e.addrs) > 0:
			err = overwrite(path, e.content())
		}
		if err != nil {
			return err
		}
		e.onDisk = len(e.addrs) > 0
		e.dirty = false
	}
	return nil
}
