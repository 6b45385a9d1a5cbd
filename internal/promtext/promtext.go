// Package promtext writes Prometheus' text exposition format (0.0.4):
// the one writer of `pools -o prom` and of k8s-install's
// --metrics-address, so that every series is quoted and formatted one
// way. It knows no HTTP, and stays in the lean binary.
package promtext

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Family is one metric family of an exposition.
type Family struct {
	Name, Help string
	Type       string // "counter" or "gauge"
	Samples    []Sample
}

// Sample is one series of a family: its labels, in order, and value.
type Sample struct {
	Labels []Label
	Value  float64
}

// Label is one label of a series.
type Label struct{ Name, Value string }

// escape is how the exposition format escapes a label value.
var escape = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// Write writes fams, each family's HELP and TYPE lines before its
// samples.
func Write(w io.Writer, fams []Family) error {
	var b strings.Builder
	for _, f := range fams {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.Name, f.Help, f.Name, f.Type)
		for _, s := range f.Samples {
			b.WriteString(f.Name)
			if len(s.Labels) > 0 {
				pairs := make([]string, len(s.Labels))
				for i, l := range s.Labels {
					pairs[i] = l.Name + `="` + escape.Replace(l.Value) + `"`
				}
				b.WriteString("{" + strings.Join(pairs, ",") + "}")
			}
			b.WriteString(" " + strconv.FormatFloat(s.Value, 'g', -1, 64) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
