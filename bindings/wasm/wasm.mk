# redlatch-wasm (bindings/wasm): the `redlatch/wasm` npm entry. Included by the root Makefile;
# paths are relative to the repository root. Targets:
#   wasm-setup-build  what wasm-build needs: the wasm32 target and wasm-bindgen-cli at the
#                version Cargo.lock pins (idempotent)
#   wasm-setup   wasm-setup-build, plus what wasm-test needs: npm ci in js/ (node-redis, ioredis,
#                typescript, workerd) and Chromium (idempotent)
#   wasm-build   release build + wasm-bindgen (nodejs and web targets) into bindings/wasm/pkg/,
#                laid out as in the npm package: pkg/wasm/ (this entry) next to pkg/lib/facade/
#                (the facade it shares with the native entry, from node/lib/facade/)
#   wasm-test    wasm-bindgen tests under Node, then the node:test suite against the fleet
#                (real Redis; headless Chromium and workerd for the web and workerd entries)
#   wasm-stage   copy pkg/wasm/ into node/wasm/ (the `redlatch/wasm` export of node/, whose
#                lib/facade/ is the same source)
# Set WASM_BROWSER=0 to skip the headless-Chromium test (and Chromium's installation).

CARGO ?= cargo
WASM_DIR := bindings/wasm
WASM_PKG := $(WASM_DIR)/pkg
WASM_ENTRY := $(WASM_PKG)/wasm
WASM_FACADE := node/lib/facade
WASM_JS := $(WASM_DIR)/js
WASM_TRIPLE := wasm32-unknown-unknown
WASM_ARTIFACT := target/$(WASM_TRIPLE)/release/redlatch_wasm.wasm
WASM_STAGE_DIR ?= node/wasm
WASM_BROWSER ?= 1
# The CLI must match the `wasm-bindgen` crate exactly (shared/reference/toolchain.md, gotcha 1).
WASM_BINDGEN_VERSION = $(shell awk '/^name = "wasm-bindgen"$$/{getline; gsub(/version = |"/,""); print; exit}' Cargo.lock)
# The mixed wasm + native test uses the native addon when it has been built.
REDLATCH_NATIVE_ADDON ?= $(if $(wildcard node/*.node),$(CURDIR)/node/lib/index.cjs)

WASM_SETUP_LOG := target/wasm-setup

.PHONY: wasm-setup-build wasm-setup wasm-build wasm-test wasm-stage

# wasm-bindgen-cli: first with its own Cargo.lock (--locked); where a crate that lock pins is
# missing from the registry (seen: webpki-roots 1.0.11), again with the newest compatible
# versions. Each attempt's output goes to a log, shown only if both fail, so that a successful
# set-up prints no `error:` line from the first attempt.
wasm-setup-build:
	@rustup target list --installed | grep -qx $(WASM_TRIPLE) || rustup target add $(WASM_TRIPLE)
	@v="$(WASM_BINDGEN_VERSION)"; \
	if [ -z "$$v" ]; then echo "wasm-setup: no wasm-bindgen in Cargo.lock" >&2; exit 1; fi; \
	if [ "$$(wasm-bindgen --version 2>/dev/null | awk '{print $$2}')" != "$$v" ]; then \
	  mkdir -p $(WASM_SETUP_LOG); \
	  echo "wasm-setup: installing wasm-bindgen-cli $$v (about 5 minutes on 2 cores; log in $(WASM_SETUP_LOG)/)"; \
	  if $(CARGO) install wasm-bindgen-cli --version "$$v" --locked >$(WASM_SETUP_LOG)/locked.log 2>&1; then :; \
	  else \
	    echo "wasm-setup: the --locked install failed ($(WASM_SETUP_LOG)/locked.log); retrying with the newest compatible dependencies"; \
	    $(CARGO) install wasm-bindgen-cli --version "$$v" --force >$(WASM_SETUP_LOG)/unlocked.log 2>&1 \
	      || { cat $(WASM_SETUP_LOG)/locked.log $(WASM_SETUP_LOG)/unlocked.log >&2; \
	           echo "wasm-setup: could not install wasm-bindgen-cli $$v (output above)" >&2; exit 1; }; \
	  fi; \
	  echo "wasm-setup: installed $$(wasm-bindgen --version)"; \
	fi

wasm-setup: wasm-setup-build
	@[ $(WASM_JS)/node_modules/.package-lock.json -nt $(WASM_JS)/package-lock.json ] \
	  || (cd $(WASM_JS) && npm ci --no-audit --no-fund)
	@if [ "$(WASM_BROWSER)" = 1 ] && ! command -v chromium >/dev/null 2>&1; then \
	  echo "wasm-setup: installing chromium (apt-get) for the browser test"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	    || echo "wasm-setup: could not install chromium; the browser test will be skipped"; \
	fi

wasm-build: wasm-setup-build
	$(CARGO) build --release --target $(WASM_TRIPLE) -p redlatch-wasm
	rm -rf $(WASM_PKG)
	wasm-bindgen --target nodejs --out-dir $(WASM_ENTRY)/nodejs $(WASM_ARTIFACT)
	wasm-bindgen --target web --out-dir $(WASM_ENTRY)/web $(WASM_ARTIFACT)
	printf '{ "type": "commonjs" }\n' > $(WASM_ENTRY)/nodejs/package.json
	printf '{ "type": "module" }\n' > $(WASM_ENTRY)/web/package.json
	cp -R $(WASM_JS)/src/. $(WASM_ENTRY)/
	mkdir -p $(WASM_PKG)/lib && cp -R $(WASM_FACADE) $(WASM_PKG)/lib/
	@echo "wasm-build: $(WASM_PKG) ($$(du -k $(WASM_ENTRY)/web/redlatch_wasm_bg.wasm | cut -f1) KiB of wasm)"

wasm-test: wasm-setup wasm-build
	CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
	  $(CARGO) test -p redlatch-wasm --target $(WASM_TRIPLE)
	$(CARGO) build -p redlatch-fleet
	REDLATCH_NATIVE_ADDON="$(REDLATCH_NATIVE_ADDON)" REDLATCH_BROWSER_TEST="$(WASM_BROWSER)" \
	  target/debug/redlatch-fleet --quorum 3 -- node --test $(sort $(wildcard $(WASM_JS)/test/*.test.mjs))

# Replaces node/wasm/ (the placeholder of the `redlatch/wasm` export) with the built package.
wasm-stage: wasm-build
	rm -rf $(WASM_STAGE_DIR)
	mkdir -p $(WASM_STAGE_DIR)
	cp -R $(WASM_ENTRY)/. $(WASM_STAGE_DIR)/
