package benchstat

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
)

// initLine matches one line of GODEBUG=inittrace=1, e.g.
// "init internal/bytealg @0.008 ms, 0 ms clock, 0 bytes, 0 allocs".
var initLine = regexp.MustCompile(`^init (\S+) @[0-9.]+ ms, ([0-9.]+) ms clock, ([0-9]+) bytes, ([0-9]+) allocs`)

// ParseInittrace reads a process's stderr under GODEBUG=inittrace=1: the
// sum of the ms clock of every init line, and that clock by package
// (len(byPkg) is the number of packages initialised). Other lines are
// the program's own and are ignored.
func ParseInittrace(stderr []byte) (sum float64, byPkg map[string]float64) {
	byPkg = map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		m := initLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		sum += v
		byPkg[m[1]] += v
	}
	return sum, byPkg
}
