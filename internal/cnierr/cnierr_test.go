package cnierr

import (
	"fmt"
	"testing"

	"github.com/cniplugins/cniplugins/internal/addrspace"
)

// An address-model error must reach the runtime exactly as the cnierr
// constructors it replaced wrote it: code 7, same message and details, and
// the same text for callers that print it as a plain error.
func TestAsConfigError(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  *addrspace.ConfigError
		want error
	}{
		{"invalid", &addrspace.ConfigError{Field: "ranges[0][1].subnet", Value: "10.0.0.1/24", Reason: "has host bits set"},
			InvalidConfig("ranges[0][1].subnet", "10.0.0.1/24", "has host bits set")},
		{"missing", &addrspace.ConfigError{Field: "ranges[0][0].subnet"}, MissingConfig("ranges[0][0].subnet")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := As(fmt.Errorf("wrapped: %w", tt.err))
			if want := As(tt.want); *got != *want {
				t.Errorf("As = %+v, want %+v", got, want)
			}
			if tt.err.Error() != tt.want.Error() {
				t.Errorf("Error() = %q, want %q", tt.err.Error(), tt.want.Error())
			}
		})
	}
}
