#!/usr/bin/env bash
# Runs the whole test suite: every crate's unit, integration and doc tests, then the
# frame-format round trips through meshio/VTK/trimesh/plyfile (scripts/formats.sh;
# skip with WOBBLE_FORMATS=0), the Python package's pytest suite (scripts/python.sh;
# skip with WOBBLE_PYTHON=0) and the viewer's browser tests (scripts/e2e.sh; skip
# them with WOBBLE_E2E=0).
# This is the command the README gives and the one CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace "$@"
if [[ "${WOBBLE_FORMATS:-1}" != 0 ]]; then
  echo "== frame formats through real readers (scripts/formats.sh)"
  scripts/formats.sh
fi
if [[ "${WOBBLE_PYTHON:-1}" != 0 ]]; then
  echo "== Python bindings and sweeps (scripts/python.sh)"
  scripts/python.sh
fi
if [[ "${WOBBLE_E2E:-1}" != 0 ]]; then
  echo "== viewer browser tests (scripts/e2e.sh)"
  scripts/e2e.sh
fi
