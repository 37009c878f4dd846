r"""The engine step as a table: ``StepModel``, its builder ``step_model``, and the times read from it.

``step_model`` calls ``estimate`` once per configuration over arrays (``step_axes`` gives the grids,
``step_tables`` turns the result into a ``StepModel``); everything else in ``gpusizer.serving``
interpolates in that table: ``step_seconds`` for one step, ``prompt_extra_seconds`` for the
prompt-dependent extra of a prefill, ``marginal_prefill_seconds`` for the time a prompt adds to the
steps it shares with decodes, and ``batch_limit`` for the most sequences the engine holds.

Deliberate omissions: the KV-read cost is linear in cached tokens, fitted at one context (sliding-window
and recurrent layers enter through that fit).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from gpusizer import catalog, engines
from gpusizer import prefix_cache as caching
from gpusizer.checks import scalar_or_array
from gpusizer.estimator import estimate

__all__ = [
    "StepModel",
    "batch_limit",
    "budget_batch",
    "cached_prompt_tokens",
    "marginal_prefill_seconds",
    "prompt_extra_seconds",
    "step_axes",
    "step_model",
    "step_seconds",
    "step_tables",
]


@dataclass(frozen=True)
class StepModel:
    r"""Engine step time as a table of numbers, built once per configuration by ``step_model``.

    A step that runs :math:`n` tokens (decodes plus prompt tokens) while the decodes read
    :math:`K` cached tokens takes

    .. math:: t = a(n) + \kappa K + \sum_{\text{chunks}} [e(p + c) - e(p)]

    where :math:`a` is ``token_seconds`` over ``token_grid``, :math:`\kappa` ``kv_seconds`` and
    :math:`e` ``prompt_seconds`` over ``prompt_grid`` (the prefill time of a prompt beyond
    :math:`a` of its chunks: attention over the prompt and the per-request fixed cost; it may be
    negative because :math:`a` computes the LM head for every token and a prefill only for the last).
    """

    token_grid: np.ndarray
    """Tokens per step where ``token_seconds`` is tabulated, starting at 0. [token]"""
    token_seconds: np.ndarray
    """Step time of that many single-token sequences with no cache to read, :math:`a(n)`. [s]"""
    compute_bound: np.ndarray
    """Whether the step of ``token_grid`` tokens is compute-bound at the datasheet peaks. [bool]"""
    kv_seconds: float
    """Time to read one cached token in a decode step, :math:`\\kappa`. [s/token]"""
    prompt_grid: np.ndarray
    """Prompt lengths where ``prompt_seconds`` is tabulated, starting at 0. [token]"""
    prompt_seconds: np.ndarray
    """Prefill time beyond ``token_seconds`` of its chunks, :math:`e(S)`. [s]"""
    chunk_tokens: int
    """Token budget of one step (decodes count against it). [token]"""
    max_sequences: int
    """Most sequences the engine runs at once (vLLM ``max_num_seqs``). [-]"""
    kv_capacity_tokens: float
    """Tokens the KV pool holds. [token]"""
    decode_band: tuple[float, float] = (1.0, 1.0)
    """Factors on decode step time at the p90 and p10 of speed (fast, slow). [-]"""
    prefill_band: tuple[float, float] = (1.0, 1.0)
    """Factors on prefill time at the fast and slow end of its band. [-]"""
    engine: str = ""
    """Engine profile the table was built for."""
    kv_cache: str = ""
    """KV-cache dtype."""
    layout: str = ""
    """How the GPUs share the model (``tp4``, ``pp2``; empty on one GPU)."""
    label: str = ""
    prefix_hit_rate: float = 0.0
    """Share of each prompt's tokens found in the prefix cache (``Workload.prefix_hit_rate``). [-]"""

    def scaled(self, decode: float, prefill: float | None = None) -> StepModel:
        """The same engine with decode step times times ``decode`` and prefill extras times ``prefill``."""
        prefill = decode if prefill is None else prefill
        return replace(self, token_seconds=self.token_seconds * decode, kv_seconds=self.kv_seconds * decode,
                       prompt_seconds=self.prompt_seconds * prefill)

    def bands(self) -> tuple[StepModel, StepModel]:
        """The engine at the fast and at the slow end of the speed bands."""
        return (self.scaled(self.decode_band[0], self.prefill_band[0]),
                self.scaled(self.decode_band[1], self.prefill_band[1]))


