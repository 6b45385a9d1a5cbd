package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/install"
	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/version"
)

// runCLI is only reached when no personality was named, so cobra's cost
// is paid by humans, never by the runtime's hot path.
func (f Flavour) runCLI(args []string, pio plugin.IO) int {
	root := &cobra.Command{
		Use:           "cniplugins",
		Short:         "Composable CNI IPAM plugins in one binary",
		Long:          "cniplugins is one executable that acts as several CNI IPAM plugins, chosen by the name it is called by.\nInstall it with `cniplugins install` (or scripts/install-symlinks.sh) and name a personality in a conflist.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, rest []string) error {
			if len(rest) > 0 {
				return errUnknown(rest[0])
			}
			return cmd.Help()
		},
	}
	root.SetArgs(args)
	root.SetIn(pio.Stdin)
	root.SetOut(pio.Stdout)
	root.SetErr(pio.Stderr)
	root.AddCommand(f.versionCmd(), f.listCmd(), f.installCmd(), f.k8sInstallCmd())
	root.AddCommand(f.opsCommands()...)
	if f.Commands != nil {
		root.AddCommand(f.Commands()...)
	}

	err := root.Execute()
	if u, ok := err.(errUnknown); ok {
		return f.unknown(pio.Stderr, string(u))
	}
	if err != nil {
		fmt.Fprintf(pio.Stderr, "cniplugins: %v\n", err)
		var ec interface{ ExitCode() int }
		if errors.As(err, &ec) {
			return ec.ExitCode()
		}
		return 1
	}
	return 0
}

type errUnknown string

func (e errUnknown) Error() string { return "unknown personality " + string(e) }

func (f Flavour) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print version, commit, flavour, Go version and supported CNI spec versions",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprint(cmd.OutOrStdout(), version.Long(f.Name))
		},
	}
}

func (f Flavour) listCmd() *cobra.Command {
	var long bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the personalities, one per line",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			for _, p := range f.Registry.Personalities() {
				if long {
					fmt.Fprintf(cmd.OutOrStdout(), "%-18s %s\n", p.Name, p.Summary)
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), p.Name)
				}
			}
		},
	}
	c.Flags().BoolVarP(&long, "long", "l", false, "add a one-line summary of each")
	return c
}

func (f Flavour) installCmd() *cobra.Command {
	o := install.Options{}
	var flavour string
	c := &cobra.Command{
		Use:   "install [DIR]",
		Short: "Install the binary and one symlink per personality into DIR (default " + install.DefaultDir + ")",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Dir = args[0]
			}
			var err error
			if o.Binary, o.Names, err = f.toInstall(o.Binary, flavour); err != nil {
				return err
			}
			o.Out = cmd.OutOrStdout()
			return install.Run(o)
		},
	}
	c.Flags().BoolVar(&o.Copy, "copy", false, "hard links (or copies) instead of symlinks, for bin dirs mounted where a link target is not visible")
	c.Flags().BoolVar(&o.Force, "force", false, "replace files of the same name that cniplugins did not install")
	c.Flags().BoolVar(&o.Uninstall, "uninstall", false, "remove what a previous install put there, nothing else")
	c.Flags().StringVar(&o.Binary, "binary", "", "the executable to install (default: this one, or the --flavour's binary beside it)")
	c.Flags().StringVar(&flavour, "flavour", "", "install the binary of this flavour found beside this one: "+flavourChoices())
	return c
}
