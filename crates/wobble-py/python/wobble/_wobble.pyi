"""Type stubs of the extension module (the engine, in Rust)."""

from os import PathLike
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

_Path = Union[str, PathLike[str]]
_Value = Union[bool, int, float, str, Sequence[Any]]
_Point = Sequence[float]

class SceneError(ValueError):
    """A scene that cannot be read or built; the message names the file, line and column."""

    file: str
    line: int
    column: int
    help: Optional[str]

class SimulationError(RuntimeError):
    """A step that failed: a blow-up (step, particle, likely cause) or a solver failure."""

def version() -> str:
    """The engine's version."""

def resume(out: _Path, *, max_memory: Optional[int] = None, threads: Optional[int] = None) -> Dict[str, Any]:
    """Continues the run in ``out`` from its checkpoint, bit for bit, as
    ``wobble run --resume``; returns what :meth:`Scene.run` returns. Raises
    ValueError when the folder holds no run that can continue."""

class Scene:
    """A scene file, read and checked; change values with :meth:`set`."""

    @staticmethod
    def load(path: _Path) -> Scene:
        """Reads a scene file (raises SceneError naming the line and column)."""
    @staticmethod
    def from_toml(text: str, base_dir: _Path = ".", name: str = "<string>") -> Scene:
        """Reads a scene from TOML text; ``base_dir`` resolves relative mesh paths."""
    def set(self, key: str, value: _Value) -> Scene:
        """Sets ``key`` (a dotted path, as ``wobble run --set``) to ``value`` and checks
        the scene at once; on an error the scene stays as it was. Returns the scene."""
    def copy(self) -> Scene:
        """An independent copy."""
    @property
    def text(self) -> str:
        """The scene text as it will run (values set applied)."""
    @property
    def name(self) -> str:
        """The source's name (with "(with --set)" once changed)."""
    @property
    def base_dir(self) -> Path:
        """The folder relative mesh paths are resolved against."""
    @property
    def dt(self) -> float:
        """Time step, s."""
    @property
    def steps(self) -> int:
        """Steps the scene asks for."""
    def build(self, threads: Optional[int] = None) -> World:
        """Builds the world on a thread pool of ``threads`` (default: every core; never pinned)."""
    def run(
        self,
        out: _Path,
        *,
        steps: Optional[int] = None,
        duration: Optional[float] = None,
        frames: bool = True,
        overwrite: bool = False,
        max_memory: Optional[int] = None,
        threads: Optional[int] = None,
    ) -> Dict[str, Any]:
        """Runs the scene into the folder ``out`` as ``wobble run`` does (manifest,
        frames, metrics, checkpoints, summary; the same refusals, raised as
        ValueError). Returns ``status`` (finished, blew-up, interrupted, failed),
        ``dir``, ``first_step``, ``steps``, ``steps_planned``, ``time``, ``frames``,
        ``wall_seconds``, ``steps_per_second`` and ``error``. Ctrl-C stops it after
        a complete step, writes a checkpoint and raises KeyboardInterrupt."""

class World:
    """A simulated world."""

    def step(self, n: int = 1) -> None:
        """Takes ``n`` steps with the GIL released; Ctrl-C raises KeyboardInterrupt
        between steps, leaving the world valid. A blow-up raises SimulationError."""
    @property
    def time(self) -> float:
        """Simulated time, s."""
    @property
    def steps(self) -> int:
        """Steps taken."""
    @property
    def dt(self) -> float:
        """Time step, s."""
    @property
    def threads(self) -> int:
        """Size of the world's thread pool."""
    @property
    def particle_count(self) -> int:
        """Number of particles."""
    @property
    def bodies(self) -> List[str]:
        """Body names in scene order."""
    def particles_of(self, body: str) -> Tuple[int, int]:
        """Particle indices of ``body`` as (start, stop)."""
    def positions(self, body: Optional[str] = None) -> npt.NDArray[np.float64]:
        """Positions, m, as an n×3 float64 array (a copy)."""
    def velocities(self, body: Optional[str] = None) -> npt.NDArray[np.float64]:
        """Velocities, m/s, as an n×3 float64 array (a copy)."""
    def metrics(self) -> Dict[str, Any]:
        """The metrics of the current state (the columns of metrics.csv)."""
    def pin(self, i: int, pinned: bool = True) -> None:
        """Pins (or frees) particle ``i``."""
    def drag(self, i: int, target: _Point, stiffness: Optional[float] = None, damping: Optional[float] = None) -> None:
        """Drags particle ``i`` towards ``target`` with the viewer's drag spring."""
    def release(self) -> None:
        """Lets go of a dragged particle."""
    def pick(self, point: _Point) -> Optional[int]:
        """The draggable particle nearest to ``point``."""
    def save_frame(self, path: _Path) -> None:
        """Writes the current frame (.ply, .obj, .vtk, .vtu by extension), atomically."""
    def checkpoint(self) -> bytes:
        """The full state in wobble's checkpoint format."""
    def restore(self, data: bytes) -> None:
        """Puts a checkpoint of a world of the same scene back."""