def step_seconds(step: StepModel, tokens: Any, kv_tokens: Any = 0.0, prefill_seconds: Any = 0.0) -> Any:
    r"""Duration of one engine step.

    Parameters
    ----------
    step : StepModel
        The configuration's step table.
    tokens : array_like
        Tokens in the step: one per decoding sequence plus the prompt tokens scheduled. [token]
    kv_tokens : array_like
        Cached tokens the decodes read, summed over sequences. [token]
    prefill_seconds : array_like
        Prompt-dependent extra of the prefill chunks in the step, :math:`e(p+c) - e(p)`. [s]

    Returns
    -------
    numeric
        Step time; 0 for an empty step. [s]

    Notes
    -----
    .. math:: t = a(n) + \kappa K + \Delta e

    Examples
    --------
    >>> s = StepModel(np.array([0, 1, 100]), np.array([0, 0.01, 0.02]), np.array([False] * 3), 1e-6,
    ...               np.array([0, 100]), np.array([0, 0.001]), 100, 8, 1e5)
    >>> round(step_seconds(s, 1, kv_tokens=1000), 6)
    0.011
    """
    time = np.interp(tokens, step.token_grid, step.token_seconds) + step.kv_seconds * np.asarray(kv_tokens)
    return scalar_or_array(time + np.asarray(prefill_seconds))


def prompt_extra_seconds(step: StepModel, tokens: Any) -> Any:
    r"""Prefill time of a prompt beyond the step time of its chunks, :math:`e(S)`, read from the table.

    Parameters
    ----------
    step : StepModel
        The configuration's step table.
    tokens : array_like
        Prompt tokens prefilled so far (or in all). [token]

    Returns
    -------
    numeric
        :math:`e(S)`, linear between ``step.prompt_grid`` points; it may be negative. [s]

    Notes
    -----
    The extra of a chunk of :math:`c` tokens after :math:`p` already prefilled is
    :math:`e(p + c) - e(p)`.

    Examples
    --------
    >>> s = StepModel(np.array([0, 1, 100]), np.array([0, 0.01, 0.02]), np.array([False] * 3), 1e-6,
    ...               np.array([0, 100]), np.array([0, 0.001]), 100, 8, 1e5)
    >>> round(float(prompt_extra_seconds(s, 50)), 6)
    0.0005
    """
    return np.interp(tokens, step.prompt_grid, step.prompt_seconds)


def step_model(
    model: Any,
    gpu: Any,
    *,
    weights: str | None = None,
    kv_cache: str | None = None,
    gpus: int | None = None,
    engine: str | engines.EngineProfile = "vllm",
    context: float = 4096,
    max_prompt: float | None = None,
    ceiling: bool = False,
    **options: Any,
) -> StepModel:
    r"""Tabulate a configuration's step time from ``performance.speed`` and its KV pool from ``estimate``.

    Three calls, each over an array: decode steps of :math:`n` sequences at context 1 give
    :math:`a(n)`; decode steps at context 1 and ``context`` give :math:`\kappa`; prefills of a grid of
    prompts give :math:`e(S)`. ``estimate`` at ``context`` gives the KV pool in tokens.

    Parameters
    ----------
    model, gpu : str or record
        Catalogue ids or records, as for ``estimate``.
    weights, kv_cache, gpus, engine
        As for ``estimate``; ``engine`` may be a profile with its own caps
        (``EngineProfile.model_copy(update={"max_sequences": 512})``), which the table keeps.
    context : float
        Representative tokens per sequence (prompt + half the output is the mean a decode reads):
        where the KV-read cost is measured and the KV pool is counted. [token]
    max_prompt : float, optional
        Longest prompt to tabulate; default the model's maximum context (at least ``4 * context``). [token]
    ceiling : bool
        Tabulate the datasheet roofline (``tpot_seconds_ceiling``, ``seconds_ceiling``) instead of the
        expected times; its bands are ``(1, 1)``.
    **options
        Passed to ``estimate`` (``layout=`` where the estimator supports it).

    Returns
    -------
    StepModel

    Examples
    --------
    >>> s = step_model("llama-3.1-8b", "h100-sxm", context=2560)
    >>> s.chunk_tokens, s.max_sequences
    (8192, 256)
    >>> 0.005 < step_seconds(s, 1) < 0.02  # one decode of an 8B model on an H100
    True
    """
    record = catalog.model(model)
    ctx = int(max(2, round(context)))
    longest = float(max_prompt) if max_prompt else float(max(record.max_context or 0, 4 * ctx))
    profile = engines.engine(engine)
    tokens, prompts = step_axes(profile, longest)
    sized = estimate(record, gpu, weights=weights, kv_cache=kv_cache, context=np.array([[1], [ctx]]),
                     concurrency=tokens, prompt=prompts, gpus=gpus, engine=profile, **options)
    return step_tables(record, sized, tokens, prompts, ctx, profile=profile, ceiling=ceiling)


