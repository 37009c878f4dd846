r"""vLLM's ``benchmark_serving.py`` / ``vllm bench serve --save-result`` output, and Little's law."""

from __future__ import annotations

from pathlib import Path

from gpusizer.readers.records import Measurement, parse_json, source_text

__all__ = ["littles_law", "read_vllm"]


def littles_law(requests_per_second: float | None, latency_seconds: float | None) -> int | None:
    """Mean requests in flight, :math:`L = \\lambda W`, rounded; ``None`` if unknown.

    References
    ----------
    .. [1] J. D. C. Little, "A proof for the queuing formula: L = lambda W," Operations Research,
       vol. 9, no. 3, pp. 383-387, 1961, doi:10.1287/opre.9.3.383.
    """
    if not requests_per_second or not latency_seconds:
        return None
    return max(1, round(requests_per_second * latency_seconds))


def read_vllm(
    path: str | Path,
    *,
    model: str,
    gpu: str,
    gpus: int = 1,
    engine: str = "vllm",
    weights: str | None = None,
    kv_cache: str | None = None,
    concurrency: int | None = None,
) -> list[Measurement]:
    """Measurements from a vLLM ``benchmark_serving.py`` (``vllm bench serve``) result JSON.

    Gives a ``tpot`` row (``median_tpot_ms``) at the run's concurrency and, when one request was in
    flight at a time, a ``ttft`` row (``median_ttft_ms``: an idle engine, as gpusizer's TTFT assumes).
    Lengths are the means, ``total_input_tokens / completed`` and ``total_output_tokens / completed``.

    Parameters
    ----------
    path : path
        The JSON written with ``--save-result``.
    model, gpu : str
        Catalogue ids (the file names a Hugging Face repo, not a catalogue id).
    gpus, engine, weights, kv_cache
        As in ``Measurement``; ``engine`` also covers SGLang or TensorRT-LLM servers measured with
        the same client.
    concurrency : int, optional
        Requests in flight; default ``max_concurrency`` of the run, else Little's law [1]_
        (``request_throughput`` x mean end-to-end latency).

    Raises
    ------
    KeyError
        Unknown model or GPU id, or a result without ``median_tpot_ms``.
    ValueError
        No completed request, or no way to know the concurrency.

    References
    ----------
    .. [1] J. D. C. Little, "A proof for the queuing formula: L = lambda W," Operations Research,
       vol. 9, no. 3, pp. 383-387, 1961, doi:10.1287/opre.9.3.383.
    """
    data = parse_json(source_text(path), Path(path).name)
    if not isinstance(data, dict):
        raise ValueError(f"{Path(path).name}: a vLLM result is a JSON object")
    completed = int(data.get("completed") or 0)
    if completed < 1:
        raise ValueError(f"{Path(path).name}: no completed request")
    users = concurrency or data.get("max_concurrency") or littles_law(
        data.get("request_throughput"), (data.get("mean_e2el_ms") or 0) / 1e3
    )
    if not users:
        raise ValueError(f"{Path(path).name}: concurrency unknown (no max_concurrency, no mean_e2el_ms); "
                         "pass concurrency=")
    common = dict(
        model=model, gpu=gpu, gpus=gpus, engine=engine, weights=weights, kv_cache=kv_cache,
        prompt=round(data["total_input_tokens"] / completed), output=round(data["total_output_tokens"] / completed),
        concurrency=int(users),
        source=f"vLLM benchmark_serving {Path(path).name} ({data.get('date', 'undated')}, "
        f"backend {data.get('backend', '?')}, {data.get('model_id', '?')})",
    )
    stem = Path(path).stem
    rows = [Measurement(id=f"{stem}:tpot", metric="tpot", value=data["median_tpot_ms"], unit="ms", **common)]
    if users == 1 and data.get("median_ttft_ms"):
        rows.append(Measurement(id=f"{stem}:ttft", metric="ttft", value=data["median_ttft_ms"], unit="ms", **common))
    return rows
