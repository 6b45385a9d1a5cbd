// Package plugintest checks the output contract of one plugin invocation,
// for the fuzz targets and hardening tests of every personality: a run
// either succeeds, or prints exactly one CNI error object with a real code.
package plugintest

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// ErrorOutput is the error object a failed invocation prints.
type ErrorOutput struct {
	CNIVersion string `json:"cniVersion"`
	types.Error
}

// CheckOutput validates what a run printed for exit status exit. It returns
// the decoded error (nil on success) or a description of the violation:
// a non-zero exit must print exactly one JSON object with a non-zero code
// that is not 999 (a panic or an untyped error is always a defect).
func CheckOutput(exit int, stdout []byte) (*ErrorOutput, error) {
	if exit == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(stdout))
	var e ErrorOutput
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("exit %d but stdout is not a JSON error object: %v: %q", exit, err, stdout)
	}
	if dec.More() {
		return &e, fmt.Errorf("more than one JSON value on stdout: %q", stdout)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(stdout), []byte("{")) {
		return &e, fmt.Errorf("error output is not a JSON object: %q", stdout)
	}
	switch e.Code {
	case 0:
		return &e, fmt.Errorf("error object without a code: %q", stdout)
	case cnierr.CodeInternal:
		return &e, fmt.Errorf("internal error (code 999: a panic or an untyped error): %q", stdout)
	}
	if e.Msg == "" {
		return &e, fmt.Errorf("error object without a message: %q", stdout)
	}
	return &e, nil
}
