package etcdstore

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/utils"

	"github.com/cniplugins/cniplugins/internal/clusteraccess"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

const (
	// DefaultTimeout bounds one CNI command's work against etcd.
	DefaultTimeout = 5 * time.Second
	maxEndpoints   = 16
	maxNodeName    = 253 // a DNS name
)

// etcdConf is ipam.etcd as it appears in JSON and, validated, as the store
// uses it.
type etcdConf struct {
	Endpoints    []string        `json:"endpoints"`
	Prefix       string          `json:"prefix"`
	NodeName     string          `json:"nodeName"`
	Timeout      string          `json:"timeout"`
	TLS          *tlsFiles       `json:"tls"`
	Username     string          `json:"username"`
	PasswordFile string          `json:"passwordFile"`
	Password     json.RawMessage `json:"password"` // refused: never inline
	// AllowPasswordOverHTTP is the operator's explicit consent to send
	// username and password to a non-loopback http:// endpoint in clear.
	AllowPasswordOverHTTP bool `json:"allowPasswordOverHTTP"`
	// MachineIDFile names the file holding this machine's unique ID
	// (node.go); the default is systemd's /etc/machine-id.
	MachineIDFile string        `json:"machineIDFile"`
	timeout       time.Duration // Timeout, validated
}

type tlsFiles struct {
	CAFile   string `json:"caFile"`
	CertFile string `json:"certFile"`
	KeyFile  string `json:"keyFile"`
}

// parseEtcd validates ipam.etcd. resolveNode fills the default node name
// from the host name; CheckConfig passes false, touching nothing of the host.
func parseEtcd(conf *netconf.Envelope, resolveNode bool) (*etcdConf, error) {
	var ipam struct {
		Etcd *etcdConf `json:"etcd"`
	}
	if err := conf.DecodeIPAM(&ipam); err != nil {
		return nil, err
	}
	e := ipam.Etcd
	if e == nil {
		return nil, cnierr.MissingConfig("ipam.etcd")
	}
	return e.validate(resolveNode)
}

// CheckConfig validates ipam.etcd without resolving the node name: the
// personality's VALIDATE, which must not depend on the host.
func CheckConfig(conf *netconf.Envelope) error {
	_, err := parseEtcd(conf, false)
	return err
}

// validate is e validated, its endpoints, prefix and node name in the
// form the store uses.
func (e *etcdConf) validate(resolveNode bool) (*etcdConf, error) {
	c := *e
	eps, plain, err := parseEndpoints(e.Endpoints)
	if err != nil {
		return nil, err
	}
	c.Endpoints = eps
	// Keys are built by appending to the prefix, so it must be an absolute
	// key path; clusteraccess.Prefix adds a missing final '/'.
	if p := e.Prefix; p != "" && (!strings.HasPrefix(p, "/") || len(p) > 256 || strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f })) {
		return nil, cnierr.InvalidConfig("ipam.etcd.prefix", p, "must be a key path starting with '/', printable, at most 256 bytes")
	}
	c.Prefix = clusteraccess.Prefix(e.Prefix)
	if c.NodeName == "" && resolveNode {
		if c.NodeName, err = os.Hostname(); err != nil {
			return nil, cnierr.New(cnierr.CodeInvalidConfig, "no ipam.etcd.nodeName and the host name is unknown", "%v", err)
		}
	}
	if c.NodeName != "" {
		if err := ValidNodeName("ipam.etcd.nodeName", c.NodeName); err != nil {
			return nil, err
		}
	}
	c.timeout = DefaultTimeout
	if e.Timeout != "" {
		if c.timeout, err = time.ParseDuration(e.Timeout); err != nil || c.timeout < 100*time.Millisecond || c.timeout > 5*time.Minute {
			return nil, cnierr.InvalidConfig("ipam.etcd.timeout", e.Timeout, "must be a duration between 100ms and 5m, like \"5s\"")
		}
	}
	if e.TLS != nil && (e.TLS.CertFile == "") != (e.TLS.KeyFile == "") {
		return nil, cnierr.InvalidConfig("ipam.etcd.tls", fmt.Sprintf("certFile=%q keyFile=%q", e.TLS.CertFile, e.TLS.KeyFile), "certFile and keyFile go together")
	}
	if e.MachineIDFile != "" && !filepath.IsAbs(e.MachineIDFile) {
		return nil, cnierr.InvalidConfig("ipam.etcd.machineIDFile", e.MachineIDFile, "must be an absolute path")
	}
	if len(e.Password) > 0 {
		return nil, cnierr.InvalidConfig("ipam.etcd.password", "(hidden)", "never inline a password: put it in a file and name it in passwordFile")
	}
	if (e.Username == "") != (e.PasswordFile == "") {
		return nil, cnierr.InvalidConfig("ipam.etcd.username", e.Username, "username and passwordFile go together")
	}
	// etcd's Authenticate call carries the password as it is, so over
	// http:// anyone on the path reads it. A loopback endpoint never
	// leaves the machine; anything else needs https:// or the operator's
	// allowPasswordOverHTTP.
	if e.Username != "" && !e.AllowPasswordOverHTTP && plain != "" {
		return nil, cnierr.InvalidConfig("ipam.etcd.allowPasswordOverHTTP", plain,
			"username and passwordFile over an http:// endpoint would send the password in clear: use https:// or set allowPasswordOverHTTP to true")
	}
	return &c, nil
}

// parseEndpoints is eps as scheme://host, and the first that is plain
// http:// to another machine.
func parseEndpoints(eps []string) (out []string, plain string, err error) {
	const field = "ipam.etcd.endpoints"
	if len(eps) == 0 {
		return nil, "", cnierr.MissingConfig(field)
	}
	if len(eps) > maxEndpoints {
		return nil, "", cnierr.InvalidConfig(field, len(eps), fmt.Sprintf("at most %d endpoints", maxEndpoints))
	}
	out = make([]string, len(eps))
	for i, s := range eps {
		f := fmt.Sprintf("%s[%d]", field, i)
		u, err := url.Parse(s)
		switch {
		case err != nil:
			return nil, "", cnierr.InvalidConfig(f, s, "not a URL")
		case u.Scheme != "http" && u.Scheme != "https":
			return nil, "", cnierr.InvalidConfig(f, s, "must be an http:// or https:// URL")
		case u.Host == "" || u.Hostname() == "":
			return nil, "", cnierr.InvalidConfig(f, s, "has no host")
		case u.User != nil:
			return nil, "", cnierr.InvalidConfig(f, s, "must not carry credentials: use username and passwordFile")
		case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
			return nil, "", cnierr.InvalidConfig(f, s, "must be scheme://host:port only")
		}
		out[i] = u.Scheme + "://" + u.Host
		ip, err := netip.ParseAddr(u.Hostname())
		if loopback := u.Hostname() == "localhost" || (err == nil && ip.Unmap().IsLoopback()); u.Scheme == "http" && !loopback && plain == "" {
			plain = out[i]
		}
	}
	return out, plain, nil
}

// ValidNodeName: a node name is a key segment, so it must not hold '/'
// (or anything else than a host name's characters).
func ValidNodeName(field, name string) error {
	if name == "" {
		return cnierr.MissingConfig(field)
	}
	if len(name) > maxNodeName {
		return cnierr.InvalidConfig(field, name[:16]+"...", fmt.Sprintf("longer than %d characters", maxNodeName))
	}
	if utils.ValidateNetworkName(name) != nil { // the same character set as network names
		return cnierr.InvalidConfig(field, name, "must match [A-Za-z0-9][A-Za-z0-9_.-]*")
	}
	return nil
}
