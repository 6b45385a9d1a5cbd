package cli

import (
	"bufio"
	"cmp"
	"encoding/json"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/cniplugins/cniplugins/internal/ops"
)

// Output formats every command accepts with -o.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatProm  = "prom"
)

// writeJSON prints v as one JSON document (the commands print one array)
// followed by a newline.
func writeJSON(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

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
