r"""Speculative decoding: a draft proposes ``k`` tokens, the target verifies them in one step of ``k + 1``.

Three draft methods: a separate draft model from the catalogue (``draft``), an EAGLE head reading the target's
hidden states (``eagle``: one decoder layer, a fusion projection and, for EAGLE-3, its own small LM head) and the
model's own multi-token-prediction module (``mtp``: DeepSeek-V3/R1, GLM-4.5, Qwen3-Next; ``Model.mtp_layers``).
A round is ``k`` draft steps and one verify step; it yields ``expected_tokens`` accepted tokens per sequence
[1]_. Every step is an engine step of ``passes.engine_step`` timed by ``passes.step_seconds``: the draft's at one
token per sequence on a ``configuration.Setup`` of the draft, the verify step at ``k + 1`` tokens per sequence on
the target's. The verify step reads the weights once but does ``k + 1`` times the arithmetic and touches more
routed experts, which is why speculation stops paying as the batch grows (``break_even_concurrency``).

Deliberate omissions: tree drafting (EAGLE-2/3 and SGLang's ``topk > 1``: a chain is modelled; a tree verifies
more tokens for a higher acceptance length), the first draft step's extra tokens (the head re-reads the accepted
tokens), the KV of the ``k`` draft positions, the sampler's rejection kernels and pipeline micro-batches (the
busiest data-parallel group is one batch).

References
----------
.. [1] Y. Leviathan, M. Kalman, Y. Matias, "Fast inference from transformers via speculative decoding,"
   arXiv:2211.17192, 2023 (expected tokens per step, eq. 1).
.. [2] DeepSeek-AI, "DeepSeek-V3 technical report," arXiv:2412.19437, 2024, section 5.4.3: "the acceptance rate
   of the second token prediction ranges between 85% and 90%", "1.8 times TPS".
.. [3] Y. Li et al., "EAGLE: Speculative sampling requires rethinking feature uncertainty," arXiv:2401.15077,
   2024; "EAGLE-3," arXiv:2503.01840, 2025.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from gpusizer import catalog, configuration, efficiency, memory, parallel, passes
from gpusizer import precision as precisions
from gpusizer.checks import scalar_or_array
from gpusizer.numeric import maximum, minimum, number, where

__all__ = [
    "DEFAULTS", "DRAFT_TOKENS", "EAGLE3_DRAFT_VOCAB", "METHODS", "AcceptanceDefault", "Speculation", "Speculative",
    "break_even_concurrency", "draft_record", "expected_tokens", "iid_expected_tokens", "projection_params",
    "rates", "round_seconds", "speculate", "speedup",
]

#: Draft methods.
METHODS = ("draft", "eagle", "mtp")

#: Default draft length per method: DeepSeek-V3 drafts one token with its one MTP module [2]; SGLang's chain
#: setting ``--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4`` (the
#: Llama-3.1-8B EAGLE-3 card, huggingface.co/thoughtworks/Llama-3.1-8B-Instruct-Eagle3, read 2026-12-03). [-]
DRAFT_TOKENS = {"mtp": 1, "eagle": 3, "draft": 3}

#: EAGLE-3's draft vocabulary (``draft_vocab_size`` of yuhuili/EAGLE3-LLaMA3.1-Instruct-8B's config). [-]
EAGLE3_DRAFT_VOCAB = 32000


@dataclass(frozen=True)
class AcceptanceDefault:
    """Acceptance rates of a method: the first draft position's and every later one's (conditional on the
    earlier ones being accepted), with a low and a high pair for the band, and where they come from."""

    first: float
    later: float
    low: tuple[float, float]
    high: tuple[float, float]
    source: str


#: Default acceptance per method. MTP: the first position from [2] (85-90 %, midpoint 0.875); the later ones
#: solve ``expected_tokens`` = 3.20 at ``k = 7`` with the first at 0.875 (nebius/MTP-DeepSeek-V3-0324 card: the
#: original MTP module reused for 7 positions accepts 3.20 tokens per step at temperature 0, 3.09 at 1; read
#: 2026-12-03), low/high 0.60/0.63 bracket both. EAGLE: "about 0.8" acceptance of EAGLE-1 [3]; the band
#: 0.7-0.85 is a judgment, no per-position table was read. Draft model: Leviathan et al. [1] Table 3 measure
#: alpha 0.5-0.9 over their pairs; 0.7 and the band 0.6-0.8 are a judgment inside that range.
DEFAULTS = {
    "mtp": AcceptanceDefault(0.875, 0.615, (0.85, 0.60), (0.90, 0.63),
                             "DeepSeek-V3 report arXiv:2412.19437 s5.4.3 (first position 85-90 %); later positions "
                             "from nebius/MTP-DeepSeek-V3-0324 (3.20 tokens per step at k = 7)"),
    "eagle": AcceptanceDefault(0.8, 0.8, (0.7, 0.7), (0.85, 0.85),
                               "EAGLE arXiv:2401.15077 (about 0.8); band a judgment"),
    "draft": AcceptanceDefault(0.7, 0.7, (0.6, 0.6), (0.8, 0.8),
                               "Leviathan et al. arXiv:2211.17192 Table 3 (0.5-0.9 over pairs); 0.7 a judgment"),
}


@dataclass(frozen=True)
class Speculative:
    """How an engine speculates: ``estimate(..., speculative=Speculative("mtp"))``."""

    method: str
    """``draft``, ``eagle`` or ``mtp``."""
    draft_tokens: int | None = None
    """Tokens drafted per round :math:`k`; default ``DRAFT_TOKENS[method]``. [-]"""
    acceptance: float | tuple[float, ...] | None = None
    """One rate for every position (i.i.d.) or one per position; default ``DEFAULTS[method]``. [-]"""
    draft: str | catalog.Model | None = None
    """The draft model (method ``draft``: catalogue id or record)."""
    eagle_version: int = 3
    """1, 2 or 3: EAGLE-1/2 fuse two hidden states and use the target's head, EAGLE-3 three and its own head."""


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding of a configuration. Rates per user unless named aggregate; arrays broadcast."""

    method: str
    draft: str
    """The draft model's id, or what drafts (``mtp of <model>``, ``eagle3 head of <model>``)."""
    draft_tokens: int
    """:math:`k`. [-]"""
    acceptance: tuple[float, ...]
    """Acceptance rate of each draft position, conditional on the earlier ones. [-]"""
    acceptance_source: str
    tokens_per_step: Any
    """Expected tokens each sequence gains per verify step, in [1, k + 1]. [token]"""
    tokens_per_step_band: tuple[Any, Any]
    """The same at the low and high acceptance of the band. [token]"""
    draft_step_seconds: Any
    """One draft step, expected. [s]"""
    verify_step_seconds: Any
    """One target step over ``k + 1`` tokens per sequence, expected. [s]"""
    round_seconds: Any
    """``k`` draft steps and one verify step, expected. [s]"""
    speedup: Any
    """Accepted tokens per second over the plain decode's, expected. [-]"""
    speedup_ceiling: Any
    """The same at the datasheet peaks. [-]"""
    speedup_band: tuple[Any, Any]
    """At the low and high acceptance. [-]"""
    expected_tokens_per_second: Any
    """Accepted tokens per user per second, expected. [token/s]"""
    ceiling_tokens_per_second: Any
    """At the datasheet peaks and the expected acceptance. [token/s]"""
    band: tuple[Any, Any]
    """p10 and p90 of the decode band times the speedup at the low and high acceptance. [token/s]"""
    expected_aggregate_tokens_per_second: Any
    ceiling_aggregate_tokens_per_second: Any
    tpot_seconds_expected: Any
    """Time per accepted token. [s]"""
    draft_weights_bytes: Any
    """Draft weights per GPU (the MTP module, the EAGLE head or the draft model; shared tables not counted). [B]"""
    draft_kv_cache_bytes: Any
    """Draft KV cache per GPU for ``concurrency`` sequences of ``context`` tokens. [B]"""
    fits: Any
    """Whether the target, the draft and both caches fit the engine's budget. [bool]"""
    max_concurrency: Any
    """Sequences of ``context`` tokens the pools hold once the draft is loaded and caches too. [-]"""
    break_even_concurrency: Any
    """Largest concurrency at which speculation still pays (speedup >= 1), expected; 0 when it never does;
    None past ``BREAK_EVEN_LIMIT`` (``break_even_note`` says so). [-]"""
    break_even_note: str | None = None


