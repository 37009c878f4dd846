"""gpusizer: size LLM inference on any accelerator before renting it.

``import gpusizer`` reads no file, builds no unit registry and defers even numpy and pydantic: the
public names below are imported on first use (PEP 562), and catalogues load on first lookup.

>>> import gpusizer
>>> gpusizer.gpu("h200").id
'h200-sxm'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from gpusizer import presentation

__version__ = "0.1.0"

#: Public name -> module that defines it.
_EXPORTS = {
    "GPU": "gpusizer.catalog",
    "Model": "gpusizer.catalog",
    "System": "gpusizer.catalog",
    "gpu": "gpusizer.catalog",
    "gpus": "gpusizer.catalog",
    "model": "gpusizer.catalog",
    "models": "gpusizer.catalog",
    "system": "gpusizer.catalog",
    "systems": "gpusizer.catalog",
    "Estimate": "gpusizer.estimator",
    "estimate": "gpusizer.estimator",
    "best_layout": "gpusizer.layouts",
    "shortlist": "gpusizer.shortlister",
    "Workload": "gpusizer.serving",
    "SLO": "gpusizer.serving",
    "Calibration": "gpusizer.calibration",
    "calibrate": "gpusizer.calibration",
    "Sweep": "gpusizer.sweeper",
    "sweep": "gpusizer.sweeper",
    "sweep_chunks": "gpusizer.sweeper.chunks",
}

__all__ = [
    "GPU",
    "SLO",
    "Calibration",
    "Estimate",
    "Model",
    "Sweep",
    "System",
    "Workload",
    "__version__",
    "best_layout",
    "calibrate",
    "estimate",
    "gpu",
    "gpus",
    "model",
    "models",
    "shortlist",
    "sweep",
    "sweep_chunks",
    "system",
    "systems",
]

if TYPE_CHECKING:
    from gpusizer.calibration import Calibration, calibrate
    from gpusizer.catalog import GPU, Model, System, gpu, gpus, model, models, system, systems
    from gpusizer.estimator import Estimate, estimate
    from gpusizer.layouts import best_layout
    from gpusizer.serving import SLO, Workload
    from gpusizer.shortlister import shortlist
    from gpusizer.sweeper import Sweep, sweep
    from gpusizer.sweeper.chunks import sweep_chunks


# Records and results show themselves through renderers that ``gpusizer.display`` registers when it
# is imported; the first ``repr`` of a record imports it, so the records never import display.
presentation.add_loader(lambda: importlib.import_module("gpusizer.display"))


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'gpusizer' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
