package netconf

// memoEntry is one memoised parse: its value and its error.
type memoEntry struct {
	v   any
	err error
}

// Memo is parse(e), computed once per key for e: a personality parses its
// configuration to learn its CNI_ARGS keys (Personality.ArgKeys) and again
// in its command, and on a large config that second parse is most of the
// command's cost. key is a value of a type of the caller's own, so no two
// packages share an entry; the value must not be modified by its users.
func Memo[T any](e *Envelope, key any, parse func(*Envelope) (T, error)) (T, error) {
	if m, ok := e.memo[key]; ok {
		v, _ := m.v.(T)
		return v, m.err
	}
	v, err := parse(e)
	if e.memo == nil {
		e.memo = map[any]memoEntry{}
	}
	e.memo[key] = memoEntry{v: v, err: err}
	return v, err
}
