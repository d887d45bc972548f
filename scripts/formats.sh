#!/usr/bin/env bash
# Round-trip tests of wobble's frame formats through real readers: meshio, VTK's
# Python package, trimesh and plyfile, installed from PyPI into a virtual
# environment (target/formats-venv) when missing, as scripts/e2e.sh installs
# chromium. Then runs the Rust test that writes frames of every format and hands
# them to scripts/formats/roundtrip.py. Skip with WOBBLE_FORMATS=0.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/formats-venv
req=scripts/formats/requirements.txt
stamp="$venv/.installed-$(sha256sum "$req" | cut -c1-16)"
if [[ ! -e "$stamp" ]]; then
  echo "== installing the format readers ($req) into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  touch "$stamp"
fi
export WOBBLE_FORMATS_PYTHON="$PWD/$venv/bin/python"
cargo test -p wobble-cli --test formats -- --include-ignored
