# Python binding targets (crate redlatch-python + wheel `redlatch`). Included by the root
# Makefile (`include python/python.mk`), or used alone: `make -f python/python.mk py-test`.
#
#   py-setup-build  .venv with maturin, all that building a wheel needs (idempotent)
#   py-setup      .venv with maturin, pytest, redis-py, python-redis-lock, twine, mypy
#                 (idempotent: creates the venv / installs only when something is missing)
#   py-build      dev-profile wheel into target/wheels/
#   py-build-release  release wheel (the publishable one) into target/wheels/release/
#   py-dist       the release wheel (stripped) and the sdist into dist/
#   py-test       a fresh venv each run, pip install the wheel, pytest from a copy of the tests
#                 outside the source tree, under redlatch-fleet (one node + 3 quorum nodes)
#   py-test-again the suite again in py-test's venv (after py-test), e.g. with
#                 REDLATCH_FLEET_ACL=1 or REDLATCH_FLEET_SERVER=valkey (see the root Makefile)
#   py-test-abi3  the same suite on the oldest and newest CPython that pyenv has (3.9, 3.13):
#                 one abi3 wheel for all (skips interpreters that are not installed)
#   py-check      stubs match the built module (mypy stubtest), mypy --strict on the package,
#                 twine check, and an install + import with no Rust toolchain and no network
#   py-bench      release wheel; redlatch vs redis-py Lock vs python-redis-lock on one Redis
#   py-demo-worker  target/py-demo-venv with the wheel + redis-py, for
#                 examples/demo/workers/py_worker.py

PY_DIR := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
PY_ROOT := $(abspath $(PY_DIR)/..)
CARGO ?= cargo
PYTHON ?= python3
PY_TARGET := $(if $(CARGO_TARGET_DIR),$(abspath $(CARGO_TARGET_DIR)),$(PY_ROOT)/target)
PY_VENV := $(PY_ROOT)/.venv
PY_BIN := $(PY_VENV)/bin
PY_WHEELS := $(PY_TARGET)/wheels
PY_WHEEL := $(PY_WHEELS)/redlatch-*-cp39-abi3-*.whl
PY_RELEASE_WHEEL := $(PY_WHEELS)/release/redlatch-*-cp39-abi3-*.whl
PY_FLEET := $(PY_TARGET)/debug/redlatch-fleet --quorum 3 --deployments --
PY_RUN := $(PY_TARGET)/py-test-run
PY_TEST_VENV := $(PY_TARGET)/py-test-venv
PY_CHECK_VENV := $(PY_TARGET)/py-check-venv
PY_BENCH_VENV := $(PY_TARGET)/py-bench-venv
PY_DEMO_VENV := $(PY_TARGET)/py-demo-venv
PY_MATURIN_REQ := 'maturin>=1.9,<2'
PY_DEV_PKGS := maturin pytest pytest-asyncio redis python-redis-lock twine mypy
PY_DEV_REQS := $(PY_MATURIN_REQ) 'pytest>=7' 'pytest-asyncio>=0.23' 'redis>=5' \
	'python-redis-lock>=4' 'twine>=5' 'mypy>=1.10'
PY_DIST_DIR ?= $(PY_ROOT)/dist
PY_TEST_REQS := 'pytest>=7' 'pytest-asyncio>=0.23' 'redis>=5'
PY_PYENV := $(or $(PYENV_ROOT),$(HOME)/.pyenv)
PY_ABI3_PYTHONS := $(wildcard $(PY_PYENV)/versions/3.9.*/bin/python3 $(PY_PYENV)/versions/3.13.*/bin/python3)

.PHONY: py-setup-build py-setup py-build py-build-release py-dist py-fleet py-test py-test-again \
	py-test-abi3 py-check py-bench py-demo-worker

py-setup-build:
	@[ -x $(PY_BIN)/python ] || $(PYTHON) -m venv $(PY_VENV)
	@$(PY_BIN)/python -m pip show -q maturin >/dev/null 2>&1 \
	  || $(PY_BIN)/python -m pip install -q $(PY_MATURIN_REQ)

# `pip show a b` exits 0 when only some are installed, so each package is looked up.
py-setup: py-setup-build
	@$(PY_BIN)/python -c 'import importlib.metadata as m, sys; [m.version(p) for p in sys.argv[1:]]' \
	  $(PY_DEV_PKGS) >/dev/null 2>&1 || $(PY_BIN)/python -m pip install -q $(PY_DEV_REQS)

py-build: py-setup-build
	rm -f $(PY_WHEEL)
	$(PY_BIN)/maturin build -m $(PY_DIR)/Cargo.toml --out $(PY_WHEELS)

py-build-release: py-setup-build
	rm -f $(PY_RELEASE_WHEEL)
	$(PY_BIN)/maturin build --release -m $(PY_DIR)/Cargo.toml --out $(PY_WHEELS)/release

# The sdist builds the same wheel from source with `pip install` (maturin and a Rust toolchain
# needed); the wheel needs neither.
py-dist: py-setup-build
	mkdir -p $(PY_DIST_DIR)
	rm -f $(PY_DIST_DIR)/redlatch-*.whl $(PY_DIST_DIR)/redlatch-[0-9]*.tar.gz
	$(PY_BIN)/maturin build --release --strip -m $(PY_DIR)/Cargo.toml --out $(PY_DIST_DIR)
	$(PY_BIN)/maturin sdist -m $(PY_DIR)/Cargo.toml --out $(PY_DIST_DIR)