# --- formulas --------------------------------------------------------------------------------------


def iid_expected_tokens(alpha: Any, k: Any) -> Any:
    r"""Expected tokens per verify step when each draft token is accepted with probability ``alpha``
    independently [1]_.

    .. math:: E = \frac{1 - \alpha^{k+1}}{1 - \alpha}\quad(\alpha < 1), \qquad E = k + 1\quad(\alpha = 1)

    ``alpha`` [-] in [0, 1], ``k`` draft tokens [-]; returns tokens per sequence and step. [token]

    Examples
    --------
    >>> iid_expected_tokens(0.8, 3)  # 1 + 0.8 + 0.64 + 0.512
    2.952
    """
    a, n = number(alpha), number(k)
    safe = where(a < 1.0, a, 0.0)
    return scalar_or_array(where(a < 1.0, (1.0 - safe ** (n + 1.0)) / (1.0 - safe), n + 1.0))


def expected_tokens(acceptance: Any) -> Any:
    r"""Expected tokens per verify step from per-position acceptance rates along the last axis.

    .. math:: E = 1 + \sum_{i=1}^{k} \prod_{j=1}^{i} a_j

    :math:`a_j` is the probability that draft position :math:`j` is accepted given the earlier ones were; the
    1 is the token the verify step itself samples [1]_. Equals ``iid_expected_tokens`` when all :math:`a_j`
    are equal. [token]

    Examples
    --------
    >>> round(float(expected_tokens((0.875, 0.615, 0.615, 0.615, 0.615, 0.615, 0.615))), 2)
    3.2
    """
    rates_ = np.asarray(acceptance, dtype=float)
    return scalar_or_array(1.0 + np.cumprod(rates_, axis=-1).sum(axis=-1))


