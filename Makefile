# The commands of the README:
#   make run    the whole product: services, backend, the sample shop, the gateway on :8080
#               (header identity) and :8088 (the shop through the gateway), two demo sales
#   make test   every test, both tiers, against real Redis, RabbitMQ and Postgres
#   make unit   the pure tier only (test files without the integration tag): no service
SHELL := /bin/bash
GO    ?= go
# Tests fail, never skip, when a service is missing.
export SECKILL_REQUIRE_SERVICES := 1
# Where the stack keeps its data and env file (scripts/stack.sh honours the same variable).
RUN_DIR := $(or $(SECKILL_RUN_DIR),.run)

.PHONY: demo-draw bench-draw run test unit unit-profile stop stack build screenshots xcaddy xcaddy-check bench bench-pin bench-onepass bench-identity chaos compose-check fuzz clean

# The binaries are compiled the way xcaddy v0.4.5 compiles Caddy (its builder.go: CGO_ENABLED=0,
# -trimpath, -tags nobadger,nomysql,nopgx), so that make xcaddy and make test's go vet find
# Caddy's thousand dependencies in the build cache instead of compiling them again (the tags
# leave out drivers of Caddy's PKI storage that nothing here uses; cgo would change net and
# every package above it). One go build links the five in parallel.
BUILD_ENV   := CGO_ENABLED=0
BUILD_FLAGS := -trimpath -tags nobadger,nomysql,nopgx
build:
	$(BUILD_ENV) $(GO) build $(BUILD_FLAGS) -o bin/ ./cmd/caddy ./cmd/seckill-backend ./cmd/seckill-bench ./cmd/seckillctl ./cmd/seckill-shop

stack:
	@bash scripts/stack.sh start

run: stack build
	@bash scripts/run.sh start

stop:
	@bash scripts/run.sh stop || true
	@bash scripts/stack.sh stop

# Both tiers: -tags integration compiles the test files of the integration tier with the pure
# ones (CONTRIBUTING.md, "Tests"). The binaries the tests run (the gateway, the backend) are
# make build's, built once: SECKILL_BIN_DIR points the tests at bin/. -race on every package;
# -p 2 matches the 2-core machines this runs on (make test TEST_P=3 tries another: the timing
# tests want the cores a third package would take). go vet runs first, with make build's flags
# (it compiles every dependency, and so finds them built), so go test's own vet pass (a subset
# of it) is off; the test binaries are linked without DWARF and symbol table, as
# make unit's are (-s -w: race reports and stack traces keep their functions and lines; the
# binaries are a quarter smaller and link faster on a cold cache).
TEST_P ?= 2
test: stack build
	source $(RUN_DIR)/env && $(BUILD_ENV) $(GO) vet -trimpath -tags integration,nobadger,nomysql,nopgx ./... && \
	SECKILL_BIN_DIR=$(CURDIR)/bin $(GO) test -tags integration -race -count=1 -p $(TEST_P) -vet=off -ldflags='-s -w' -timeout 25m ./...

# The pictures of the waiting page and the draw page in README.md and docs/room.md (desktop and
# a 390x844 phone), written by the pages' Chromium tests into docs/img: run it after changing a
# page and commit the PNGs.
screenshots:
	SECKILL_SCREENSHOTS=$(CURDIR)/docs/img $(GO) test -tags integration -count=1 -p 1 -run 'TestScreenshotsOf' ./caddymodule/room/ ./caddymodule/draw/

# The pure tier: the test files without the integration tag, so this needs no stack, no
# browser and no SECKILL_* variables; go test's cache skips the packages that did not change
# (scripts/unit.sh). It prints how many tests passed and how long the run took.
unit:
	$(GO) vet ./... && GO=$(GO) bash scripts/unit.sh

# Where the pure tier's time goes with an empty test cache: every package built, linked and run
# once (-count=1), the go command's action graph summed by scripts/actiongraph.go.
unit-profile:
	@ag=$$(mktemp) && trap 'rm -f $$ag' EXIT && \
	$(GO) test -short -vet=off -ldflags='-s -w' -count=1 -debug-actiongraph=$$ag ./... >/dev/null && \
	$(GO) run scripts/actiongraph.go -top 15 $$ag

# Short fuzzing of the parsers that face the network (CI runs it; longer runs by hand with
# FUZZTIME=10m make fuzz).
FUZZTIME ?= 10s
fuzz:
	@bash scripts/fuzz.sh $(FUZZTIME)

# Caddy built the way users build it: xcaddy, from xcaddy.json.
xcaddy:
	$(GO) run scripts/xcaddy-build.go xcaddy.json

xcaddy-check: xcaddy
	@bash scripts/xcaddy-check.sh bin/caddy-xcaddy

