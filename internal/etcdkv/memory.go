package etcdkv

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"time"
)

// avoidFor is how long a member that failed stays at the end of the
// order: long enough that a stopped member costs a burst of ADDs one
// per-try timeout in all, short enough that a recovered one soon takes
// its share again.
const avoidFor = 30 * time.Second

// memory is what a Client keeps between execs, in one small file per
// cluster and user: the members that failed lately and the auth token.
// It is a hint only: a missing, unreadable or stale file costs a retry,
// never a wrong answer, so concurrent execs may overwrite each other.
type memory struct {
	Avoid map[string]time.Time `json:"avoid,omitempty"` // endpoint → until
	Token string               `json:"token,omitempty"`

	path string
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
// moved to the end (in their own order).
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
	return append(fresh, stale...)
}

// clone is a copy that saves nowhere: a forked client's failures are
// its own.
func (m *memory) clone() *memory {
	return &memory{Avoid: maps.Clone(m.Avoid), Token: m.Token}
}

// avoid notes a failure of ep and saves the file.
func (m *memory) avoid(ep string, now time.Time) {
	if m.Avoid == nil {
		m.Avoid = map[string]time.Time{}
	}
	for k, until := range m.Avoid {
		if now.After(until) {
			delete(m.Avoid, k)
		}
	}
	m.Avoid[ep] = now.Add(avoidFor).Truncate(time.Second)
	m.save()
}

// save writes the file whole (rename), readable by root alone: it holds
// a token.
func (m *memory) save() {
	if m.path == "" {
		return
	}
	b, _ := json.Marshal(m)
	dir := filepath.Dir(m.path)
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr != nil || cerr != nil || os.Rename(f.Name(), m.path) != nil {
		_ = os.Remove(f.Name())
	}
}
