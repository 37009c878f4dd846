"""Engine command lines: read ``vllm serve ...`` / ``llama-server ...`` and predict the engine's startup.

``parse(argv)`` reads one command line into an ``EngineCommand`` (nothing is executed);
``predict(command, gpu)`` maps it onto ``estimate``'s inputs and returns the KV figures the engine will
log at startup, in its own wording, beside the speed of the same estimate.
"""

from gpusizer.commandline.flags import ENGINE_FLAGS, SOURCES, Flag
from gpusizer.commandline.reader import EngineCommand, parse
from gpusizer.commandline.startup import TRTLLM_BACKENDS, Prediction, inputs, predict, profile_name, resolve_model

__all__ = ["ENGINE_FLAGS", "SOURCES", "TRTLLM_BACKENDS", "EngineCommand", "Flag", "Prediction", "inputs", "parse",
           "predict", "profile_name", "resolve_model"]