# docker-compose.yml requires every secret (${VAR:?}); these dummy values exist only so that
# `config` can validate the file. They are not secrets and are never used to run anything.
COMPOSE_DUMMY_SECRETS := SECKILL_TOKEN_KEY=compose-check-dummy-not-a-secret-0123456789 \
	SECKILL_ADMIN_TOKEN=compose-check-dummy SECKILL_PG_PASSWORD=compose-check-dummy \
	SECKILL_AMQP_ADMIN_PASSWORD=compose-check-dummy SECKILL_AMQP_GATEWAY_PASSWORD=compose-check-dummy \
	SECKILL_AMQP_BACKEND_PASSWORD=compose-check-dummy SECKILL_GRAFANA_PASSWORD=compose-check-dummy

compose-check:
	@command -v docker-compose >/dev/null || apt-get install -y -q docker-compose >/dev/null
	$(COMPOSE_DUMMY_SECRETS) docker-compose -f docker-compose.yml config -q
	@# Without the secrets the file must refuse to render.
	@if env -u SECKILL_TOKEN_KEY -u SECKILL_ADMIN_TOKEN -u SECKILL_PG_PASSWORD -u SECKILL_AMQP_ADMIN_PASSWORD \
		-u SECKILL_AMQP_GATEWAY_PASSWORD -u SECKILL_AMQP_BACKEND_PASSWORD \
		docker-compose -f docker-compose.yml config -q 2>/dev/null; then \
		echo "docker-compose.yml rendered without its secrets" >&2; exit 1; fi

bench: stack build
	@bash scripts/bench.sh

# The servers' CPU per request apart from the load: seckill-bench unpinned and pinned
# (load on CPU 0, every server on CPU 1), ROUNDS=3, private RabbitMQ/Postgres/Redis; then the
# throttle and the gate with PIN=1 (wrk on CPU 0, servers on CPU 1). Results: bench-results/pin.
bench-pin: stack build
	@bash scripts/bench-pin.sh
	@PIN=1 bash scripts/bench-throttle.sh
	@PIN=1 bash scripts/bench-gate.sh

# The comparison's figures: respond, the nginx + lua gate and the full edge side by side, the open
# model at 600/s with and without the benchmark's drain poll, the capacity at p99 <= 20 ms of
# the edge and respond; pinned, ROUNDS=3, about 10-12 minutes (docs/bench.md). Results:
# bench-results/onepass/summary.md.
bench-onepass: stack build
	@bash scripts/bench-onepass.sh

# Identity at the edge: the demo path, local JWT, cached forward_auth and forward_auth
# side by side, pinned, ROUNDS=3 (scripts/bench-identity.sh; PIN=0 unpinned). Results:
# bench-results/identity.
bench-identity: stack build
	@bash scripts/bench-identity.sh

# A whole draw sale on make run's stack (run `make run` first): entries through the gateway,
# the backend's draw at the close, two waves of claims, every invariant and verify-draw.
demo-draw: build
	@source $(RUN_DIR)/env && bin/seckill-bench draw-sale

# Draws: entry cost against a room entry (pinned), a million-entry draw, and fast
# against slow entrants through two gateways (scripts/bench-draw.sh). Results: bench-results/draw.
bench-draw: stack build
	@bash scripts/bench-draw.sh

# Every part killed and restarted mid-sale on private servers, then every invariant checked
# (docs/chaos.md). CHAOS_RUNS=3 make chaos runs it three times in a row. Depends on stack for
# the Debian packages it installs; the chaos run itself uses servers of its own.
chaos: stack
	@bash scripts/chaos.sh

clean:
	rm -rf bin

# ---- Releases (docs/versioning.md) ----
# make release: dist/ (git-ignored) with the versioned binaries for RELEASE_PLATFORMS, their
# SHA-256 sums, the chart package, the JS package tarball and the API description.
RELEASE_PLATFORMS ?= linux/amd64,linux/arm64
.PHONY: release release-check js-types
release:
	$(GO) run scripts/release.go -out dist -platforms '$(RELEASE_PLATFORMS)'

# clients/js/seckill.d.ts emitted from seckill.js's JSDoc (clients/js/types_test.go checks it is current).
js-types:
	cd clients/js && $(abspath $(RUN_DIR))/npm-tools/node_modules/.bin/tsc --allowJs --declaration --emitDeclarationOnly \
		--typeRoots $(abspath $(RUN_DIR))/npm-tools/node_modules/@types --types node --strict --target es2022 \
		--module nodenext --moduleResolution nodenext --lib es2022,dom --outDir . seckill.js

# The sums of a built dist/ checked again.
release-check:
	cd dist && sha256sum -c SHA256SUMS
