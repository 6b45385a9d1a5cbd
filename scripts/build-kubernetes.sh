#!/bin/sh
# build-kubernetes.sh DIR VERSION: builds kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet and kubectl of Kubernetes
# VERSION from the Go module proxy into DIR (test/kubernetes runs a
# single-node cluster of them). Called by test-deps.sh, which caches DIR.
#
# k8s.io/kubernetes is not meant to be a dependency: its go.mod requires
# its 31 staging modules (k8s.io/api, k8s.io/client-go, ...) at v0.0.0 and
# replaces them with directories of its own tree, and a dependency's
# replaces are ignored. So a scratch module requires it with both require
# blocks of its go.mod copied (the exact versions it is released with) and
# replaces each staging module with its published v0.MINOR.PATCH. Each
# command is added with its version: a bare `go get` path resolves to the
# newest release and conflicts. Static (CGO_ENABLED=0) and providerless (no
# cloud provider SDKs): about ten minutes on two cores.
set -eu
dir=$1 version=$2
staging=v0.${version#v1.}
major=1 minor=$(echo "$version" | cut -d. -f2)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
cd "$work"
export GOFLAGS=-mod=mod GOWORK=off
gomod=$(cd / && go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
[ -f "$gomod" ] || { echo "build-kubernetes.sh: no go.mod for k8s.io/kubernetes@$version" >&2; exit 1; }
{
	echo "module cniplugins.test/kubernetes"
	echo
	sed -n 's/^go \(.*\)$/go \1/p' "$gomod"
	echo
	echo "require k8s.io/kubernetes $version"
	echo
	# Both require blocks, verbatim.
	awk '/^require \($/ {on=1} on {print} on && /^\)$/ {on=0; print ""}' "$gomod"
	echo "replace ("
	sed -n '/^replace (/,/^)/ s#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*$#\t\1 => \1 '"$staging"'#p' "$gomod"
	echo ")"
} >go.mod
n=$(grep -c " => k8s.io/" go.mod)
echo "build-kubernetes.sh: k8s.io/kubernetes $version with $n staging modules at $staging" >&2

cmds="kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl"
for c in $cmds; do
	go get "k8s.io/kubernetes/cmd/$c@$version" >/dev/null 2>&1 || go get "k8s.io/kubernetes/cmd/$c@$version"
done

v=k8s.io/component-base/version
cv=k8s.io/client-go/pkg/version
flags=""
for p in $v $cv; do
	flags="$flags -X $p.gitVersion=$version -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done
mkdir -p "$dir"
for c in $cmds; do
	echo "build-kubernetes.sh: building $c" >&2
	CGO_ENABLED=0 go build -trimpath -tags providerless -ldflags "-s -w $flags" -o "$dir/$c" "k8s.io/kubernetes/cmd/$c"
done
