package cli

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/ops"
)

// opsCommands are the operators' commands (internal/ops does the work),
// built per call like every command.
func (f Flavour) opsCommands() []*cobra.Command {
	return []*cobra.Command{f.leasesCmd(), f.poolsCmd(), f.releaseCmd(), f.gcCmd(), fsckCmd(), f.validateCmd()}
}

// stateFlags are the flags of every command that reads or writes state.
type stateFlags struct {
	dataDir     string
	lockTimeout time.Duration
}

func (s *stateFlags) add(c *cobra.Command, lock bool) {
	c.Flags().StringVar(&s.dataDir, "data-dir", dapools.DefaultDataDir, "the data dir (ipam.dataDir) holding network and pool state directories")
	if lock {
		c.Flags().DurationVar(&s.lockTimeout, "lock-timeout", dapools.DefaultLockTimeout, "how long to wait for a state directory's lock")
	}
}

// outputFlags are -o and --no-headers.
type outputFlags struct {
	format    string
	noHeaders bool
	allowed   []string
}

func (o *outputFlags) add(c *cobra.Command, allowed ...string) {
	o.allowed = append([]string{ops.FormatTable, ops.FormatJSON}, allowed...)
	c.Flags().StringVarP(&o.format, "output", "o", ops.FormatTable, "output format: "+joinOr(o.allowed))
	c.Flags().BoolVar(&o.noHeaders, "no-headers", false, "omit the table header")
}

// write prints v as -o json, or as a table of header and rows (built
// only for a table: a listing can be 60,000 rows).
func (o *outputFlags) write(w io.Writer, v any, header []string, rows func() [][]string) error {
	if o.format == ops.FormatJSON {
		return ops.WriteJSON(w, v)
	}
	return ops.WriteTable(w, header, rows(), o.noHeaders)
}

func (o *outputFlags) check() error {
	if !slices.Contains(o.allowed, o.format) {
		return fmt.Errorf("invalid --output %q: want %s", o.format, joinOr(o.allowed))
	}
	return nil
}

func joinOr(s []string) string {
	out := ""
	for i, x := range s {
		switch {
		case i == 0:
		case i == len(s)-1:
			out += " or "
		default:
			out += ", "
		}
		out += x
	}
	return out
}

// problemsError is the error of a command that ran to the end and found
// that many problems: the findings are on stdout, the count on stderr.
type problemsError int

// ExitCode: 1, the status of a check that found problems.
func (problemsError) ExitCode() int { return 1 }

// exitError gives err a status of its own (fsck's 2: it could not check).
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }
func (e exitError) ExitCode() int { return e.code }

func (e problemsError) Error() string {
	if e == 1 {
		return "1 problem found"
	}
	return fmt.Sprintf("%d problems found", int(e))
}
