"""A stiffness sweep from Python: how far the benchmark cloth stretches under its own
weight as its springs stiffen, four runs on a Dask LocalCluster.

    python examples/python/stiffness_sweep.py [--out out/stiffness-sweep] [--image PNG]

Needs the `wobble` package (see docs/python.md), Dask distributed and matplotlib.
The image in the README (docs/images/python-sweep.png) was made with the defaults.
"""

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import wobble

REPO = Path(__file__).resolve().parents[2]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out/stiffness-sweep", help="folder for sweep.csv, plots and the cache")
    p.add_argument("--image", default=str(REPO / "docs/images/python-sweep.png"), help="the figure to write")
    p.add_argument("--steps", type=int, default=3000, help="steps per run (0.3 s at dt = 1e-4 s)")
    args = p.parse_args()

    scene = wobble.Scene.load(REPO / "scenes/bench/cloth-32.toml")
    key = "body.cloth.springs.structural.stiffness"
    stiffness = [250.0, 500.0, 1000.0, 2000.0]
    rows = wobble.sweep(
        scene,
        {key: stiffness},
        ["max(strain_max)", "mean(strain_max)", "bbox_min"],
        steps=args.steps,
        out=args.out,
        samples=60,
    )
    for r in rows:
        if r["error"]:
            raise SystemExit(f"k = {r[key]}: {r['error']}")
        print(f"k = {r[key]:6.0f} N/m: largest spring strain {r['max(strain_max)']:.4f}, mean over the run "
              f"{r['mean(strain_max)']:.4f}, lowest point at the end y = {r['bbox_min'][1]:.4f} m"
              f"{'  (from the cache)' if r['cached'] else ''}")

    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    ks = [r[key] for r in rows]
    ax.loglog(ks, [r["max(strain_max)"] for r in rows], "o-", label="largest strain at any moment")
    ax.loglog(ks, [r["mean(strain_max)"] for r in rows], "s--", label="largest strain, mean over the run")
    ax.set_xlabel("structural spring stiffness (N/m)")
    ax.set_ylabel("strain (r − L) / L")
    ax.set_title(f"32 × 32 cloth hung by two corners, {args.steps} steps")
    ax.legend()
    fig.tight_layout()
    Path(args.image).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.image)
    print(f"wrote {args.image} and {Path(args.out) / 'sweep.csv'}")


if __name__ == "__main__":
    main()
