# redlatch: `make demo` and `make test` each install what they need first (tests/setup.sh).
# `make check` = formatting, lints and docs; `make bench` = benchmark figures (release build).

CARGO ?= cargo
export CARGO_TERM_COLOR ?= never

.PHONY: demo test check test-rust test-wasm publish-check bench setup setup-test fmt

setup:
	tests/setup.sh redis

setup-test: setup
	tests/setup.sh rust

demo: setup
	$(CARGO) build -p redlatch-demo
	./target/debug/redlatch-demo

test: setup-test check test-rust test-wasm publish-check
	@echo "make test: all suites passed"

check: setup-test
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p redlatch --no-default-features --target wasm32-unknown-unknown -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc -p redlatch --no-deps

test-rust: setup-test
	$(CARGO) test --workspace

# The pure core must build for wasm32 without tokio or sockets.
test-wasm: setup-test
	$(CARGO) build -p redlatch --no-default-features --target wasm32-unknown-unknown

publish-check:
	$(CARGO) publish --dry-run -p redlatch --allow-dirty

bench: setup
	$(CARGO) run --release -p redlatch --example bench

fmt:
	$(CARGO) fmt --all
