#!/bin/sh
# Runs every Go fuzz target of the module (func FuzzXxx in a _test.go file)
# for DURATION each (default 30s), one at a time: `go test -fuzz` takes one
# target of one package per run. A failure stops the loop; its input is
# written to that package's testdata/fuzz/FuzzXxx/ as a regression seed.
# DURATION is anything -fuzztime takes: a time (30s) or a count of inputs
# (20000x). Unattended runs (CI) should use a count: a timed run can fail with
# "context deadline exceeded" when Go's coordinator races its own deadline.
#
#   scripts/fuzz.sh [DURATION]      e.g. scripts/fuzz.sh 5m, scripts/fuzz.sh 20000x
set -eu
duration=${1:-30s}
cd "$(dirname "$0")/.."
targets=$(grep -rl --include='*_test.go' '^func Fuzz' internal cmd 2>/dev/null | sort |
	while read -r file; do
		sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file" |
			while read -r name; do echo "./$(dirname "$file") $name"; done
	done)
if [ -z "$targets" ]; then
	echo "fuzz.sh: no fuzz targets found" >&2
	exit 1
fi
echo "$targets" | while read -r pkg name; do
	echo "== $name ($pkg) for $duration"
	go test -run '^$' -fuzz "^$name\$" -fuzztime "$duration" "$pkg"
done
