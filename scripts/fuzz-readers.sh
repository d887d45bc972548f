#!/usr/bin/env bash
# Mutation-tests the scene reader and the OBJ reader with many cases (default
# 10 000 per reader; the normal test suite runs 256). Each case runs under a
# deadline, so a hang fails it like a panic does.
#
#   scripts/fuzz-readers.sh            # 10 000 cases per reader
#   WOBBLE_FUZZ_CASES=50000 scripts/fuzz-readers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export WOBBLE_FUZZ_CASES="${WOBBLE_FUZZ_CASES:-10000}"
echo "fuzz-readers: $WOBBLE_FUZZ_CASES cases per reader"
exec cargo test -p wobble-scene --test mutations -- --nocapture
