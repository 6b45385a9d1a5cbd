package cli

import (
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/ops"
)

func fsckCmd() *cobra.Command {
	var (
		st     stateFlags
		out    outputFlags
		conf   confFlags
		repair bool
	)
	c := &cobra.Command{
		Use:   "fsck",
		Short: "Check (and with --repair fix) every state directory under the data dir",
		Long: `Check every network and pool state directory: reservation files well formed,
cursors parseable, the index consistent with the files, no stale scratch files;
with --conf-dir or --conf, also reservations and cursors inside the configured
ranges. Each directory is examined under its lock, one at a time.
--repair rebuilds indexes, removes stale scratch files and bad cursors, and
never deletes a reservation. Exits non-zero while a problem remains.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.check(); err != nil {
				return err
			}
			req := ops.FsckRequest{DataDir: st.dataDir, Repair: repair, LockTimeout: st.lockTimeout}
			if cmd.Flags().Changed("conf-dir") || cmd.Flags().Changed("conf") {
				var err error
				if req.Networks, err = conf.networks(st.dataDir); err != nil {
					return err
				}
			}
			fs, err := ops.Fsck(req)
			w := cmd.OutOrStdout()
			if out.format == ops.FormatJSON {
				if werr := ops.WriteJSON(w, fs); err == nil {
					err = werr
				}
			} else {
				rows := make([][]string, len(fs))
				for i, f := range fs {
					repair := f.Repair
					if f.Repaired {
						repair = "done: " + repair
					}
					path := f.Path
					if rel, err := filepath.Rel(st.dataDir, f.Path); err == nil {
						path = rel // the table is read by people; JSON keeps absolute paths
					}
					rows[i] = []string{f.Severity, f.Dir, path, f.What, repair}
				}
				if len(rows) > 0 {
					if werr := ops.WriteTable(w, []string{"SEVERITY", "DIR", "PATH", "FINDING", "REPAIR"}, rows, out.noHeaders); err == nil {
						err = werr
					}
				}
			}
			if err != nil {
				return err
			}
			if n := ops.Unrepaired(fs); n > 0 {
				return problemsError{n: n, what: "problem"}
			}
			if len(fs) == 0 {
				cmd.PrintErrln("no problems found")
			}
			return nil
		},
	}
	st.add(c, true)
	out.add(c)
	conf.add(c)
	c.Flags().BoolVar(&repair, "repair", false, "rebuild indexes, remove stale scratch files and bad cursors (never a reservation)")
	return c
}
