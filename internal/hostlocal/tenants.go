package hostlocal

import (
	"encoding/hex"
	"errors"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// Tenants (quotas): the layout, the count by link count and the crash
// order are docs/tenancy.md's ("How ipam-da-pools counts"). A record is
// written before its reservation, once D's mtime has left the index
// stamp, and removed after it, so a crash leaves at most a record of an
// address that is not reserved, which the next Open's rebuild removes
// (rescan). A sticky hold keeps its record: holds count.
const (
	tenantsDirName  = "_tenants"
	tenantAddrName  = "_addr"
	tenantTokenName = "_tok"
)

var _ alloc.TenantStore = (*Disk)(nil)

func (d stateDir) tenantsDir() string              { return child(d.dir, tenantsDirName) }
func (d stateDir) recordsDir() string              { return child(d.tenantsDir(), tenantAddrName) }
func (d stateDir) tokensDir() string               { return child(d.tenantsDir(), tenantTokenName) }
func (d stateDir) recordPath(ip netip.Addr) string { return child(d.recordsDir(), ip.String()) }

// tokenPath is the tenant's k-th token (name in hex).
func (d stateDir) tokenPath(name string, k int) string {
	if k == 0 {
		return child(d.tokensDir(), name)
	}
	return child(d.tokensDir(), name+"."+strconv.Itoa(k))
}

// ForTenant implements alloc.TenantStore ("" none: TenantName keeps it "").
func (d *Disk) ForTenant(tenant string) { d.tenant = pool.TenantName(tenant) }

// TenantAddrs implements alloc.TenantStore: the link counts of the
// tenant's tokens, one lstat(2) each (and one that finds no next token).
func (d *Disk) TenantAddrs(tenant string) (int, error) {
	if ok, err := d.subdir(d.tenantsDir()); err != nil || !ok {
		return 0, err
	}
	_, n, err := d.tokenChain(pool.TenantName(tenant))
	return n, err
}

// TenantAddrsUnlocked is TenantAddrs of state directory dir without its
// lock, for an ADD that holds the tenant's (LockTenant) and not dir's.
// Nothing else adds to the count meanwhile; it may be too high, never too
// low (alloc.PartialCount). The Disk is never opened: it only reads.
func TenantAddrsUnlocked(dir, tenant string, uid int) (int, error) {
	d := &Disk{stateDir: stateDir{dir: dir, uid: uid}, subs: map[string]bool{}}
	return d.TenantAddrs(tenant)
}

// tokenChain is how many records link each of the tenant's (hex name)
// tokens, up to the first missing one (one lstat(2) each), and their sum.
func (d stateDir) tokenChain(name string) (recs []int, n int, err error) {
	for k := 0; ; k++ {
		path := d.tokenPath(name, k)
		fi, err := os.Lstat(path)
		if errors.Is(err, os.ErrNotExist) {
			return recs, n, nil
		}
		if _, ok := inode(fi, err); err == nil && !ok {
			err = errNotRegular
		}
		if err != nil {
			return nil, 0, cnierr.IO("stat", path, err)
		}
		recs = append(recs, int(nlink(fi))-1)
		n += recs[k]
	}
}

// tag records free address ip as d.tenant's, before its reservation.
func (d *Disk) tag(ip netip.Addr) error {
	if err := d.makeSubdir(d.tenantsDir()); err != nil {
		return err
	}
	// A crash from here on must leave the index stale (see above).
	if !d.dirMoved {
		d.dirty = true
		if err := os.Chtimes(d.dir, time.Time{}, time.Now()); err != nil {
			return cnierr.IO("touch", d.dir, err)
		}
		d.dirMoved = true
	}
	rec := d.recordPath(ip)
	cleared := false
	for k := 0; ; {
		token := d.tokenPath(d.tenant, k)
		err := d.linkToken(token, rec)
		if errors.Is(err, os.ErrNotExist) {
			if err := d.makeToken(token); err != nil {
				return err
			}
			err = d.linkToken(token, rec)
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, os.ErrExist) && !cleared:
			// A crash's leftover for this free address goes first.
			if err := removeIfAny(rec); err != nil {
				return err
			}
			cleared = true
		case errors.Is(err, syscall.EMLINK) && k < maxTokens:
			k++
		default:
			return cnierr.IO("link", rec, err)
		}
	}
}

// maxTokens bounds a tenant's chain of tokens: on ext4 that is 65 million
// addresses; a file system that refuses even a token's second link ends
// the ADD with its EMLINK here rather than growing the chain for ever.
const maxTokens = 1000

// makeToken makes token, and the directories of tokens and records,
// where missing: the first record of a tenant, or past a token's limit.
func (d *Disk) makeToken(token string) error {
	if err := ensureChecked(nil, d.uid, dirSpec{d.tokensDir(), modePrivateDir}, dirSpec{d.recordsDir(), modePrivateDir}); err != nil {
		return err
	}
	if _, err := os.Lstat(token); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return overwrite(token, d.tenant, modePrivate)
}

