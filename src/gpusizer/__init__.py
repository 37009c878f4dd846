"""gpusizer: size LLM inference on any accelerator before renting it.

``import gpusizer`` reads no file and builds no unit registry: catalogues load on first lookup.

>>> import gpusizer
>>> gpusizer.gpu("h200").id
'h200-sxm'
"""

from gpusizer.catalog import GPU, Model, System, gpu, gpus, model, models, system, systems
from gpusizer.estimate import Estimate, estimate

__version__ = "0.1.0"

__all__ = [
    "GPU",
    "Estimate",
    "Model",
    "System",
    "__version__",
    "estimate",
    "gpu",
    "gpus",
    "model",
    "models",
    "system",
    "systems",
]
