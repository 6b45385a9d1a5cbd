package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/testdockerd"
)

// dockerResult is `docker run --rm` wall time on each network.
type dockerResult struct {
	driver, builtin []time.Duration
	version         string
}

// measureDocker starts a private dockerd and the driver, creates one
// network per IPAM (same bridge driver, same options otherwise) and
// alternates `docker run --rm busybox true` between them. The empty
// string means it ran; otherwise why it could not.
func measureDocker(bin, tmp string, n int) (dockerResult, string) {
	var res dockerResult
	if err := testdockerd.Usable(); err != nil {
		return res, err.Error()
	}
	daemon, err := testdockerd.Start(tmp, "dockerd-")
	if err != nil {
		return res, err.Error()
	}
	defer daemon.Stop()
	name := "cnpd-bench-" + strconv.Itoa(os.Getpid())
	drv, err := startDriver(bin, filepath.Join(testdockerd.PluginDir, name+".sock"), filepath.Join(tmp, "docker-data"), `{}`)
	if err != nil {
		return res, err.Error()
	}
	defer drv.stop()
	defer daemon.Clean() // networks go while the driver still answers
	const image = "cnpd-busybox"
	if err := daemon.ImportBusybox(image); err != nil {
		return res, err.Error()
	}
	res.version, _ = daemon.Run("version", "--format", "{{.Server.Version}}")
	nets := []struct{ name, subnet string }{{"cnpd-bdrv", "10.213.252.0/24"}, {"cnpd-bbin", "10.213.253.0/24"}}
	for i, nw := range nets {
		args := []string{"network", "create", "-o", "com.docker.network.bridge.name=" + nw.name, "--subnet", nw.subnet}
		if i == 0 {
			args = append(args, "--ipam-driver", name)
		}
		if _, err := daemon.Run(append(args, nw.name)...); err != nil {
			return res, err.Error()
		}
	}
	for i := range n + 2 {
		for j, nw := range nets {
			start := time.Now()
			if _, err := daemon.Run("run", "--rm", "--network", nw.name, image, "true"); err != nil {
				return res, fmt.Sprintf("docker run on %s: %v", nw.name, err)
			}
			d := time.Since(start)
			if i < 2 {
				continue
			}
			if j == 0 {
				res.driver = append(res.driver, d)
			} else {
				res.builtin = append(res.builtin, d)
			}
		}
	}
	return res, ""
}
