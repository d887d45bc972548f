#!/usr/bin/env bash
# Runs the whole test suite: every crate's unit, integration and doc tests.
# This is the command the README gives and the one CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace "$@"
