r"""Serving under load: continuous batching, queueing, and the latency a request rate buys.

An engine that batches continuously (vLLM, SGLang, TensorRT-LLM) runs one *step* after another.
Each step decodes one token for every running sequence and fills the rest of its token budget
(``chunk_tokens``, vLLM's ``max_num_batched_tokens``) with prompt tokens of waiting requests, first
come first served. This module turns gpusizer's step model into the numbers a buyer needs:

* ``step_model`` tabulates, once per configuration, the step time of ``performance.speed`` as a
  function of the tokens in a step, the cached tokens the decodes read, and the prompt-dependent
  extra cost of prefill (attention over the prompt, the per-request fixed cost). Everything below
  interpolates in that table; nothing calls ``estimate`` per event.
* ``concurrency_curve``: the throughput-latency curve against concurrency (closed loop) until the KV
  pool runs out.
* ``load``: closed-form means and tails under an open Poisson load: a mean-field decode batch
  (Little's law), prefill interference on the time per output token, an M/G/1 prefill server with
  the residual of the step in progress for the time to first token, and an M/G/c wait for a
  sequence slot.
* ``simulate``: a seeded discrete-event simulation of the same scheduler, for p50/p95/p99 of TTFT,
  TPOT and end-to-end latency.
* ``max_rate``: the largest request rate that meets an ``SLO``, by bracketing on a rate grid and
  ``scipy.optimize.brentq``.
* ``throughput``: the three serving questions of one deployment in one frozen record, per replica and
  for the whole system (replicas x GPUs): offline throughput of the saturated engine, the largest rate
  within an SLO, and the TTFT/TPOT quantiles at a rate, each as expected value, ceiling and band.

The first token is sampled by the step that finishes the prefill, as vLLM does; ``estimate``'s
``ttft_seconds_expected`` adds one decode step on top, so at zero load the TTFT here is one decode step
shorter.

Deliberate omissions: preemption (the scheduler reserves prompt + output tokens of KV cache when it
admits a request, TensorRT-LLM's ``GUARANTEED_NO_EVICT`` policy; vLLM admits optimistically and
preempts, so it holds up to ``(s + o) / (s + o/2)`` more sequences when memory binds), prefix
caching, speculative decoding, and inter-token-latency percentiles (TPOT here
is the per-request mean, as ``vllm bench serve`` reports it). Sliding-window and recurrent layers
enter the step time through a linear KV-read cost fitted at the workload's mean context.

Package layout
--------------
``workload`` (``Workload``, ``SLO``, length distributions and their quantiles, ``Lengths``),
``step_table`` (``StepModel``, ``step_model`` and the step times read from the table), ``curve``
(``concurrency_curve``), ``queueing`` (``load``: the closed forms), ``simulation`` (``simulate``) and
``capacity`` (``max_rate`` and its searches) and ``throughput`` (``throughput``: the three questions
composed); ``kv_transfer`` (the KV hand-off: ``kv_link``, ``kv_transfer_bytes``, ``exposed_transfer_seconds``) and
``disaggregation`` (``disaggregated`` and ``disaggregation_ratio``: xPyD prefill and decode pools,
``docs/disaggregation.md``). Each imports only those before it. Import the public
names from ``gpusizer.serving``.

References
----------
.. [1] W. Kwon et al., "Efficient memory management for large language model serving with
   PagedAttention," SOSP 2023, arXiv:2309.06180.
.. [2] A. Agrawal et al., "Taming throughput-latency tradeoff in LLM inference with Sarathi-Serve,"
   OSDI 2024, arXiv:2403.02310.
.. [3] Y. Zhong et al., "DistServe: Disaggregating prefill and decoding for goodput-optimized large
   language model serving," OSDI 2024, arXiv:2401.09670.
.. [4] L. Kleinrock, *Queueing Systems, Volume 1: Theory*. Wiley, 1975, ch. 5 (M/G/1,
   Pollaczek-Khinchine).
"""

from gpusizer.serving.capacity import MAX_RATE_METHODS, MaxRate, max_rate, max_rate_methods, max_rates_coarse
from gpusizer.serving.curve import Curve, concurrency_curve
from gpusizer.serving.disaggregation import (
    Comparison,
    Disaggregated,
    Pool,
    Ratio,
    Transfer,
    disaggregated,
    disaggregation_ratio,
)
from gpusizer.serving.kv_transfer import KvLink, exposed_transfer_seconds, kv_link, kv_transfer_bytes
from gpusizer.serving.queueing import Load, load
from gpusizer.serving.simulation import Simulation, simulate
from gpusizer.serving.step_table import (
    StepModel,
    batch_limit,
    budget_batch,
    step_axes,
    step_model,
    step_seconds,
    step_tables,
)
from gpusizer.serving.throughput import Capacity, Latency, Offline, Quantiles, Throughput, throughput
from gpusizer.serving.workload import (
    DISTRIBUTIONS,
    SLO,
    Distribution,
    Lengths,
    Workload,
    length_quantiles,
    sample_lengths,
)

__all__ = [
    "DISTRIBUTIONS",
    "MAX_RATE_METHODS",
    "SLO",
    "Capacity",
    "Comparison",
    "Curve",
    "Disaggregated",
    "Distribution",
    "KvLink",
    "Latency",
    "Lengths",
    "Load",
    "MaxRate",
    "Offline",
    "Pool",
    "Quantiles",
    "Ratio",
    "Simulation",
    "StepModel",
    "Throughput",
    "Transfer",
    "Workload",
    "batch_limit",
    "budget_batch",
    "concurrency_curve",
    "disaggregated",
    "disaggregation_ratio",
    "exposed_transfer_seconds",
    "kv_link",
    "kv_transfer_bytes",
    "length_quantiles",
    "load",
    "max_rate",
    "max_rate_methods",
    "max_rates_coarse",
    "sample_lengths",
    "simulate",
    "step_axes",
    "step_model",
    "step_seconds",
    "step_tables",
    "throughput",
]

