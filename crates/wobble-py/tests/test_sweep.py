"""Sweeps on Dask: a LocalCluster gives the numbers of serial runs; failed jobs are
reported in their rows; re-runs skip finished jobs; the CSV, the plots and
`python -m wobble sweep`."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

import wobble
from wobble.sweeps import run_job

CLOTH = "scenes/bench/cloth-32.toml"
GRID = {"body.cloth.springs.structural.stiffness": [500.0, 2000.0], "simulation.dt": [5e-5, 1e-4, 2e-4]}
METRICS = ["total", "strain_max", "max(strain_max)", "mean(kinetic)"]


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("dask.distributed")
    cl = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = distributed.Client(cl)
    yield client
    client.close()
    cl.close()


def serial(repo, params, steps, samples=10):
    """One job run here, by hand: build, step, measure."""
    s = wobble.Scene.load(repo / CLOTH)
    for k, v in params.items():
        s.set(k, v)
    w = s.build(threads=1)
    maxima, kinetic = [], []

    def sample():
        m = w.metrics()
        maxima.append(m["strain_max"])
        kinetic.append(m["kinetic"])

    sample()
    done = 0
    for k in range(1, samples + 1):
        target = steps * k // samples
        w.step(target - done)
        done = target
        sample()
    m = w.metrics()
    return {"total": m["total"], "strain_max": m["strain_max"], "max(strain_max)": max(maxima),
            "mean(kinetic)": sum(kinetic) / len(kinetic)}


def test_a_2x3_sweep_on_two_workers_equals_six_serial_runs(repo, tmp_path, cluster):
    rows = wobble.sweep(repo / CLOTH, GRID, METRICS, client=cluster, steps=120, samples=10, out=tmp_path)
    assert len(rows) == 6
    order = [(r["body.cloth.springs.structural.stiffness"], r["simulation.dt"]) for r in rows]
    assert order == [(k, dt) for k in GRID["body.cloth.springs.structural.stiffness"] for dt in GRID["simulation.dt"]]
    for row in rows:
        assert row["error"] is None and row["cached"] is False
        params = {k: row[k] for k in GRID}
        expected = serial(repo, params, 120)
        for m in METRICS:
            assert row[m] == expected[m], (params, m, row[m], expected[m])
    # Different parameters give different numbers (the values reached the runs).
    assert len({r["total"] for r in rows}) == 6
    with open(tmp_path / "sweep.csv") as f:
        table = list(csv.DictReader(f))
    assert len(table) == 6 and float(table[0]["total"]) == rows[0]["total"]
    assert list(table[0])[:6] == list(GRID) + METRICS
    plots = sorted(p.name for p in tmp_path.glob("*.png"))
    assert len(plots) == len(METRICS) * len(GRID), plots
    assert all((tmp_path / p).stat().st_size > 5000 for p in plots)


def test_failed_jobs_are_reported_and_reruns_skip_finished_ones(repo, tmp_path, cluster):
    grid = {"simulation.dt": [1e-4, -1.0, 0.05]}
    rows = wobble.sweep(repo / CLOTH, grid, ["total"], client=cluster, steps=200, out=tmp_path, plot=False)
    ok, bad_value, blow_up = rows
    assert ok["error"] is None and isinstance(ok["total"], float)
    assert "SceneError" in bad_value["error"] and "must be positive" in bad_value["error"]
    assert bad_value["total"] is None
    assert "SimulationError" in blow_up["error"] and "step" in blow_up["error"]
    cache = list((tmp_path / "cache").glob("*.json"))
    assert len(cache) == 1, "only finished jobs are cached"
    again = wobble.sweep(repo / CLOTH, grid, ["total"], client=cluster, steps=200, out=tmp_path, plot=False)
    assert again[0]["cached"] is True and again[0]["total"] == ok["total"]
    assert again[2]["cached"] is False and again[2]["error"] == blow_up["error"]
    # Another metric list is another job.
    third = wobble.sweep(repo / CLOTH, {"simulation.dt": [1e-4]}, ["kinetic"], client=cluster, steps=200,
                         out=tmp_path, plot=False)
    assert third[0]["cached"] is False


def test_unknown_metrics_fail_their_jobs_with_a_suggestion(repo):
    s = wobble.Scene.load(repo / CLOTH)
    row = run_job({"text": s.text, "base_dir": str(s.base_dir), "name": s.name, "steps": 5,
                   "metrics": ["totl"], "samples": 1, "threads": 1})
    assert "did you mean `total`?" in row["error"]


def test_bad_sweep_arguments_are_errors(repo):
    with pytest.raises(ValueError, match="grid is empty"):
        wobble.sweep(repo / CLOTH, {}, ["total"], out=None)
    with pytest.raises(ValueError, match="must be a list"):
        wobble.sweep(repo / CLOTH, {"simulation.dt": 1e-4}, ["total"], out=None)


def test_python_m_wobble_sweep_runs_a_sweep_file(repo, tmp_path):
    spec = tmp_path / "stiffness.toml"
    spec.write_text(
        f'scene = "{repo / CLOTH}"\n'
        'metrics = ["total"]\nsteps = 50\nworkers = 2\nout = "result"\n'
        '[grid]\n"body.cloth.springs.structural.stiffness" = [500.0, 1000.0]\n'
    )
    o = subprocess.run([sys.executable, "-m", "wobble", "sweep", str(spec)], capture_output=True, text=True,
                       timeout=300)
    assert o.returncode == 0, o.stderr
    assert "2 jobs (0 from the cache, 0 failed)" in o.stdout
    rows = list(csv.DictReader(open(tmp_path / "result" / "sweep.csv")))
    assert [float(r["body.cloth.springs.structural.stiffness"]) for r in rows] == [500.0, 1000.0]
    assert (tmp_path / "result" / "total-vs-body.cloth.springs.structural.stiffness.png").is_file()
    bad = tmp_path / "bad.toml"
    bad.write_text('scene = "x.toml"\nmetric = ["total"]\n')
    o = subprocess.run([sys.executable, "-m", "wobble", "sweep", str(bad)], capture_output=True, text=True)
    assert o.returncode == 2 and "unknown key `metric`" in o.stderr


def test_a_sweep_runs_on_a_separate_scheduler_and_workers_by_address(repo, tmp_path):
    """`dask scheduler` and `dask worker` started as their own processes on
    127.0.0.1; the sweep reaches them through a Client by address."""
    distributed = pytest.importorskip("dask.distributed")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    dask = str(Path(sys.executable).parent / "dask")
    logs = [open(tmp_path / name, "w") for name in ("scheduler.log", "worker.log")]
    scheduler = subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                                 stdout=logs[0], stderr=subprocess.STDOUT)
    workers = subprocess.Popen([dask, "worker", address, "--nworkers", "2", "--nthreads", "1", "--no-dashboard"],
                               stdout=logs[1], stderr=subprocess.STDOUT)
    client = None
    try:
        client = distributed.Client(address, timeout=60)
        client.wait_for_workers(2, timeout=60)
        grid = {"body.cloth.springs.structural.stiffness": [500.0, 2000.0]}
        rows = wobble.sweep(repo / CLOTH, grid, ["total", "max(strain_max)"], client=client, steps=100, samples=10,
                            out=tmp_path / "out", plot=False)
        used = {w for w in client.scheduler_info()["workers"]}
        assert len(used) == 2
        for row in rows:
            assert row["error"] is None, row
            expected = serial(repo, {k: row[k] for k in grid}, 100)
            assert row["total"] == expected["total"] and row["max(strain_max)"] == expected["max(strain_max)"]
    finally:
        if client is not None:
            client.close()
        for p in (workers, scheduler):
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        for f in logs:
            f.close()
