package etcdkv

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Errors the caller acts on; each is wrapped with a CNI error that says
// what happened.
var (
	// ErrUnreachable: no member could be reached at all (code 11).
	ErrUnreachable = errors.New("etcd unreachable")
	// ErrNoQuorum: members answered but could not serve in time (code 11;
	// STATUS reports it as 50).
	ErrNoQuorum = errors.New("etcd has no quorum")
	// ErrOutcomeUnknown: a TxnOnce write may have been applied, or may
	// still be (code 11).
	ErrOutcomeUnknown = errors.New("etcd write outcome unknown")
	// errTooLarge: the gateway refused an answer as too large (List then
	// asks for smaller pages).
	errTooLarge = errors.New("etcd message too large")
)

// gRPC status codes the gateway reports.
const (
	grpcUnknown            = 2
	grpcDeadlineExceeded   = 4
	grpcPermissionDenied   = 7
	grpcResourceExhausted  = 8
	grpcFailedPrecondition = 9
	grpcAborted            = 10
	grpcUnavailable        = 14
	grpcUnauthenticated    = 16
)

// errorKind is what a member's refusal means for the request.
type errorKind int

const (
	refused     errorKind = iota // a definite answer: it will not succeed elsewhere
	notProposed                  // refused before proposing it: not applied, try the next member
	mayCommit                    // could not finish in time: it may still be applied
	staleToken                   // the token expired or predates an auth change: get a new one
	badCredentials
	noSpace
	tooLarge
	notGateway
)

// classify reads a non-200 answer, by etcd's error texts first: the gRPC
// code alone does not tell a dropped proposal from any other failure; msg
// is the answer's text.
func classify(status int, data []byte) (kind errorKind, msg string) {
	var ge wireError
	_ = json.Unmarshal(data, &ge)
	msg = cmp.Or(ge.Error, ge.Message, strings.TrimSpace(string(data)))
	has := func(subs ...string) bool {
		return slices.ContainsFunc(subs, func(s string) bool { return strings.Contains(msg, s) })
	}
	switch {
	case has("database space exceeded"):
		return noSpace, msg
	case has("received message larger than max", "request is too large", "message too large"):
		return tooLarge, msg
	case has("revision of auth store is old", "invalid auth token", "auth token is not found"):
		return staleToken, msg
	case has("no leader", "too many requests", "raft proposal dropped", "not supported for learner", "leader changed"):
		return notProposed, msg
	case ge.Code == grpcFailedPrecondition && has("learner"):
		return notProposed, msg
	case ge.Code == grpcUnauthenticated:
		return staleToken, msg
	case ge.Code == grpcPermissionDenied || has("authentication failed", "user name not found", "permission denied"):
		return badCredentials, msg
	case ge.Code == grpcDeadlineExceeded, ge.Code == grpcResourceExhausted, ge.Code == grpcAborted, ge.Code == grpcUnavailable:
		return mayCommit, msg
	case status == http.StatusNotFound:
		return notGateway, msg
	case status >= 500 && (ge.Code == 0 || ge.Code == grpcUnknown):
		return mayCommit, msg
	}
	return refused, msg
}

// refusal is the CNI error for a definite refusal.
func refusal(kind errorKind, ep, path, user, msg string) error {
	switch kind {
	case noSpace:
		return cnierr.New(cnierr.CodeIO, "etcd's database is full (mvcc: database space exceeded)",
			"endpoint=%s: %s; compact and defragment etcd, or raise its --quota-backend-bytes, then disarm the NOSPACE alarm", ep, msg)
	case tooLarge:
		return cnierr.Wrap(cnierr.New(cnierr.CodeIO, "etcd refused a message as too large",
			"endpoint=%s path=%s: %s; the gateway of etcd 3.4 before 3.4.17 answers at most 4 MiB, and a request may be at most --max-request-bytes", ep, path, msg), errTooLarge)
	case badCredentials, staleToken:
		return cnierr.New(cnierr.CodeInvalidConfig, "etcd refused the credentials", "ipam.etcd.username=%q endpoint=%s: %s", user, ep, msg)
	case notGateway:
		return cnierr.New(cnierr.CodeInvalidConfig, "endpoint does not serve etcd's v3 JSON gateway", "ipam.etcd.endpoints: %s%s: HTTP 404", ep, path)
	}
	return cnierr.New(cnierr.CodeIO, "etcd refused the request", "endpoint=%s path=%s: %s", ep, path, msg)
}

// outcomeUnknown is code 11 for a write that may have been applied.
func (c *Client) outcomeUnknown(ep, why string) error {
	return cnierr.Wrap(cnierr.New(cnierr.CodeTryAgainLater, "etcd did not confirm a write that it may have applied",
		"endpoints=%s timeout=%s: %s: %s; not sent again, so that a late copy cannot undo a later operation: retry the command (DEL and GC clean what it may have left)",
		strings.Join(c.cfg.Endpoints, ","), c.cfg.Timeout, ep, why), ErrOutcomeUnknown)
}

// unavailable is code 11, naming every endpoint.
func (c *Client) unavailable() error {
	eps := strings.Join(c.cfg.Endpoints, ",")
	if !c.answered && !c.connected {
		return cnierr.Wrap(cnierr.New(cnierr.CodeTryAgainLater, "etcd unreachable",
			"endpoints=%s: %v", eps, c.last), ErrUnreachable)
	}
	if c.last == nil { // every request was answered: there were too many for the time
		return cnierr.Wrap(cnierr.New(cnierr.CodeTryAgainLater, "etcd answered too slowly for the command to finish in time",
			"endpoints=%s timeout=%s: every request was answered, their sum took longer; raise the timeout", eps, c.cfg.Timeout), ErrNoQuorum)
	}
	return cnierr.Wrap(cnierr.New(cnierr.CodeTryAgainLater, "etcd did not answer in time (no quorum?)",
		"endpoints=%s timeout=%s: %v", eps, c.cfg.Timeout, c.last), ErrNoQuorum)
}

// tlsError is code 7 once every member failed TLS, naming each.
func (c *Client) tlsError() error {
	var each []string
	for _, ep := range c.cfg.Endpoints {
		each = append(each, fmt.Sprintf("%s: %v", ep, c.tlsFailed[ep]))
	}
	return cnierr.New(cnierr.CodeInvalidConfig, "TLS with every etcd member failed", "ipam.etcd.tls: %s", strings.Join(each, "; "))
}
