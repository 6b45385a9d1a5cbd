package alloc

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// NewResult is an ADD result with the configuration's routes and DNS and
// no addresses yet. It reads resolvConf, so an ADD calls it before taking
// any address: a bad file then costs nothing to undo.
func (c *Config) NewResult() (*current.Result, error) {
	dns, err := readResolvConf(c.ResolvConf)
	if err != nil {
		return nil, err
	}
	return &current.Result{CNIVersion: current.ImplementedSpecVersion, Routes: c.Routes, DNS: dns}, nil
}

// IPConfig is one address of a result, with its range's gateway if any.
func IPConfig(addr netip.Prefix, gw netip.Addr) *current.IPConfig {
	ipc := &current.IPConfig{Address: net.IPNet{
		IP:   net.IP(addr.Addr().AsSlice()),
		Mask: net.CIDRMask(addr.Bits(), addr.Addr().BitLen()),
	}}
	if gw.IsValid() {
		ipc.Gateway = net.IP(gw.AsSlice())
	}
	return ipc
}

// maxResolvConf bounds what is read: a resolv.conf is a few hundred bytes,
// and a hostile path (/dev/zero) must not stall the plugin.
const maxResolvConf = 64 << 10

// readResolvConf turns a resolv.conf into the result's DNS, as host-local
// does: nameserver, domain, search and options lines.
func readResolvConf(path string) (types.DNS, error) {
	var dns types.DNS
	if path == "" {
		return dns, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return dns, cnierr.InvalidConfig("ipam.resolvConf", path, "cannot be read: "+err.Error())
	}
	if !fi.Mode().IsRegular() {
		return dns, cnierr.InvalidConfig("ipam.resolvConf", path, "not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return dns, cnierr.InvalidConfig("ipam.resolvConf", path, "cannot be read: "+err.Error())
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxResolvConf+1))
	if err != nil {
		return dns, cnierr.IO("read", path, err)
	}
	if len(data) > maxResolvConf {
		return dns, cnierr.InvalidConfig("ipam.resolvConf", path, "larger than 64 KiB")
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") || strings.HasPrefix(fields[0], ";") {
			continue
		}
		switch fields[0] {
		case "nameserver":
			dns.Nameservers = append(dns.Nameservers, fields[1])
		case "domain":
			dns.Domain = fields[1]
		case "search":
			dns.Search = append(dns.Search, fields[1:]...)
		case "options":
			dns.Options = append(dns.Options, fields[1:]...)
		}
	}
	return dns, nil
}
