#!/bin/sh
# install-symlinks.sh [--copy] [--force] [--uninstall] [DIR]
#
# Installs the cniplugins binary into DIR (default /opt/cni/bin) and one
# relative symlink per personality (`cniplugins list`). Idempotent; never
# replaces a file it did not install unless --force; --copy makes hard
# links (or copies) for bin dirs mounted where a link target is invisible;
# --uninstall removes only what it installed.
#
# The rules live in the binary (`cniplugins install`), so this script only
# finds the binary: beside it (release tarball) or in ../bin (source tree),
# or wherever CNIPLUGINS_BIN says.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${CNIPLUGINS_BIN:-}
if [ -z "$bin" ]; then
	for candidate in "$here/cniplugins" "$here/../bin/cniplugins"; do
		if [ -x "$candidate" ]; then
			bin=$candidate
			break
		fi
	done
fi
if [ -z "$bin" ]; then
	echo "install-symlinks.sh: no cniplugins binary beside the script or in ../bin (run 'make build', or set CNIPLUGINS_BIN)" >&2
	exit 1
fi
exec "$bin" install --binary "$bin" "$@"
