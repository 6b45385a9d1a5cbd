package ops

import "time"

// Remote is a store of reservations shared by many hosts, on which
// leases, release and gc act instead of a local data dir (--etcd). The
// lean flavour has none: the interface is all that it links, and the full
// flavour's main supplies the etcd one (cli.Flavour.Etcd), so the etcd
// client and net/http stay out of the lean binary.
//
// The requests are the local commands' own; a Remote reads their Node
// fields and ignores DataDir and LockTimeout. It returns Leases with
// Node set (and Owner "cni", or OwnerMarker), so that one printer serves
// both backends.
type Remote interface {
	Leases(LeaseFilter) ([]Lease, error)
	Release(ReleaseRequest) (Lease, error)
	GC(GCRequest) ([]Lease, error)
}

// EtcdConfig is how to reach etcd, as ipam.etcd says it (the flags of
// leases, release and gc next to --etcd).
type EtcdConfig struct {
	Endpoints    []string
	Prefix       string
	Timeout      time.Duration
	CAFile       string
	CertFile     string
	KeyFile      string
	Username     string
	PasswordFile string
}

// OwnerMarker is the owner kind of the marker an ADD writes in a Remote
// before it claims: left behind by an ADD that failed (until its DEL) or
// still running; its Address is "".
const OwnerMarker = "marker"
