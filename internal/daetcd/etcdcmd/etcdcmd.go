// Package etcdcmd is the full flavour's `etcd` command: the operators'
// view of ipam-da-etcd's claims, for a node that is gone for good.
//
//	cniplugins-full etcd leases  --endpoints URL,... [--node N] [--network N] [--pool P] [--container ID] [-o table|json]
//	cniplugins-full etcd release ADDRESS (--network N | --pool P) [--container ID [--ifname IF]] [--dry-run]
//	cniplugins-full etcd gc --node N [--network N | --pool P] [--keep CID[@IF]]... [--keep-file FILE] [--apply]
//
// Flags that the local commands (leases, release, gc) also have keep
// their names and meaning.
package etcdcmd

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/daetcd"
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
)

// Commands returns the `etcd` command, for cli.Flavour.Commands.
func Commands() []*cobra.Command {
	var c daetcd.Cluster
	root := &cobra.Command{
		Use:   "etcd",
		Short: "List and release ipam-da-etcd's claims in etcd (for a node that is gone for good)",
	}
	f := root.PersistentFlags()
	f.StringSliceVar(&c.Endpoints, "endpoints", nil, "etcd client URLs, comma-separated (ipam.etcd.endpoints)")
	f.StringVar(&c.Prefix, "prefix", daetcd.DefaultPrefix, "key prefix (ipam.etcd.prefix)")
	f.DurationVar(&c.Timeout, "timeout", daetcd.DefaultTimeout, "how long to wait for etcd")
	f.StringVar(&c.CAFile, "cacert", "", "CA bundle to verify the members (ipam.etcd.tls.caFile)")
	f.StringVar(&c.CertFile, "cert", "", "client certificate (ipam.etcd.tls.certFile)")
	f.StringVar(&c.KeyFile, "key", "", "client key (ipam.etcd.tls.keyFile)")
	f.StringVar(&c.Username, "user", "", "etcd user name (ipam.etcd.username)")
	f.StringVar(&c.PasswordFile, "password-file", "", "file holding the user's password (ipam.etcd.passwordFile)")
	_ = root.MarkPersistentFlagRequired("endpoints")
	root.AddCommand(leasesCmd(&c), releaseCmd(&c), gcCmd(&c))
	return []*cobra.Command{root}
}

func leasesCmd(c *daetcd.Cluster) *cobra.Command {
	var flt daetcd.Filter
	var format string
	var noHeaders bool
	cmd := &cobra.Command{
		Use:   "leases",
		Short: "List claims: address, pool or network, node, container, interface, since",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ad, err := daetcd.NewAdmin(*c)
			if err != nil {
				return err
			}
			ls, err := ad.Leases(flt)
			if err != nil {
				return err
			}
			return printLeases(cmd.OutOrStdout(), ls, format, noHeaders)
		},
	}
	cmd.Flags().StringVar(&flt.Node, "node", "", "only this node's claims")
	cmd.Flags().StringVar(&flt.Network, "network", "", "only this network's claims")
	cmd.Flags().StringVar(&flt.Pool, "pool", "", "only this pool's claims")
	cmd.Flags().StringVar(&flt.Container, "container", "", "only claims of this container ID (or an ID starting with it)")
	cmd.Flags().StringVarP(&format, "output", "o", "table", "output format: table or json")
	cmd.Flags().BoolVar(&noHeaders, "no-headers", false, "omit the table header")
	return cmd
}

func releaseCmd(c *daetcd.Cluster) *cobra.Command {
	var network, pool, container, ifname string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "release ADDRESS (--network N | --pool P)",
		Short: "Release one claim; refuses when the address is not claimed or --container does not match its owner",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			addr, err := netip.ParseAddr(args[0])
			if err != nil {
				return fmt.Errorf("%q is not an IP address", args[0])
			}
			scope, err := scopeOf(network, pool, true)
			if err != nil {
				return err
			}
			ad, err := daetcd.NewAdmin(*c)
			if err != nil {
				return err
			}
			l, err := ad.Release(addr, scope, container, ifname, dryRun)
			if err != nil {
				return err
			}
			verb := "released"
			if dryRun {
				verb = "would release"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s (%s, node %s, container %s, ifname %s)\n", verb, addr, l.ScopeName(), l.Node, l.ContainerID, l.IfName)
			return nil
		},
	}
	cmd.Flags().StringVar(&network, "network", "", "the network whose standalone claims hold the address")
	cmd.Flags().StringVar(&pool, "pool", "", "the pool that holds the address")
	cmd.Flags().StringVar(&container, "container", "", "refuse unless this container ID holds the address")
	cmd.Flags().StringVar(&ifname, "ifname", "", "with --container: refuse unless this interface holds it")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "check and print, change nothing")
	return cmd
}

