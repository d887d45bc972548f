"""World.step from Python against `wobble run` on the same scene and threads, and
the cost of one call of step(1). Build both in release first:

    cargo build --release -p wobble-cli
    (cd crates/wobble-py && maturin develop --release)
    python crates/wobble-py/bench/step_speed.py [--bin target/release/wobble]

Prints steps per second of each (the best of --repeat runs, taken alternately so
that machine noise hits both), their ratio, and the overhead of step(1) over
step(n) per step.
"""

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import wobble

REPO = Path(__file__).resolve().parents[3]
CASES = [
    ("cloth-64, symplectic Euler, dt 1e-4", "scenes/bench/cloth-64.toml", {}, 10000),
    ("cloth-64, implicit Euler, dt 1e-3", "scenes/bench/cloth-64.toml",
     {"simulation.integrator": "implicit-euler", "simulation.dt": 1e-3}, 200),
]


def cli_rate(binary, scene, sets, steps, threads):
    with tempfile.TemporaryDirectory() as out:
        args = [str(binary), "--threads", str(threads), "run", scene, "--out", out + "/run", "-q", "--no-frames",
                "--set", f"simulation.steps={steps}", "--set", f"output.metrics_every={steps}"]
        for k, v in sets.items():
            args += ["--set", f"{k}={v}"]
        subprocess.run(args, cwd=REPO, check=True)
        return json.loads(Path(out, "run", "timing.json").read_text())["steps_per_second"]


def py_rate(scene, sets, steps, threads):
    s = wobble.Scene.load(REPO / scene)
    for k, v in sets.items():
        s.set(k, v)
    w = s.build(threads=threads)
    start = time.perf_counter()
    w.step(steps)
    return steps / (time.perf_counter() - start)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=str(REPO / "target/release/wobble"))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    a = p.parse_args()
    print("| case | threads | CLI steps/s | Python steps/s | Python / CLI |")
    print("|---|---|---|---|---|")
    for name, scene, sets, steps in CASES:
        for threads in a.threads:
            cli, py = 0.0, 0.0
            for _ in range(a.repeat):
                cli = max(cli, cli_rate(a.bin, scene, sets, steps, threads))
                py = max(py, py_rate(scene, sets, steps, threads))
            print(f"| {name} | {threads} | {cli:,.0f} | {py:,.0f} | {py / cli:.3f} |")
    # The price of one call: step(1) n times against step(n), on a small world.
    w = wobble.Scene.load(REPO / "scenes/bench/cloth-32.toml").build(threads=1)
    n = 5000
    best_one, best_many = float("inf"), float("inf")
    for _ in range(a.repeat):
        start = time.perf_counter()
        for _ in range(n):
            w.step(1)
        best_one = min(best_one, time.perf_counter() - start)
        start = time.perf_counter()
        w.step(n)
        best_many = min(best_many, time.perf_counter() - start)
    print(f"\nstep(1) on cloth-32 (1024 particles, one thread): {best_one / n * 1e6:.2f} µs per call, "
          f"{best_many / n * 1e6:.2f} µs per step inside step({n}): overhead {(best_one - best_many) / n * 1e6:.2f} µs")


if __name__ == "__main__":
    main()
