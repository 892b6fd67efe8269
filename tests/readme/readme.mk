# The README-example test (crate redlatch-readme, tests/readme). Included by the root Makefile
# after the bindings' files, whose targets it uses.
#
#   readme-test   every code block of the READMEs (tests/readme/src/readmes.rs) that is a program
#                 runs as written against a fresh Redis fleet: Rust blocks compiled into the
#                 test binary, C with pkg-config and C++ with CMake from the C release tarball
#                 (c-dist, written under target/readme/dist), Python from the dev wheel in a
#                 fresh venv, JavaScript and TypeScript from the packed npm package (dev addon
#                 and wasm build) installed into target/readme/node with the examples' own
#                 packages (tests/readme/js: node-redis, typescript, @types/node).
#   readme-dist-test  the same blocks against the artifacts in dist/ (`make dist` first),
#                 installed as README.md's "Install" says: the wheel and, separately, the sdist
#                 (built by pip) in venvs, the npm tarball, the C tarball unpacked, and the
#                 .crate unpacked as the path dependency of a Cargo project for the Rust blocks
#   readme-list   each block and what the test does with it (no build of the bindings)

README_WORK := $(CURDIR)/target/readme
README_NODE := $(README_WORK)/node
README_JS := $(CURDIR)/tests/readme/js
README_VERSION = $(shell node -p "require('./node/package.json').version")

.PHONY: readme-test readme-dist-test readme-list readme-node

readme-list:
	$(CARGO) run -q -p redlatch-readme -- list

# npm ci of the examples' packages only when their lock changed; the redlatch tarball each run.
readme-node: node-build wasm-stage
	mkdir -p $(README_NODE)
	@if ! cmp -s $(README_JS)/package-lock.json $(README_NODE)/package-lock.json \
	    || [ ! -d $(README_NODE)/node_modules ]; then \
	  cp $(README_JS)/package.json $(README_JS)/package-lock.json $(README_NODE)/ \
	  && (cd $(README_NODE) && npm ci --silent --no-audit --no-fund --prefer-offline); fi
	rm -f $(README_WORK)/redlatch-*.tgz
	cd node && npm pack --silent --pack-destination $(README_WORK) >/dev/null
	cd $(README_NODE) && npm install --silent --no-save --no-audit --no-fund --prefer-offline \
		$(README_WORK)/redlatch-$(README_VERSION).tgz

readme-test: setup-test py-build readme-node
	$(MAKE) --no-print-directory c-dist C_DIST_DIR=$(README_WORK)/dist
	rm -rf $(README_WORK)/c-prefix && mkdir -p $(README_WORK)/c-prefix
	tar -xzf $(README_WORK)/dist/redlatch-c-*-x86_64-linux-gnu.tar.gz -C $(README_WORK)/c-prefix
	rm -rf $(README_WORK)/py-venv
	$(PYTHON) -m venv $(README_WORK)/py-venv
	$(README_WORK)/py-venv/bin/python -m pip install -q --no-deps $(PY_WHEEL)
	$(CARGO) build -p redlatch-readme
	target/debug/redlatch-readme run --work $(README_WORK) \
		--python $(README_WORK)/py-venv/bin/python --node-dir $(README_NODE) \
		--c-prefix $$(echo $(README_WORK)/c-prefix/redlatch-*)

README_DIST := $(README_WORK)/dist-test
README_DIST_FILES := $(CURDIR)/dist

# npm ci first (the examples' own packages), then the tarball as a user installs it.
readme-dist-test: setup-test
	@for f in '*.whl' 'redlatch-[0-9]*.tar.gz' 'redlatch-*.tgz' 'redlatch-c-*.tar.gz' '*.crate'; do \
	  ls $(README_DIST_FILES)/$$f >/dev/null 2>&1 \
	    || { echo "readme-dist-test: no dist/$$f: run make dist first" >&2; exit 1; }; done
	rm -rf $(README_DIST) && mkdir -p $(README_DIST)/node $(README_DIST)/c $(README_DIST)/crate
	$(PYTHON) -m venv $(README_DIST)/wheel-venv
	$(README_DIST)/wheel-venv/bin/python -m pip install -q $(README_DIST_FILES)/redlatch-*.whl
	$(PYTHON) -m venv $(README_DIST)/sdist-venv
	@echo "readme-dist-test: building the sdist with pip (a release build, a few minutes)"
	$(README_DIST)/sdist-venv/bin/python -m pip install -q $(README_DIST_FILES)/redlatch-[0-9]*.tar.gz
	cp $(README_JS)/package.json $(README_JS)/package-lock.json $(README_DIST)/node/
	cd $(README_DIST)/node && npm ci --silent --no-audit --no-fund --prefer-offline \
	  && npm install --silent --no-save --no-audit --no-fund --prefer-offline $(README_DIST_FILES)/redlatch-*.tgz
	tar -xzf $(README_DIST_FILES)/redlatch-c-*.tar.gz -C $(README_DIST)/c
	tar -xzf $(README_DIST_FILES)/redlatch-*.crate -C $(README_DIST)/crate
	$(CARGO) build -p redlatch-readme
	target/debug/redlatch-readme run --work $(README_DIST)/work \
		--python $(README_DIST)/wheel-venv/bin/python --node-dir $(README_DIST)/node \
		--c-prefix $$(echo $(README_DIST)/c/redlatch-*) --rust-crate $$(echo $(README_DIST)/crate/redlatch-*)
	@echo "== the Python blocks again, on the wheel pip built from the sdist"
	target/debug/redlatch-readme run --work $(README_DIST)/work-sdist --lang python \
		--python $(README_DIST)/sdist-venv/bin/python
