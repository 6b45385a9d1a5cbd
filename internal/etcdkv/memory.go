package etcdkv

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// avoidFor is how long a member that did not answer stays at the end of
// the order: long enough that a stopped member costs a burst of ADDs one
// per-try timeout in all, short enough that a recovered one soon takes
// its share again. A member that answered with a failure of its own (no
// leader during an election, a dropped proposal) is avoided for less,
// avoidRefusedFor, and tried before one that did not answer: it costs
// the next command a round trip, not a per-try timeout.
const (
	avoidFor        = 30 * time.Second
	avoidRefusedFor = 5 * time.Second
)

// memory is what a Client keeps between execs, in one small file per
// cluster and user: the members that failed lately and the auth token. How keys a caller asked it to remember
// were seen (Remember) is in files of their own (revMemory, seen.go). It is a hint only: a missing, unreadable
// or stale file costs a retry, never a wrong answer. Every change is a
// read-modify-write of the file under a lock (update), so that concurrent
// execs add to what each other learnt: a member one of them found stopped
// is not forgotten because another saved its own view meanwhile.
type memory struct {
	Avoid map[string]time.Time `json:"avoid,omitempty"` // endpoint → until
	Token string               `json:"token,omitempty"`
	path  string
}

// loadMemory reads the file for cfg's cluster and user, if any. Its name
// is a hash of them: the password takes part, so that a changed password
// does not meet an old token.
func loadMemory(cfg Config) *memory {
	m := &memory{}
	if cfg.StateDir == "" {
		return m
	}
	h := sha256.New()
	for _, s := range append([]string{cfg.Username, cfg.Password}, cfg.Endpoints...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	m.path = filepath.Join(cfg.StateDir, hex.EncodeToString(h.Sum(nil)[:12])+".json")
	if b, err := os.ReadFile(m.path); err == nil {
		_ = json.Unmarshal(b, m)
	}
	return m
}

// order is the endpoints from first on, those avoided until after now
// moved to the end, the one avoided longest (the worst failure, or the
// latest) last.
func (m *memory) order(eps []string, first int, now time.Time) []string {
	var fresh, stale []string
	for i := range eps {
		ep := eps[(first+i)%len(eps)]
		if now.Before(m.Avoid[ep]) {
			stale = append(stale, ep)
		} else {
			fresh = append(fresh, ep)
		}
	}
	slices.SortStableFunc(stale, func(a, b string) int { return m.Avoid[a].Compare(m.Avoid[b]) })
	return append(fresh, stale...)
}

// avoid notes a failure of ep, to be avoided for d; a longer avoidance
// noted already stays.
func (m *memory) avoid(ep string, now time.Time, d time.Duration) {
	until := now.Add(d).Truncate(time.Second)
	m.update(func(m *memory) {
		if m.Avoid == nil {
			m.Avoid = map[string]time.Time{}
		}
		maps.DeleteFunc(m.Avoid, func(_ string, u time.Time) bool { return now.After(u) })
		if until.After(m.Avoid[ep]) {
			m.Avoid[ep] = until
		}
	})
}

// update applies change to this exec's memory and to the file's current
// contents, which it then writes whole (rename), readable by root alone:
// it holds a token. An exclusive lock on one file in the directory (for
// every cluster's files: updates are rare and short) orders concurrent
// updates, so that what one exec learnt is not lost to another saving its
// own view; without it (any failure) the change is this exec's alone.
func (m *memory) update(change func(*memory)) {
	change(m)
	if m.path == "" {
		return
	}
	dir := filepath.Dir(m.path)
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return
	}
	defer lock.Close() // and so unlocked
	if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX) != nil {
		return
	}
	disk := &memory{}
	if old, err := os.ReadFile(m.path); err == nil {
		_ = json.Unmarshal(old, disk)
	}
	change(disk)
	b, _ := json.Marshal(disk)
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr != nil || cerr != nil || os.Rename(f.Name(), m.path) != nil {
		_ = os.Remove(f.Name())
	}
}
