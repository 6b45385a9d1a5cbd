// Command etcdfloor is the benchmark's floor for an etcd-backed plugin:
// what ipam-da-etcd cannot avoid. Like a plugin it reads its config from
// stdin, then opens one connection to the cluster through the project's
// own etcd client and sends ONE small transaction (a comparison and a put
// or delete of one key, fsync'd by a raft commit on the members), and
// answers ADD with a fixed result. Its timings are process start, the Go
// runtime, the client's connection and one commit: ipam-da-etcd's ADD and
// DEL are each one transaction, so anything they take above this is work
// they could, in principle, cut.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

const result = `{"cniVersion":"1.0.0","ips":[{"address":"10.10.0.2/16","gateway":"10.10.0.1"}]}`

// conf is the part of the network configuration the floor reads: the
// same ipam.etcd object ipam-da-etcd takes.
type conf struct {
	IPAM struct {
		Etcd struct {
			Endpoints []string `json:"endpoints"`
			Prefix    string   `json:"prefix"`
		} `json:"etcd"`
	} `json:"ipam"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "etcdfloor:", err)
		os.Exit(1)
	}
}

func run() error {
	var c conf
	if err := json.NewDecoder(os.Stdin).Decode(&c); err != nil {
		return err
	}
	cmd := os.Getenv("CNI_COMMAND")
	if cmd != "ADD" && cmd != "DEL" {
		return nil
	}
	cl := etcdkv.New(etcdkv.Config{Endpoints: c.IPAM.Etcd.Endpoints, Timeout: 10 * time.Second})
	// A key of the size of an address claim's, compared and written (or
	// deleted) in one transaction, as a claim or a release is.
	key := c.IPAM.Etcd.Prefix + "floor/" + os.Getenv("CNI_CONTAINERID")
	t := etcdkv.Txn{If: []etcdkv.Cmp{etcdkv.Absent(key)}, Then: []etcdkv.Op{etcdkv.Put(key, []byte(os.Getenv("CNI_IFNAME")))}}
	if cmd == "DEL" {
		t = etcdkv.Txn{If: []etcdkv.Cmp{etcdkv.ValueIs(key, []byte(os.Getenv("CNI_IFNAME")))}, Then: []etcdkv.Op{etcdkv.Delete(key)}}
	}
	if _, err := cl.TxnOnce(t); err != nil {
		return err
	}
	if cmd == "ADD" {
		_, err := os.Stdout.WriteString(result)
		return err
	}
	return nil
}
