#!/usr/bin/env bash
# Installs what the C binding's targets need, idempotently (each step checks first):
#   bindings/c/setup.sh cbindgen   cbindgen, exactly the pinned version (cargo install, ~2 min once)
#   bindings/c/setup.sh tools      gcc, g++, valgrind, pkg-config, cmake (apt-get, when missing)
set -euo pipefail

CBINDGEN_VERSION=0.29.4

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo "$@"; else
      echo "setup: '$*' needs root; install it yourself or run as root" >&2; return 1; fi
  else "$@"; fi
}

cbindgen_version() { cbindgen --version 2>/dev/null | awk '{print $2}'; }

setup_cbindgen() {
  if [ "$(cbindgen_version)" != "$CBINDGEN_VERSION" ]; then
    echo "setup: installing cbindgen $CBINDGEN_VERSION (found: $(cbindgen_version || true))"
    cargo install cbindgen --version "$CBINDGEN_VERSION" --locked
  fi
  if [ "$(cbindgen_version)" != "$CBINDGEN_VERSION" ]; then
    echo "setup: cbindgen on PATH is '$(cbindgen_version)', need $CBINDGEN_VERSION" \
         "(is ~/.cargo/bin first on PATH?)" >&2
    exit 1
  fi
}

setup_tools() {
  local missing=()
  command -v gcc >/dev/null 2>&1 || missing+=(gcc)
  command -v g++ >/dev/null 2>&1 || missing+=(g++)
  command -v make >/dev/null 2>&1 || missing+=(make)
  command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
  command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
  command -v cmake >/dev/null 2>&1 || missing+=(cmake)
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: installing ${missing[*]} (apt-get)"
    need_root apt-get update -qq
    need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

for step in "$@"; do
  case "$step" in
    cbindgen) setup_cbindgen ;;
    tools) setup_tools ;;
    *) echo "setup: unknown step '$step'" >&2; exit 2 ;;
  esac
done
