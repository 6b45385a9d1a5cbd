package cli

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

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

// Output formats every command accepts with -o.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatProm  = "prom"
)

// writeTable prints rows aligned under header (dropped with noHeaders).
// Empty cells print as "-" so that columns stay parseable by awk, and
// anything but printable characters as "?": a reservation file's content
// must not reach a terminal as escape sequences. Widths
// are measured first and everything goes out through one buffer: at
// 60,000 rows a write per cell (tabwriter to an unbuffered stdout) cost
// seconds of system calls.
func writeTable(w io.Writer, header []string, rows [][]string, noHeaders bool) error {
	if !noHeaders {
		rows = append([][]string{header}, rows...)
	}
	widths := make([]int, len(header))
	for _, r := range rows {
		for i, c := range r {
			r[i] = ops.Printable(cmp.Or(c, "-"))
			widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, r := range rows {
		for i, c := range r {
			bw.WriteString(c)
			if i < len(r)-1 {
				bw.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
			}
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// bar is a 20-cell gauge of p percent for tables.
func bar(p float64) string {
	n := int(math.Round(p / 5))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", 20-n) + "]"
}

// outputFlags are -o and --no-headers.
type outputFlags struct {
	format    string
	noHeaders bool
	allowed   []string
}

func (o *outputFlags) add(c *cobra.Command, allowed ...string) {
	o.allowed = append([]string{formatTable, formatJSON}, allowed...)
	c.Flags().StringVarP(&o.format, "output", "o", formatTable, "output format: "+joinOr(o.allowed))
	c.Flags().BoolVar(&o.noHeaders, "no-headers", false, "omit the table header")
}

// column is one column of a table of Ts; a column with show false is
// left out (one that would be empty on every row, say).
type column[T any] struct {
	name string
	show bool
	cell func(T) string
}

// writeItems prints items as -o json, or as a table of cols.
func writeItems[T any](w io.Writer, out outputFlags, items []T, cols []column[T]) error {
	if out.format == formatJSON {
		return json.NewEncoder(w).Encode(items) // one document (an array) and a newline
	}
	cols = slices.DeleteFunc(cols, func(c column[T]) bool { return !c.show })
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = c.name
	}
	rows := make([][]string, len(items))
	for i, it := range items {
		rows[i] = make([]string, len(cols))
		for j, c := range cols {
			rows[i][j] = c.cell(it)
		}
	}
	return writeTable(w, header, rows, out.noHeaders)
}

func (o *outputFlags) check() error {
	if !slices.Contains(o.allowed, o.format) {
		return fmt.Errorf("invalid --output %q: want %s", o.format, joinOr(o.allowed))
	}
	return nil
}

func joinOr(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
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
