#!/usr/bin/env bash
# Runs every Go test of the module (`go test -count=1 ./...`, extra
# arguments passed on) through internal/tools/testreport: the usual
# package verdicts, the output of every failed test, every skipped test
# with its "--- SKIP" line and reason, and a closing count
# ("tests: N passed, N failed, N skipped"). Exits non-zero when go test
# or the report does.
set -euo pipefail
cd "$(dirname "$0")/.."
report=$(mktemp -d)
trap 'rm -rf "$report"' EXIT
go build -o "$report/testreport" ./internal/tools/testreport
go test -count=1 -json "$@" ./... 2>&1 | "$report/testreport"
