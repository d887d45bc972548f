"""``python -m wobble sweep SWEEP.toml``: a parameter sweep described in a file.

A sweep file names the scene (relative to the sweep file), the grid and the
metrics; everything else is optional::

    scene = "../scenes/bench/cloth-32.toml"
    metrics = ["total", "max(strain_max)"]
    steps = 500            # default: the scene's own
    out = "out/sweep"      # default: out/sweep-NAME, NAME the sweep file's stem
    threads = 1            # engine threads per job
    workers = 2            # LocalCluster processes (when no scheduler is given)
    samples = 100          # moments that max()/min()/mean() look at
    scheduler = "tcp://host:8786"   # optional: a running Dask scheduler

    [grid]
    "body.cloth.springs.structural.stiffness" = [500, 1000, 2000]
    "simulation.dt" = [1e-4, 2e-4]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

KEYS = {"scene", "metrics", "steps", "out", "threads", "workers", "samples", "scheduler", "grid"}


def _fail(msg: str) -> int:
    print(f"error: {msg}", file=sys.stderr)
    return 2


def sweep_command(args) -> int:
    from . import SceneError, sweep

    path = Path(args.file)
    try:
        spec = tomllib.loads(path.read_text())
    except OSError as e:
        return _fail(f"cannot read {path}: {e.strerror}")
    except tomllib.TOMLDecodeError as e:
        return _fail(f"{path}: invalid TOML: {e}")
    unknown = sorted(set(spec) - KEYS)
    if unknown:
        return _fail(f"{path}: unknown key `{unknown[0]}`; valid keys: {', '.join(sorted(KEYS))}")
    for key in ("scene", "metrics", "grid"):
        if key not in spec:
            return _fail(f"{path}: `{key}` is missing")
    if not isinstance(spec["grid"], dict):
        return _fail(f"{path}: `grid` must be a table of dotted keys to lists of values")
    scene = (path.parent / spec["scene"]).resolve()
    if args.out:
        out = Path(args.out)
    elif "out" in spec:
        out = path.parent / spec["out"]
    else:
        out = Path("out") / f"sweep-{path.stem}"
    client = None
    scheduler = args.scheduler or spec.get("scheduler")
    if scheduler:
        from dask.distributed import Client

        client = Client(scheduler)
    try:
        rows = sweep(
            str(scene),
            spec["grid"],
            spec["metrics"],
            client=client,
            steps=spec.get("steps"),
            out=out,
            threads=spec.get("threads", 1),
            samples=spec.get("samples", 100),
            workers=args.workers or spec.get("workers", 2),
        )
    except SceneError as e:
        return _fail(str(e))
    except (ValueError, TypeError) as e:
        return _fail(f"{path}: {e}")
    finally:
        if client is not None:
            client.close()
    failed = [r for r in rows if r.get("error")]
    cached = sum(1 for r in rows if r.get("cached"))
    print(f"{len(rows)} jobs ({cached} from the cache, {len(failed)} failed): {Path(out) / 'sweep.csv'}")
    for r in failed:
        print(f"  failed: {r['error']}", file=sys.stderr)
    return 1 if failed else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m wobble", description="wobble from the command line, in Python")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sweep", help="run a parameter sweep described in a TOML file on Dask")
    s.add_argument("file", help="the sweep file")
    s.add_argument("--out", help="output folder (default: the file's `out`, else out/sweep-NAME)")
    s.add_argument("--scheduler", help="address of a running Dask scheduler, e.g. tcp://host:8786")
    s.add_argument("--workers", type=int, help="LocalCluster worker processes (default 2)")
    args = p.parse_args(argv)
    if args.command == "sweep":
        return sweep_command(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
