#!/usr/bin/env bash
# Developer loop (not used by make): rebuild the dev wheel, reinstall it into the test venv,
# run pytest from a copy of the tests. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/maturin build -q -m python/Cargo.toml --out target/wheels >/dev/null
target/py-test-venv/bin/pip install -q --force-reinstall --no-deps target/wheels/redlatch-*-cp39-abi3-*.whl
rm -rf target/py-test-run && cp -r python/tests target/py-test-run
cd target/py-test-run && exec ../py-test-venv/bin/python -m pytest "$@"