def rates(method: str, k: int, acceptance: float | tuple[float, ...] | None = None) -> tuple[tuple[float, ...], ...]:
    """The expected, low and high per-position acceptance of ``k`` positions: ``acceptance`` when given (one rate
    for all, or ``k`` rates; then the band is the point), else ``DEFAULTS[method]``."""
    if acceptance is None:
        d = DEFAULTS[method]
        return tuple((first,) + (later,) * (k - 1) for first, later in ((d.first, d.later), d.low, d.high))
    given = (float(acceptance),) * k if isinstance(acceptance, int | float) else tuple(map(float, acceptance))
    if len(given) != k:
        raise ValueError(f"acceptance: {len(given)} rates for {k} draft tokens")
    if not all(0.0 <= a <= 1.0 for a in given):
        raise ValueError(f"acceptance: rates must lie in [0, 1], got {given}")
    return given, given, given


def round_seconds(draft_seconds: Any, k: Any, verify_seconds: Any) -> Any:
    r"""One speculative round: :math:`t = k\,t_{draft} + t_{verify}`. [s]

    >>> round_seconds(0.001, 3, 0.012)
    0.015
    """
    return scalar_or_array(number(k) * number(draft_seconds) + number(verify_seconds))


def speedup(tokens: Any, decode_seconds: Any, round_: Any) -> Any:
    r"""Accepted tokens per second over plain decoding's: :math:`S = E\,t_{decode} / t_{round}`. [-]

    >>> speedup(2.952, 0.010, 0.015)
    1.968
    """
    return scalar_or_array(number(tokens) * number(decode_seconds) / number(round_))


def projection_params(hidden: Any, inputs: Any) -> Any:
    r"""Parameters of the fusion projection of an MTP module or an EAGLE head: ``inputs`` vectors of width
    :math:`d` concatenated and projected to :math:`d`: :math:`n\,d^2` (DeepSeek-V3's ``eh_proj``: 2, EAGLE-1/2's
    ``fc``: 2, EAGLE-3's ``fc`` over three target layers: 3). [param]

    >>> projection_params(7168, 2)
    102760448
    """
    return number(inputs) * number(hidden) * number(hidden)


# --- the draft as a catalogue record ----------------------------------------------------------------


