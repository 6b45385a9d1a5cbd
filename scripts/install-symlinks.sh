#!/bin/sh
# install-symlinks.sh [--flavour lean|verbose|full] [--copy] [--force] [--uninstall] [DIR]
#
# Installs the cniplugins binary into DIR (default /opt/cni/bin) under the
# name cniplugins, and one relative symlink per personality (`cniplugins
# list`). Idempotent; never replaces a file it did not install unless
# --force; --copy makes hard links (or copies) for bin dirs mounted where
# a link target is invisible; --uninstall removes only what it installed.
#
# --flavour picks the binary: lean (cniplugins, the default), verbose
# (cniplugins-verbose) or full (cniplugins-full, with docker-ipam and the
# other network-facing pieces). Switching flavours back and forth is
# idempotent, and links to personalities the installed flavour lacks are
# removed.
#
# The rules live in the binary (`cniplugins install`), so this script only
# finds the binary: beside it (release tarball) or in ../bin (source tree),
# or wherever CNIPLUGINS_BIN says.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
file=cniplugins
n=$#
i=0
while [ "$i" -lt "$n" ]; do
	arg=$1
	shift
	i=$((i + 1))
	case $arg in
	--flavour | --flavour=*)
		if [ "$arg" = --flavour ]; then
			if [ "$i" -ge "$n" ]; then
				echo "install-symlinks.sh: --flavour needs a value (lean, verbose or full)" >&2
				exit 2
			fi
			flavour=$1
			shift
			i=$((i + 1))
		else
			flavour=${arg#--flavour=}
		fi
		case $flavour in
		lean) file=cniplugins ;;
		verbose | full) file=cniplugins-$flavour ;;
		*)
			echo "install-symlinks.sh: unknown flavour '$flavour' (lean, verbose or full)" >&2
			exit 2
			;;
		esac
		;;
	*) set -- "$@" "$arg" ;;
	esac
done
bin=${CNIPLUGINS_BIN:-}
if [ -z "$bin" ]; then
	for candidate in "$here/$file" "$here/../bin/$file"; do
		if [ -x "$candidate" ]; then
			bin=$candidate
			break
		fi
	done
fi
if [ -z "$bin" ]; then
	echo "install-symlinks.sh: no $file binary beside the script or in ../bin (run 'make build', or set CNIPLUGINS_BIN)" >&2
	exit 1
fi
exec "$bin" install --binary "$bin" "$@"
