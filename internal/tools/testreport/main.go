// Command testreport reads `go test -json` on stdin and writes what a
// reader of a test run needs: each package's verdict line (ok, FAIL, no
// test files), the whole output of every failed test, every skipped test
// with its reason, and a closing count:
//
//	tests: 812 passed, 0 failed, 0 skipped
//
// A plain `go test` hides skips (they print only under -v), so a suite
// whose daemons never started could pass silently; here every skip is
// shown with its "--- SKIP" line and counted (.ci/run fails on any).
//
// It exits non-zero when a test or a package (or its build) failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type report struct {
	out                    io.Writer
	buffered               map[string][]string // package + "\x00" + test → its output so far
	passed, failed, broken int
	skipped                []string
}

func main() {
	r := &report{out: os.Stdout, buffered: map[string][]string{}}
	if err := r.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	os.Exit(r.close())
}

func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not an event: the go command's own text. Its failures
			// also end go test with a non-zero status, which the
			// caller keeps (scripts/gotest.sh).
			fmt.Fprintf(r.out, "%s\n", line)
			continue
		}
		r.handle(e)
	}
	return sc.Err()
}

func (r *report) handle(e event) {
	id := e.Package + "\x00" + e.Test
	switch {
	case e.Action == "build-output":
		fmt.Fprint(r.out, e.Output)
	case e.Action == "build-fail":
		r.broken++
	case e.Test == "" && e.Action == "output":
		// A package's own lines: its verdict, and whatever TestMain printed.
		if e.Output != "PASS\n" && e.Output != "FAIL\n" {
			fmt.Fprint(r.out, e.Output)
		}
	case e.Test == "" && e.Action == "fail":
		r.broken++
	case e.Test == "":
		// A package's pass, or its skip for having no test files.
	case e.Action == "output":
		r.buffered[id] = append(r.buffered[id], e.Output)
	case e.Action == "pass":
		r.passed++
		delete(r.buffered, id)
	case e.Action == "fail":
		r.failed++
		fmt.Fprint(r.out, strings.Join(r.buffered[id], ""))
		delete(r.buffered, id)
	case e.Action == "skip":
		r.skipped = append(r.skipped, e.Package+" "+e.Test)
		fmt.Fprint(r.out, strings.Join(r.buffered[id], ""))
		delete(r.buffered, id)
	}
}

// close prints the closing count and returns the exit code.
func (r *report) close() int {
	sort.Strings(r.skipped)
	for _, s := range r.skipped {
		fmt.Fprintln(r.out, "skipped:", s)
	}
	fmt.Fprintf(r.out, "tests: %d passed, %d failed, %d skipped\n", r.passed, r.failed, len(r.skipped))
	if r.failed > 0 || r.broken > 0 {
		return 1
	}
	return 0
}
