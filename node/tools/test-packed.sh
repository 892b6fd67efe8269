#!/usr/bin/env bash
# Runs the node:test suites against the package as a user gets it: `npm pack`, install the
# tarball (plus the suites' own dependencies: ioredis, redlock, typescript, at the versions
# in package-lock.json) into a fresh temporary folder, copy test/ there and run it. A file
# missing from the package's `files`, a broken `exports` map or a stale loader fails here.
#
#   node/tools/test-packed.sh [WRAPPER...]     e.g. target/debug/redlatch-fleet --quorum 3 --
#
# WRAPPER is prefixed to `node --test` (the fleet harness provides the Redis URLs). The lock
# suites run a second time on the tokio engine (REDLATCH_NODE_IO=tokio; the local engine is
# the default for the nodes the suites use).
# Set KEEP=1 to keep the folder for inspection.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/redlatch-node-test.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then echo "test folder: $work"; else trap 'rm -rf "$work"' EXIT; fi

tarball=$(cd "$here" && npm pack --silent --pack-destination "$work" | tail -1)
ver() { node -p "require('$here/node_modules/$1/package.json').version"; }
printf '{ "name": "redlatch-packed-test", "private": true }\n' > "$work/package.json"
(cd "$work" && npm install --silent --no-audit --no-fund --prefer-offline \
  "./$tarball" "ioredis@$(ver ioredis)" "redlock@$(ver redlock)" "typescript@$(ver typescript)")
cp -r "$here/test" "$work/test"
rm -rf "$work"/test/fixtures/.out-*
cd "$work"
echo "node-test: running test/ against $tarball in $work"
"$@" node --test test/*.test.mjs
# The native entry's other engine (the core on the addon's tokio thread, README "Design"):
# the suites of the lock surface again.
echo "node-test: again with REDLATCH_NODE_IO=tokio"
REDLATCH_NODE_IO=tokio "$@" node --test test/basic.test.mjs test/lost.test.mjs test/wait.test.mjs \
  test/cancel.test.mjs test/reentrancy.test.mjs test/native.test.mjs test/args.test.mjs test/faults.test.mjs \
  test/fair.test.mjs test/rwlock.test.mjs test/semaphore.test.mjs test/latch.test.mjs
