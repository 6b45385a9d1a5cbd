package pool

import (
	"bytes"
	"encoding/json"

	"github.com/cniplugins/cniplugins/internal/netconf"
)

// ParseRefs is ParseList for arrays that may also name a pool by a bare
// string: ["db", {"name": "web", "subnet": ...}]. A bare name is the Pool
// object {"name": ...}, whose ranges the allocator's poolDefinitions give.
func ParseRefs(raw json.RawMessage, field string) ([]Pool, error) {
	var elems []json.RawMessage
	if err := netconf.Decode(raw, field, &elems); err != nil || elems == nil {
		return ParseList(raw, field) // names the error (or the missing field)
	}
	for i, e := range elems {
		if t := bytes.TrimSpace(e); len(t) > 0 && t[0] == '"' {
			var name string
			if err := json.Unmarshal(t, &name); err != nil {
				return nil, netconf.Decode(t, field, &name)
			}
			elems[i], _ = json.Marshal(Pool{Name: name})
		}
	}
	objs, _ := json.Marshal(elems)
	return ParseList(objs, field)
}