func gcCmd(c *daetcd.Cluster) *cobra.Command {
	var node, network, pool, keepFile string
	var keep []string
	var apply bool
	cmd := &cobra.Command{
		Use:   "gc --node N [--network N | --pool P] [--keep CID[@IF]]... [--keep-file FILE] [--apply]",
		Short: "Release every claim of a node except the kept attachments; prints the plan, changes nothing without --apply",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if network != "" && pool != "" {
				return errors.New("--network and --pool exclude each other")
			}
			kept, err := keepList(keep, keepFile)
			if err != nil {
				return err
			}
			ad, err := daetcd.NewAdmin(*c)
			if err != nil {
				return err
			}
			plan, err := ad.GC(node, daetcd.Filter{Network: network, Pool: pool}, kept, apply)
			verb := "would release"
			if apply {
				verb = "released"
			}
			for _, l := range plan {
				addr := l.Address
				if addr == "" {
					addr = "(failed ADD's marker)"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s (%s, container %s, ifname %s)\n", verb, addr, l.ScopeName(), l.ContainerID, l.IfName)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&node, "node", "", "the node whose claims to collect (required)")
	cmd.Flags().StringVar(&network, "network", "", "only this network's claims")
	cmd.Flags().StringVar(&pool, "pool", "", "only this pool's claims")
	cmd.Flags().StringArrayVar(&keep, "keep", nil, "a live attachment CONTAINERID[@IFNAME] (repeatable)")
	cmd.Flags().StringVar(&keepFile, "keep-file", "", "a file with one CONTAINERID[@IFNAME] per line ('#' comments)")
	cmd.Flags().BoolVar(&apply, "apply", false, "release; without it, only print the plan")
	_ = cmd.MarkFlagRequired("node")
	return cmd
}

func scopeOf(network, pool string, required bool) (dapools.Scope, error) {
	switch {
	case network != "" && pool != "":
		return dapools.Scope{}, errors.New("--network and --pool exclude each other")
	case network == "" && pool == "" && required:
		return dapools.Scope{}, errors.New("one of --network or --pool is required")
	}
	return dapools.Scope{Network: network, Pool: pool}, nil
}

// keepList reads --keep and --keep-file entries: CONTAINERID[@IFNAME].
func keepList(keep []string, file string) ([]hostlocal.Attachment, error) {
	entries := append([]string(nil), keep...)
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
				entries = append(entries, line)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	out := make([]hostlocal.Attachment, 0, len(entries))
	for _, e := range entries {
		cid, ifname, _ := strings.Cut(e, "@")
		if cid == "" {
			return nil, fmt.Errorf("keep entry %q has no container ID", e)
		}
		out = append(out, hostlocal.Attachment{ContainerID: cid, IfName: ifname})
	}
	return out, nil
}

// leaseJSON is the documented JSON shape of one lease.
type leaseJSON struct {
	Address     string `json:"address"` // empty: a failed ADD's marker
	Pool        string `json:"pool,omitempty"`
	Network     string `json:"network"`
	Node        string `json:"node"`
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifname"`
	Since       string `json:"since"`
}

func printLeases(w io.Writer, ls []daetcd.Lease, format string, noHeaders bool) error {
	switch format {
	case "json":
		out := make([]leaseJSON, len(ls))
		for i, l := range ls {
			out[i] = leaseJSON{l.Address, l.Scope.Pool, l.Network, l.Node, l.ContainerID, l.IfName, l.Time}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	case "table":
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		if !noHeaders {
			fmt.Fprintln(tw, "ADDRESS\tPOOL\tNETWORK\tNODE\tCONTAINER\tIFNAME\tSINCE")
		}
		for _, l := range ls {
			addr, pool := l.Address, l.Scope.Pool
			if addr == "" {
				addr = "(failed ADD)"
			}
			if pool == "" {
				pool = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", addr, pool, l.Network, l.Node, l.ContainerID, l.IfName, since(l.Since()))
		}
		return tw.Flush()
	}
	return fmt.Errorf("unknown output format %q: table or json", format)
}

func since(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
