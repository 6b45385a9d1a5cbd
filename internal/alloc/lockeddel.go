package alloc

import (
	"errors"
	"net/netip"
	"time"

	"github.com/cniplugins/cniplugins/internal/logging"
)

// LockedDel is the DEL of attachment a (with its sticky key, nil when
// unknown) over pools a store locked for it (the disk store): every
// scope c covers, which needs no ranges (they may have changed since the
// ADD). In each, the holds first (HoldOnDel), then a's reservations
// (Release, hints first); a scope whose holds failed releases nothing,
// since that would free what the key holds. a's spill records go last,
// from the heads of c's chains (ForgetSpills).
func (c *Config) LockedDel(st Locked, a Attachment, keyed *Keyed, hints []netip.Addr, now time.Time, log *logging.Logger) error {
	var key string
	if keyed != nil {
		key = keyed.Key
	}
	var errs []error
	for _, s := range c.Scopes() {
		held, err := HoldOnDel(st.Pool(s), a, key, now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(held) > 0 {
			log.Debug("held for the sticky key", logging.Any("scope", s), logging.Any("addresses", held))
		}
		released, err := Release(st.Pool(s), a, hints)
		errs = append(errs, err)
		log.Debug("released", logging.Any("scope", s), logging.Any("addresses", released))
	}
	var heads []SpillRecorder
	for _, p := range c.Pools {
		if len(p.OverflowPools) > 0 {
			heads = append(heads, st.Pool(Scope{Pool: p.Name}))
		}
	}
	return ForgetSpills(heads, a, errors.Join(errs...))
}