def draft_record(record: catalog.Model, spec: Speculative) -> tuple[catalog.Model, float, bool, bool]:
    """What drafts for ``record``: a record of the draft (an MTP module or an EAGLE head as a one-layer model), the
    parameters of its fusion projection (and EAGLE-3's wider query/key/value input) that the record does not
    hold [param], and whether it has its own embedding and own LM head (else shared with the target)."""
    if spec.method == "draft":
        if spec.draft is None:
            raise ValueError("speculative: method 'draft' needs draft= (a catalogue model id)")
        return catalog.model(spec.draft), 0.0, True, True
    d = record.hidden_size
    if spec.method == "mtp":
        if not record.mtp_layers:
            raise ValueError(f"speculative: {record.id} has no MTP module (mtp_layers = 0); use 'eagle' or 'draft'")
        head = record.model_copy(update=dict(
            id=f"{record.id}-mtp", num_layers=1, layer_types=(record.layers[-1],), ffn_types=(record.ffns[-1],),
            first_dense_layers=0, mtp_layers=0, vision=None, unquantized_layers=()))
        return head, float(projection_params(d, 2)), False, False
    if spec.eagle_version not in (1, 2, 3):
        raise ValueError(f"speculative: eagle_version must be 1, 2 or 3, got {spec.eagle_version!r}")
    if record.intermediate_size is None:
        raise ValueError(f"speculative: {record.id} has no dense FFN width for an EAGLE head; use 'mtp' or 'draft'")
    three = spec.eagle_version == 3
    head = record.model_copy(update=dict(
        id=f"{record.id}-eagle{spec.eagle_version}", num_layers=1, layer_types=("full",), ffn_types=("dense",),
        first_dense_layers=0, moe=None, mla=None, linear_attention=None, mamba=None, mtp_layers=0, vision=None,
        unquantized_layers=(), unquantized_roles=(), sliding_window=None, attention_chunk_size=None,
        vocab_size=EAGLE3_DRAFT_VOCAB if three else record.vocab_size, tie_embeddings=False,
        expert_weights=None))
    qkv = d * (record.num_heads + 2 * record.num_kv_heads) * record.head_dim if three else 0
    return head, float(projection_params(d, 3 if three else 2)) + qkv, False, three


# --- composition ---------------------------------------------------------------------------------

#: Concurrency up to which ``break_even_concurrency`` searches. [-]
BREAK_EVEN_LIMIT = 2**16


def break_even_concurrency(gain: Any, shape: tuple[int, ...] = (), limit: int = BREAK_EVEN_LIMIT) -> Any:
    r"""Largest concurrency :math:`B` at which ``gain(B)`` (a speedup that falls as the batch grows) is still
    at least 1, by bisection on whole numbers: 0 when it is below 1 at :math:`B = 1`, ``limit`` when it still
    pays there. ``gain`` takes an array of concurrencies of ``shape`` (the context's). [-]

    >>> int(break_even_concurrency(lambda b: 3.0 / (1.0 + b / 10.0)))  # 3 / (1 + B/10) >= 1 up to B = 20
    20
    """
    lo, hi = np.ones(shape), np.full(shape, float(limit))
    pays_one, pays_limit = np.asarray(gain(lo)) >= 1.0, np.asarray(gain(hi)) >= 1.0
    while np.any(hi - lo > 1):
        mid = np.floor((lo + hi) / 2)
        ok = np.asarray(gain(mid)) >= 1.0
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    out = np.where(pays_limit, float(limit), np.where(pays_one, lo, 0.0)).astype(int)
    return scalar_or_array(out if out.shape else int(out))


