package ops

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Output formats every command accepts with -o.
const (
	FormatTable = "table"
	FormatJSON  = "json"
	FormatProm  = "prom"
)

// WriteTable prints rows aligned under header (dropped with noHeaders).
// Empty cells print as "-" so that columns stay parseable by awk.
func WriteTable(w io.Writer, header []string, rows [][]string, noHeaders bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(cells []string) {
		out := make([]string, len(cells))
		for i, c := range cells {
			if c == "" {
				c = "-"
			}
			out[i] = c
		}
		fmt.Fprintln(tw, strings.Join(out, "\t"))
	}
	if !noHeaders {
		line(header)
	}
	for _, r := range rows {
		line(r)
	}
	return tw.Flush()
}

// WriteJSON prints v as one JSON document (the commands print one array)
// followed by a newline.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
