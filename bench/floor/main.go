// Command floor is the benchmark's exec floor: the least a CNI plugin
// written in Go can cost. Like a plugin it reads its config from stdin and
// answers ADD with a (fixed, small) result; it does nothing else, so the
// harness's timings of it are process creation, Go runtime start-up and
// the pipe round trip, and nothing a real plugin could avoid.
package main

import (
	"io"
	"os"
)

const result = `{"cniVersion":"1.0.0","ips":[{"address":"10.10.0.2/16","gateway":"10.10.0.1"}]}`

func main() {
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		os.Exit(1)
	}
	if os.Getenv("CNI_COMMAND") == "ADD" {
		_, _ = os.Stdout.WriteString(result)
	}
}
