package k8sinstall

import (
	"errors"
	"sync"
	"time"

	"github.com/cniplugins/cniplugins/internal/promtext"
)

// Metrics counts what one installer process did, for the exposition
// that `k8s-install --metrics-address` serves: its GC passes and its
// install passes. Run records into the one it is given; a nil *Metrics
// records nothing. It is passed explicitly, never kept in package state,
// so that each Run (and each test) counts its own. Scrapes read it while
// Run writes it: a mutex, since a scrape wants the counters of one
// moment, not each one of another.
type Metrics struct {
	mu sync.Mutex

	gcRuns, gcReleased, gcErrors uint64
	gcLast                       time.Time

	installLast time.Time
	conflists   int
	refusals    uint64
}

// gcPass records one GC pass: the reservations it released, and whether
// it ended in an error (a runtime that could not be asked, a release
// that failed).
func (m *Metrics) gcPass(released int, err error, at time.Time) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gcRuns++
	m.gcReleased += uint64(max(released, 0))
	if err != nil {
		m.gcErrors++
	}
	m.gcLast = at
}

// installPass records one pass over the ConfigMap (the binary's install
// came before the first): a success sets what net.d holds and when; a
// refused ConfigMap is counted; any other error (a write that failed, a
// SIGTERM) only leaves the last success standing.
func (m *Metrics) installPass(rep Report, err error, at time.Time) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var refused *RefusedError
	switch {
	case err == nil:
		m.installLast, m.conflists = at, rep.Installed
	case errors.As(err, &refused):
		m.refusals++
	}
}

// Families are the counters' series as they stand, in the exposition's
// order; names and meanings are documented in docs/cli.md ("Prometheus
// metrics") and are a stable interface for dashboards and alerts.
func (m *Metrics) Families() []promtext.Family {
	if m == nil {
		m = &Metrics{} // nothing recorded: every series 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	one := func(name, typ, help string, v float64) promtext.Family {
		return promtext.Family{Name: name, Type: typ, Help: help, Samples: []promtext.Sample{{Value: v}}}
	}
	return []promtext.Family{
		one("cniplugins_gc_runs_total", "counter", "GC passes the installer ran (gc --cri --apply against the node's runtime).", float64(m.gcRuns)),
		one("cniplugins_gc_released_total", "counter", "Reservations the installer's GC passes released: owned by no live sandbox and older than --gc-min-age.", float64(m.gcReleased)),
		one("cniplugins_gc_errors_total", "counter", "GC passes that ended in an error (the runtime could not be asked, a reservation could not be released).", float64(m.gcErrors)),
		one("cniplugins_gc_last_run_timestamp_seconds", "gauge", "Unix time the last GC pass ended; 0 before the first.", unixSeconds(m.gcLast)),
		one("cniplugins_install_last_timestamp_seconds", "gauge", "Unix time of the installer's last successful pass: the binary installed and every file of the ConfigMap in net.d; 0 before the first.", unixSeconds(m.installLast)),
		one("cniplugins_install_conflists", "gauge", "Network configuration files of the ConfigMap that the installer holds installed in net.d, as its last successful pass left them.", float64(m.conflists)),
		one("cniplugins_install_refusals_total", "counter", "Passes whose ConfigMap the installer refused (nothing of it installed; what was installed stays).", float64(m.refusals)),
	}
}

// unixSeconds is t as the exposition's timestamps are (Unix seconds, to
// the millisecond), 0 for the zero time: never happened.
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixMilli()) / 1000
}
