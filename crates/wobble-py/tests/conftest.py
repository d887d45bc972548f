"""Shared helpers of the Python tests: the repository, the `wobble` binary, PLY frames."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def wobble_bin() -> Path:
    path = Path(os.environ.get("WOBBLE_BIN", REPO / "target" / "debug" / "wobble"))
    if not path.is_file():
        pytest.fail(f"the wobble binary is missing at {path}: run `cargo build -p wobble-cli` (scripts/python.sh does)")
    return path


def start_python(code: str) -> subprocess.Popen:
    """Starts `python -c code` with text pipes, Ctrl-C raising KeyboardInterrupt in it
    as in a terminal: a test run started in the background by a shell without job
    control has SIGINT ignored, and a Python started with it ignored keeps it so."""
    prelude = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    return subprocess.Popen(
        [sys.executable, "-c", prelude + code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def run_cli(wobble_bin, *args, cwd=REPO):
    return subprocess.run([str(wobble_bin), *map(str, args)], cwd=cwd, capture_output=True, text=True, check=False)


def read_ply_vertices(path: Path) -> np.ndarray:
    """The vertices of a binary little-endian PLY frame written by wobble (doubles)."""
    data = path.read_bytes()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    header = data[:end].decode().splitlines()
    assert header[1] == "format binary_little_endian 1.0", header
    n = next(int(line.split()[2]) for line in header if line.startswith("element vertex"))
    props = [line for line in header if line.startswith("property")]
    assert props[:3] == ["property double x", "property double y", "property double z"], props
    return np.frombuffer(data, dtype="<f8", count=3 * n, offset=end).reshape(n, 3)
