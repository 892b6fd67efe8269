# redlatch: `make demo` and `make test` each install what they need first (tests/setup.sh and
# each binding's setup). `make check` = formatting, lints, docs and generated-file freshness;
# `make bench` = benchmark figures (release build); `make install PREFIX=...` = the C library.

CARGO ?= cargo
export CARGO_TERM_COLOR ?= never

.PHONY: demo test check test-rust test-wasm test-c publish-check bench setup setup-test fmt install

# The bindings' own targets (each file documents its targets).
include bindings/c/c.mk

setup:
	tests/setup.sh redis

setup-test: setup
	tests/setup.sh rust

demo: setup c-demo-worker
	$(CARGO) build -p redlatch-demo
	./target/debug/redlatch-demo --worker-cmd './target/debug/redlatch-demo worker' --worker-cmd ./target/c/c_worker

test: setup-test check test-rust test-wasm test-c publish-check
	@echo "make test: all suites passed"

check: setup-test c-header-check
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p redlatch --no-default-features --target wasm32-unknown-unknown -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc -p redlatch -p redlatch-ffi --no-deps

test-rust: setup-test
	$(CARGO) test --workspace

# The pure core must build for wasm32 without tokio or sockets.
test-wasm: setup-test
	$(CARGO) build -p redlatch --no-default-features --target wasm32-unknown-unknown

# C and C++: suites on a Redis fleet, the C suite under valgrind, the install test.
test-c: setup-test c-test

install: c-install

publish-check:
	$(CARGO) publish --dry-run -p redlatch --allow-dirty

bench: setup
	$(CARGO) run --release -p redlatch --example bench

fmt:
	$(CARGO) fmt --all
