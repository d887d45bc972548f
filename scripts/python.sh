#!/usr/bin/env bash
# Builds the Python package (crates/wobble-py, pyo3 + maturin) into a virtual
# environment (target/python-venv, with NumPy, Dask distributed, matplotlib and
# pytest from PyPI, installed when missing) and runs its pytest suite, which also
# runs the `wobble` binary to compare frames. Skip with WOBBLE_PYTHON=0.
# Extra arguments go to pytest (e.g. -k sweep).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/python-venv
req=crates/wobble-py/requirements-test.txt
stamp="$venv/.installed-$(sha256sum "$req" | cut -c1-16)"
if [[ ! -e "$stamp" ]]; then
  echo "== installing the Python build and test tools ($req) into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  touch "$stamp"
fi
cargo build --quiet -p wobble-cli
echo "== building the wobble Python package (maturin develop)"
(cd crates/wobble-py && VIRTUAL_ENV="$PWD/../../$venv" PATH="$PWD/../../$venv/bin:$PATH" \
  "../../$venv/bin/maturin" develop --quiet --profile "${WOBBLE_PY_PROFILE:-dev}")
export WOBBLE_BIN="$PWD/target/debug/wobble"
"$venv/bin/python" -m pytest -q crates/wobble-py/tests "$@"
