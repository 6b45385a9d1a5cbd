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
		strict  bool
	)
	c := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check network configuration files the way the plugins will parse them",
		Long: `Parse each .conf or .conflist (a directory: every file libcni would read in it)
with libcni's parser and every personality's own parser, check that
ipam-delegated's delegates are found in the CNI path, that every pool is defined
and that ranges are valid and do not overlap, report ipam-ds-args quotas a pod's
author can get around (a tenant the author names, a rule without the quota the
author can make its pod match) as warnings, and print each problem and warning
with file, JSON path and value. Changes nothing. Exits non-zero when a problem
is found (with --strict, a warning too).`,
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
			if len(problems) > 0 || out.format == formatJSON {
				err := writeItems(cmd.OutOrStdout(), out, append([]ops.Problem{}, problems...), []column[ops.Problem]{
					{"FILE", true, func(p ops.Problem) string { return p.File }},
					{"PATH", true, func(p ops.Problem) string { return p.Path }},
					{"VALUE", true, func(p ops.Problem) string { return p.Value }},
					{"PROBLEM", true, func(p ops.Problem) string {
						if p.Warning() {
							return "warning: " + p.Msg
						}
						return p.Msg
					}},
				})
				if err != nil {
					return err
				}
			}
			failing, warnings := 0, 0
			for _, p := range problems {
				if p.Warning() {
					warnings++
				}
				if !p.Warning() || strict {
					failing++
				}
			}
			if failing > 0 {
				return problemsError(failing)
			}
			if warnings > 0 {
				cmd.PrintErrf("%d file(s) valid, %d warning(s)\n", len(files), warnings)
				return nil
			}
			cmd.PrintErrf("%d file(s) valid\n", len(files))
			return nil
		},
	}
	def := os.Getenv("CNI_PATH")
	if strings.TrimSpace(def) == "" {
		def = defaultCNIPath
	}
	c.Flags().BoolVar(&strict, "strict", false, "exit non-zero on warnings too")
	c.Flags().StringVar(&cniPath, "cni-path", def, "where delegates must be found, ':'-separated (default $CNI_PATH, else "+defaultCNIPath+")")
	out.add(c)
	return c
}
