# Makefile for warden. Run "make help" (or just "make") to list the targets.
#
# The integration tests start real redis-server processes (see
# internal/redistest), so "make test" first runs "make deps" to make sure
# redis-server and promtool (package prometheus: examples/monitor's alert
# rules tests) are installed.

GO ?= go

# The repository's Go modules: the core module users import, and beside it
# modules of their own for what would otherwise add to the core's
# dependencies (the benchmark and its peers; the gocron adapter; the
# database drivers of fence's SQL tests). Every target that vets, tests or
# lints runs in each of them.
MODULES := . bench integrations/gocron fence/sqltest

.DEFAULT_GOAL := help

.PHONY: help deps test test-short bench fuzz lint sim

# ensure_cmd fails unless command $(1) is on PATH; when it is missing and we
# are root it first installs the Debian package(s) $(2) with apt-get.
define ensure_cmd
	@if ! command -v $(1) >/dev/null 2>&1; then \
		if [ "$$(id -u)" -eq 0 ]; then \
			echo "deps: $(1) is missing; installing $(2) with apt-get"; \
			export DEBIAN_FRONTEND=noninteractive; \
			{ apt-get update -qq && apt-get install -y -qq $(2); } || exit 1; \
			command -v $(1) >/dev/null 2>&1 || { echo "deps: $(1) still missing after installing $(2)" >&2; exit 1; }; \
		else \
			echo "$(1) is missing: install it with: sudo apt-get install -y $(2)" >&2; \
			exit 1; \
		fi; \
	fi
endef

help: ## Show this help
	@echo "Usage: make <target>"
	@echo
	@grep -E '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | \
		awk 'BEGIN {FS = ":.*## "}; {printf "  %-11s %s\n", $$1, $$2}'

deps: ## Install redis-server, PostgreSQL (the fence tests), promtool (the alert rules' tests) and gcc (-race) if missing, download Go modules
	$(call ensure_cmd,redis-server,redis-server)
	$(call ensure_cmd,pg_ctlcluster,postgresql)
	$(call ensure_cmd,promtool,prometheus)
	$(call ensure_cmd,gcc,gcc libc6-dev)
	@set -e; for m in $(MODULES); do (set -x; $(GO) -C $$m mod download); done

# CLIENT_SHARD splits the client package's tests (the suite's longest
# package under -race, mostly waiting on real leases) in two halves by
# name, which make test runs beside the core module's other packages. Most
# client tests call t.Parallel; those that count goroutines or heap, or
# whose bounds are tight against load (RedLock's per-node timeouts, MinLease,
# sub-second wake-up bounds), run sequentially before them.
CLIENT_SHARD := ^(Test|Example|Fuzz)[A-La-l_]
TESTFLAGS := -race -count=1 -timeout 20m
# PARALLEL is how many parallel tests a package runs at once; CLIENT_PARALLEL
# is less for each client shard: with both shards and the other packages
# beside them, more loads two cores enough to push real leases and
# timeouts past their bounds.
PARALLEL := -parallel 8
CLIENT_PARALLEL := -parallel 4

test: deps ## Run go vet and the full test suite with the race detector, in every module
	@set -e; for m in $(MODULES); do (set -x; $(GO) -C $$m vet ./...); done
	@set -e; pkgs=$$($(GO) list ./... | grep -v '/warden/client$$'); \
		(set -x; $(GO) test $(TESTFLAGS) $(PARALLEL) $$pkgs) & others=$$!; \
		(set -x; $(GO) test $(TESTFLAGS) $(CLIENT_PARALLEL) -run '$(CLIENT_SHARD)' ./client) & first=$$!; \
		(set -x; $(GO) test $(TESTFLAGS) $(CLIENT_PARALLEL) -skip '$(CLIENT_SHARD)' ./client) & second=$$!; \
		failed=0; for p in $$others $$first $$second; do wait $$p || failed=1; done; exit $$failed
	@set -e; for m in $(filter-out .,$(MODULES)); do (set -x; $(GO) -C $$m test $(TESTFLAGS) $(PARALLEL) ./...); done

test-short: ## Run the tests once without the race detector, in every module (quick local loop)
	@set -e; for m in $(MODULES); do (set -x; $(GO) -C $$m test -count=1 ./...); done

bench: ## warden vs redsync, redislock, rueidislock, SET NX, Redisson's bare scripts and 2xPING on workloads a-h (table, BENCHMARKS.svg), then go test -bench
	$(GO) -C bench run ./cmd/warden-bench -runs 3 -duration 2s -svg ../BENCHMARKS.svg
	$(GO) test -run '^$$' -bench . -benchtime 2000x -count 3 ./client/...
	$(GO) -C bench test -run '^$$' -bench . -benchtime 2000x -count 3 ./internal/bench/...

fuzz: ## Fuzz argument validation, the acquire script's lease encoding and the semaphore TTL, 20s each
	$(GO) test -run '^$$' -fuzz FuzzValidate -fuzztime 20s ./messages
	$(GO) test -run '^$$' -fuzz FuzzAcquireLease -fuzztime 20s ./redisio
	$(GO) test -run '^$$' -fuzz FuzzTrySetPermitsTTL -fuzztime 20s ./redisio

STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint: ## Run go vet, gofmt and staticcheck (pinned version) in every module
	@set -e; for m in $(MODULES); do (set -x; $(GO) -C $$m vet ./...); done
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted" >&2; exit 1; fi
	@set -e; for m in $(MODULES); do (set -x; $(GO) -C $$m run $(STATICCHECK) ./...); done

sim: ## 1,000 simulation seeds with every fault, 300 group lock seeds, 300 RedLock seeds over 3 masters (fails on any unexcused violation), the broken-engine check, then examples/simulate's job runners over 300 seeds (the first 120 replayed)
	$(GO) run ./sim/cmd/warden-sim -seed 1 -runs 1000 -faults all -q
	$(GO) run ./sim/cmd/warden-sim -kinds lock,fair-lock,group-lock -seed 1 -runs 300 -faults all -q
	$(GO) run ./sim/cmd/warden-sim -redlock -owners 1 -length 5s -seed 1 -runs 300 -faults all -q
	$(GO) test -count=1 -tags wardenbroken -run 'TestBrokenEngineIsCaught|TestBrokenGroupLockIsCaught' ./sim
	$(GO) test -count=1 -v -timeout 30m -run 'TestNaiveRunnerIsCaught|TestFencedRunnerIsClean|TestReplayIsByteIdentical' ./examples/simulate -args -seeds 300 -replays 120 -timeline $${TMPDIR:-/tmp}/warden-simulate-naive.html
