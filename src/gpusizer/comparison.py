r"""One model on one GPU under several engines, side by side, with the reason for each difference.

``compare_engines(model, gpu, engines=("vllm", "sglang", "trtllm", "llama.cpp"))`` runs ``estimate`` once per
engine profile and returns, per engine, the memory rule and its fraction, the KV pool (bytes and tokens), the
sequences it holds, the engine's own caps, and the decode and prefill speed. Every reason is read from the
profiles (``engines.EngineProfile``: its rule, fraction, runtime and graph memory, block size, caps and
sources) and from the estimate (which efficiency constants the speed used and whether measurements informed
them): nothing is written by hand per engine.

Composition only: the rules are ``engines.KV_POOL_RULES``, their formulas ``RULE_FORMULAS`` (as
``engines.kv_pool_bytes`` documents them). TGI is not among the profiles: its memory accounting
(``--cuda-memory-fraction`` and a warm-up that sizes the pool) has no sourced profile in gpusizer yet.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from gpusizer import catalog, checks, engines, estimator

__all__ = ["RULE_FORMULAS", "EngineRow", "compare_engines", "to_dict"]

#: The KV-pool formula of each rule of ``engines.KV_POOL_RULES``, as ``engines.kv_pool_bytes`` states it
#: (M capacity, W weights, O activation + runtime + graphs, R non-torch memory, f the memory fraction).
RULE_FORMULAS = {
    "share_of_total": "pool = f*M - W - O",
    "static_share": "pool = f*(M - R) - W (activations and graphs live in the rest)",
    "share_of_free": "pool = f*(M - W - O)",
    "whole": "pool = M - W - O (no fraction: KV of context x slots plus a compute buffer)",
}

#: Profile fields a reason names, with what they are.
_FIELDS = (
    ("kv_rule", "memory rule"), ("memory_fraction", "memory fraction"), ("runtime_bytes", "non-torch memory"),
    ("cuda_graph_bytes", "CUDA graphs"), ("block_size", "KV block (tokens)"),
    ("batched_tokens", "tokens per step"), ("max_sequences", "sequences per step"),
)


@dataclass(frozen=True)
class EngineRow:
    """One engine's answer for the model on the GPU; sizes per GPU."""

    engine: str
    kv_rule: str
    formula: str
    memory_fraction: float
    fits: bool
    weights_bytes: float
    """[B]"""
    overhead_bytes: float
    """Activation peak and runtime (non-torch, graphs). [B]"""
    kv_pool_bytes: float
    """[B]"""
    kv_pool_tokens: float
    """Tokens the pools of the layout hold. [token]"""
    max_concurrency: float
    """Sequences of ``context`` tokens the pools hold. [-]"""
    max_sequences: int
    """The engine's own cap on sequences per step (``max_num_seqs``; llama.cpp's parallel slots). [-]"""
    concurrency: float
    """Sequences decoding in the speed figures: the asked concurrency, capped by both limits. [-]"""
    decode_tokens_per_second: float
    """Output tokens per second of all ``concurrency`` sequences, expected. [token/s]"""
    tpot_seconds: float
    """[s]"""
    ttft_seconds: float
    """Time to first token of one prompt, expected. [s]"""
    efficiency: str
    """Efficiency constants the speed used (``engine/memory/format``; ``*``: shared by engines)."""
    measured: bool
    """Whether measurements informed those constants (else priors)."""
    reasons: tuple[str, ...]
    """How this engine differs from the first one, each from its profile or its estimate."""
    sources: tuple[str, ...]
    """The profile's sources."""


