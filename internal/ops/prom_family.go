package ops

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// PromFamily is one metric family of a Prometheus text exposition (0.0.4)
// beside WriteProm's pool gauges: a process's counters and gauges, which
// the pools' computation knows nothing of. Their writer is here so that
// every series of an exposition is quoted and formatted one way.
type PromFamily struct {
	Name, Help string
	Type       string // "counter" or "gauge"
	Samples    []PromSample
}

// PromSample is one series of a family: its labels, in order, and value.
type PromSample struct {
	Labels []PromLabel
	Value  float64
}

// PromLabel is one label of a series.
type PromLabel struct{ Name, Value string }

// WritePromFamilies writes fams in the text exposition format, each
// family's HELP and TYPE lines before its samples.
func WritePromFamilies(w io.Writer, fams []PromFamily) error {
	var b strings.Builder
	for _, f := range fams {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.Name, f.Help, f.Name, f.Type)
		for _, s := range f.Samples {
			b.WriteString(f.Name)
			if len(s.Labels) > 0 {
				pairs := make([]string, len(s.Labels))
				for i, l := range s.Labels {
					pairs[i] = l.Name + "=" + promQuote(l.Value)
				}
				b.WriteString("{" + strings.Join(pairs, ",") + "}")
			}
			b.WriteString(" " + strconv.FormatFloat(s.Value, 'g', -1, 64) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
