package cli

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/ops"
)

func (f Flavour) gcCmd() *cobra.Command {
	var (
		bf       backendFlags
		r        ops.GCRequest
		keep     []string
		keepFile string
		networks []string
		cri      criFlags
	)
	c := &cobra.Command{
		Use:   "gc (--network N | --pool P | --etcd URLS --node NODE) (--keep CID[@IF]... | --keep-file FILE) [--apply]\n  cniplugins gc --cri ENDPOINT [--cni-conf-dir DIR] [--cni-max-conf-num N] [--network N...] [--etcd URLS --node NODE] [--min-age 10m] [--apply] [-o json]",
		Short: "Release every reservation not kept, with the rules of the CNI GC command",
		Long: `Release every reservation of a network's or a pool's state directory whose owner
is not kept: the CNI GC command's rules, with the list of live attachments given
here. CID@IF keeps that attachment (and legacy id-only files of CID); a bare CID
keeps every reservation of that container. Reservations of non-CNI owners (a
container-ID field starting with '_') are always kept. A sticky key's
reservation is not released but becomes a hold (for the holdFor its ADD was
configured with); holds past their expiry are released. With --pool, --network
restricts it to the reservations recorded for that network. Prints the plan and
changes nothing without --apply.
With --etcd (full flavour), collect ipam-da-etcd's claims of --node (a node
that is gone for good) instead, optionally only of --network or --pool; the
keep list may then be empty (release every claim of that node). Another
node's claims are never touched. --apply refuses while --node was seen alive
(an ADD, DEL, GC or STATUS from it) within --dead-after; --force skips that
check, and says so.
With --cri (full flavour), the live attachments are the CRI runtime's own:
every sandbox it lists as READY keeps its reservations. Only the networks the
runtime serves are reconciled: those it loads from its conf dir
(--cni-conf-dir, the first --cni-max-conf-num files by name, as containerd
does) and those named with --network; reservations of any other network
(podman's, Nomad's, one not recorded) are left alone, and the output says
which. Among those networks' reservations under the data dir (or, with
--etcd, among --node's claims), every CNI reservation no READY sandbox owns
that is older than --min-age is released by the CNI GC's own code (a sticky
key's reservation becomes a hold; expired holds go too).
An endpoint that cannot be asked is an error (exit 2) that releases nothing.
The Docker driver's reservations are never touched.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := bf.backend(cmd)
			if err != nil {
				return err
			}
			// A shared store holds every node's claims: gc acts on one
			// --node's, and may release all of them (the node is gone).
			shared := b.Shared()
			if cri.endpoint != "" {
				if r.Pool != "" || len(keep) > 0 || keepFile != "" {
					return fmt.Errorf("--cri reconciles the runtime's networks in every pool against its sandboxes: drop --pool, --keep and --keep-file")
				}
				cri.scope.networks = networks
				if shared && bf.node == "" {
					return fmt.Errorf("with --etcd, name this host's --node: only its claims are reconciled")
				}
				return cri.run(cmd, f.CRI, b, ops.GCRequest{Apply: r.Apply, Node: bf.node})
			}
			for _, name := range []string{"output", "min-age", "cni-conf-dir", "cni-max-conf-num"} {
				if cmd.Flags().Changed(name) {
					return fmt.Errorf("-o, --min-age, --cni-conf-dir and --cni-max-conf-num go with --cri")
				}
			}
			switch len(networks) {
			case 0:
			case 1:
				r.Network = networks[0]
			default:
				return fmt.Errorf("invalid --network %s: name one network (several go with --cri)", strings.Join(networks, ", "))
			}
			switch {
			case shared && bf.node == "":
				return fmt.Errorf("with --etcd, name the --node whose claims to collect")
			case !shared && r.Network == "" && r.Pool == "":
				return fmt.Errorf("name --network or --pool")
			case len(keep) > 0 && keepFile != "":
				return fmt.Errorf("give the live attachments with --keep or with --keep-file, not both")
			case !shared && len(keep) == 0 && keepFile == "":
				return fmt.Errorf("give the live attachments with --keep or with --keep-file")
			}
			for _, k := range keep {
				a, err := parseKeep(k)
				if err != nil {
					return err
				}
				r.Keep = append(r.Keep, a)
			}
			if keepFile != "" {
				var err error
				if r.Keep, err = readKeepFile(keepFile); err != nil {
					return err
				}
			}
			if !shared && (cmd.Flags().Changed("dead-after") || r.Force) {
				return fmt.Errorf("--dead-after and --force go with --etcd")
			}
			if r.Force && r.Apply {
				fmt.Fprintf(cmd.ErrOrStderr(), "--force: not checking when node %s was last seen; releasing its claims as if it were gone for good\n", bf.node)
			}
			r.Node = bf.node
			leases, err := b.GC(r)
			verb := "would release"
			if r.Apply {
				verb = "released"
			}
			for _, l := range leases {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", verb, l.Describe())
			}
			if err != nil {
				return err
			}
			if !r.Apply {
				fmt.Fprintf(cmd.ErrOrStderr(), "%d to release; nothing changed (run again with --apply)\n", len(leases))
			}
			return nil
		},
	}
	bf.add(c, f.Etcd, true, "the node whose claims to collect (required with --etcd)")
	c.Flags().StringArrayVar(&networks, "network", nil, "the network whose state directory to collect; with --cri, a network the runtime serves beside its conf dir's (repeatable)")
	c.Flags().StringVar(&r.Pool, "pool", "", "the pool whose state directory to collect")
	c.Flags().StringArrayVar(&keep, "keep", nil, "a live attachment CONTAINERID[@IFNAME] (repeatable)")
	c.Flags().StringVar(&keepFile, "keep-file", "", "a file with one CONTAINERID[@IFNAME] per line ('#' comments)")
	c.Flags().BoolVar(&r.Apply, "apply", false, "release; without it, only print the plan")
	c.Flags().DurationVar(&r.DeadAfter, "dead-after", 24*time.Hour, "with --etcd: refuse to --apply while --node was seen alive within this long")
	c.Flags().BoolVar(&r.Force, "force", false, "with --etcd: --apply even if --node was seen alive within --dead-after")
	cri.add(c, f.CRI)
	return c
}

// parseKeep reads "CONTAINERID" (every reservation of that container) or
// "CONTAINERID@IFNAME" (that attachment, plus the container's legacy
// id-only reservations).
func parseKeep(s string) (alloc.Attachment, error) {
	id, ifname, _ := strings.Cut(strings.TrimSpace(s), "@")
	if id == "" {
		return alloc.Attachment{}, fmt.Errorf("invalid --keep %q: want CONTAINERID[@IFNAME]", s)
	}
	return alloc.Attachment{ContainerID: id, IfName: ifname}, nil
}

// readKeepFile reads --keep-file: one CONTAINERID[@IFNAME] per line;
// blank lines and lines starting with '#' are skipped.
func readKeepFile(path string) ([]alloc.Attachment, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []alloc.Attachment
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		a, err := parseKeep(line)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, sc.Err()
}
