package k8sinstall

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/install"
)

// Options of one run.
type Options struct {
	// Install puts the binary and its links into the node's bin dir.
	Install install.Options
	// Confs, when its Source is set, installs the ConfigMap's files.
	Confs Confs
	// Watch keeps the run going after the install until ctx is done:
	// the ConfigMap's files are installed again every Interval (only a
	// changed one is written), and GC runs every GCInterval.
	Watch    bool
	Interval time.Duration
	// GC, when set (the full flavour's `gc --cri`), releases the node's
	// leaked reservations, reports each one on the log and returns how
	// many it released; it runs once after the install, then (with
	// Watch) every GCInterval. Its errors are logged: they never undo or
	// fail the install.
	GC         func(log io.Writer) (released int, err error)
	GCInterval time.Duration
	// Log gets one line per change, error and GC report.
	Log io.Writer
	// Metrics, when set, counts the install and GC passes for the
	// exposition that --metrics-address serves.
	Metrics *Metrics
}

// Run installs, then returns, or with Watch stays until ctx is done (the
// container's SIGTERM), which ends it without an error. Errors of the
// binary's install, and without Watch a refused ConfigMap, are returned:
// the container fails where the operator sees it. With Watch a refused
// ConfigMap (now or on a later pass) and a runtime that cannot be asked
// are logged, what is installed stays, and the ConfigMap is checked
// again every Interval.
func Run(ctx context.Context, o Options) error {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Watch && o.Confs.Source != "" && o.Interval <= 0 {
		return fmt.Errorf("invalid interval %s: want more than 0", o.Interval)
	}
	if o.Watch && o.GC != nil && o.GCInterval <= 0 {
		return fmt.Errorf("invalid GC interval %s: want more than 0", o.GCInterval)
	}
	o.Install.Out = o.Log
	if err := install.Run(o.Install); err != nil {
		return err
	}
	// What a pass says beyond what it wrote (skips, notes, a refusal) is
	// logged when it differs from the last pass's: a watch would
	// otherwise repeat the same lines every interval. Watching, a refused
	// ConfigMap is reported and retried: the installed configuration
	// keeps the node's pods starting, and the next edit of the ConfigMap
	// may be a good one.
	var last string
	confs := func() error {
		said, err := o.installConfs(ctx)
		if o.Watch && ctx.Err() != nil {
			return nil // SIGTERM during the pass: the watch stops next
		}
		if o.Watch && err != nil {
			said, err = fmt.Sprintf("%s%v\nthe installed configuration stays\n", said, err), nil
		}
		if said != last {
			fmt.Fprint(o.Log, said)
		}
		last = said
		return err
	}
	if err := confs(); err != nil {
		return err
	}
	if o.Watch && ctx.Err() != nil {
		fmt.Fprintln(o.Log, "stopping: nothing installed is removed")
		return nil
	}
	if o.GC != nil {
		o.gc()
	}
	if !o.Watch {
		return nil
	}
	var confTick, gcTick <-chan time.Time
	if o.Confs.Source != "" {
		t := time.NewTicker(o.Interval)
		defer t.Stop()
		confTick = t.C
		fmt.Fprintf(o.Log, "watching %s every %s\n", o.Confs.Source, o.Interval)
	}
	if o.GC != nil {
		t := time.NewTicker(o.GCInterval)
		defer t.Stop()
		gcTick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(o.Log, "stopping: nothing installed is removed")
			return nil
		case <-confTick:
			_ = confs() // watching, a pass's error is logged
		case <-gcTick:
			o.gc()
		}
	}
}

// installConfs installs the ConfigMap's conflists, logging each one
// written, and returns the rest of what the pass has to say: its skips
// and notes, one line each.
func (o Options) installConfs(ctx context.Context) (string, error) {
	if o.Confs.Source == "" {
		o.Metrics.installPass(Report{}, nil, time.Now()) // the binary alone is the install
		return "", nil
	}
	rep, err := o.Confs.Install(ctx)
	o.Metrics.installPass(rep, err, time.Now())
	for _, w := range rep.Written {
		fmt.Fprintf(o.Log, "installed %s\n", w)
	}
	var said strings.Builder
	for _, s := range rep.Skipped {
		fmt.Fprintf(&said, "skipped %s: a hidden key of the ConfigMap (it would sort before every file of net.d) is never installed\n", s)
	}
	for _, n := range rep.Notes {
		said.WriteString(n + "\n")
	}
	return said.String(), err
}

func (o Options) gc() {
	released, err := o.GC(o.Log)
	o.Metrics.gcPass(released, err, time.Now())
	if err != nil {
		fmt.Fprintf(o.Log, "gc: %v\n", err)
	}
}
