package cli

import (
	"cmp"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/ops"
)

// fsckCannotRun is fsck's exit status when it could not check
// everything, distinct from 1 (problems found) so that a monitor tells a
// broken node from a broken check.
const fsckCannotRun = 2

type fsckFlags struct {
	st     stateFlags
	out    outputFlags
	conf   confFlags
	repair bool
}

func fsckCmd() *cobra.Command {
	var o fsckFlags
	c := &cobra.Command{
		Use:   "fsck",
		Short: "Check (and with --repair fix) every state directory under the data dir",
		Long: `Check every network and pool state directory: reservation files well formed,
cursors parseable, the index consistent with the files, no stale scratch files;
with --conf-dir or --conf, also reservations and cursors inside the configured
ranges. Each directory is examined under its lock, one at a time.
Sticky hold records are checked against their address files (a record that
holds nothing, a held file without a record, an expired hold).
--repair rebuilds indexes, removes stale scratch files and bad cursors, drops
hold records that hold nothing, frees expired holds (as GC would) and held
files without a record, and never deletes a reservation.
Exit status: 0 nothing wrong remains (none found, or all repaired); 1 problems
remain; 2 fsck could not check everything (bad arguments, a missing data dir,
a lock not obtained, an unreadable config): what it printed is what it checked.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.NoArgs(cmd, args); err != nil {
				return exitError{fsckCannotRun, err}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			err := o.run(cmd)
			if _, found := err.(problemsError); err != nil && !found {
				return exitError{fsckCannotRun, err}
			}
			return err
		},
	}
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return exitError{fsckCannotRun, err} })
	o.st.add(c, true)
	o.out.add(c)
	o.conf.add(c)
	c.Flags().BoolVar(&o.repair, "repair", false, "rebuild indexes, remove stale scratch files and bad cursors, drop stale hold records, free expired or unrecorded holds (never a reservation)")
	return c
}

func (o *fsckFlags) run(cmd *cobra.Command) error {
	st, out := &o.st, &o.out
	if err := out.check(); err != nil {
		return err
	}
	req := ops.FsckRequest{DataDir: st.dataDir, Repair: o.repair, LockTimeout: st.lockTimeout}
	if cmd.Flags().Changed("conf-dir") || cmd.Flags().Changed("conf") {
		var err error
		if req.Networks, err = o.conf.networks(st.dataDir); err != nil {
			return err
		}
	}
	fs, err := ops.Fsck(req)
	if len(fs) > 0 || out.format == formatJSON {
		werr := writeItems(cmd.OutOrStdout(), *out, fs, []column[ops.Finding]{
			{"SEVERITY", true, func(f ops.Finding) string { return f.Severity }},
			{"DIR", true, func(f ops.Finding) string { return f.Dir }},
			{"PATH", true, func(f ops.Finding) string {
				if rel, err := filepath.Rel(st.dataDir, f.Path); err == nil {
					return rel // the table is read by people; JSON keeps absolute paths
				}
				return f.Path
			}},
			{"FINDING", true, func(f ops.Finding) string { return f.What }},
			{"REPAIR", true, func(f ops.Finding) string {
				if f.Repaired {
					return "done: " + f.Repair
				}
				return f.Repair
			}},
		})
		err = cmp.Or(err, werr)
	}
	if err != nil {
		return err
	}
	if n := ops.Unrepaired(fs); n > 0 {
		return problemsError(n)
	}
	if len(fs) == 0 {
		cmd.PrintErrln("no problems found")
	}
	return nil
}
