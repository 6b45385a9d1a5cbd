// Package cnierr builds the typed CNI errors every personality returns.
//
// Each constructor fixes the code (docs/error-codes.md) so that call sites cannot
// drift into the catch-all 999, and keeps the message one short sentence
// with the field, value, pool or delegate involved in Details.
package cnierr

import (
	"errors"
	"fmt"

	"github.com/containernetworking/cni/pkg/types"
)

// Plugin-specific codes (docs/error-codes.md); the spec's own codes come
// from the types package.
const (
	CodePoolExhausted       uint = 100
	CodeAddrUnavailable     uint = 101
	CodeDuplicateAttach     uint = 102
	CodeNoPoolSelected      uint = 103 // no selector rule matches and no default
	CodePoolNotAllowed      uint = 104 // the attachment chose a pool its rule does not allow
	CodeStickyHeld          uint = 105 // the sticky key's address is still reserved by another live attachment
	CodeQuotaExceeded       uint = 106 // the tenant already holds the maximum number of addresses its rule allows
	CodeNoMigrationSource   uint = 107 // a migration target's sticky key holds no address to share
	CodeNotAvailable        uint = 50  // STATUS: plugin not available
	CodeLimited             uint = 51  // STATUS: limited connectivity
	CodeTryAgainLater            = types.ErrTryAgainLater
	CodeInvalidConfig            = types.ErrInvalidNetworkConfig
	CodeInvalidEnv               = types.ErrInvalidEnvironmentVariables
	CodeDecoding                 = types.ErrDecodingFailure
	CodeIO                       = types.ErrIOFailure
	CodeIncompatibleVersion      = types.ErrIncompatibleCNIVersion
	CodeUnknownContainer         = types.ErrUnknownContainer
	CodeInternal                 = types.ErrInternal
)

// New is types.NewError with a formatted details string.
func New(code uint, msg string, detailsFormat string, args ...any) *types.Error {
	return types.NewError(code, msg, fmt.Sprintf(detailsFormat, args...))
}

// InvalidConfig reports a bad value of a named config field (code 7).
func InvalidConfig(field string, value any, reason string) *types.Error {
	return types.NewError(CodeInvalidConfig, fmt.Sprintf("invalid %s: %s", field, reason), fmt.Sprintf("%s=%v", field, value))
}

// MissingConfig reports a required config field that is absent (code 7).
func MissingConfig(field string) *types.Error {
	return types.NewError(CodeInvalidConfig, fmt.Sprintf("missing %s", field), field)
}

// InvalidEnv reports a bad CNI_* environment variable (code 4).
func InvalidEnv(variable, value, reason string) *types.Error {
	return types.NewError(CodeInvalidEnv, fmt.Sprintf("invalid %s: %s", variable, reason), fmt.Sprintf("%s=%q", variable, value))
}

// IO reports a failed file-system operation on path (code 5). The cause
// stays reachable through errors.As/Is via Wrapped.
func IO(op, path string, err error) error {
	return Wrap(types.NewError(CodeIO, fmt.Sprintf("%s %s failed", op, path), err.Error()), err)
}

// Wrapped keeps a CNI error's code while preserving the Go error chain that
// caused it, so callers can still errors.Is(err, fs.ErrNotExist) and the
// dispatcher still prints the typed error.
type Wrapped struct {
	cni   *types.Error
	cause error
}

// Wrap attaches cause to e.
func Wrap(e *types.Error, cause error) error { return &Wrapped{cni: e, cause: cause} }

func (w *Wrapped) Error() string { return w.cni.Error() }

// Unwrap exposes both the CNI error and its cause to errors.As / errors.Is.
func (w *Wrapped) Unwrap() []error { return []error{w.cni, w.cause} }

// ConfigProblem is an error that names a config field, the value given
// and why it is refused (reason "" for a missing field). Packages that
// must not depend on the CNI types return one; As makes it code 7. It is
// an interface so that those packages need not import this one.
type ConfigProblem interface {
	error
	ConfigProblem() (field, value, reason string)
}

// As extracts the CNI error from err's chain, classifying anything untyped
// as an internal error (999) so the caller always has something to print.
// A ConfigProblem (from packages that stay free of the CNI types, as
// addrspace) is the code-7 error InvalidConfig or MissingConfig would have
// made.
func As(err error) *types.Error {
	if err == nil {
		return nil
	}
	var e *types.Error
	if errors.As(err, &e) {
		return e
	}
	var ce ConfigProblem
	if errors.As(err, &ce) {
		field, value, reason := ce.ConfigProblem()
		if reason == "" {
			return MissingConfig(field)
		}
		return InvalidConfig(field, value, reason)
	}
	return types.NewError(CodeInternal, err.Error(), "")
}

// Code returns err's CNI code, or 0 for nil.
func Code(err error) uint {
	if err == nil {
		return 0
	}
	return As(err).Code
}
