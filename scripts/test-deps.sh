#!/bin/sh
# test-deps.sh: installs what the test suite needs on a fresh machine:
# Debian's upstream CNI plugins (host-local, bridge, loopback: the
# compatibility and end-to-end tests run against them), iproute2 (ip
# netns), ping (the end-to-end tests ping their own bridge's gateway), and
# Debian's docker.io with busybox-static (test/docker runs the full
# flavour's docker-ipam under a private dockerd, on an image imported from
# busybox-static), and containerd (test/cri; containerd 2.x and upstream
# plugins that speak CNI 1.1.0 are built from the Go module proxy, below),
# and Kubernetes itself (test/kubernetes), built the same way.
# Go modules are fetched by `go mod download`. Does nothing when everything
# is already there; needs root for apt.
set -eu
need=""
[ -x /usr/lib/cni/host-local ] || need="$need containernetworking-plugins"
command -v ip >/dev/null 2>&1 || need="$need iproute2"
command -v ping >/dev/null 2>&1 || need="$need iputils-ping"
# podman (CNI backend), runc and busybox-static: the real-runtime test of
# ipam-ds-args (test/e2e/podman_test.go), whose image is busybox imported.
command -v podman >/dev/null 2>&1 || need="$need podman"
command -v runc >/dev/null 2>&1 || need="$need runc"
[ -x /usr/sbin/dockerd ] && [ -x /usr/bin/docker ] || need="$need docker.io"
# The test images are /bin/busybox imported as it is, so it must be the
# static build: Debian's plain busybox package also provides /bin/busybox,
# dynamically linked, and no image made of it runs (ldd fails on a static
# executable).
if [ ! -x /bin/busybox ] || ldd /bin/busybox >/dev/null 2>&1; then
	need="$need busybox-static"
fi
# containerd (with its ctr) and runc: test/cri runs a private containerd and
# drives its CRI as the kubelet does.
command -v containerd >/dev/null 2>&1 || need="$need containerd"
# ipam-da-etcd's tests and benchmark run a real etcd cluster on loopback.
command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ] || need="$need etcd-server"
command -v etcdctl >/dev/null 2>&1 || need="$need etcd-client"
# strace: make bench counts the system calls of an ADD and a DEL.
command -v strace >/dev/null 2>&1 || need="$need strace"
if [ -n "$need" ]; then
	if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		echo "test-deps.sh: missing$need and cannot apt-get install them (not root or no apt); the tests that need them will skip loudly" >&2
	else
		echo "test-deps.sh: installing$need" >&2
		# docker.io's and containerd's packages start their system services
		# on install; the tests run a private dockerd and refuse to run next
		# to a system containerd. policy-rc.d (Debian's invoke-rc.d policy)
		# keeps package installs from starting any service meanwhile.
		policy=""
		if [ ! -e /usr/sbin/policy-rc.d ]; then
			policy=/usr/sbin/policy-rc.d
			printf '#!/bin/sh\nexit 101\n' >"$policy"
			chmod 0755 "$policy"
			trap 'rm -f "$policy"' EXIT INT TERM
		fi
		apt-get update -qq >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
	fi
fi
go mod download

# containerd 2.x (test/cri runs every case on Debian's containerd 1.6 and
# on it) and upstream CNI plugins new enough to pass STATUS to their IPAM
# (bridge, loopback and host-local of containernetworking/plugins, which
# support spec 1.1.0 from v1.6; Debian 12's 1.1.1 stop at 1.0.0), built
# from the Go module proxy once into fixed directories, then reused. No
# apt package carries these versions. Building containerd takes minutes.
runtime_dir=/usr/local/lib/cniplugins-test
# module "script": the packages are a script run as SCRIPT DIR VERSION.
build_once() { # name module version tags package...
	name=$1 module=$2 version=$3 tags=$4
	shift 4
	dir=$runtime_dir/$name-$version
	[ -f "$dir/.complete" ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "test-deps.sh: $name $version missing from $dir and not root; the tests that need it will skip loudly" >&2
		return 0
	fi
	echo "test-deps.sh: building $name $version into $dir" >&2
	tmp=$(mktemp -d "$runtime_dir.tmp.XXXXXX")
	chmod 0755 "$tmp"
	if [ "$module" = script ]; then
		built() { "$@" "$tmp" "$version"; }
	else
		pkgs=""
		for p in "$@"; do pkgs="$pkgs $module/$p@$version"; done
		# Outside this module (cd /): go install PKG@VERSION builds the
		# package's own module as released, leaving go.mod untouched.
		built() { (cd / && GOBIN=$tmp CGO_ENABLED=0 GOFLAGS= go install -trimpath -tags "$tags" $pkgs); }
	fi
	if ! built "$@"; then
		rm -rf "$tmp"
		echo "test-deps.sh: building $name $version failed" >&2
		return 1
	fi
	touch "$tmp/.complete"
	rm -rf "$dir"
	mv "$tmp" "$dir"
}
[ "$(id -u)" -ne 0 ] || mkdir -p "$runtime_dir"
build_once containerd github.com/containerd/containerd/v2 v2.4.2 "no_btrfs no_devmapper no_zfs" \
	cmd/containerd cmd/containerd-shim-runc-v2 cmd/ctr
build_once cni-plugins github.com/containernetworking/plugins v1.9.1 "" \
	plugins/main/bridge plugins/main/loopback plugins/ipam/host-local
# Kubernetes (test/kubernetes runs a single-node cluster of it): the API
# server, controller manager, scheduler, kubelet and kubectl, about ten
# minutes on two cores.
build_once kubernetes script v1.34.4 "" "$(dirname "$0")/build-kubernetes.sh"
