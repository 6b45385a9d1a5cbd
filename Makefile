# cniplugins: one binary, many CNI IPAM personalities.
#   make build     bin/cniplugins, bin/cniplugins-verbose and bin/cniplugins-full
#   make install   build, then install into DESTDIR (default /opt/cni/bin)
#   make test      install test dependencies, then run every test
#   make unit      the unit tests alone: no root, no daemons, seconds
#   make lint      gofmt, go vet, staticcheck
#   make bench     the benchmark harness (see bench/)
#   make chaos     the etcd chaos test for CHAOSTIME per seed (CHAOSSEEDS)
#   make differential  ipam-da-pools and ipam-da-etcd driven alike, DIFFSEEDS × DIFFSTEPS
#   make bench-fleet  ipam-da-etcd as a fleet of 64 simulated hosts (bench/fleet)
#   make fuzz      every fuzz target for FUZZTIME each
#   make release   reproducible tarballs and images in dist/
#   make image     the OCI images alone (lean and full, amd64 and arm64)

# The one build recipe: `make build`, `make release` (scripts/release.sh),
# the tests and the benchmark (internal/testkit.MakeIn) all build through
# the $(BINDIR)/... targets below. Static (CGO_ENABLED=0), -trimpath, no
# VCS stamp and an empty build ID, so one commit gives one binary; the
# environment's GOOS/GOARCH/GOAMD64/GOARM64 pick the target. On the command
# line, BINDIR=dir builds into dir and STRIP= keeps the symbol table (the
# tests, for `go tool nm` and readable traces); neither is read from the
# environment.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
VPKG    := github.com/cniplugins/cniplugins/internal/version
STRIP   := -s -w
BINDIR  := bin
LDFLAGS := $(STRIP) -buildid= -X $(VPKG).Version=$(VERSION) -X $(VPKG).Commit=$(COMMIT)
GOBUILD := CGO_ENABLED=0 go build -trimpath -buildvcs=false
DESTDIR ?= /opt/cni/bin
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: build install test unit lint clean FORCE

build: $(BINDIR)/cniplugins $(BINDIR)/cniplugins-verbose $(BINDIR)/cniplugins-full

$(BINDIR)/cniplugins: FORCE
	$(GOBUILD) -ldflags '$(LDFLAGS)' -o $@ ./cmd/cniplugins

$(BINDIR)/cniplugins-verbose: FORCE
	$(GOBUILD) -ldflags '$(LDFLAGS) -X $(VPKG).Flavour=verbose' -o $@ ./cmd/cniplugins

# The full flavour: a strict superset with the network-facing pieces. Its
# main names its flavour itself; only the verbose one, the lean main linked
# differently, needs the flag.
$(BINDIR)/cniplugins-full: FORCE
	$(GOBUILD) -ldflags '$(LDFLAGS)' -o $@ ./cmd/cniplugins-full

# The benchmark's exec floor (bench/floor), built as the binary is; with
# -tags linked it also links every package of the lean binary.
$(BINDIR)/floor: FORCE
	$(GOBUILD) -ldflags '$(STRIP) -buildid=' -o $@ ./bench/floor

$(BINDIR)/floor-linked: FORCE
	$(GOBUILD) -tags linked -ldflags '$(STRIP) -buildid=' -o $@ ./bench/floor

# The etcd scenario's floor (bench/etcdfloor): start-up plus one etcd
# transaction through the project's client.
$(BINDIR)/etcdfloor: FORCE
	$(GOBUILD) -ldflags '$(STRIP) -buildid=' -o $@ ./bench/etcdfloor

install: build
	scripts/install-symlinks.sh $(DESTDIR)

# The fuzz pass in `make test` is bounded by a count, not a duration: with a
# duration, Go's fuzz coordinator can race its own -fuzztime deadline on a
# loaded machine and fail the target with "context deadline exceeded" having
# found nothing. A count has no wall-clock deadline; a slow machine only
# takes longer.
FUZZRUNS ?= 20000x

# scripts/gotest.sh prints every skipped test with its reason and closes
# with "tests: N passed, N failed, N skipped" (a plain go test hides skips).
test: build
	scripts/test-deps.sh
	scripts/gotest.sh
	scripts/fuzz.sh $(FUZZRUNS)

# Every package under internal/ holds pure-logic tests (table-driven, fake
# stores, httptest) that need neither root nor a daemon; the exec-level,
# end-to-end and daemon tests live under test/ and bench/.
unit:
	go test -count=1 ./internal/...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	go run $(STATICCHECK) ./...

clean:
	rm -rf bin dist bench/out

FORCE:

# Release: reproducible tarballs for linux/amd64 and linux/arm64, the OCI
# images of both flavours, and SHA256SUMS in $(DIST) (see scripts/release.sh).
DIST ?= dist

