package ops

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
)

// Finding is one thing fsck reports; its JSON form is documented.
type Finding struct {
	Dir      string `json:"dir"` // the state directory's label: network name or pool/<name>
	Severity string `json:"severity"`
	Path     string `json:"path"` // the file concerned
	What     string `json:"finding"`
	// Repair is what --repair does about it ("" when it cannot: a
	// reservation is never deleted); Repaired says it was done.
	Repair   string `json:"repair"`
	Repaired bool   `json:"repaired"`
}

// FsckRequest checks every state directory of DataDir; with Networks
// (from --conf-dir) it also checks reservations and cursors against the
// configured ranges.
type FsckRequest struct {
	DataDir     string
	Networks    []Network
	Repair      bool
	LockTimeout time.Duration
}

const (
	repairRebuild = "rebuild the index"
	repairRemove  = "remove it"
)

// Fsck examines each directory under its lock, one at a time, and with
// Repair fixes it through hostlocal.Repair. It returns every finding.
func Fsck(r FsckRequest) ([]Finding, error) {
	dirs, err := StateDirs(r.DataDir)
	if err != nil {
		return nil, err
	}
	sets := configuredSets(r.Networks)
	out := []Finding{}
	for _, d := range dirs {
		h, err := hostlocal.Examine(d.Dir, r.LockTimeout)
		if err != nil {
			return out, err
		}
		fs, drop := findings(d, h, sets[d.Dir])
		if r.Repair && slices.ContainsFunc(fs, func(f Finding) bool { return f.Repair != "" }) {
			// Repair reads anew under its own lock, so a change made
			// meanwhile by a plugin is repaired too, or left alone.
			if err := hostlocal.Repair(d.Dir, r.LockTimeout, drop); err != nil {
				return out, err
			}
			for i := range fs {
				fs[i].Repaired = fs[i].Repair != ""
			}
		}
		out = append(out, fs...)
	}
	locks, err := tenantLockFindings(r)
	return append(out, locks...), err
}

// tenantLockFindings reports the lock files of tenants no pool counts an
// address for (tenants that came and went), and with Repair removes them
// as GC does (hostlocal.DropIdleTenantLocks); one an ADD holds meanwhile
// stays, unrepaired.
func tenantLockFindings(r FsckRequest) ([]Finding, error) {
	poolsDir := dapools.PoolsDir(r.DataDir)
	locks, err := hostlocal.TenantLocks(poolsDir, os.Geteuid())
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, l := range locks {
		if !l.Counted {
			// The tenants' locks live beside the pools' indexes.
			out = append(out, Finding{Dir: "_pools/_index", Severity: SeverityNote, Path: l.Path,
				What:   fmt.Sprintf("lock file of tenant %q, for which no pool counts an address any more", Printable(l.Tenant)),
				Repair: repairRemove})
		}
	}
	if !r.Repair || len(out) == 0 {
		return out, nil
	}
	_, err = hostlocal.DropIdleTenantLocks(poolsDir, os.Geteuid())
	for i := range out {
		_, serr := os.Lstat(out[i].Path)
		out[i].Repaired = errors.Is(serr, os.ErrNotExist)
	}
	return out, err
}

// Unrepaired counts the problems left.
func Unrepaired(fs []Finding) int {
	n := 0
	for _, f := range fs {
		if f.Severity == SeverityProblem && !f.Repaired {
			n++
		}
	}
	return n
}

// configuredSets maps each state directory to the range sets the
// configuration gives it, by range-set ID (a pool's is 0): pools' rows,
// where a state defined differently takes its first definition. Its
// keys are clean paths, as StateDirs' are (filepath.Join).
func configuredSets(nets []Network) map[string][]addrspace.RangeSet {
	out := map[string][]addrspace.RangeSet{}
	for _, u := range usageRows(nets, false) {
		if len(out[u.Dir]) == u.id {
			out[u.Dir] = append(out[u.Dir], u.set)
		}
	}
	return out
}

