from typing import Any, Dict, List, Sequence

from ._wobble import Scene as Scene
from ._wobble import SceneError as SceneError
from ._wobble import SimulationError as SimulationError
from ._wobble import World as World
from ._wobble import resume as resume
from ._wobble import version as version

__version__: str

def sweep(scene: Any, grid: Dict[str, Sequence[Any]], metrics: Sequence[str], client: Any = None, **options: Any) -> List[Dict[str, Any]]: ...