.PHONY: release image
release:
	VERSION='$(VERSION)' COMMIT='$(COMMIT)' scripts/release.sh '$(DIST)'

# The images of the release without its tarballs:
# $(DIST)/cniplugins-$(VERSION).oci.tar and cniplugins-full-$(VERSION).oci.tar,
# OCI layout archives for `ctr images import`, `docker load` or
# `skopeo copy oci-archive:...` (see docs/kubernetes.md).
image:
	VERSION='$(VERSION)' COMMIT='$(COMMIT)' scripts/release.sh --image-only '$(DIST)'

# make bench [BENCHFLAGS='-fill60k -n 300']: exec-level benchmark against
# upstream host-local and an exec floor; writes bench/results/RESULTS.md and
# bench/results/ADD-latency.svg. Then the full flavour's figures (lean vs full
# per exec, the docker-ipam socket, docker run on its network vs Docker's
# built-in IPAM): bench/results/FULL-FLAVOUR.md.
BENCHFLAGS ?=
FULLBENCHFLAGS ?=

# RunPodSandbox through private containerd daemons' CRI (1.6 and 2.x),
# the chain against host-local on each (root): bench/results/CRI.md.
CRIBENCHN ?= 40

# A Deployment from 0 to K8SBENCHPODS pods on a real Kubernetes node, the
# chain against bridge + host-local, K8SBENCHROUNDS rounds taking turns
# (root): bench/results/KUBERNETES.md.
K8SBENCHPODS ?= 100
K8SBENCHROUNDS ?= 3

.PHONY: bench
bench:
	go run ./bench -out bench/results $(BENCHFLAGS)
	go run ./bench/fullflavour -out bench/results $(FULLBENCHFLAGS)
	go test -count=1 ./test/cri -run TestRunPodSandboxLatency -cri.n $(CRIBENCHN) -cri.out $(CURDIR)/bench/results/CRI.md
	go test -count=1 -timeout 60m ./test/kubernetes -run 'TestKubernetesNode/(NotReadyUntilInstalled|PodStartup)' \
		-k8s.pods $(K8SBENCHPODS) -k8s.rounds $(K8SBENCHROUNDS) -k8s.out $(CURDIR)/bench/results/KUBERNETES.md

# make bench-fleet: ipam-da-etcd as a fleet (bench/fleet): FLEETFLAGS
# (default 64 hosts × 3 workers, 3 minutes of churn) against a 3-member
# etcd on loopback; writes bench/results/FLEET.md and FLEET.svg, then the
# same with one member killed and restarted mid-run (FLEET-MEMBER-KILL.*).
# FLEETCOMPARE=DIR also measures one host's ADD and DEL side by side with
# the cniplugins-full installed in the CNI bin dir DIR (another build).
FLEETFLAGS ?=
FLEETCOMPARE ?=

.PHONY: bench-fleet
bench-fleet:
	scripts/test-deps.sh
	go run ./bench/fleet -out bench/results -name FLEET $(if $(FLEETCOMPARE),-compare-with $(FLEETCOMPARE)) $(FLEETFLAGS)
	go run ./bench/fleet -out bench/results -name FLEET-MEMBER-KILL -kill-member $(FLEETFLAGS)

# The etcd chaos test (test/etcd TestChaos) for longer than `make test`
# runs it: faults for CHAOSTIME per seed, CHAOSSEEDS one after the other.
CHAOSTIME ?= 10m
CHAOSSEEDS ?= 1,2,3

# The two allocators' seeded differential test (test/etcd
# TestAllocatorsAlike) for more sequences than `make test` runs: each a
# random run of ADD, DEL, CHECK, CNI GC, the operators' release and gc,
# a KubeVirt VM's migrations and configuration changes, both binaries
# compared at every step; and
# TestAllocatorsAlikeQuota, the same under a tenant quota.
DIFFSEEDS ?= 20
DIFFSTEPS ?= 100

.PHONY: differential
differential:
	go test -count=1 -timeout 0 -v ./test/etcd -run '^TestAllocatorsAlike(Quota)?$$' -alike.seeds $(DIFFSEEDS) -alike.steps $(DIFFSTEPS)

.PHONY: chaos
chaos:
	scripts/test-deps.sh
	go test -count=1 -timeout 0 -v ./test/etcd -run '^TestChaos$$' -chaos.time $(CHAOSTIME) -chaos.seeds $(CHAOSSEEDS)

# Fuzzing: every FuzzXxx target for FUZZTIME each (see scripts/fuzz.sh);
# `make test` runs each for FUZZRUNS inputs.
FUZZTIME ?= 30s

.PHONY: fuzz
fuzz:
	scripts/fuzz.sh $(FUZZTIME)