def _draft_setup(
    record: catalog.Model, spec: Speculative, device: catalog.GPU, weights: str, experts: str | None, kv: str,
    engine: str, plan: parallel.Layout, table: efficiency.Table, scale_out: float | None,
) -> tuple[configuration.Setup, str, bool, bool]:
    """The draft's setup on the target's GPUs: the same tensor degree (and expert degree for an MoE MTP module),
    one stage, the rest data parallel; its name; whether it owns its embedding and its head."""
    draft, extra, own_embedding, own_head = draft_record(record, spec)
    moe = draft.moe is not None and plan.ep > 1
    layout = parallel.Layout(tp=plan.tp, ep=plan.ep if moe else 1, dp=plan.dp * (1 if moe else plan.attention_dp))
    if spec.method == "mtp":
        w, e = weights, experts
    elif spec.method == "eagle":  # the published heads are 16-bit checkpoints
        w, e = record.activation_dtype, None
    else:
        w, e = (draft.weights, draft.expert_weights)
    ds = configuration.setup(draft, device, w, e, kv, layout.gpus, engine, layout, table, scale_out)
    if extra:
        added = memory.weight_bytes(extra, precisions.bytes_per_element(ds.model.weights))
        numbers = replace(ds.model, dense_params=ds.model.dense_params + extra,
                          dense_bytes=ds.model.dense_bytes + added, layer_bytes=ds.model.layer_bytes + added)
        ds = replace(ds, model=numbers)
    if spec.method == "draft":
        return ds, draft.id, own_embedding, own_head
    kind = f"eagle{spec.eagle_version}" if spec.method == "eagle" else "mtp"
    return ds, f"{kind} head of {record.id}", own_embedding, own_head


def _step_times(
    s: configuration.Setup, c: Any, ds: configuration.Setup, dc: Any, ctx: Any, users: Any, k: int
) -> dict[str, tuple[Any, Any, Any]]:
    """(plain decode, verify, draft) step times, expected and at the ceiling: ``passes.engine_step`` at 1 and at
    ``k + 1`` tokens per sequence of the busiest data-parallel group, timed by ``passes.step_seconds``."""
    before = number(ctx) - 1
    group, drafted = parallel.sequences_per_group(users, s.groups), parallel.sequences_per_group(users, ds.groups)
    plain = passes.engine_step(s, 1, before, group, head=1, dims=s.model.decode_dims)
    verify = passes.engine_step(s, k + 1, before, group, head=k + 1, dims=s.model.decode_dims)
    draft = passes.engine_step(ds, 1, before, drafted, head=1, dims=ds.model.decode_dims)
    return {name: (passes.step_seconds(plain, s, a, phase="decode"), passes.step_seconds(verify, s, a, phase="decode"),
                   passes.step_seconds(draft, ds, b, phase="decode"))
            for name, a, b in (("expected", c, dc), ("ceiling", None, None))}


