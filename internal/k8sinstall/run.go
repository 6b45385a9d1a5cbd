package k8sinstall

import (
	"context"
	"fmt"
	"io"
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
	// leaked reservations and reports each one on the log; it runs once
	// after the install, then (with Watch) every GCInterval. Its errors
	// are logged: they never undo or fail the install.
	GC         func(log io.Writer) error
	GCInterval time.Duration
	// Log gets one line per change, error and GC report.
	Log io.Writer
}

// Run installs, then returns, or with Watch stays until ctx is done (the
// container's SIGTERM), which ends it without an error. Errors of the
// first install are returned: the container fails where the operator
// sees it. Later ones (a ConfigMap update that does not validate, a
// runtime that cannot be asked) are logged, and what is installed stays.
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
	if err := o.installConfs(); err != nil {
		return err
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
			if err := o.installConfs(); err != nil {
				fmt.Fprintf(o.Log, "%v; the installed configuration stays\n", err)
			}
		case <-gcTick:
			o.gc()
		}
	}
}

func (o Options) installConfs() error {
	if o.Confs.Source == "" {
		return nil
	}
	written, err := o.Confs.Install()
	for _, w := range written {
		fmt.Fprintf(o.Log, "installed %s\n", w)
	}
	return err
}

func (o Options) gc() {
	if err := o.GC(o.Log); err != nil {
		fmt.Fprintf(o.Log, "gc: %v\n", err)
	}
}
