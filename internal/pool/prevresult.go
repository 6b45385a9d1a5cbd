package pool

import (
	"encoding/json"

	"github.com/cniplugins/cniplugins/internal/netconf"
)

// selectionKeys are the keys a selector adds to prevResult, raw: decoded
// from prevResult once per configuration (netconf.Memo), however many of
// them a command reads.
type selectionKeys struct {
	Pools   json.RawMessage `json:"pools"`
	Quota   json.RawMessage `json:"quota"`
	Choices json.RawMessage `json:"choices"`
}

type selectionKeysKey struct{}

// prevSelection is conf's prevResult's selection keys (all empty without
// a prevResult).
func prevSelection(conf *netconf.Envelope) (selectionKeys, error) {
	return netconf.Memo(conf, selectionKeysKey{}, func(conf *netconf.Envelope) (selectionKeys, error) {
		var keys selectionKeys
		if !conf.HasPrevResult() {
			return keys, nil
		}
		err := netconf.Decode(conf.PrevResult, "prevResult", &keys)
		return keys, err
	})
}

// absent reports a key missing or null.
func absent(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }
