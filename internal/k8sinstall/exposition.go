package k8sinstall

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/cniplugins/cniplugins/internal/ops"
	"github.com/cniplugins/cniplugins/internal/promtext"
)

// Exposition is what `k8s-install --metrics-address` serves at each
// scrape: the node's pools as `pools -o prom` shows them, computed then,
// and the installer's own series (Metrics, build_info, scrape_error).
// It knows no HTTP: the full flavour's server calls Write, and this
// package stays in the lean binary, which must link no net/http.
type Exposition struct {
	// Usages computes the pools' usage: `pools`' own computation on the
	// installer's net.d and data dir, saying on notes, a line each, the
	// networks it leaves out.
	Usages func(notes io.Writer) ([]ops.Usage, error)
	// Metrics are the installer's counters (nil: every series 0).
	Metrics *Metrics
	// Version and Flavour label cniplugins_build_info.
	Version, Flavour string
	// Log gets a usage error, and the usage's notes, once for as long as
	// they repeat: a scrape every 15 s would otherwise log the same line
	// 5,760 times a day.
	Log io.Writer

	mu        sync.Mutex
	lastErr   string // the usage error last logged; "" while usage is read
	lastNotes string // the notes of the last usage read
}

// Write writes one scrape's exposition. A usage that cannot be computed
// (a file of net.d that does not parse, a state directory that cannot
// be read) leaves its series out, not the process's: the installer's
// series still say it is alive, and cniplugins_scrape_error says why
// the pools are missing.
func (e *Exposition) Write(w io.Writer) error {
	var b bytes.Buffer
	scrapeError := 0.0
	var notes bytes.Buffer
	us, err := e.Usages(&notes)
	if err == nil {
		// Into a buffer of its own: a usage that fails halfway must not
		// leave half its series in the exposition.
		err = ops.WriteProm(&b, us)
	}
	if err != nil {
		b.Reset()
		scrapeError = 1
	}
	e.note(err, notes.String())
	fams := append(e.Metrics.Families(),
		promtext.Family{Name: "cniplugins_build_info", Type: "gauge", Help: "1, labelled with the version and flavour of the running binary.",
			Samples: []promtext.Sample{{Labels: []promtext.Label{{Name: "version", Value: e.Version}, {Name: "flavour", Value: e.Flavour}}, Value: 1}}},
		promtext.Family{Name: "cniplugins_scrape_error", Type: "gauge", Help: "1 when this scrape could not compute the pools' usage (their series are missing; the installer's log says why), else 0.",
			Samples: []promtext.Sample{{Value: scrapeError}}},
	)
	if err := promtext.Write(&b, fams); err != nil {
		return err
	}
	_, err = w.Write(b.Bytes())
	return err
}

// note logs a usage error the first time it is seen, and its end, and a
// usage's notes when they differ from the last usage's (a failed usage's
// are not its last word).
func (e *Exposition) note(err error, notes string) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.Log == nil {
		return
	}
	switch {
	case msg == e.lastErr:
	case msg == "":
		fmt.Fprintln(e.Log, "metrics: the pools' usage is read again")
	default:
		fmt.Fprintf(e.Log, "metrics: cannot compute the pools' usage (served without it until this changes): %s\n", msg)
	}
	e.lastErr = msg
	if err == nil && notes != e.lastNotes {
		for l := range strings.Lines(notes) {
			fmt.Fprintln(e.Log, "metrics:", strings.TrimSuffix(l, "\n"))
		}
		e.lastNotes = notes
	}
}