def speculate(
    record: catalog.Model, device: catalog.GPU, weights: str, experts: str | None, kv: str, gpus: int, engine: Any,
    plan: parallel.Layout, table: efficiency.Table, scale_out: float | None, ctx: Any, users: Any,
    spec: Speculative, decode: Any, sizes: dict[str, Any],
) -> Speculation:
    """Speculative decoding of one configuration (``estimator.estimate``'s ``speculative=``): ``decode`` is its
    plain decode (``performance.Decode``), ``sizes`` its memory numbers (``estimator.memory_numbers``), ``engine``
    its engine profile; the rest as ``performance.speed_of`` takes them."""
    if not isinstance(spec, Speculative):
        raise TypeError(f"speculative must be a speculation.Speculative, got {type(spec).__name__}")
    if spec.method not in METHODS:
        raise ValueError(f"speculative: method must be one of {', '.join(METHODS)}, got {spec.method!r}")
    k = DRAFT_TOKENS[spec.method] if spec.draft_tokens is None else spec.draft_tokens
    if type(k) is not int or not 1 <= k <= 64:
        raise ValueError(f"speculative: draft_tokens must be a whole number from 1 to 64, got {k!r}")
    expected, low, high = rates(spec.method, k, spec.acceptance)
    s = configuration.setup(record, device, weights, experts, kv, gpus, engine.name, plan, table, scale_out)
    c = configuration.constants(s, table)
    ds, name, own_embedding, own_head = _draft_setup(record, spec, device, weights, experts, kv, engine.name, plan,
                                                     table, scale_out)
    dc = configuration.constants(ds, table)
    times = _step_times(s, c, ds, dc, ctx, users, k)
    (plain, verify, draft), (plain_top, verify_top, draft_top) = times["expected"], times["ceiling"]
    tokens = [expected_tokens(r) for r in (expected, low, high)]
    round_, round_top = round_seconds(draft, k, verify), round_seconds(draft_top, k, verify_top)
    gains = [speedup(e, plain, round_) for e in tokens]
    top, top_high = speedup(tokens[0], plain_top, round_top), speedup(tokens[2], plain_top, round_top)
    rate = decode.expected_tokens_per_second * gains[0]
    ceiling = decode.ceiling_tokens_per_second * top
    band = (scalar_or_array(decode.band[0] * gains[1]),
            scalar_or_array(minimum(decode.band[1] * gains[2], decode.ceiling_tokens_per_second * top_high)))

    def gain(batch: Any) -> Any:
        p, v, d = _step_times(s, c, ds, dc, ctx, batch, k)["expected"]
        return speedup(tokens[0], p, round_seconds(d, k, v))

    limit = break_even_concurrency(gain, np.shape(ctx))
    memory_ = _draft_memory(ds, engine, plan, ctx, users, sizes, own_embedding, own_head)
    return Speculation(
        method=spec.method, draft=name, draft_tokens=k, acceptance=expected,
        acceptance_source=DEFAULTS[spec.method].source if spec.acceptance is None else "given",
        tokens_per_step=tokens[0], tokens_per_step_band=(tokens[1], tokens[2]),
        draft_step_seconds=draft, verify_step_seconds=verify, round_seconds=round_, speedup=gains[0],
        speedup_ceiling=top, speedup_band=(gains[1], gains[2]),
        expected_tokens_per_second=scalar_or_array(rate), ceiling_tokens_per_second=scalar_or_array(ceiling),
        band=band,
        expected_aggregate_tokens_per_second=scalar_or_array(rate * number(users)),
        ceiling_aggregate_tokens_per_second=scalar_or_array(ceiling * number(users)),
        tpot_seconds_expected=scalar_or_array(1.0 / rate),
        **memory_,
        break_even_concurrency=limit,
        break_even_note=_break_even_note(limit, memory_["max_concurrency"]),
    )


def _break_even_note(limit: Any, held: Any) -> str | None:
    """What ``break_even_concurrency`` means when it says no more than a number: the search limit, or past the
    concurrency the KV pool holds."""
    notes = []
    if np.any(np.asarray(limit) > np.asarray(held)):
        notes.append("speculation pays at every concurrency the KV pool holds")
    if np.any(np.asarray(limit) >= BREAK_EVEN_LIMIT):
        notes.append(f"it still pays at {BREAK_EVEN_LIMIT:,} sequences, the search limit")
    return "; ".join(notes) or None


def _draft_memory(
    ds: configuration.Setup, engine: Any, plan: parallel.Layout, ctx: Any, users: Any, sizes: dict[str, Any],
    own_embedding: bool, own_head: bool,
) -> dict[str, Any]:
    """The draft's weights and KV cache per GPU, and what the target's pool holds with them
    (``parallel.weights_per_gpu``, ``memory.sequence_cache_bytes``, ``memory.max_concurrency``)."""
    f = ds.model
    weights = parallel.weights_per_gpu(
        f.layer_bytes, f.replicated_bytes, f.expert_bytes, f.embedding_bytes * own_embedding, f.head_bytes * own_head,
        num_layers=f.num_layers, num_experts=f.num_experts, tp=ds.tp, pp=1, ep=ds.ep)
    per_draft = memory.sequence_cache_bytes(ctx, f.layout, f.kv_bpe, f.act_bpe, block_size=engine.block_size,
                                            tensor_parallel=ds.tp)
    groups = plan.dp * plan.attention_dp
    resident = parallel.sequences_per_group(users, groups)
    per_target = sizes["kv_cache_bytes"] / resident
    kv = parallel.sequences_per_group(users, ds.groups) * per_draft
    headroom = sizes["headroom_bytes"] - weights - kv
    pool = sizes["kv_pool_bytes"] - sizes["kv_pool_deficit_bytes"] - weights
    return dict(
        draft_weights_bytes=weights,
        draft_kv_cache_bytes=scalar_or_array(kv),
        fits=scalar_or_array(headroom >= 0),
        max_concurrency=scalar_or_array(memory.max_concurrency(maximum(pool, 0.0), per_target + per_draft) * groups),
    )
