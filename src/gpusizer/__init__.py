"""gpusizer: size LLM inference on any accelerator before renting it."""

from gpusizer.catalog import GPU, Model, System, gpu, gpus, model, models, system, systems

__version__ = "0.1.0"

__all__ = ["GPU", "Model", "System", "__version__", "gpu", "gpus", "model", "models", "system", "systems"]
