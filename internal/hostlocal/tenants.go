package hostlocal

import (
	"encoding/hex"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// Tenants (quotas). A reservation made for a tenant is recorded twice
// beside it, so that counting a tenant's addresses reads only its own
// directory (bounded by its quota), never the pool:
//
//	_tenants/<tenant>/<ip>     the tenant's address; the count is the
//	                           number of these
//	_tenants/_addr/<ip>        whose it is: <tenant>, for the release
//	_tenants/_tok/<tenant>     <tenant>: both records are hard links to it
//
// (Empty directories instead of files would make the count one stat(2),
// the tenant directory's link count, but mkdir and rmdir cost an ADD and
// a DEL more than that read saves at any sane quota; so would a new inode
// per record, hence the token.)
//
// <tenant> is the tenant's bytes in hex (pool.TenantName). The records are
// written before the reservation and removed after it, so a process
// killed in between leaves a record of an address that is not reserved:
// the tenant is counted one address too many (never too few) until the
// address is reserved again (its tag replaces the record), GC, or fsck
// --repair removes it. A held address (a sticky hold) keeps its record:
// holds count.
const (
	tenantsDirName  = "_tenants"
	tenantAddrName  = "_addr"
	tenantTokenName = "_tok"
)

var _ alloc.TenantStore = (*Disk)(nil)

func (d stateDir) tenantsDir() string           { return filepath.Join(d.dir, tenantsDirName) }
func (d stateDir) tenantDir(name string) string { return filepath.Join(d.tenantsDir(), name) }
func (d stateDir) tenantOfPath(ip netip.Addr) string {
	return filepath.Join(d.tenantsDir(), tenantAddrName, ip.String())
}

// ForTenant implements alloc.TenantStore.
func (d *Disk) ForTenant(tenant string) {
	d.tenant = ""
	if tenant != "" {
		d.tenant = pool.TenantName(tenant)
	}
}

// TenantAddrs implements alloc.TenantStore: one read of the tenant's own
// directory.
func (d *Disk) TenantAddrs(tenant string) (int, error) {
	dir := d.tenantDir(pool.TenantName(tenant))
	ents, err := readDir(dir, d.uid)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, readError(dir, err)
	}
	return len(ents), nil
}

// tag records free address ip as d.tenant's, before its reservation.
// _tenants is checked once per Open (as _sticky is). Both records are
// hard links to the tenant's token (_tenants/_tok/<tenant>, holding the
// tenant's name), so that a reservation costs two directory entries and
// no inode; where a file system refuses another link (EMLINK) a record is
// a file of its own with the same content.
func (d *Disk) tag(ip netip.Addr) error {
	if d.hasTenants == 0 {
		if err := d.untag(netip.Addr{}); err != nil { // looks at _tenants once
			return err
		}
	}
	if d.hasTenants < 0 {
		if err := EnsureDir(d.tenantsDir(), modePrivateDir, d.uid); err != nil {
			return err
		}
		d.hasTenants = 1
	}
	token := filepath.Join(d.tenantsDir(), tenantTokenName, d.tenant)
	of := d.tenantOfPath(ip)
	err := d.linkRecord(token, of)
	if errors.Is(err, os.ErrExist) {
		// A crash's leftover for this free address: its records go first.
		if err = d.untag(ip); err == nil {
			err = d.linkRecord(token, of)
		}
	}
	if err != nil {
		return err
	}
	if err := d.linkRecord(token, filepath.Join(d.tenantDir(d.tenant), ip.String())); !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}

// linkRecord makes rec a name of the tenant's token, making the token and
// rec's directory where missing; os.ErrExist when rec exists.
func (d *Disk) linkRecord(token, rec string) error {
	err := os.Link(token, rec)
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Lstat(token); errors.Is(serr, os.ErrNotExist) {
			if err := EnsureDir(filepath.Dir(token), modePrivateDir, d.uid); err != nil {
				return err
			}
			if err := writePrivate(token, d.tenant); err != nil {
				return err
			}
		}
		if err := EnsureDir(filepath.Dir(rec), modePrivateDir, d.uid); err != nil {
			return err
		}
		err = os.Link(token, rec)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, os.ErrExist):
		return os.ErrExist
	case errors.Is(err, syscall.EMLINK):
		return writePrivate(rec, d.tenant)
	}
	return cnierr.IO("link", rec, err)
}

