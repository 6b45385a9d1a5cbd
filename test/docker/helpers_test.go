package docker

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dk runs the docker client against the private daemon; it fails the test
// on error.
func dk(t *testing.T, args ...string) string {
	t.Helper()
	out, err := daemon.Run(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// network creates a Docker network on the driver with its bridge named
// like the network (cnpd-*), and removes it when the test ends.
func network(t *testing.T, name string, args ...string) {
	t.Helper()
	all := append([]string{"network", "create", "--ipam-driver", drv.name, "-o", "com.docker.network.bridge.name=" + name}, args...)
	dk(t, append(all, name)...)
	t.Cleanup(func() { _, _ = daemon.Run("network", "rm", name) })
}

// ipamConfig is the network's IPAM config as dockerd recorded it.
type ipamEntry struct {
	Subnet, IPRange, Gateway string
	AuxiliaryAddresses       map[string]string
}

func ipamConfig(t *testing.T, net string) []ipamEntry {
	t.Helper()
	var cfg []ipamEntry
	if err := json.Unmarshal([]byte(dk(t, "network", "inspect", "-f", "{{json .IPAM.Config}}", net)), &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// runDetached starts a container that sleeps, removed when the test ends.
func runDetached(t *testing.T, name string, args ...string) string {
	t.Helper()
	all := append([]string{"run", "-d", "--stop-timeout", "1", "--name", name}, args...)
	dk(t, append(all, image, "sleep", "300")...)
	t.Cleanup(func() { _, _ = daemon.Run("rm", "-f", name) })
	return name
}

// containerIPs is what dockerd says the container got on net.
func containerIPs(t *testing.T, c, net string) (v4, v6 string) {
	t.Helper()
	out := dk(t, "inspect", "-f", `{{with index .NetworkSettings.Networks "`+net+`"}}{{.IPAddress}} {{.GlobalIPv6Address}}{{end}}`, c)
	f := strings.Fields(out + " ")
	if len(f) > 0 {
		v4 = f[0]
	}
	if len(f) > 1 {
		v6 = f[1]
	}
	return v4, v6
}

// eth0 lists the addresses (CIDR) on the container's eth0, as the
// container itself sees them.
func eth0(t *testing.T, c string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(dk(t, "exec", c, "ip", "-o", "addr", "show", "eth0"), "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if (f[i] == "inet" || f[i] == "inet6") && !strings.HasPrefix(f[i+1], "fe80:") {
				out = append(out, f[i+1])
			}
		}
	}
	return out
}

// reservations lists a pool directory's reservation files: address →
// content.
func reservations(t *testing.T, pool string) map[string]string {
	t.Helper()
	dir := filepath.Join(dataDir, "_pools", pool)
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if _, err := netip.ParseAddr(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// isDockers says whether a reservation's content follows the owner
// convention for the driver.
func isDockers(content string) bool {
	f := strings.Split(content, "\r\n")
	return len(f) == 3 && f[0] == "_docker" && f[2] == "_docker" && f[1] != ""
}

// driverState is the driver's persisted pools.
type poolState struct {
	Pool, Subnet, SubPool string
	Refs                  int
	Gateways              []string
}

func driverState(t *testing.T) map[string]poolState {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "_docker", "state.json"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Pools map[string]poolState }
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st.Pools
}

func poolsFor(t *testing.T, subnet string) []poolState {
	t.Helper()
	var out []poolState
	for _, p := range driverState(t) {
		if p.Subnet == subnet {
			out = append(out, p)
		}
	}
	return out
}