def _grid(points: int, longest: float) -> np.ndarray:
    """``points`` distinct whole numbers from 1 to ``longest``, geometrically spaced where rounding allows."""
    if longest <= points:
        return np.arange(1, points + 1, dtype=np.int64)
    grid = np.unique(np.rint(np.geomspace(1, longest, points)))
    fill = np.setdiff1d(np.rint(np.linspace(1, longest, points)), grid)[: points - len(grid)]
    return np.sort(np.concatenate([grid, fill])).astype(np.int64)


def step_axes(profile: Any, longest: float) -> tuple[np.ndarray, np.ndarray]:
    """Grids on which ``step_model`` tabulates a step table.

    Two grids of one length, so that one ``estimate`` broadcasts them together.

    Parameters
    ----------
    profile : engines.Engine
        Engine profile; its ``batched_tokens`` and ``max_sequences`` bound the token grid.
    longest : float
        Longest prompt to tabulate (at least 2 is used). [token]

    Returns
    -------
    tokens : ndarray
        Tokens per step: 48 geometric whole numbers (duplicates removed) from 1 to one past the larger of
        the budget and the sequence limit. [token]
    prompts : ndarray
        Prompt lengths, as many as ``tokens``: distinct whole numbers from 1 to ``longest``, geometric
        where rounding allows. [token]

    Examples
    --------
    >>> from gpusizer import engines
    >>> tokens, prompts = step_axes(engines.engine("vllm"), 32768)
    >>> len(tokens) == len(prompts), int(tokens[0]), int(prompts[-1])
    (True, 1, 32768)
    """
    top = max(int(profile.batched_tokens), int(profile.max_sequences)) + 1
    tokens = np.unique(np.rint(np.geomspace(1, top, 48))).astype(np.int64)
    return tokens, _grid(len(tokens), max(longest, 2.0))


