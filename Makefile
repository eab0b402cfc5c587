# The two commands a new user runs are `make demo` and `make test`.
GO ?= go
PKGS := ./...

.PHONY: all demo test test-unit test-integration bench bench-real bench-scale bench-all soak fmt lint vet cluster-bin chromium demo-cluster clean demo-shards

all: lint test

## demo: run the typed pod controller demo on an embedded simulated cluster.
demo:
	$(GO) run ./examples/podwatch $(DEMO_FLAGS)

## test: vet, then every test with the race detector, including the real
## kube-apiserver + etcd integration suite (builds the binaries if needed).
test: lint test-unit test-integration

test-unit: chromium
	$(GO) test -race -count=1 $(PKGS)

test-integration: cluster-bin
	$(GO) test -race -count=1 -p 1 -tags integration -timeout 30m -skip '^TestFixedCostPerInformer$$' ./internal/testcluster/ ./testcluster/ ./internal/integration/ ./examples/samplecontroller/ ./examples/tenantcontroller/ ./fleet/
	# The fixed cost is measured as users run informers: the race detector grows every stack.
	$(GO) test -count=1 -tags integration -run '^TestFixedCostPerInformer$$' -v ./fleet/
	cd $(CR_SAMPLE) && TESTCLUSTER_BIN_DIR=$(CURDIR)/bin $(GO) test -race -count=1 -tags integration .

## bench: every figure of docs/benchmarks.md, ours and client-go on the same
## inputs at equal settings, in COUNT interleaved rounds (each side in its
## own process, the order alternating), as ratio lines; with the cluster
## binaries built, the real kube-apiserver rows too (BENCH_REAL=0: not);
## writes the raw output (benchstat reads it), the chart and the table.
COUNT ?= 3
bench:
	COUNT=$(COUNT) GO=$(GO) bash hack/bench.sh

## bench-real: the real-server benchmarks (BenchmarkRealServer*), ours and
## client-go against one local kube-apiserver + etcd seeded with PODS pods,
## ROUNDS rounds of one process per side, the order alternating; appends
## the raw output to docs/benchmarks-real.txt.
ROUNDS ?= 3
PODS ?= 10000
bench-real:
	ROUNDS=$(ROUNDS) PODS=$(PODS) GO=$(GO) bash hack/bench-real.sh

## bench-scale: BenchmarkScale, SCALE_PODS (default 1,000,000) pods synced,
## relisted after a 410 and watched, in JSON and protobuf (FORMATS), by ours,
## ours with a projection and client-go, each side in its own process; a side
## past 85% of the machine's memory (MAX_RSS_GIB) is given up, as client-go's
## is at 1M on 23 GiB (SIDES="ours ours-summary" leaves it out). Writes
## docs/benchmarks-scale.txt.
SCALE_PODS ?= 1000000
bench-scale:
	PODS=$(SCALE_PODS) GO=$(GO) bash hack/bench-scale.sh

## bench-all: every benchmark of every package, once.
bench-all:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

## soak: random fault plans over 10k churning objects into a typed informer,
## each checked against the invariants of docs/reliability.md, for
## SOAK_DURATION (or SOAK_PLANS plans); make test runs a short one.
SOAK_PLANS ?= 100000
SOAK_DURATION ?= 10m
soak:
	$(GO) test -race -count=1 -timeout 0 -run '^TestSoak$$' -v ./informertest/ -soak.plans=$(SOAK_PLANS) -soak.duration=$(SOAK_DURATION) $(SOAK_FLAGS)

## cluster-bin: build kube-apiserver and etcd from the Go module proxy into bin/.
cluster-bin:
	bash hack/tools/build.sh

## chromium: Debian's chromium, which the browser test of httpinfo drives
## headless; installed when missing. Without it the test is skipped, unless
## CI is set: then this target, and the test, fail.
CHROMIUM ?= /usr/bin/chromium
chromium:
	@if [ ! -x $(CHROMIUM) ]; then \
	  sudo=; [ "$$(id -u)" -eq 0 ] || sudo="sudo -n"; \
	  echo "chromium: installing Debian's chromium for the browser test"; \
	  { $$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } \
	  || { [ -z "$$CI" ] && echo "chromium: not installed; the browser test will be skipped"; }; \
	fi

## demo-cluster: start a local kube-apiserver + etcd, seed pods, run the demo against it.
demo-cluster: cluster-bin
	bash hack/demo-cluster.sh

## demo-shards: run a pod informer as 3 shards on a local kube-apiserver with ShardedListAndWatch and print each shard's share.
demo-shards: cluster-bin
	$(GO) run ./examples/shards

fmt:
	gofmt -w .

# The controller-runtime version of the sample controller is a module of
# its own, so that controller-runtime stays out of the library's go.mod.
CR_SAMPLE := examples/samplecontroller/controllerruntime
vet:
	$(GO) vet $(PKGS)
	cd $(CR_SAMPLE) && $(GO) vet -tags integration .

## lint: vet, the gofmt check and staticcheck (built from the Go module proxy).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.6.1
lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(STATICCHECK) -tags integration ./internal/integration/ ./testcluster/ ./examples/samplecontroller/ ./examples/tenantcontroller/ ./fleet/

clean:
	rm -rf bin
