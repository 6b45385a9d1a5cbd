package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// containerID is a runtime-looking ID (64 hex digits), distinct per tag.
func containerID(tag string) string {
	sum := sha256.Sum256([]byte(tag))
	return hex.EncodeToString(sum[:])
}

// format is how a subject writes a reservation file: prefix + container
// ID + suffix. It is learnt from the subject itself (probeFormat), so the
// pre-fill follows whatever the code under test writes today.
type format struct{ prefix, suffix string }

func (f format) content(cid string) string { return f.prefix + cid + f.suffix }

func (f format) String() string { return fmt.Sprintf("%q", f.content("<containerID>")) }

// hostLocalFormat is host-local's documented format, used when the real
// host-local is not installed.
var hostLocalFormat = format{suffix: "\r\n" + ifname}

// probeFormat runs one ADD of s in a scratch dataDir and reads back the
// reservation file it wrote.
func probeFormat(s subject, scratch string) (format, error) {
	cid := containerID("probe-" + s.key)
	c := s.call("ADD", cid, scratch, nil)
	o, err := mustRun(c)
	if err != nil {
		return format{}, err
	}
	addrs, err := resultAddresses(o.stdout)
	if err != nil || len(addrs) != 1 {
		return format{}, fmt.Errorf("%s: probe ADD gave %v (%v)", s.label, addrs, err)
	}
	p, err := netip.ParsePrefix(addrs[0])
	if err != nil {
		return format{}, err
	}
	path := filepath.Join(s.stateDir(scratch), p.Addr().String())
	b, err := os.ReadFile(path)
	if err != nil {
		return format{}, fmt.Errorf("%s: reservation file after ADD: %v", s.label, err)
	}
	before, after, ok := strings.Cut(string(b), cid)
	if !ok {
		return format{}, fmt.Errorf("%s: reservation %s does not name the container: %q", s.label, path, b)
	}
	if _, err := mustRun(s.call("DEL", cid, scratch, o.stdout)); err != nil {
		return format{}, err
	}
	return format{prefix: before, suffix: after}, nil
}

// firstFill is where pre-filled reservations start: the first address
// after the default gateway, as host-local hands them out.
var firstFill = netip.MustParseAddr("10.10.0.2")

// masters holds one master copy of the reservations per format, grown
// as fill levels grow. Subjects' state directories get hard links to the
// master files instead of files of their own: on some file systems
// creating an inode costs about a millisecond where a link costs 15 µs,
// and neither plugin ever writes to a reservation it did not create.
type masters struct {
	base  string
	dirs  map[format]string
	count map[format]int
}

func newMasters(base string) *masters {
	return &masters{base: base, dirs: map[format]string{}, count: map[format]int{}}
}

func fillAddr(i int) (netip.Addr, error) {
	ip := firstFill
	b := ip.As4()
	n := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	n += uint32(i)
	ip = netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	if !netip.MustParsePrefix(subnet).Contains(ip) || ip == netip.MustParseAddr("10.10.255.255") {
		return ip, errors.New("fill does not fit in " + subnet)
	}
	return ip, nil
}

// ensure makes the master of f hold at least count reservations.
func (m *masters) ensure(f format, count int) (string, error) {
	dir, ok := m.dirs[f]
	if !ok {
		dir = filepath.Join(m.base, fmt.Sprintf("master-%d", len(m.dirs)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		m.dirs[f] = dir
	}
	for i := m.count[f]; i < count; i++ {
		ip, err := fillAddr(i)
		if err != nil {
			return "", err
		}
		content := f.content(containerID(fmt.Sprintf("fill-%d", i)))
		if err := os.WriteFile(filepath.Join(dir, ip.String()), []byte(content), 0o644); err != nil {
			return "", err
		}
		m.count[f] = i + 1
	}
	return dir, nil
}

// prefill leaves count reservations in dir exactly as a long-running
// host-local would have: consecutive addresses from the start of the
// range, each held by its own container, the round-robin cursor on the
// last one, and the (empty) lock file.
func (m *masters) prefill(dir string, count int, f format) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "lock"), nil, 0o644); err != nil {
		return err
	}
	if count == 0 {
		return nil
	}
	src, err := m.ensure(f, count)
	if err != nil {
		return err
	}
	var last netip.Addr
	for i := 0; i < count; i++ {
		if last, err = fillAddr(i); err != nil {
			return err
		}
		name := last.String()
		if err := os.Link(filepath.Join(src, name), filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "last_reserved_ip.0"), []byte(last.String()), 0o644)
}

// countReservations counts the address-named files in dir.
func countReservations(dir string) (int, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, de := range des {
		if _, err := netip.ParseAddr(de.Name()); err == nil {
			n++
		}
	}
	return n, nil
}