// findings turns what Examine saw into findings, and lists the cursors a
// repair should remove.
func findings(d StateScope, h *hostlocal.Health, sets []addrspace.RangeSet) ([]Finding, []int) {
	var out []Finding
	var drop []int
	add := func(sev, path, what, repair string) {
		out = append(out, Finding{Dir: d.Label(), Severity: sev, Path: path, What: what, Repair: repair})
	}
	idx := hostlocal.IndexDir(d.Dir)
	switch h.Index {
	case hostlocal.IndexStale:
		add(SeverityNote, idx, "index is stale: another writer (host-local, a person) changed the directory; the next operation rebuilds it", repairRebuild)
	case hostlocal.IndexUntrusted:
		add(SeverityNote, idx, "the file system cannot keep the index's stamp; every operation scans the directory", "")
	}
	for _, p := range h.IndexProblems {
		add(SeverityProblem, idx, p, repairRebuild)
	}
	for _, p := range h.Stale {
		add(SeverityProblem, p, "stale scratch file left by an interrupted operation", repairRemove)
	}
	for _, p := range h.Unknown {
		add(SeverityNote, p, "not a reservation, cursor or lock file; left alone", "")
	}
	for _, r := range h.Reservations {
		path := filepath.Join(d.Dir, r.Addr.String())
		switch {
		case r.Problem != "":
			add(SeverityProblem, path, "reservation file "+r.Problem+"; inspect it and use `cniplugins release` if it is a leak", "")
		case sets != nil && !slices.ContainsFunc(sets, func(rs addrspace.RangeSet) bool { return rs.Contains(r.Addr) }):
			add(SeverityProblem, path, "reservation "+leaseOf(d.Scope, r, nil).Describe()+" is outside every configured range", "")
		}
	}
	now := time.Now()
	for _, e := range h.Holds {
		path := filepath.Join(d.Dir, "_sticky", e.ID+".json")
		record := "sticky hold record of key " + Printable(fmt.Sprintf("%q", e.Key)) + " "
		r := alloc.RepairOf(e, now)
		switch r.Fix {
		case alloc.RemoveRecord:
			add(SeverityProblem, path, record+"holds nothing: "+e.Stale, repairRemove)
		case alloc.EndExpired:
			add(SeverityNote, path, fmt.Sprintf("sticky hold of %s for key %q expired at %s; GC frees it", e.Address, e.Key, e.Expires.Format(time.RFC3339)), "free it, as GC would")
		case alloc.DropBadSecond:
			add(SeverityProblem, path, record+e.SecondProblem(), "drop the migration target; the owner keeps the address")
		}
		if r.Settle != "" {
			add(SeverityProblem, path, record+Printable(r.Settle), "finish it, as the DEL of the container it names would")
		}
	}
	for _, r := range h.Tenants {
		switch stale := r.Stale(); {
		case stale == "":
		case r.Tenant == "":
			add(SeverityProblem, r.Path, "not a tenant record this version keeps ("+stale+")", repairRemove)
		default:
			add(SeverityProblem, r.Path, fmt.Sprintf("tenant %q's record of %s counts an address it does not have (%s): a process killed mid-ADD or mid-DEL that no operation has followed yet; it over-counts the quota", Printable(r.Tenant), r.Addr, stale), repairRemove)
		}
	}
	for _, p := range h.UnusedTokens {
		add(SeverityNote, p, "a tenant's token that no address record links: a tenant that holds nothing here any more", repairRemove)
	}
	for _, ip := range h.Orphans {
		add(SeverityProblem, filepath.Join(d.Dir, ip.String()), "held for a sticky key, but no hold record names it: it can never be handed out", "free it")
	}
	for _, c := range h.Cursors {
		var what string
		switch {
		case !c.Addr.IsValid():
			what = fmt.Sprintf("cursor does not hold an address: %q", trimmed(string(c.Raw)))
		case sets == nil:
			continue
		case c.RangeID >= len(sets):
			what = fmt.Sprintf("cursor of range set %d, which the configuration does not have", c.RangeID)
		case !sets[c.RangeID].Contains(c.Addr):
			what = fmt.Sprintf("cursor %s is outside range set %d (%s)", c.Addr, c.RangeID, sets[c.RangeID])
		default:
			continue
		}
		add(SeverityProblem, filepath.Join(d.Dir, fmt.Sprintf("last_reserved_ip.%d", c.RangeID)), what, repairRemove)
		drop = append(drop, c.RangeID)
	}
	return out, drop
}
