package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/cniplugins/cniplugins/internal/benchstat"
)

// execResult is one binary's exec figures.
type execResult struct {
	version, add, del []time.Duration
	initMS            []float64 // package init clock per run (inittrace)
	initPkgs          []int
}

// measureExec interleaves the two binaries so that machine noise hits
// both alike: VERSION, then ADD and DEL of ipam-da-pools standalone on an
// empty range, then (fewer) VERSION runs with GODEBUG=inittrace=1.
func measureExec(bins [2]flavourBin, tmp string, n, nInit int) ([2]execResult, error) {
	var res [2]execResult
	for i := range n + 3 {
		for b, fb := range bins {
			v, _, err := runCNI(fb, "VERSION", "", nil, nil)
			if err != nil {
				return res, err
			}
			conf := []byte(fmt.Sprintf(`{"cniVersion":"1.0.0","name":"bench","ipam":{"type":"ipam-da-pools","ranges":[[{"subnet":"10.213.250.0/24"}]],"dataDir":%q}}`,
				filepath.Join(tmp, fb.name+"-data")))
			a, _, err := runCNI(fb, "ADD", "c1", conf, nil)
			if err != nil {
				return res, err
			}
			d, _, err := runCNI(fb, "DEL", "c1", conf, nil)
			if err != nil {
				return res, err
			}
			if i >= 3 { // warm-up runs are not counted
				res[b].version = append(res[b].version, v)
				res[b].add = append(res[b].add, a)
				res[b].del = append(res[b].del, d)
			}
		}
	}
	for range nInit {
		for b, fb := range bins {
			_, stderr, err := runCNI(fb, "VERSION", "", nil, []string{"GODEBUG=inittrace=1"})
			if err != nil {
				return res, err
			}
			total, byPkg := benchstat.ParseInittrace(stderr)
			res[b].initMS = append(res[b].initMS, total)
			res[b].initPkgs = append(res[b].initPkgs, len(byPkg))
		}
	}
	return res, nil
}

// runCNI execs ipam-da-pools from fb's bin dir as a runtime does.
func runCNI(fb flavourBin, command, cid string, stdin []byte, env []string) (time.Duration, []byte, error) {
	cmd := exec.Command(filepath.Join(fb.cniDir, "ipam-da-pools"))
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "CNI_COMMAND=" + command, "CNI_CONTAINERID=" + cid,
		"CNI_NETNS=/var/run/netns/bench", "CNI_IFNAME=eth0", "CNI_PATH=" + fb.cniDir}, env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return d, nil, fmt.Errorf("%s %s: %v: %s %s", fb.name, command, err, out.Bytes(), errb.Bytes())
	}
	return d, errb.Bytes(), nil
}
