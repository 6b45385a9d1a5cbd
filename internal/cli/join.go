package cli

import "github.com/spf13/cobra"

// Join returns a Flavour.Commands that lists first's commands (first may
// be nil), then each of more's, so that a main composes its flavour's
// commands one line per package.
func Join(first func() []*cobra.Command, more ...func() []*cobra.Command) func() []*cobra.Command {
	return func() []*cobra.Command {
		var out []*cobra.Command
		for _, f := range append([]func() []*cobra.Command{first}, more...) {
			if f != nil {
				out = append(out, f()...)
			}
		}
		return out
	}
}
