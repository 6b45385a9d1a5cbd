package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cniplugins/cniplugins/internal/benchstat"
)

// machine is the report's description of where it ran.
type machine struct {
	nproc, cpu, kernel, goVersion, date, commit, hostLocalPkg string
}

func describeMachine(root string) machine {
	m := machine{
		nproc:     firstLine(output("nproc")),
		cpu:       cpuModel(),
		kernel:    firstLine(output("uname", "-srvm")),
		goVersion: firstLine(output("go", "version")),
		date:      time.Now().UTC().Format("2006-01-02 15:04:05 UTC"),
		commit:    gitShort(root),
	}
	if m.nproc == "" {
		m.nproc = strconv.Itoa(runtime.NumCPU())
	}
	if m.kernel == "" {
		b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
		m.kernel = strings.TrimSpace(string(b))
	}
	if m.goVersion == "" {
		m.goVersion = runtime.Version()
	}
	if v := firstLine(output("dpkg-query", "-W", "-f", "${Version}", "containernetworking-plugins")); v != "" {
		m.hostLocalPkg = "containernetworking-plugins " + v
	}
	return m
}

func output(name string, args ...string) string {
	b, err := exec.Command(name, args...).Output()
	if err != nil {
		return ""
	}
	return string(b)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// fsInfo describes the file system the state directories live on: its
// type and what creating an inode and linking a name cost there, which
// explains much of an ADD's cost.
type fsInfo struct {
	fsType       string
	create, link time.Duration // medians
}

var fsMagic = map[int64]string{
	0xEF53: "ext2/3/4", 0x01021994: "tmpfs", 0x9123683E: "btrfs", 0x58465342: "xfs",
	0x794c7630: "overlayfs", 0x2FC12FC1: "zfs", 0x6969: "nfs", 0x65735546: "fuse",
}

func probeFS(dir string) fsInfo {
	var st syscall.Statfs_t
	info := fsInfo{fsType: "unknown"}
	if err := syscall.Statfs(dir, &st); err == nil {
		if name, ok := fsMagic[int64(st.Type)]; ok {
			info.fsType = name
		} else {
			info.fsType = fmt.Sprintf("magic %#x", st.Type)
		}
	}
	d, err := os.MkdirTemp(dir, "fsprobe-")
	if err != nil {
		return info
	}
	defer os.RemoveAll(d)
	const n = 40
	var creates, links []time.Duration
	for i := 0; i < n; i++ {
		p := filepath.Join(d, strconv.Itoa(i))
		t := time.Now()
		if err := os.WriteFile(p, []byte("0123456789abcdef\r\neth0"), 0o644); err != nil {
			return info
		}
		creates = append(creates, time.Since(t))
		t = time.Now()
		if err := os.Link(p, p+".l"); err != nil {
			return info
		}
		links = append(links, time.Since(t))
	}
	info.create, info.link = benchstat.Median(creates), benchstat.Median(links)
	return info
}
