#!/usr/bin/env bash
# Installs what `make demo` and `make test` need on a fresh machine, idempotently:
# each step checks first and does nothing when the tool is already there.
#   tests/setup.sh redis      redis-server + redis-cli from Debian's packages
#   tests/setup.sh rust       rustfmt, clippy and the wasm32-unknown-unknown target
#   tests/setup.sh java       a JDK (17+) and Maven from Debian's packages, then the Redisson
#                             interop peer (tests/interop/java), rebuilt only when its sources change
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

java_major() {
  # `javac -version` prints e.g. "javac 17.0.15"; 0 when there is no javac.
  local v
  v=$(javac -version 2>&1 | awk '/^javac/ {print $2}') || true
  echo "${v%%.*}" | grep -E '^[0-9]+$' || echo 0
}

setup_java() {
  if [ "$(java_major)" -lt 17 ] || ! command -v mvn >/dev/null 2>&1; then
    echo "setup: installing a JDK and Maven (apt-get)"
    need_root apt-get update -qq
    need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
  fi
  local dir stamp
  dir="$(cd "$(dirname "$0")" && pwd)/interop/java"
  stamp="$dir/target/peer.stamp"
  mkdir -p "$dir/target"
  # One build at a time (parallel suites may ask together); skipped while the stamp is newer
  # than the pom and every source file.
  (
    flock 9
    if [ -f "$stamp" ] && [ -z "$(find "$dir/pom.xml" "$dir/src" -newer "$stamp" -print -quit)" ]; then exit 0; fi
    echo "setup: building the Redisson interop peer (mvn package)"
    (cd "$dir" && mvn -B -q package) && touch "$stamp"
  ) 9>"$dir/target/.build.lock"
}

for step in "$@"; do
  case "$step" in
    redis) setup_redis ;;
    rust) setup_rust ;;
    java) setup_java ;;
    *) echo "setup: unknown step '$step'" >&2; exit 2 ;;
  esac
done
