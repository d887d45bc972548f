"""Parameter sweeps: every combination of scene values, each a full run, on Dask.

``sweep(scene, grid, metrics)`` runs the cartesian product of ``grid`` (dotted scene
paths to lists of values) on Dask distributed: on a ``LocalCluster`` it starts and
stops itself when ``client`` is None, or on any cluster a ``dask.distributed.Client``
reaches (``Client("tcp://host:8786")``; Dask's SSH, Kubernetes and Slurm deployers
scale that out). Each job builds the scene with its values and steps it; the result
row holds the values, the requested metrics and an ``error`` (None, or why the job
failed: a bad value, a blow-up), so one failed job never ends the sweep.

Metrics are names of ``World.metrics()`` (``total``, ``strain_max``, ``volume``, …)
taken at the end of the run, or ``max(name)``, ``min(name)``, ``mean(name)`` over
``samples`` evenly spaced moments of it (the start included).

Results go to ``out``: ``sweep.csv`` (one row per job), one PNG per metric and swept
parameter (the metric against that parameter, a line for each combination of the
others), and ``cache/KEY.json`` per finished job. KEY is a hash of the scene text as
run (values applied), the wobble version, the steps and the metrics, so a re-run
skips jobs already finished and reruns only those that failed or are new.

Each job steps the engine on one thread by default (two Dask workers with a full
thread pool each would overload the cores); results are identical for any thread
count.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
import math
import os
import re
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

_AGG = re.compile(r"^(max|min|mean)\((\w+)\)$")


def _metric_parts(name: str):
    m = _AGG.match(name)
    return (m.group(1), m.group(2)) if m else (None, name)


def run_job(job: Dict[str, Any]) -> Dict[str, Any]:
    """Runs one job (a dict made by :func:`sweep`) and returns its metrics; errors
    are returned, never raised. Runs on a Dask worker."""
    from . import Scene

    started = time.perf_counter()
    row: Dict[str, Any] = {"error": None}
    try:
        scene = Scene.from_toml(job["text"], job["base_dir"], job["name"])
        world = scene.build(threads=job["threads"])
        steps = job["steps"] if job["steps"] is not None else scene.steps
        wanted = [_metric_parts(m) for m in job["metrics"]]
        sampled = any(agg for agg, _ in wanted)
        samples = max(1, int(job["samples"])) if sampled else 1
        series: Dict[str, List[float]] = {name: [] for agg, name in wanted if agg}

        def sample():
            m = world.metrics()
            for name in series:
                series[name].append(_value(m, name))

        done = 0
        if sampled:
            sample()
        for k in range(1, samples + 1):
            target = steps * k // samples
            world.step(target - done)
            done = target
            if sampled:
                sample()
        final = world.metrics()
        for metric, (agg, name) in zip(job["metrics"], wanted):
            if agg is None:
                row[metric] = _value(final, name)
            else:
                xs = series[name]
                row[metric] = {"max": max, "min": min, "mean": lambda v: sum(v) / len(v)}[agg](xs)
        row["steps"] = steps
    except Exception as e:  # reported in the row: one failed job never ends the sweep
        row["error"] = f"{type(e).__name__}: {e}"
    row["seconds"] = time.perf_counter() - started
    return row


def _value(metrics: Dict[str, Any], name: str):
    if name not in metrics:
        import difflib

        near = difflib.get_close_matches(name, list(metrics), n=1)
        hint = f"; did you mean `{near[0]}`?" if near else ""
        raise KeyError(f"no metric `{name}`{hint} metrics: {', '.join(metrics)}")
    return metrics[name]


def _job_key(text: str, version: str, steps, metrics: Sequence[str], samples: int) -> str:
    h = hashlib.sha256()
    for part in (text, version, repr(steps), json.dumps(list(metrics)), str(samples)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def sweep(
    scene,
    grid: Dict[str, Sequence[Any]],
    metrics: Sequence[str],
    client=None,
    *,
    steps: Optional[int] = None,
    out="sweep-out",
    threads: int = 1,
    samples: int = 100,
    workers: int = 2,
    plot: bool = True,
) -> List[Dict[str, Any]]:
    """Runs every combination of ``grid`` and returns one dict per job, in the
    order of the product (the first key varies slowest).

    ``scene``: a path or a :class:`wobble.Scene`. ``grid``: dotted paths (as
    ``wobble run --set``) to lists of values. ``metrics``: names of
    ``World.metrics()`` at the end, or ``max(name)``/``min(name)``/``mean(name)``
    over ``samples`` moments. ``client``: a ``dask.distributed.Client``, or None
    for a LocalCluster of ``workers`` single-threaded processes. ``steps``: steps
    per job (default: the scene's). ``out``: folder for ``sweep.csv``, the plots and
    the cache (None writes nothing and caches nothing). ``threads``: engine threads
    per job.
    """
    from . import Scene, SceneError, version

    if isinstance(scene, (str, os.PathLike)):
        scene = Scene.load(os.fspath(scene))
    if not grid:
        raise ValueError("the grid is empty: give at least one key with a list of values")
    keys = list(grid)
    values = []
    for k in keys:
        vs = grid[k]
        if isinstance(vs, (str, bytes)) or not isinstance(vs, Iterable):
            raise ValueError(f"grid[{k!r}] must be a list of values")
        vs = list(vs)
        if not vs:
            raise ValueError(f"grid[{k!r}] has no values")
        values.append(vs)
    metrics = list(metrics)
    if not metrics:
        raise ValueError("name at least one metric")
    if threads < 1:
        raise ValueError("threads must be at least 1")
    out_dir = Path(out) if out is not None else None
    cache = out_dir / "cache" if out_dir is not None else None
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)

    rows: List[Dict[str, Any]] = []
    jobs: List[Dict[str, Any]] = []
    for combo in itertools.product(*values):
        params = dict(zip(keys, combo))
        row: Dict[str, Any] = dict(params)
        rows.append(row)
        s = scene.copy()
        try:
            for k, v in params.items():
                s.set(k, v)
        except SceneError as e:  # a bad value fails its own job only
            row.update({m: None for m in metrics})
            row.update(error=f"SceneError: {e}", cached=False, key=None, seconds=0.0, steps=None)
            continue
        key = _job_key(s.text, version(), steps, metrics, samples)
        row["key"] = key
        hit = cache / f"{key}.json" if cache is not None else None
        if hit is not None and hit.is_file():
            try:
                row.update(json.loads(hit.read_text()))
                row["cached"] = True
                continue
            except (OSError, ValueError):
                pass  # an unreadable entry is run again
        row["cached"] = False
        jobs.append(
            {
                "row": len(rows) - 1,
                "text": s.text,
                "base_dir": os.fspath(s.base_dir),
                "name": s.name,
                "steps": steps,
                "metrics": metrics,
                "samples": samples,
                "threads": threads,
            }
        )

    if jobs:
        for job, result in _dispatch(jobs, client, workers):
            row = rows[job["row"]]
            row.update(result)
            if _finished(result) and cache is not None:
                _write_atomic(cache / f"{row['key']}.json", json.dumps(result))

    for row in rows:
        for m in metrics:
            row.setdefault(m, None)
    if out_dir is not None:
        _write_csv(out_dir / "sweep.csv", rows, keys, metrics)
        if plot:
            _plot(out_dir, rows, keys, metrics)
    return rows


def _finished(result: Dict[str, Any]) -> bool:
    return result.get("error") is None


def _dispatch(jobs, client, workers):
    """Yields (job, result) as jobs finish, on `client` or a LocalCluster."""
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("wobble.sweep needs Dask: pip install 'dask[distributed]'") from e
    own = None
    if client is None:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
        own = (client, cluster)
    try:
        futures = {client.submit(run_job, {k: v for k, v in j.items() if k != "row"}, pure=False): j for j in jobs}
        for fut in as_completed(futures):
            job = futures[fut]
            try:
                result = fut.result()
            except Exception as e:  # a worker that died with its job
                result = {"error": f"{type(e).__name__}: {e}", "seconds": None}
            yield job, result
    finally:
        if own is not None:
            own[0].close()
            own[1].close()


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.partial")
    tmp.write_text(text)
    os.replace(tmp, path)


def _cell(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return v


def _write_csv(path: Path, rows, keys, metrics) -> None:
    cols = list(keys) + list(metrics) + ["error", "cached", "seconds", "key"]
    tmp = path.with_name(f".{path.name}.partial")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for row in rows:
            w.writerow([_cell(row.get(c)) for c in cols])
    os.replace(tmp, path)


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _plot(out_dir: Path, rows, keys, metrics) -> List[Path]:
    """One PNG per scalar metric and swept parameter with more than one number."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("plots need matplotlib: pip install matplotlib, or pass plot=False") from e
    written = []
    for metric in metrics:
        for key in keys:
            xs = {row[key] for row in rows if _number(row[key])}
            if len(xs) < 2:
                continue
            others = [k for k in keys if k != key]
            groups: Dict[tuple, List[tuple]] = {}
            for row in rows:
                if _number(row[key]) and _number(row.get(metric)):
                    groups.setdefault(tuple(row[k] for k in others), []).append((row[key], row[metric]))
            if not groups:
                continue
            fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
            for label, pts in groups.items():
                pts.sort()
                text = ", ".join(f"{k}={v}" for k, v in zip(others, label)) or None
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=text)
            ax.set_xlabel(key)
            ax.set_ylabel(metric)
            positive = all(x > 0 for x in xs)
            if positive and max(xs) / min(xs) >= 20:
                ax.set_xscale("log")
            ax.set_title(f"{metric} against {key}")
            if len(groups) > 1:
                ax.legend(fontsize=7)
            fig.tight_layout()
            safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{metric}-vs-{key}")
            path = out_dir / f"{safe}.png"
            fig.savefig(path)
            plt.close(fig)
            written.append(path)
    return written