py-fleet:
	$(CARGO) build --manifest-path $(PY_ROOT)/Cargo.toml -p redlatch-fleet

# A fresh venv each run, so a packaging mistake (a missing file, a wrong module name) fails
# the suite; the tests run from a copy, so only the installed wheel can be imported.
py-test: py-build py-fleet
	rm -rf $(PY_TEST_VENV) $(PY_RUN)
	$(PYTHON) -m venv $(PY_TEST_VENV)
	$(PY_TEST_VENV)/bin/python -m pip install -q $(PY_TEST_REQS) $(PY_WHEEL)
	cp -r $(PY_DIR)/tests $(PY_RUN)
	cd $(PY_RUN) && $(PY_FLEET) $(PY_TEST_VENV)/bin/python -m pytest -q -ra

py-test-again: py-fleet
	@[ -x $(PY_TEST_VENV)/bin/python ] && [ -d $(PY_RUN) ] || { echo "py-test-again: run py-test first" >&2; exit 1; }
	cd $(PY_RUN) && $(PY_FLEET) $(PY_TEST_VENV)/bin/python -m pytest -q -ra

py-test-abi3: py-build py-fleet
	rm -rf $(PY_RUN) && cp -r $(PY_DIR)/tests $(PY_RUN)
	@[ -n "$(PY_ABI3_PYTHONS)" ] || echo "py-test-abi3: no pyenv CPython 3.9 / 3.13 found; nothing to do"
	@set -e; for py in $(PY_ABI3_PYTHONS); do \
	  venv=$(PY_TARGET)/py-abi3-venv-$$($$py -c 'import sys; print("%d.%d" % sys.version_info[:2])'); \
	  rm -rf $$venv; $$py -m venv $$venv; \
	  $$venv/bin/python -m pip install -q $(PY_TEST_REQS) $(PY_WHEEL); \
	  echo "== $$($$venv/bin/python -V)"; \
	  (cd $(PY_RUN) && $(PY_FLEET) $$venv/bin/python -m pytest -q); \
	done

py-check: py-setup py-build
	[ -x $(PY_CHECK_VENV)/bin/python ] || $(PYTHON) -m venv $(PY_CHECK_VENV)
	$(PY_CHECK_VENV)/bin/python -m pip show -q mypy >/dev/null 2>&1 \
	  || $(PY_CHECK_VENV)/bin/python -m pip install -q 'mypy>=1.10'
	$(PY_CHECK_VENV)/bin/python -m pip install -q --force-reinstall --no-deps $(PY_WHEEL)
	cd $(PY_TARGET) && $(PY_CHECK_VENV)/bin/python -m mypy.stubtest redlatch._native
	cd $(PY_TARGET) && $(PY_CHECK_VENV)/bin/python -m mypy --strict --python-version 3.10 -p redlatch
	$(PY_BIN)/twine check --strict $(PY_WHEEL)
	@# The wheel installs and imports with no Rust toolchain and no network (abi3, manylinux).
	rm -rf $(PY_TARGET)/py-norust-venv
	env -i PATH=/usr/bin:/bin HOME=/nonexistent $(PY_CHECK_VENV)/bin/python -m venv $(PY_TARGET)/py-norust-venv
	env -i PATH=/usr/bin:/bin HOME=/nonexistent $(PY_TARGET)/py-norust-venv/bin/python -m pip install -q \
	  --no-index --no-deps --disable-pip-version-check $(PY_WHEEL)
	cd /tmp && env -i PATH=/usr/bin:/bin HOME=/nonexistent $(PY_TARGET)/py-norust-venv/bin/python -c \
	  'import redlatch, redlatch.asyncio; redlatch.Client("redis://127.0.0.1:1"); print("installed and imported without Rust:", redlatch.__version__)'

py-bench: py-build-release rust-bench-turns
	[ -x $(PY_BENCH_VENV)/bin/python ] || $(PYTHON) -m venv $(PY_BENCH_VENV)
	$(PY_BENCH_VENV)/bin/python -m pip show -q redis python-redis-lock >/dev/null 2>&1 \
	  || $(PY_BENCH_VENV)/bin/python -m pip install -q 'redis>=5' 'python-redis-lock>=4'
	$(PY_BENCH_VENV)/bin/python -m pip install -q --force-reinstall --no-deps $(PY_RELEASE_WHEEL)
	cd $(PY_TARGET) && REDLATCH_BENCH_RUST_TURNS=$(RUST_BENCH_TURNS) \
	  $(PY_BENCH_VENV)/bin/python $(PY_DIR)/bench/bench.py $(PY_BENCH_ARGS)

py-demo-worker: py-build
	[ -x $(PY_DEMO_VENV)/bin/python ] || $(PYTHON) -m venv $(PY_DEMO_VENV)
	$(PY_DEMO_VENV)/bin/python -m pip show -q redis >/dev/null 2>&1 \
	  || $(PY_DEMO_VENV)/bin/python -m pip install -q 'redis>=5'
	$(PY_DEMO_VENV)/bin/python -m pip install -q --force-reinstall --no-deps $(PY_WHEEL)
