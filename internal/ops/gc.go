package ops

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
)

// GCRequest is a garbage collection by hand: the CNI GC command's rules
// (alloc.KeepSet) with the list of live attachments given by the
// operator.
type GCRequest struct {
	Location
	Keep  []alloc.Attachment
	Apply bool
	// Node is a shared Backend's only and required there: the host whose
	// claims to collect (Network and Pool are then optional filters).
	Node string
	// DeadAfter (shared Backend, Apply): refuse while Node was seen alive
	// more recently than this, unless Force.
	DeadAfter time.Duration
	Force     bool
}

// GC returns the reservations the rules release: only planned without
// Apply (read without the lock, nothing changed), released with it by
// the CNI GC's own code (dapools.Collect, tenant records included). With
// --pool and --network both set, only the reservations recorded for that
// network are candidates, as in that network's CNI GC; with --pool alone,
// every network's are.
func (b Local) GC(r GCRequest) ([]Lease, error) {
	d, err := b.existingDir(r.Location)
	if err != nil {
		return nil, err
	}
	network := r.Network
	if d.Kind == "network" {
		network = d.Name
	}
	keep := alloc.NewKeepSet(network, r.Keep)
	now := time.Now()
	out := []Lease{}
	if !r.Apply {
		// The engine's plan over what is read without the lock: the
		// addresses --apply frees, in the order it frees them.
		ls, rs, _, err := readLeases(d)
		if err != nil {
			return nil, err
		}
		v := alloc.GCView{Owners: map[netip.Addr]alloc.Attachment{}}
		if v.Holds, err = hostlocal.ReadHolds(d.Path); err != nil {
			return nil, err
		}
		leases := map[netip.Addr]Lease{}
		for i, res := range rs {
			v.Owners[res.Addr], leases[res.Addr] = res.Owner, ls[i]
		}
		for _, ip := range alloc.PlanGC(v, keep.Keeps, now).Freed() {
			out = append(out, leases[ip])
		}
		return out, nil
	}
	// What it released is reported with the owners and holds it read
	// under the lock.
	var all map[netip.Addr]alloc.Attachment
	var holds map[string]alloc.HoldRecord
	released, err := dapools.Collect(dapools.Collection{DataDir: b.DataDir, Dirs: []string{d.Path}, LockTimeout: b.LockTimeout, Keep: keep.Keeps, Now: now,
		Inspect: func(dir string, disk *hostlocal.Disk) (err error) {
			if all, err = disk.All(); err == nil {
				holds, err = validHolds(dir)
			}
			return err
		}})
	for _, ip := range released[d.Path] {
		out = append(out, withHold(leaseOf(d, hostlocal.Reservation{Addr: ip, Owner: all[ip], Problem: all[ip].Problem()}), holds))
	}
	return out, err
}

// ParseKeep reads "CONTAINERID" (every reservation of that container) or
// "CONTAINERID@IFNAME" (that attachment, plus the container's legacy
// id-only reservations).
func ParseKeep(s string) (alloc.Attachment, error) {
	id, ifname, _ := strings.Cut(strings.TrimSpace(s), "@")
	if id == "" {
		return alloc.Attachment{}, fmt.Errorf("invalid --keep %q: want CONTAINERID[@IFNAME]", s)
	}
	return alloc.Attachment{ContainerID: id, IfName: ifname}, nil
}

// ReadKeepFile reads one CONTAINERID[@IFNAME] per line; blank lines and
// lines starting with '#' are skipped.
func ReadKeepFile(r io.Reader) ([]alloc.Attachment, error) {
	var out []alloc.Attachment
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		a, err := ParseKeep(line)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, sc.Err()
}
