#!/usr/bin/env bash
# Installs what `make demo` and `make test` need on a fresh machine, idempotently:
# each step checks first and does nothing when the tool is already there.
#   tests/setup.sh redis      redis-server + redis-cli from Debian's packages
#   tests/setup.sh rust       rustfmt, clippy and the wasm32-unknown-unknown target
set -euo pipefail

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo "$@"; else
      echo "setup: '$*' needs root; install it yourself or run as root" >&2; return 1; fi
  else "$@"; fi
}

setup_redis() {
  if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then return; fi
  echo "setup: installing redis-server and redis-tools (apt-get)"
  need_root apt-get update -qq
  need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null
}

setup_rust() {
  local comps
  comps=$(rustup component list --installed 2>/dev/null || true)
  echo "$comps" | grep -q '^rustfmt' || rustup component add rustfmt
  echo "$comps" | grep -q '^clippy' || rustup component add clippy
  rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
}

for step in "$@"; do
  case "$step" in
    redis) setup_redis ;;
    rust) setup_rust ;;
    *) echo "setup: unknown step '$step'" >&2; exit 2 ;;
  esac
done
