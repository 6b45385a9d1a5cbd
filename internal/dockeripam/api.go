package dockeripam

// The bodies of Docker's IPAM plugin API v1, with libnetwork's field
// names (ipams/remote/api). dockerd decodes replies leniently, so every
// reply carries exactly the fields it reads.

// Plugin API names.
const (
	// pluginKind is what Plugin.Activate advertises.
	pluginKind = "IpamDriver"
	// RequestAddressType is the option key of a special address request.
	RequestAddressType = "RequestAddressType"
	// GatewayRequest is the RequestAddressType of a network's gateway.
	GatewayRequest = "com.docker.network.gateway"
	// PoolOption binds a network to a defined pool by name:
	// `--ipam-opt cniplugins.pool=NAME`.
	PoolOption = "cniplugins.pool"
	// LocalSpace and GlobalSpace are the address spaces the driver names.
	LocalSpace  = "cniplugins-local"
	GlobalSpace = "cniplugins-global"
)

// RequestPoolRequest is dockerd's RequestPool body.
type RequestPoolRequest struct {
	AddressSpace string
	Pool         string
	SubPool      string
	Options      map[string]string
	V6           bool
}

// RequestPoolResponse is its reply.
type RequestPoolResponse struct {
	PoolID string
	Pool   string
	Data   map[string]string
}

// ReleasePoolRequest is dockerd's ReleasePool body.
type ReleasePoolRequest struct {
	PoolID string
}

// RequestAddressRequest is dockerd's RequestAddress body.
type RequestAddressRequest struct {
	PoolID  string
	Address string
	Options map[string]string
}

// RequestAddressResponse is its reply: a CIDR with the pool's prefix length.
type RequestAddressResponse struct {
	Address string
	Data    map[string]string
}

// ReleaseAddressRequest is dockerd's ReleaseAddress body: a bare IP.
type ReleaseAddressRequest struct {
	PoolID  string
	Address string
}

// errorResponse is an API-level failure: dockerd reads "Error" from a 200
// reply. (A 200 reply with "Err" would be taken as success.)
type errorResponse struct {
	Error string
}

// protocolError is the body of a non-200 reply, which dockerd reads as
// {"Err": msg}.
type protocolError struct {
	Err string
}