// untag forgets ip's tenant, once its reservation is gone (or never was).
func (d *Disk) untag(ip netip.Addr) error {
	if d.hasTenants == 0 {
		// Most directories have none: one lstat(2) tells, once per Open.
		d.hasTenants = -1
		if _, err := os.Lstat(d.tenantsDir()); err == nil {
			if err := CheckDir(d.tenantsDir(), d.uid); err != nil {
				return err
			}
			d.hasTenants = 1
		}
	}
	if d.hasTenants < 0 || !ip.IsValid() {
		return nil
	}
	of := d.tenantOfPath(ip)
	b, err := readSmall(of)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return cnierr.IO("read", of, err)
	}
	if name := string(b); validTenantName(name) {
		p := filepath.Join(d.tenantDir(name), ip.String())
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return cnierr.IO("remove", p, err)
		}
	}
	if err := os.Remove(of); err != nil && !errors.Is(err, os.ErrNotExist) {
		return cnierr.IO("remove", of, err)
	}
	return nil
}

// validTenantName: hex, as TenantName writes it, and never _addr or _tok.
func validTenantName(name string) bool {
	_, err := hex.DecodeString(name)
	return name != "" && err == nil && len(name) <= 2*pool.MaxTenantLen
}

// TenantRecord is one tenant's address record, judged.
type TenantRecord struct {
	Tenant string // decoded
	Addr   netip.Addr
	// Stale says why the record counts an address the tenant does not
	// have ("" when it is the tenant's).
	Stale string
	Path  string
}

// tenantRecords reads every record, judged against the reserved
// addresses (sorted) and the address records.
func (d stateDir) tenantRecords(reservedAddrs []netip.Addr) ([]TenantRecord, error) {
	dirs, err := readDir(d.tenantsDir(), d.uid)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, readError(d.tenantsDir(), err)
	}
	reserved := func(ip netip.Addr) bool {
		_, ok := slices.BinarySearchFunc(reservedAddrs, ip, netip.Addr.Compare)
		return ok
	}
	var out []TenantRecord
	for _, de := range dirs {
		name := de.Name()
		if name == tenantAddrName || name == tenantTokenName || !validTenantName(name) {
			continue
		}
		raw, _ := hex.DecodeString(name)
		ents, err := readDir(d.tenantDir(name), d.uid)
		if err != nil {
			return out, readError(d.tenantDir(name), err)
		}
		for _, e := range ents {
			ip, err := netip.ParseAddr(e.Name())
			r := TenantRecord{Tenant: string(raw), Addr: ip, Path: filepath.Join(d.tenantDir(name), e.Name())}
			switch {
			case err != nil:
				r.Stale = "names no address"
			case !reserved(ip):
				r.Stale = "its address is not reserved"
			default:
				if b, err := readSmall(d.tenantOfPath(ip)); err != nil || string(b) != name {
					r.Stale = "its address is another tenant's"
				}
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// RepairTenants removes the records that count an address their tenant
// does not have (a process killed between a record and its reservation),
// under d's lock: what GC and fsck --repair do. It returns what it did.
func (d *Disk) RepairTenants() ([]string, error) {
	if _, err := os.Lstat(d.tenantsDir()); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	addrs, err := ReservedAddrs(d.dir)
	if err != nil {
		return nil, err
	}
	recs, err := d.tenantRecords(addrs)
	var done []string
	for _, r := range recs {
		if r.Stale == "" {
			continue
		}
		if err := os.Remove(r.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return done, cnierr.IO("remove", r.Path, err)
		}
		done = append(done, "removed "+r.Path+" ("+r.Stale+")")
	}
	return done, err
}

// ReadTenants maps the addresses of dir that a tenant has (its records
// that count, judged against the reserved addresses, sorted) to the
// tenant, without the lock: what `leases` and `pools` show.
func ReadTenants(dir string, reserved []netip.Addr) (map[netip.Addr]string, error) {
	recs, err := newStateDir(dir).tenantRecords(reserved)
	out := map[netip.Addr]string{}
	for _, r := range recs {
		if r.Stale == "" {
			out[r.Addr] = r.Tenant
		}
	}
	return out, err
}

// Addrs is the addresses of rs, in order.
func Addrs(rs []Reservation) []netip.Addr {
	out := make([]netip.Addr, len(rs))
	for i, r := range rs {
		out[i] = r.Addr
	}
	return out
}
