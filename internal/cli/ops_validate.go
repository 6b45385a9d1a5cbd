package cli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/ops"
)

// defaultCNIPath is where runtimes install CNI plugins.
const defaultCNIPath = "/opt/cni/bin"

func (f Flavour) validateCmd() *cobra.Command {
	var (
		out     outputFlags
		cniPath string
	)
	c := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check network configuration files the way the plugins will parse them",
		Long: `Parse each .conf or .conflist (a directory: every file libcni would read in it)
with libcni's parser and every personality's own parser, check that
ipam-delegated's delegates are found in the CNI path, that every pool is defined
and that ranges are valid and do not overlap, report ipam-ds-args quotas a pod's
author can get around (a tenant the author names, a rule without the quota the
author can make its pod match), and print each problem with file, JSON path and
value. Changes nothing. Exits non-zero when a problem is found.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			var files []string
			for _, a := range args {
				if fi, err := os.Stat(a); err == nil && fi.IsDir() {
					fs, err := ops.ConfFiles(a)
					if err != nil {
						return err
					}
					files = append(files, fs...)
				} else {
					files = append(files, a)
				}
			}
			v := ops.Validator{Lookup: f.Registry.Lookup, CNIPath: filepath.SplitList(cniPath)}
			problems := v.Files(files)
			w := cmd.OutOrStdout()
			if out.format == ops.FormatJSON {
				if err := ops.WriteJSON(w, append([]ops.Problem{}, problems...)); err != nil {
					return err
				}
			} else {
				rows := make([][]string, len(problems))
				for i, p := range problems {
					rows[i] = []string{p.File, p.Path, p.Value, p.Msg}
				}
				if len(rows) > 0 {
					if err := ops.WriteTable(w, []string{"FILE", "PATH", "VALUE", "PROBLEM"}, rows, out.noHeaders); err != nil {
						return err
					}
				}
			}
			if len(problems) > 0 {
				return problemsError{n: len(problems), what: "problem"}
			}
			cmd.PrintErrf("%d file(s) valid\n", len(files))
			return nil
		},
	}
	def := os.Getenv("CNI_PATH")
	if strings.TrimSpace(def) == "" {
		def = defaultCNIPath
	}
	c.Flags().StringVar(&cniPath, "cni-path", def, "where delegates must be found, ':'-separated (default $CNI_PATH, else "+defaultCNIPath+")")
	out.add(c)
	return c
}
