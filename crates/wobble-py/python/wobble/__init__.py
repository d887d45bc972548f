"""wobble: particle-based soft-body simulation, from Python.

The engine itself (Rust) is in the extension module ``wobble._wobble``; this package
re-exports it and adds parameter sweeps on Dask (``wobble.sweep``)::

    import wobble

    scene = wobble.Scene.load("scenes/bench/cloth-32.toml")
    scene.set("body.cloth.springs.structural.stiffness", 800.0)
    world = scene.build()
    world.step(1000)            # the GIL is released while stepping
    x = world.positions()       # n x 3 float64 NumPy array (a copy)
    print(world.time, world.metrics()["total"])

Scene values are set by the dotted paths ``wobble run --set`` takes, with the same
checks and messages; a bad value raises ``wobble.SceneError`` naming the line and
column. A world steps on a thread pool of its own (``scene.build(threads=...)``,
default every core) and never pins threads to cores; results are identical for
any thread count.

``scene.run(out)`` does what ``wobble run`` does: the same output folder (manifest,
frames, metrics, checkpoints, summary), the same refusals, Ctrl-C ending the run
interrupted; ``wobble.resume(out)`` continues it bit for bit.
"""

from ._wobble import Scene, SceneError, SimulationError, World, resume, version

__version__ = version()

__all__ = ["Scene", "SceneError", "SimulationError", "World", "resume", "sweep", "version", "__version__"]


def sweep(scene, grid, metrics, client=None, **options):
    """Runs the cartesian product of ``grid`` on Dask and returns one dict per job;
    see :func:`wobble.sweeps.sweep` for the options. Imported lazily, so that
    ``import wobble`` needs neither Dask nor matplotlib."""
    from .sweeps import sweep as run

    return run(scene, grid, metrics, client=client, **options)
