#!/usr/bin/env bash
# Browser tests of the viewer (`wobble view`): headless Debian Chromium driven by
# playwright-core from npm (crates/wobble-viewer/e2e). Installs what is missing —
# the chromium package (with sudo when not root) and the pinned npm packages — then
# runs the tests against target/debug/wobble. Screenshots: target/e2e-screenshots/.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() {
  if [[ "$(id -u)" == 0 ]]; then "$@"; else sudo "$@"; fi
}

missing=()
[[ -x /usr/bin/chromium ]] || missing+=(chromium)
command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  echo "== installing ${missing[*]} (apt-get)"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if ((node_major < 20)); then
  echo "error: the browser tests need Node.js >= 20 (playwright-core, node:test concurrency); found $(node --version 2>/dev/null || echo none)" >&2
  exit 1
fi

cargo build -p wobble-cli --quiet
export WOBBLE_BIN="$PWD/target/debug/wobble"
cd crates/wobble-viewer/e2e
npm ci --no-audit --no-fund --loglevel=error
npm test
