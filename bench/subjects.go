package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/dapools"
)

// What every subject allocates from: one /16, the network's or the pool's.
const (
	network  = "net"
	poolName = "bench"
	subnet   = "10.10.0.0/16"
	ifname   = "eth0"
)

// Subject keys, in table order.
const (
	kStandalone = "standalone"
	kChain      = "chain"
	kHostLocal  = "host-local"
	kFloor      = "floor"
)

// subject is one thing the harness execs: a cniplugins personality, the
// upstream host-local, or the exec floor.
type subject struct {
	key     string
	label   string // column header
	path    string // executable
	cniPath string
	// ipam is the ipam object; "dataDir" is added per state directory.
	ipam map[string]any
	// stateDir is the directory, under a dataDir, that holds the
	// reservations this subject allocates from ("" for the floor).
	stateDir func(dataDir string) string
}

func (s subject) available() bool { return s.path != "" }

// conf is the network configuration for dataDir, as a runtime passes it.
// A non-nil prevResult is added the way runtimes do for DEL.
func (s subject) conf(dataDir string, prevResult json.RawMessage) []byte {
	ipam := map[string]any{"dataDir": dataDir}
	for k, v := range s.ipam {
		ipam[k] = v
	}
	c := map[string]any{"cniVersion": "1.0.0", "name": network, "ipam": ipam}
	if len(prevResult) > 0 {
		c["prevResult"] = prevResult
	}
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // only maps of plain values
	}
	return b
}

func (s subject) call(command, cid, dataDir string, prevResult json.RawMessage) call {
	return call{path: s.path, command: command, cid: cid, ifname: ifname, cniPath: s.cniPath,
		stdin: s.conf(dataDir, prevResult)}
}

func rangesIPAM(typ string) map[string]any {
	return map[string]any{"type": typ, "ranges": [][]map[string]string{{{"subnet": subnet}}}}
}

func networkDir(dataDir string) string { return filepath.Join(dataDir, network) }
func poolDir(dataDir string) string    { return dapools.ScopeDir(dataDir, alloc.Scope{Pool: poolName}) }

// subjects lists, in table order, what the harness measures. host-local's
// path is "" when it is not installed.
func subjects(b *binaries) []subject {
	return []subject{
		{key: kStandalone, label: "ipam-da-pools", path: filepath.Join(b.cniDir, "ipam-da-pools"), cniPath: b.cniDir,
			ipam: rangesIPAM("ipam-da-pools"), stateDir: networkDir},
		{key: kChain, label: "chain", path: filepath.Join(b.cniDir, "ipam-delegated"), cniPath: b.cniDir,
			ipam: map[string]any{"type": "ipam-delegated",
				"delegates": []string{"ipam-ds-static", "ipam-da-pools"},
				"pools":     []map[string]string{{"name": poolName, "subnet": subnet}}},
			stateDir: poolDir},
		{key: kHostLocal, label: "host-local", path: b.hostLocal, cniPath: filepath.Dir(b.hostLocal),
			ipam: rangesIPAM("host-local"), stateDir: networkDir},
		{key: kFloor, label: "exec floor", path: b.floor, cniPath: filepath.Dir(b.floor),
			ipam: rangesIPAM("floor"), stateDir: func(string) string { return "" }},
	}
}

// byKey returns the subject with key k.
func byKey(subs []subject, k string) subject {
	for _, s := range subs {
		if s.key == k {
			return s
		}
	}
	panic(fmt.Sprintf("no subject %q", k))
}

// resultAddresses lists the addresses of an IPAM result, in order.
func resultAddresses(stdout []byte) ([]string, error) {
	var r struct {
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal(stdout, &r); err != nil {
		return nil, fmt.Errorf("result is not JSON: %v: %s", err, stdout)
	}
	out := make([]string, 0, len(r.IPs))
	for _, ip := range r.IPs {
		out = append(out, ip.Address)
	}
	return out, nil
}
