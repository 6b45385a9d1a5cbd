package ops

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Output formats every command accepts with -o.
const (
	FormatTable = "table"
	FormatJSON  = "json"
	FormatProm  = "prom"
)

// WriteTable prints rows aligned under header (dropped with noHeaders).
// Empty cells print as "-" so that columns stay parseable by awk, and
// anything but printable characters as "?": a reservation file's content
// must not reach a terminal as escape sequences. Widths
// are measured first and everything goes out through one buffer: at
// 60,000 rows a write per cell (tabwriter to an unbuffered stdout) cost
// seconds of system calls.
func WriteTable(w io.Writer, header []string, rows [][]string, noHeaders bool) error {
	if !noHeaders {
		rows = append([][]string{header}, rows...)
	}
	widths := make([]int, len(header))
	for _, r := range rows {
		for i, c := range r {
			if c == "" {
				c = "-"
			}
			r[i] = printable(c)
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

// WriteJSON prints v as one JSON document (the commands print one array)
// followed by a newline.
func WriteJSON(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

// printable replaces what is not a printable character (control
// characters, invalid UTF-8) with '?'.
func printable(s string) string {
	bad := func(r rune) bool { return r == utf8.RuneError || !unicode.IsPrint(r) }
	if strings.IndexFunc(s, bad) < 0 {
		return s // the common case, without a copy
	}
	return strings.Map(func(r rune) rune {
		if bad(r) {
			return '?'
		}
		return r
	}, s)
}
