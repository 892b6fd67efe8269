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
#
# napi builds for --target x86_64-unknown-linux-gnu, so its artifacts are in
# target/x86_64-unknown-linux-gnu/{debug,release}, apart from `cargo build` ones.

NODE_DIR := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
NODE_ROOT := $(abspath $(NODE_DIR)/..)
CARGO ?= cargo
NODE_TARGET_DIR := $(if $(CARGO_TARGET_DIR),$(abspath $(CARGO_TARGET_DIR)),$(NODE_ROOT)/target)
NODE_OUT := $(NODE_TARGET_DIR)/node
NODE_FLEET := $(NODE_TARGET_DIR)/debug/redlatch-fleet --quorum 3 --
NAPI := $(NODE_DIR)/node_modules/.bin/napi
NAPI_GEN := --platform --js index.js --dts index.d.ts

.PHONY: node-setup node-build node-build-release node-fleet node-test node-check node-bench \
	node-publish-check node-demo-worker node-clean

node-setup:
	@[ -x $(NAPI) ] || (cd $(NODE_DIR) && npm ci --no-audit --no-fund)

node-build: node-setup
	cd $(NODE_DIR) && $(NAPI) build $(NAPI_GEN)

node-build-release: node-setup
	cd $(NODE_DIR) && $(NAPI) build --release --strip $(NAPI_GEN)

node-fleet:
	$(CARGO) build -p redlatch-fleet

node-test: node-build node-fleet
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

node-clean:
	rm -rf $(NODE_OUT) $(NODE_DIR)/*.node