def _value(fields: dict[str, Any], name: str) -> str:
    value = fields[name]
    if name.endswith("_bytes"):
        return f"{value / 2**30:.2f} GiB"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _reasons(profile: engines.EngineProfile, first: engines.EngineProfile, row: dict[str, Any],
             base: dict[str, Any]) -> tuple[str, ...]:
    if profile.name == first.name:
        return ()
    # the memory fraction in force (SGLang's default follows the GPU and the layout), not the profile's field
    mine = {**profile.__dict__, "memory_fraction": row["memory_fraction"]}
    theirs = {**first.__dict__, "memory_fraction": base["memory_fraction"]}
    out = [f"{what}: {_value(mine, name)} against {_value(theirs, name)} ({first.name})"
           for name, what in _FIELDS if mine[name] != theirs[name]]
    if row["efficiency"] != base["efficiency"] or row["measured"] != base["measured"]:
        how = {True: "fitted to measurements", False: "priors"}
        out.append(f"speed: efficiency constants {row['efficiency']} ({how[row['measured']]}) against "
                   f"{base['efficiency']} ({how[base['measured']]})")
    return tuple(out)


def compare_engines(
    model: str | catalog.Model,
    gpu: str | catalog.GPU | catalog.System,
    *,
    engine_names: tuple[str, ...] = ("vllm", "sglang", "trtllm", "llama.cpp"),
    context: int = 8192,
    concurrency: int = 1,
    prompt: int | None = None,
    weights: str | None = None,
    kv_cache: str | None = None,
    gpus: int | None = None,
) -> tuple[EngineRow, ...]:
    r"""``estimate`` of ``model`` on ``gpu`` under each engine of ``engine_names``, with the reasons they differ.

    The speed is read at :math:`\min(C, N_{seq}, \lfloor P \rfloor)`: the asked concurrency capped by the
    engine's sequence cap and by the sequences its pool holds (at least 1), so llama.cpp's single slot shows
    as such.

    Examples
    --------
    >>> rows = compare_engines("llama-3.1-8b", "h100-sxm", concurrency=16)
    >>> [r.engine for r in rows], rows[0].kv_pool_bytes > rows[3].kv_pool_bytes * 0
    (['vllm', 'sglang', 'trtllm', 'llama.cpp'], True)
    >>> rows[3].concurrency  # llama.cpp's profile runs one slot
    1.0
    """
    checks.count(concurrency, "concurrency")
    if not engine_names:
        raise ValueError("compare_engines: name at least one engine")
    profiles = [engines.engine(name) for name in engine_names]
    options: dict[str, Any] = dict(context=context, prompt=prompt, weights=weights, kv_cache=kv_cache, gpus=gpus)
    rows: list[dict[str, Any]] = []
    for profile in profiles:
        sized = estimator.estimate(model, gpu, engine=profile, concurrency=1, **options)
        running = float(max(1, min(concurrency, profile.max_sequences, int(sized.max_concurrency))))
        fast = estimator.estimate(model, gpu, engine=profile, concurrency=running, **options)
        m = sized.memory
        rows.append(dict(
            engine=profile.name, kv_rule=profile.kv_rule, formula=RULE_FORMULAS[profile.kv_rule],
            memory_fraction=float(sized.memory_fraction), fits=bool(sized.fits), weights_bytes=float(m.weights_bytes),
            overhead_bytes=float(m.activation_bytes + m.runtime_bytes), kv_pool_bytes=float(sized.kv_pool_bytes),
            kv_pool_tokens=float(sized.kv_pool_tokens), max_concurrency=float(sized.max_concurrency),
            max_sequences=profile.max_sequences, concurrency=running,
            decode_tokens_per_second=float(fast.decode.expected_aggregate_tokens_per_second),
            tpot_seconds=float(fast.decode.tpot_seconds_expected),
            ttft_seconds=float(sized.prefill.ttft_seconds_expected),
            efficiency=str(fast.decode.constants), measured=bool(fast.decode.informed), sources=profile.source))
    return tuple(EngineRow(**row, reasons=_reasons(p, profiles[0], row, rows[0])) for p, row in zip(profiles, rows,
                                                                                                    strict=True))


def to_dict(rows: tuple[EngineRow, ...]) -> list[dict[str, Any]]:
    """``rows`` as plain dicts (``--json``)."""
    return [checks.plain(asdict(r)) for r in rows]
