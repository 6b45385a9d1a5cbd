#!/usr/bin/env bash
# Runs every Go test of the module (`go test -count=1 ./...`, extra
# arguments passed on, then the tests behind the etcdcluster build tag)
# through internal/tools/testreport: the usual
# package verdicts, the output of every failed test, every skipped test
# with its "--- SKIP" line and reason, and a closing count
# ("tests: N passed, N failed, N skipped"). Exits non-zero when go test
# or the report does.
set -euo pipefail
cd "$(dirname "$0")/.."
report=$(mktemp -d)
trap 'rm -rf "$report"' EXIT
go build -o "$report/testreport" ./internal/tools/testreport
# The second run: the engine's store contract, and a quota count larger
# than one transaction may read, on a real etcd cluster, behind a build
# tag so that the unit tests (./internal/...) need none.
{
	# 30 minutes a package, not go test's 10: test/kubernetes runs a
	# whole cluster, and the packages share two cores.
	go test -count=1 -json -timeout 30m "$@" ./...
	go test -count=1 -json -tags etcdcluster -run '^(TestStoreContractOnACluster|TestQuotaCountPastMaxTxnOps)$' "$@" ./internal/etcdstore
} 2>&1 | "$report/testreport"
