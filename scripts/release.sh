#!/bin/sh
# release.sh [--image-only] [DIST]
#
# Builds the release into DIST (default dist):
#   cniplugins-<version>-linux-amd64.tar.gz
#   cniplugins-<version>-linux-arm64.tar.gz
#   cniplugins-<version>.oci.tar       the lean flavour's image
#   cniplugins-full-<version>.oci.tar  the full flavour's image
#   SHA256SUMS
# With --image-only (`make image`), only the two images.
# Each tarball holds one top directory, cniplugins-<version>/, with the
# binary (cniplugins), its verbose flavour (cniplugins-verbose), the full
# flavour (cniplugins-full: plus docker-ipam and the network-facing
# pieces), install-symlinks.sh (it finds the binary beside itself), README.md,
# LICENSE, docs/ (the reference pages the README links) and examples/.
#
# Reproducible: two runs from one commit give byte-identical tarballs. The
# binaries are built by the Makefile's one recipe (`make build` with
# BINDIR set: static, -trimpath, no VCS stamp, an empty build ID) for the
# baseline of each architecture; the archive is GNU tar with sorted names,
# the commit's time as every mtime, owner and group 0, fixed modes, and
# gzip -n (no name, no timestamp).
#
# The images are OCI image indexes (linux/amd64 and linux/arm64) in OCI
# layout archives, built from the same binaries by internal/tools/ociimage (see
# internal/ociimage): one layer with the binary, one symlink per
# personality and examples/, every timestamp the commit's.
#
# `make release` runs it with the Makefile's VERSION and COMMIT; run alone,
# it works them out the same way. SOURCE_DATE_EPOCH, when set, replaces the
# commit time. The make it runs inherits none of the calling make's
# command-line variables (MAKEFLAGS), so a release is built one way only.
set -eu
unset MAKEFLAGS MFLAGS MAKELEVEL
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tarballs=yes
if [ "${1:-}" = --image-only ]; then
	tarballs=
	shift
fi
dist=${1:-dist}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
COMMIT=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}

case $VERSION in
*/* | "" | .*)
	echo "release.sh: version '$VERSION' cannot name a file" >&2
	exit 1
	;;
esac
for f in README.md LICENSE scripts/install-symlinks.sh; do
	if [ ! -f "$f" ]; then
		echo "release.sh: $f is missing; a release ships it" >&2
		exit 1
	fi
done
tar --version 2>/dev/null | grep -q 'GNU tar' || {
	echo "release.sh: needs GNU tar (--sort=name)" >&2
	exit 1
}

top=cniplugins-$VERSION
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$dist"
dist=$(cd "$dist" && pwd)
files=""
bins=""
for arch in amd64 arm64; do
	stage=$work/$arch/$top
	mkdir -p "$stage/examples" "$stage/docs"
	GOOS=linux GOARCH=$arch GOAMD64=v1 GOARM64=v8.0 \
		make --no-print-directory -C "$root" build BINDIR="$stage" VERSION="$VERSION" COMMIT="$COMMIT"
	bins="$bins -bin $arch=$stage"
	[ -n "$tarballs" ] || continue
	cp scripts/install-symlinks.sh README.md LICENSE "$stage/"
	cp -R examples/. "$stage/examples/"
	cp docs/*.md "$stage/docs/"
	find "$stage" -type d -exec chmod 0755 {} +
	find "$stage" -type f -exec chmod 0644 {} +
	chmod 0755 "$stage/cniplugins" "$stage/cniplugins-verbose" "$stage/cniplugins-full" "$stage/install-symlinks.sh"
	name=$top-linux-$arch.tar.gz
	tar --create --format=gnu --sort=name --mtime="@$epoch" \
		--owner=0 --group=0 --numeric-owner --mode='u+rw,go-w,a+r' \
		-C "$work/$arch" "$top" | gzip -9 -n >"$dist/$name.tmp"
	mv "$dist/$name.tmp" "$dist/$name"
	files="$files $name"
	echo "built $dist/$name"
done
# The builder runs on this machine, whatever GOOS/GOARCH say.
# shellcheck disable=SC2086 # the arguments have no spaces
env -u GOOS -u GOARCH go run ./internal/tools/ociimage -out "$dist" -version "$VERSION" -commit "$COMMIT" -epoch "$epoch" -examples examples $bins
[ -n "$tarballs" ] || exit 0
files="$files cniplugins-$VERSION.oci.tar cniplugins-full-$VERSION.oci.tar"
# shellcheck disable=SC2086 # the names have no spaces
(cd "$dist" && sha256sum $files >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
echo "wrote $dist/SHA256SUMS"
