#!/usr/bin/env bash
# Checks a packed npm tarball of redlatch before it is handed out (`make dist`): the files a
# user's `import`/`require` of `redlatch` and `redlatch/wasm` loads are there, nothing else is
# (no sources, tests, benches, build files), the addon is a release build without symbols, and
# the tarball is not suspiciously large (a debug addon made it 5.7 MB).
#
#   node/tools/check-tarball.sh dist/redlatch-<version>.tgz [MAX_KIB]
set -euo pipefail
tarball=$1
max_kib=${2:-3072}
work=$(mktemp -d "${TMPDIR:-/tmp}/redlatch-tarball.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work"
pkg=$work/package
fail() { echo "check-tarball: $tarball: $*" >&2; exit 1; }

for f in package.json README.md LICENSE index.js index.d.ts redlatch.linux-x64-gnu.node \
  lib/index.cjs lib/index.mjs lib/index.d.ts lib/engine.mjs lib/facade/index.mjs lib/facade/index.d.ts \
  wasm/index.mjs wasm/index.cjs wasm/index.d.ts wasm/web.mjs wasm/workerd.mjs \
  wasm/nodejs/redlatch_wasm.js wasm/nodejs/redlatch_wasm_bg.wasm wasm/web/redlatch_wasm_bg.wasm; do
  [ -f "$pkg/$f" ] || fail "missing $f"
done
unexpected=$(cd "$pkg" && find . -type f | sed 's|^\./||' \
  | grep -Ev '^(package\.json|README\.md|LICENSE|index\.js|index\.d\.ts|redlatch\.linux-x64-gnu\.node|lib/(facade/)?[^/]+\.(js|mjs|cjs|d\.ts)|wasm/.+\.(js|mjs|cjs|d\.ts|wasm|json))$' || true)
[ -z "$unexpected" ] || fail "unexpected files: $(echo "$unexpected" | tr '\n' ' ')"

addon=$pkg/redlatch.linux-x64-gnu.node
readelf -S "$addon" | grep -q '\.debug_info' && fail "the addon has debug info (a debug build?)"
readelf -S "$addon" | grep -q ' \.symtab ' && fail "the addon is not stripped"
node -e "require(process.argv[1])" "$pkg/index.js" || fail "the addon does not load"

kib=$(( $(stat -c %s "$tarball") / 1024 ))
unpacked_kib=$(du -sk "$pkg" | cut -f1)
[ "$kib" -le "$max_kib" ] || fail "$kib KiB packed, more than $max_kib KiB"
echo "check-tarball: $tarball: $kib KiB packed, $unpacked_kib KiB unpacked; addon $(( $(stat -c %s "$addon") / 1024 )) KiB, stripped; wasm $(( $(stat -c %s "$pkg/wasm/web/redlatch_wasm_bg.wasm") / 1024 )) KiB"