def step_tables(record: Any, sized: Any, tokens: np.ndarray, prompts: np.ndarray, ctx: int, *,
                profile: Any = None, ceiling: bool = False) -> StepModel:
    r"""The step table of one ``estimate`` over the grids of ``step_axes``.

    Parameters
    ----------
    record : catalog.Model
        The model (its ``id`` names the table).
    sized : Estimate
        ``estimate`` at ``context=[[1], [ctx]]``, ``concurrency=tokens``, ``prompt=prompts``: decode of
        :math:`n` sequences at context 1 and ``ctx`` (rows), prefill of the prompt grid.
    tokens, prompts : ndarray
        The grids of ``step_axes``. [token]
    ctx : int
        The second context of ``sized``, where the KV-read cost is measured and the pool counted. [token]
    profile : engines.EngineProfile, optional
        The profile ``sized`` was estimated with (its budget and sequence limit); default the named one.
    ceiling : bool
        Read the datasheet-roofline times instead of the expected ones (bands ``(1, 1)``).

    Returns
    -------
    StepModel

    Notes
    -----
    :math:`a(n)` is the decode step time at context 1 (with :math:`a(0) = 0`);
    :math:`\kappa = [t(16, ctx) - t(16, 1)] / (16 (ctx - 1))`, at least 0;
    :math:`e(S) = T_{prefill}(S) - \lfloor S/C \rfloor a(C) - a(S \bmod C)` with :math:`C` the budget.
    The speed bands are read at 32 sequences (decode) and at the longest prompt (prefill).

    Examples
    --------
    >>> from gpusizer import catalog, engines
    >>> from gpusizer.estimator import estimate
    >>> record = catalog.model("llama-3.1-8b")
    >>> tokens, prompts = step_axes(engines.engine("vllm"), 4 * 2560)
    >>> sized = estimate(record, "h100-sxm", context=np.array([[1], [2560]]), concurrency=tokens, prompt=prompts)
    >>> step_tables(record, sized, tokens, prompts, 2560).chunk_tokens
    8192
    """
    profile = engines.engine(sized.engine if profile is None else profile)
    count = sized.gpus
    chunk = int(profile.batched_tokens)
    decode, fill = sized.decode, sized.prefill
    plan = getattr(sized, "parallel", None)
    step_time = decode.tpot_seconds_ceiling if ceiling else decode.tpot_seconds_expected
    both = np.broadcast_to(np.asarray(step_time, dtype=float), (2, len(tokens)))
    a = np.concatenate([[0.0], both[0]])
    grid = np.concatenate([[0], tokens])
    reference = int(np.searchsorted(tokens, 16))
    kappa = max(float(both[1, reference] - both[0, reference]) / (tokens[reference] * (ctx - 1)), 0.0)
    full = np.interp(chunk, grid, a) * (prompts // chunk)
    rest = np.where(prompts % chunk > 0, np.interp(prompts % chunk, grid, a), 0.0)
    extra = np.asarray(fill.seconds_ceiling if ceiling else fill.seconds_expected, dtype=float) - full - rest
    batched = int(np.searchsorted(tokens, 32))  # the band of batched decode, the serving regime
    decode_rate = float(np.broadcast_to(decode.expected_tokens_per_second, both.shape)[0, batched])
    low, high = (float(np.broadcast_to(b, both.shape)[0, batched]) for b in decode.band)
    p_expected = float(np.asarray(fill.seconds_expected).ravel()[-1])
    p_low, p_high = (float(np.asarray(b).ravel()[-1]) for b in fill.band)
    return StepModel(
        token_grid=grid.astype(float),
        token_seconds=a,
        compute_bound=np.concatenate([[False], np.broadcast_to(decode.bound, both.shape)[0] == "compute"]),
        kv_seconds=kappa,
        prompt_grid=np.concatenate([[0.0], prompts.astype(float)]),
        prompt_seconds=np.concatenate([[0.0], extra]),
        chunk_tokens=chunk,
        max_sequences=int(profile.max_sequences),
        kv_capacity_tokens=float(np.broadcast_to(sized.kv_pool_tokens, both.shape)[1, 0]),
        decode_band=(1.0, 1.0) if ceiling else (decode_rate / high if high > 0 else 1.0,
                                                 decode_rate / low if low > 0 else 1.0),
        prefill_band=(1.0, 1.0) if ceiling else (p_low / p_expected if p_expected > 0 else 1.0,
                                                 p_high / p_expected if p_expected > 0 else 1.0),
        engine=profile.name,
        kv_cache=sized.kv_cache,
        layout=plan.layout if plan is not None else (f"tp{count}" if count > 1 else ""),
        label=f"{record.id} on {count} x {sized.gpu} ({sized.weights}, {profile.name}"
              + (", ceiling)" if ceiling else ")"),
    )


def batch_limit(step: StepModel, tokens_per_sequence: float) -> float:
    r"""Most sequences the engine holds at once.

    Parameters
    ----------
    step : StepModel
        The configuration's step table.
    tokens_per_sequence : float
        KV-cache tokens one sequence reserves (prompt + output). [token]

    Returns
    -------
    float
        :math:`\min(N_{seq}, \lfloor K_{pool} / \max(t, 1) \rfloor, C - 1)`: the engine's sequence limit,
        the KV pool over tokens per sequence, the token budget less one. [-]

    Examples
    --------
    >>> s = StepModel(np.array([0, 1, 100]), np.array([0, 0.01, 0.02]), np.array([False] * 3), 1e-6,
    ...               np.array([0, 100]), np.array([0, 0.001]), 100, 8, 1e5)
    >>> batch_limit(s, 50_000)
    2.0
    """
    return float(min(step.max_sequences, step.kv_capacity_tokens // max(tokens_per_sequence, 1),
                     step.chunk_tokens - 1))


def budget_batch(chunk_tokens: Any, prompt_tokens: Any, output_tokens: Any) -> Any:
    r"""Most sequences that decode together when each step also prefills the prompts that replace them.

    Parameters
    ----------
    chunk_tokens : array_like
        Token budget of one step (vLLM ``max_num_batched_tokens``). [token]
    prompt_tokens : array_like
        Mean prompt length. [token]
    output_tokens : array_like
        Mean output length, first token included. [token]

    Returns
    -------
    numeric
        :math:`B_C = C\,o / (o + s)`. [-]

    Notes
    -----
    In a saturated engine a sequence leaves every :math:`o` steps on average and a new prompt of
    :math:`s` tokens takes its place, so a step of :math:`B` sequences carries :math:`B` decode
    tokens and :math:`B s / o` prompt tokens. Both share the budget :math:`C` (chunked prefill,
    Sarathi-Serve's token budget [1]_):

    .. math:: B \left(1 + \frac{s}{o}\right) \le C

    References
    ----------
    .. [1] A. Agrawal et al., "Taming throughput-latency tradeoff in LLM inference with Sarathi-Serve,"
       OSDI 2024, arXiv:2403.02310.

    Examples
    --------
    >>> budget_batch(8192, 1024, 1024)
    4096.0
    """
    c, s, o = (np.asarray(x, dtype=float) for x in (chunk_tokens, prompt_tokens, output_tokens))
    return scalar_or_array(c * o / (o + s))


def marginal_prefill_seconds(step: StepModel, prompt: Any, batch: Any, fd: Any = 1.0, fp: Any = 1.0
                             ) -> np.ndarray:
    r"""Time a prompt adds to the steps it shares with ``batch`` decodes.

    Parameters
    ----------
    step : StepModel
        The configuration's step table.
    prompt : array_like
        Prompt length. [token]
    batch : array_like
        Sequences decoding in the steps that carry the prompt's chunks. [-]
    fd, fp : array_like
        Factors on decode step times and on the prompt extra (a speed band). [-]

    Returns
    -------
    ndarray
        Marginal prefill time; broadcasts ``prompt`` with ``batch``, ``fd`` and ``fp``. [s]

    Notes
    -----
    The prompt fills chunks of :math:`C' = \max(C - B, 1)` tokens (the budget left by the decodes):

    .. math:: S_m(s; B) = f_d \sum_j [a(B + c_j) - a(B)] + f_p\, [e(s) - e(s_c)]

    where the chunks :math:`c_j` cover the :math:`s - s_c` tokens not in the prefix cache
    (``cached_prompt_tokens``; :math:`s_c = 0` without caching).

    In the memory-bound plateau of :math:`a` a chunk rides almost free (chunked-prefill interference,
    Agrawal et al., arXiv:2403.02310).

    Examples
    --------
    >>> s = StepModel(np.array([0, 1, 100]), np.array([0, 0.01, 0.02]), np.array([False] * 3), 1e-6,
    ...               np.array([0, 100]), np.array([0, 0.001]), 100, 8, 1e5)
    >>> marginal_prefill_seconds(s, np.array([50.0]), 0.0).round(6)
    array([0.015449])
    """
    batch = np.asarray(batch, dtype=float)
    cached = cached_prompt_tokens(step, prompt)
    computed = prompt - cached
    budget = np.maximum(step.chunk_tokens - batch, 1.0)
    full = np.floor(computed / budget)
    rest = computed - full * budget
    base = np.interp(batch, step.token_grid, step.token_seconds)
    whole = np.interp(batch + budget, step.token_grid, step.token_seconds) - base
    part = np.where(rest > 0, np.interp(batch + rest, step.token_grid, step.token_seconds) - base, 0.0)
    return fd * (full * whole + part) + fp * (prompt_extra_seconds(step, prompt) - prompt_extra_seconds(step, cached))


def cached_prompt_tokens(step: StepModel, prompt: Any) -> Any:
    """Tokens of ``prompt`` the step's engine reads from its prefix cache at ``step.prefix_hit_rate``, in the engine's
    units (``prefix_cache.cached_tokens``, ``prefix_cache.GRANULARITY``); 0 without caching. [token]

    >>> s = StepModel(np.array([0, 1]), np.array([0, 0.01]), np.array([False] * 2), 1e-6, np.array([0, 100]),
    ...               np.array([0, 0.001]), 100, 8, 1e5, engine="vllm", prefix_hit_rate=0.5)
    >>> float(cached_prompt_tokens(s, 100))  # 50 tokens: 3 blocks of 16
    48.0
    """
    return caching.cached_tokens(prompt, step.prefix_hit_rate, 0, caching.GRANULARITY.get(step.engine, 1))