// untag forgets ip's tenant, once its reservation is gone (or never was).
// A record it fails to remove would count: d's index is then never
// written, so the next Open finds it stale and its rescan removes it.
func (d *Disk) untag(ip netip.Addr) error {
	ok, err := d.subdir(d.tenantsDir())
	if err == nil && ok {
		err = removeIfAny(d.recordPath(ip))
	}
	d.untrusted = d.untrusted || err != nil
	return err
}

// tenantOf is the tenant a name TenantName wrote is for (never _addr or
// _tok: not hex).
func tenantOf(name string) (string, bool) {
	raw, err := hex.DecodeString(name)
	return string(raw), name != "" && err == nil && len(name) <= 2*pool.MaxTenantLen
}

// tokenName is the tenant (hex, and decoded) a token's file name is for.
func tokenName(file string) (name, tenant string, ok bool) {
	name, k, cont := strings.Cut(file, ".")
	if cont {
		if n, err := strconv.Atoi(k); err != nil || n < 1 || strconv.Itoa(n) != k {
			return "", "", false
		}
	}
	tenant, ok = tenantOf(name)
	return name, tenant, ok
}

// TenantRecord is one of D's tenant records, as the engine judges it
// (alloc.TenantRecord.Stale).
type TenantRecord struct {
	alloc.TenantRecord
	Path string
}

// tenantRecords reads every record, reserved (sorted) being the addresses
// reserved (a held address keeps its file).
func (d stateDir) tenantRecords(reserved []netip.Addr) ([]TenantRecord, error) {
	top, err := readDirIfAny(d.tenantsDir(), d.uid)
	if err != nil {
		return nil, err
	}
	var out []TenantRecord
	for _, de := range top {
		if name := de.Name(); name != tenantAddrName && name != tenantTokenName {
			// An earlier layout linked each address to the token twice.
			out = append(out, TenantRecord{alloc.TenantRecord{Foreign: "not part of the tenant records' layout: it inflates the counts"}, child(d.tenantsDir(), name)})
		}
	}
	// A record is a link of its tenant's token: the inodes tell whose.
	toks, err := readDirIfAny(d.tokensDir(), d.uid)
	if err != nil {
		return out, err
	}
	byInode := make(map[uint64]string, len(toks))
	for _, t := range toks {
		_, tenant, named := tokenName(t.Name())
		if ino, ok := inode(t.Info()); ok && named {
			byInode[ino] = tenant
		}
	}
	recs, err := readDirIfAny(d.recordsDir(), d.uid)
	if err != nil {
		return out, err
	}
	for _, e := range recs {
		r := TenantRecord{Path: child(d.recordsDir(), e.Name())}
		r.Addr, _ = netip.ParseAddr(e.Name())
		_, r.Reserved = slices.BinarySearchFunc(reserved, r.Addr, netip.Addr.Compare)
		if ino, ok := inode(e.Info()); ok {
			r.Tenant = byInode[ino]
		}
		out = append(out, r)
	}
	return out, nil
}

// RepairTenants removes what counts an address its tenant does not have
// (a process killed between a record and its reservation, a layout's
// leftovers) and the tokens no address needs, under d's lock: what GC,
// fsck --repair and a rebuild (rescan) do. It returns what it did.
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
		stale := r.Stale()
		if stale == "" {
			continue
		}
		if rerr := os.RemoveAll(r.Path); rerr != nil {
			return done, errors.Join(err, cnierr.IO("remove", r.Path, rerr))
		}
		done = append(done, "removed "+r.Path+" ("+stale+")")
	}
	if err != nil {
		return done, err
	}
	// Then the tokens no record links any more, each chain's last first.
	unused, err := d.unusedTokens()
	for _, p := range unused {
		if err := os.Remove(p); err != nil {
			return done, cnierr.IO("remove", p, err)
		}
		done = append(done, "removed "+p+" (no address of its tenant is left)")
	}
	return done, err
}

// unusedTokens lists each tenant's last tokens that no record links, from
// the end of its chain only (a count reads a chain until the first
// missing token), each chain's last first.
func (d stateDir) unusedTokens() ([]string, error) {
	toks, err := readDirIfAny(d.tokensDir(), d.uid)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range toks {
		name, _, ok := tokenName(t.Name())
		if !ok || t.Name() != name {
			continue // each chain once, from its first token
		}
		chain, _, err := d.tokenChain(name)
		if err != nil {
			return out, err
		}
		for k := len(chain) - 1; k >= 0 && chain[k] == 0; k-- {
			out = append(out, d.tokenPath(name, k))
		}
	}
	return out, nil
}

// ReadTenants maps the addresses of dir that a tenant has (its records
// that count, judged against the reserved addresses, sorted) to the
// tenant, without the lock: what `leases` and `pools` show.
func ReadTenants(dir string, reserved []netip.Addr) (map[netip.Addr]string, error) {
	recs, err := newStateDir(dir).tenantRecords(reserved)
	out := map[netip.Addr]string{}
	for _, r := range recs {
		if r.Stale() == "" {
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
