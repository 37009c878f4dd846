r"""Splitting one model across GPUs: layouts, memory per GPU, and what the split costs and gains.

A *layout* says how ``n`` GPUs share a model, written as degrees joined by ``x`` (multiply) and ``+``
(share the same GPUs):

* ``tpT``: tensor parallel (Megatron): every weight matrix split ``T`` ways, two all-reduces per layer.
* ``ppP``: pipeline parallel: the layers split into ``P`` stages that hand activations on; a token passes every stage,
  so per-token latency does not shrink, but ``P`` micro-batches keep every stage busy.
* ``layerP``: llama.cpp's default layer split: ``P`` stages run one after the other, no micro-batches.
* ``epE``: expert parallel for mixture-of-experts models: each GPU holds ``E/ep`` whole routed experts;
  tokens travel to their experts and back in an all-to-all (dispatch and combine) per MoE layer.
  Written alone (``ep8``) the attention, dense layers and shared experts are *data parallel*: every GPU
  keeps a whole copy and serves its own ``1/8`` of the sequences (SGLang/TensorRT-LLM "DP attention").
  ``tpT+epE`` shards attention ``T`` ways and keeps ``E/T`` data-parallel attention groups; with
  ``T = E`` (``tp8+ep8``, vLLM's ``--enable-expert-parallel``) every GPU sees every token, so the
  experts' outputs are combined by the all-reduce tensor parallelism already does, not an all-to-all.
* ``dpD``: ``D`` independent replicas of the rest of the layout.

Examples: ``tp8``, ``tp2xpp2``, ``tp8+ep8``, ``tp2+ep8``, ``ep72``, ``tp4xdp2``, ``layer4``. A bare
``tp``, ``pp``, ``ep``, ``dp`` or ``layer`` uses every GPU.

Memory per GPU follows from the layout (``weights_per_gpu``): tensor parallelism divides every matrix
but keeps norms, biases, routers and MLA's down-projections whole on every rank; pipeline stages hold
``ceil(L/P)`` layers and the embedding or the LM head; expert parallelism divides the routed experts
by expert. The KV cache is split by KV head and replicated when there are fewer KV heads than ranks
(MLA's single latent lives on every rank, ``memory.kv_shard_fraction``); each stage caches its own
layers; each data-parallel attention group caches only its own sequences.

Speed is composed in ``performance`` from these pieces and ``interconnect``. The *scaling efficiency*
of a layout is the single-GPU step time over ``n`` times its own:

.. math:: \eta = \frac{t_1}{n\,t_n} \in (0, 1]

where :math:`t_1` is the same engine on one GPU of the same type *with unlimited memory* (so the
figure exists when one GPU cannot hold the model), at the same concurrency and context.

Ranking the layouts that fit (``best_layout``) and llama.cpp's split over unequal GPUs (``uneven_layer_split``) call
``estimate`` and live above it, in ``gpusizer.layouts``; this module holds the layout algebra and the physics of a
split only.

Deliberate omissions: sequence (context) parallelism, expert replication and redundant experts (EPLB), asynchronous
scheduling that overlaps communication with compute, and mixing GPU types except in ``layouts.uneven_layer_split``.

References
----------
.. [1] M. Shoeybi et al., "Megatron-LM," arXiv:1909.08053, 2019.
.. [2] Y. Huang et al., "GPipe," arXiv:1811.06965, 2019 (micro-batches, pipeline bubble).
.. [3] R. Pope et al., "Efficiently scaling transformer inference," arXiv:2211.05102, 2022.
.. [4] DeepSeek-AI, "DeepSeek-V3 technical report," arXiv:2412.19437, 2024 (EP with DP attention).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, NamedTuple

import numpy as np

from gpusizer import architecture, catalog, precision
from gpusizer.checks import count, instance, scalar_or_array
from gpusizer.numeric import ceil, divide, maximum, minimum, number, where

__all__ = [
    "Layout", "WeightParts", "candidates", "check", "layout", "max_rank_load", "micro_batches", "pipelined_seconds",
    "scaling_efficiency", "sequences_per_group", "stage_fraction", "weight_parts", "weights_per_gpu",
]


# --- layouts ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """How GPUs share one model; ``gpus = max(tp, ep) * pp * dp``."""

    tp: int = 1
    """Tensor-parallel degree of attention and dense layers. [-]"""
    pp: int = 1
    """Pipeline stages. [-]"""
    ep: int = 1
    """Expert-parallel degree (1: routed experts are split like every other matrix). [-]"""
    dp: int = 1
    """Independent replicas. [-]"""
    sequential: bool = False
    """Stages run one after the other with no micro-batches (llama.cpp layer split)."""

    @property
    def group(self) -> int:
        """GPUs of one pipeline stage of one replica. [-]"""
        return max(self.tp, self.ep)

    @property
    def gpus(self) -> int:
        """GPUs the layout uses. [-]"""
        return self.group * self.pp * self.dp

    @property
    def attention_dp(self) -> int:
        """Data-parallel attention groups inside an expert-parallel group (``ep / tp``). [-]"""
        return self.group // self.tp

    @property
    def expert_shards(self) -> int:
        """Ways the routed experts are divided: by expert (``ep``) or by matrix (``tp``). [-]"""
        return self.ep if self.ep > 1 else self.tp

    @cached_property  # read several times per estimate; a frozen layout never changes it
    def name(self) -> str:
        """Canonical spelling (``tp2xpp2``, ``tp8+ep8``, ``layer4``)."""
        if self.sequential:
            parts = [f"layer{self.pp}"]
        else:
            parts = []
            if self.ep > 1:
                parts.append(f"tp{self.tp}+ep{self.ep}" if self.tp > 1 else f"ep{self.ep}")
            elif self.tp > 1 or (self.pp == 1 and self.dp == 1):
                parts.append(f"tp{self.tp}")
            if self.pp > 1:
                parts.append(f"pp{self.pp}")
        if self.dp > 1:
            parts.append(f"dp{self.dp}")
        return "x".join(parts)

    def __str__(self) -> str:
        return self.name


_TERM = re.compile(r"^(tp|pp|ep|dp|layer)(\d*)$")


def _degree(text: str, digits: str, gpus: int | None, alone: bool) -> int:
    if digits:
        value = int(digits)
        if value < 1:
            raise ValueError(f"layout {text!r}: degrees must be >= 1")
        return value
    if alone and gpus is not None:
        return gpus
    raise ValueError(f"layout {text!r}: give a degree to every part (tp2xpp2) or one bare name with gpus=")


def layout(text: str | Layout, gpus: int | None = None) -> Layout:
    """Read a layout name; a bare ``tp``, ``pp``, ``ep``, ``dp`` or ``layer`` uses all ``gpus``.

    Raises
    ------
    ValueError
        Naming ``layout`` when the text is malformed, when ``ep`` is not a multiple of ``tp``, or
        when the layout's GPU count differs from ``gpus``.

    Examples
    --------
    >>> layout("tp", 8).name, layout("tp2xpp2").gpus, layout("tp8+ep8").attention_dp
    ('tp8', 4, 1)
    >>> layout("ep8").attention_dp, layout("tp2+ep8").attention_dp, layout("layer", 4).sequential
    (8, 4, True)
    """
    return _layout(instance(text, "layout", (str, Layout)), None if gpus is None else count(gpus, "gpus"))


@lru_cache(maxsize=1024, typed=True)  # Layout is frozen: answers can be shared; errors are not cached
def _layout(text: str | Layout, gpus: int | None) -> Layout:
    """``layout`` of arguments already checked (hashable)."""
    if isinstance(text, Layout):
        plan = text
    else:
        spelled = text.lower().replace(" ", "")
        terms = [t for part in spelled.split("x") for t in (part.split("+") if part else [part])]
        degrees: dict[str, int] = {}
        for term in terms:
            found = _TERM.match(term)
            if found is None:
                raise ValueError(f"layout {text!r}: cannot read {term!r}; parts are tpN, ppN, epN, dpN, layerN "
                                 "joined by 'x' (tp2xpp2) or '+' (tp8+ep8)")
            kind, digits = found.groups()
            if kind in degrees or (kind == "layer" and "pp" in degrees) or (kind == "pp" and "layer" in degrees):
                raise ValueError(f"layout {text!r}: {kind} given twice")
            degrees[kind] = _degree(text, digits, gpus, len(terms) == 1)
        if "layer" in degrees and ("tp" in degrees or "ep" in degrees):
            raise ValueError(f"layout {text!r}: the llama.cpp layer split does not combine with tp or ep")
        plan = Layout(tp=degrees.get("tp", 1), pp=degrees.get("pp", degrees.get("layer", 1)),
                      ep=degrees.get("ep", 1), dp=degrees.get("dp", 1), sequential="layer" in degrees)
    if plan.ep > 1 and plan.ep % plan.tp:
        raise ValueError(f"layout {plan.name!r}: ep ({plan.ep}) must be a multiple of tp ({plan.tp})")
    if gpus is not None and plan.gpus != gpus:
        raise ValueError(f"layout {plan.name!r} uses {plan.gpus} GPUs, but gpus={gpus}")
    return plan


def check(plan: Layout, model: catalog.Model, *, heads: bool = True) -> None:
    """Raise ``ValueError`` (naming ``layout``) if ``model`` cannot be split as ``plan`` says.

    A layout needs a layer per pipeline stage and a routed expert per expert-parallel rank; engines
    also split attention by query head (vLLM: "number of attention heads must be divisible by tensor
    parallel size"), checked unless ``heads`` is False (``estimate`` only warns about it: the memory
    and speed of such a split remain a useful approximation).

    Examples
    --------
    >>> check(layout("tp8"), catalog.model("llama-3.1-70b"))
    >>> check(layout("tp72"), catalog.model("kimi-k2"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: layout 'tp72': tensor parallelism needs the 64 attention heads of kimi-k2 to divide by 72; ...
    """
    hint = "gpusizer.best_layout (gpusizer layouts MODEL GPU --gpus N) lists the layouts that work"
    if heads and model.num_heads % plan.tp:
        raise ValueError(f"layout {plan.name!r}: tensor parallelism needs the {model.num_heads} attention heads "
                         f"of {model.id} to divide by {plan.tp}; {hint}")
    if plan.pp > model.num_layers:
        raise ValueError(f"layout {plan.name!r}: {plan.pp} stages for {model.num_layers} layers; {hint}")
    if plan.ep > 1 and (model.moe is None or model.moe.num_experts < plan.ep):
        experts = "no routed experts" if model.moe is None else f"{model.moe.num_experts} routed experts"
        raise ValueError(f"layout {plan.name!r}: {model.id} has {experts} for ep={plan.ep}; {hint}")


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def candidates(model: catalog.Model, gpus: int, *, kinds: Sequence[str] = ("tp", "pp", "ep", "dp")) -> list[Layout]:
    """Every layout of ``gpus`` GPUs that ``model`` allows, using only the parallelism ``kinds``.

    ``kinds`` is an engine's repertoire: ``("layer", "tp")`` for llama.cpp, ``("tp", "pp", "ep", "dp")``
    for vLLM, SGLang and TensorRT-LLM.

    Examples
    --------
    >>> [p.name for p in candidates(catalog.model("llama-3.1-70b"), 4)]
    ['tp4', 'tp2xdp2', 'dp4', 'tp2xpp2', 'pp2xdp2', 'pp4']
    """
    found: list[Layout] = []
    pipeline = [1] + (_divisors(gpus)[1:] if "pp" in kinds else [])
    for pp in pipeline:
        for dp in _divisors(gpus // pp) if "dp" in kinds else [1]:
            group = gpus // pp // dp
            tps = [group] if "tp" in kinds or group == 1 else []
            options = [Layout(tp=t, pp=pp, dp=dp) for t in tps]
            if "ep" in kinds and model.moe is not None and group > 1:
                options += [Layout(tp=t, pp=pp, ep=group, dp=dp) for t in _divisors(group)]
            found += options
    if "layer" in kinds and gpus > 1:
        found.append(Layout(pp=gpus, sequential=True))
    valid = []
    for plan in dict.fromkeys(found):
        try:
            check(plan, model)
        except ValueError:
            continue
        valid.append(plan)
    return valid


# --- memory per GPU: pure functions of numbers ------------------------------------------------------


def stage_fraction(num_layers: Any, pipeline: Any = 1) -> Any:
    r"""Share of the layers the busiest of ``pipeline`` stages holds.

    Returns
    -------
    numeric
        :math:`\lceil L/P \rceil / L`; exactly 1 for one stage. [-]

    Examples
    --------
    >>> stage_fraction(80, [1, 2, 3])
    array([1.    , 0.5   , 0.3375])
    """
    layers = number(num_layers)
    return scalar_or_array(ceil(layers / number(pipeline)) / layers)


def weights_per_gpu(
    layer_bytes: Any,
    replicated_bytes: Any,
    expert_bytes: Any,
    embedding_bytes: Any,
    head_bytes: Any,
    *,
    num_layers: Any = 1,
    num_experts: Any = 1,
    tp: Any = 1,
    pp: Any = 1,
    ep: Any = 1,
) -> Any:
    r"""Weight bytes the busiest GPU of a layout stores.

    Parameters
    ----------
    layer_bytes : array_like
        Decoder layers without routed experts: attention, dense FFN, shared experts, norms, biases,
        routers (and a vision tower, if any). [B]
    replicated_bytes : array_like
        The part of ``layer_bytes`` every tensor-parallel rank keeps whole: vectors and MLA's
        down-projections. [B]
    expert_bytes : array_like
        All routed experts. [B]
    embedding_bytes, head_bytes : array_like
        Input embedding and LM head (0 when tied). [B]
    num_layers, num_experts : array_like
        :math:`L` and routed experts per layer :math:`E`. [-]
    tp, pp, ep : array_like
        Layout degrees; ``ep = 1`` splits experts like every other matrix. [-]

    Returns
    -------
    numeric
        :math:`f_s\left[\frac{W_L - W_r}{t} + W_r + W_E s_E\right] + \frac{W_{vocab}}{t}` with the stage
        share :math:`f_s = \lceil L/P\rceil / L`, :math:`s_E = \lceil E/e \rceil / E` (whole experts
        per rank) or :math:`1/t`, and :math:`W_{vocab}` the embedding plus head on one stage, the larger of
        the two with several stages (vocabulary-parallel in tensor parallelism). [B]

    Examples
    --------
    >>> weights_per_gpu(100.0, 10.0, 0.0, 5.0, 5.0, tp=3)  # (100 - 10) / 3 + 10 + 10 / 3
    43.333333333333336
    >>> weights_per_gpu(100.0, 0.0, 400.0, 5.0, 5.0, num_layers=4, num_experts=8, pp=2, ep=4)  # 2 of 4 layers
    105.0
    """
    tp, pp, ep, num_experts = number(tp), number(pp), number(ep), number(num_experts)
    embedding, head, replicated = number(embedding_bytes), number(head_bytes), number(replicated_bytes)
    stage = stage_fraction(num_layers, pp)
    vocab = where(pp > 1, maximum(embedding, head), embedding + head)
    experts_share = where(ep > 1, divide(ceil(num_experts / ep), num_experts), 1.0 / tp)
    dense = (number(layer_bytes) - replicated) / tp + replicated
    per_gpu = stage * (dense + number(expert_bytes) * experts_share) + vocab / tp
    return scalar_or_array(per_gpu)


def sequences_per_group(concurrency: Any, groups: Any) -> Any:
    r"""Sequences the busiest of ``groups`` data-parallel groups serves: :math:`\lceil B/g \rceil`. [-]

    Examples
    --------
    >>> sequences_per_group([1, 8, 9], 8)
    array([1, 1, 2])
    """
    return scalar_or_array(-(-number(concurrency) // number(groups)))


class WeightParts(NamedTuple):
    """A model's stored weights by how layouts split them. [B]"""

    layers: float
    """Decoder layers without routed experts (vectors and vision included)."""
    replicated: float
    """Part of ``layers`` kept whole on every tensor-parallel rank."""
    experts: float
    """Routed experts."""
    embedding: float
    head: float


def weight_parts(
    model: catalog.Model, weights: str, expert_weights: str | None = None, activation: str | None = None
) -> WeightParts:
    """Split a model's stored weights (``precision.stored_weight_bytes``) into the parts layouts treat apart.

    Replicated bytes are the vectors at the activation precision and MLA's down-projections (matrices,
    stored at the weight precision: an FP8 checkpoint keeps them in FP8).

    Examples
    --------
    >>> p = weight_parts(catalog.model("llama-3.1-8b"), "bf16")
    >>> round(sum(p) - p.replicated) == round(p.layers + p.experts + p.embedding + p.head)
    True
    """
    if (files := model.stored_weights) and precision.stored_applies(model, weights, expert_weights, activation):
        return WeightParts(*(getattr(files, part) for part in WeightParts._fields))
    counts = architecture.parameter_counts(model)
    w = precision.precision(weights)
    e = precision.precision(expert_weights) if expert_weights else w
    a = precision.precision(activation or model.activation_dtype)
    table = w if w.covers_embeddings else a
    stored = precision.stored_weight_bytes(counts, w, expert_weights, a)
    embedding, head = counts.embedding * table.bits / 8, counts.head * table.bits / 8
    experts = counts.experts * e.bits / 8
    down = architecture.replicated_params(model) - counts.vector
    return WeightParts(
        layers=stored - embedding - head - experts,
        replicated=counts.vector * a.bits / 8 + down * w.bits / 8,
        experts=experts,
        embedding=embedding,
        head=head,
    )


# --- speed: pure functions of numbers ---------------------------------------------------------------


def max_rank_load(tokens: Any, experts_per_token: Any, ranks: Any, experts_per_rank: Any = np.inf) -> Any:
    r"""Token-expert assignments the busiest of ``ranks`` expert-parallel ranks receives in one MoE layer.

    Parameters
    ----------
    tokens : array_like
        Tokens routed in the layer across the expert-parallel group :math:`T`. [token]
    experts_per_token : array_like
        :math:`k`. [-]
    ranks : array_like
        Expert-parallel ranks :math:`e`. [-]
    experts_per_rank : array_like, optional
        Routed experts each rank holds; caps the load at :math:`T \min(k, E/e)`. [-]

    Returns
    -------
    numeric
        :math:`\mu + \sqrt{2\mu\ln e}` with :math:`\mu = T k / e` (balls into bins, a first-order
        estimate of the slowest rank under uniform routing), capped as above; :math:`T k` for one rank. [-]

    References
    ----------
    .. [1] M. Raab and A. Steger, "Balls into bins - a simple and tight analysis," RANDOM 1998
       (maximum load :math:`\mu + \sqrt{2\mu\ln n}` for :math:`\mu \gg \ln n`);
       docs/methods.md#experts-touched-per-step.

    Examples
    --------
    >>> max_rank_load(128, 8, [1, 8]).round(1)
    array([1024. ,  151.1])
    """
    tokens, experts_per_token, e = number(tokens), number(experts_per_token), number(ranks)
    mean = tokens * experts_per_token / e
    spread = 2.0 * mean * (np.log(e) if type(e) is np.ndarray else math.log(e))
    slowest = mean + (np.sqrt(spread) if type(spread) is np.ndarray else math.sqrt(spread))
    cap = tokens * minimum(experts_per_token, number(experts_per_rank))
    return scalar_or_array(minimum(slowest, cap))


def micro_batches(sequences: Any, stages: Any, sequential: Any = False) -> Any:
    r"""Micro-batches a pipeline keeps in flight: :math:`\min(B, P)`, or 1 when stages run in sequence. [-]

    Examples
    --------
    >>> micro_batches([1, 2, 64], 4), micro_batches(64, 4, sequential=True)
    (array([1, 2, 4]), 1)
    """
    return scalar_or_array(where(number(sequential), 1, minimum(number(sequences), number(stages))))


def pipelined_seconds(chunk_seconds: Any, stages: Any, longest: Any = None) -> Any:
    r"""Time for chunks to flow through ``stages`` pipeline stages, chunks along the trailing axis.

    Parameters
    ----------
    chunk_seconds : array_like
        Time of each chunk through all stages, as if on one stage (0 for padding), along the trailing
        axis; a scalar is a prompt of one chunk. With ``longest``: their sum, without a chunk axis. [s]
    stages : array_like
        Pipeline stages :math:`P`. [-]
    longest : array_like, optional
        The longest chunk's time, when ``chunk_seconds`` is already summed (a prompt evaluated a block of
        chunks at a time). [s]

    Returns
    -------
    numeric
        :math:`\sum_j t_j / P + \frac{P-1}{P}\max_j t_j`: every stage works on a different chunk, and
        the pipeline fills and drains once (GPipe). One chunk gives :math:`t_1`. [s]

    References
    ----------
    .. [1] Y. Huang et al., "GPipe," arXiv:1811.06965, 2019.

    Examples
    --------
    >>> pipelined_seconds([1.0, 1.0, 1.0, 1.0], 4)  # (4 + 3) / 4
    1.75
    >>> pipelined_seconds(4.0, 4, longest=1.0)
    1.75
    """
    t, p = number(chunk_seconds), number(stages)
    if longest is not None:
        total, longest = t, number(longest)
    elif type(t) is np.ndarray:
        total, longest = t.sum(axis=-1), t.max(axis=-1, initial=0.0)
    else:
        total, longest = t, maximum(t, 0.0)
    return scalar_or_array(total / p + (p - 1.0) / p * longest)


def scaling_efficiency(reference_seconds: Any, seconds: Any, gpus: Any) -> Any:
    r"""Parallel efficiency of ``gpus`` GPUs taking ``seconds`` for what one takes ``reference_seconds``.

    Returns
    -------
    numeric
        :math:`\eta = t_1 / (n\,t_n)`: 1 for perfect scaling. [-]

    Examples
    --------
    >>> scaling_efficiency(0.04, 0.025, 2)
    0.8
    """
    return scalar_or_array(divide(number(reference_seconds), number(gpus) * number(seconds)))
