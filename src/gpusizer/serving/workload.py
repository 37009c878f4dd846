"""Traffic and targets: ``Workload``, ``SLO`` and the length distributions with their quantiles.

``DISTRIBUTIONS`` holds the inverse CDFs of request lengths by name; ``length_quantiles`` turns one
into equal-weight quadrature nodes (what the closed forms average over) and ``sample_lengths`` into
random lengths (what the simulation draws); ``Lengths`` holds a workload's nodes.

Deliberate omissions: empirical length histograms, and correlation between prompt and output lengths
(they are drawn independently).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "DISTRIBUTIONS",
    "SLO",
    "Distribution",
    "Lengths",
    "Workload",
    "length_quantiles",
    "sample_lengths",
]


def _fixed(u: np.ndarray, mean: float, cv: float) -> np.ndarray:
    return np.full_like(u, mean)


def _exponential(u: np.ndarray, mean: float, cv: float) -> np.ndarray:
    return -mean * np.log1p(-u)


def _lognormal(u: np.ndarray, mean: float, cv: float) -> np.ndarray:
    sigma = math.sqrt(math.log1p(cv * cv))
    normal = np.array([NormalDist().inv_cdf(x) for x in np.ravel(u)]).reshape(np.shape(u))
    return np.exp(math.log(mean) - sigma * sigma / 2 + sigma * normal)


def _uniform(u: np.ndarray, mean: float, cv: float) -> np.ndarray:
    return mean * (1 + cv * math.sqrt(3) * (2 * u - 1))


#: Length distributions by name: inverse CDFs ``ppf(u, mean, cv)``. ``cv`` (standard deviation over
#: mean) is used by ``lognormal`` and ``uniform``; ``exponential`` has cv 1, ``fixed`` cv 0.
DISTRIBUTIONS: dict[str, Callable[[np.ndarray, float, float], np.ndarray]] = {
    "fixed": _fixed,
    "exponential": _exponential,
    "lognormal": _lognormal,
    "uniform": _uniform,
}

Distribution = Literal["fixed", "exponential", "lognormal", "uniform"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class Workload(_Record):
    """Traffic one deployment must serve: a request rate and the lengths of requests.

    >>> Workload(rate=5, prompt_tokens=2048, output_tokens=512).prompt_distribution
    'fixed'
    """

    rate: Annotated[float, Field(gt=0)]
    """Mean request arrival rate. [1/s]"""
    prompt_tokens: Annotated[float, Field(ge=1)]
    """Mean prompt length. [token]"""
    output_tokens: Annotated[float, Field(ge=1)]
    """Mean output length, first token included. [token]"""
    prompt_distribution: Distribution = "fixed"
    """Shape of the prompt-length distribution (see ``DISTRIBUTIONS``)."""
    output_distribution: Distribution = "fixed"
    """Shape of the output-length distribution."""
    prompt_cv: Annotated[float, Field(ge=0, le=4)] = 0.5
    """Coefficient of variation of prompt lengths for ``lognormal`` and ``uniform``. [-]"""
    output_cv: Annotated[float, Field(ge=0, le=4)] = 0.5
    """Coefficient of variation of output lengths for ``lognormal`` and ``uniform``. [-]"""
    burstiness: Annotated[float, Field(gt=0)] = 1.0
    """Shape of gamma-distributed inter-arrival times: 1 is Poisson, below 1 burstier (the
    ``--burstiness`` of ``vllm bench serve``). The closed forms assume 1. [-]"""
    prefix_hit_rate: Annotated[float, Field(ge=0, le=1)] = 0.0
    """Share of each prompt's tokens found in the prefix cache (earlier turns of a session, a shared system
    prompt; ``prefix_cache.session_hit_rate``): the prefill computes only the rest. [-]"""

    @model_validator(mode="after")
    def _uniform_stays_positive(self) -> Workload:
        for name in ("prompt", "output"):
            if getattr(self, f"{name}_distribution") == "uniform" and getattr(self, f"{name}_cv") > 1 / math.sqrt(3):
                raise ValueError(f"{name}_cv must be <= 0.577 for a uniform distribution (lengths stay positive)")
        return self

    def at(self, rate: float) -> Workload:
        """The same traffic shape at another request rate."""
        return self.model_copy(update={"rate": float(rate)})


class SLO(_Record):
    """Latency targets a configuration must meet; ``None`` leaves a metric unconstrained.

    >>> SLO(ttft_p95=0.5, tpot_p95=0.05).quantile
    0.95
    """

    ttft_p95: Annotated[float, Field(gt=0)] | None = None
    """Time to first token at ``quantile``, queueing included. [s]"""
    tpot_p95: Annotated[float, Field(gt=0)] | None = None
    """Time per output token (a request's mean after its first token) at ``quantile``. [s]"""
    e2e_p95: Annotated[float, Field(gt=0)] | None = None
    """End-to-end latency at ``quantile``. [s]"""
    quantile: Annotated[float, Field(gt=0, lt=1)] = 0.95
    """Quantile the three targets apply to (0.95 unless stated, hence the field names). [-]"""

    @model_validator(mode="after")
    def _something(self) -> SLO:
        if self.ttft_p95 is None and self.tpot_p95 is None and self.e2e_p95 is None:
            raise ValueError("an SLO needs at least one of ttft_p95, tpot_p95, e2e_p95")
        return self


def length_quantiles(mean: float, distribution: str = "fixed", cv: float = 0.5, nodes: int = 32) -> np.ndarray:
    r"""Equal-weight quadrature nodes of a length distribution: its quantiles at :math:`(i + 1/2)/n`.

    The mean of any function of a length over the nodes approximates its expectation; the closed
    forms use them for :math:`E[S]` and :math:`E[S^2]` of service times that are not linear in length.

    Parameters
    ----------
    mean : float
        Mean length. [token]
    distribution : str
        A name of ``DISTRIBUTIONS``.
    cv : float
        Coefficient of variation (``lognormal``, ``uniform``). [-]
    nodes : int
        Number of nodes.

    Returns
    -------
    ndarray
        Whole token counts, at least 1, sorted. [token]

    Examples
    --------
    >>> length_quantiles(512, "fixed", nodes=3)
    array([512., 512., 512.])
    """
    u = (np.arange(nodes) + 0.5) / nodes
    return np.maximum(1.0, np.rint(_ppf(distribution)(u, mean, cv)))


def sample_lengths(mean: float, distribution: str, cv: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """Random whole lengths (at least 1) drawn by inverse transform with ``rng``. [token]"""
    return np.maximum(1, np.rint(_ppf(distribution)(rng.random(size), mean, cv))).astype(np.int64)


def _ppf(distribution: str) -> Callable[[np.ndarray, float, float], np.ndarray]:
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution must be one of {', '.join(DISTRIBUTIONS)}, got {distribution!r}")
    return DISTRIBUTIONS[distribution]


@dataclass(frozen=True)
class Lengths:
    """Equal-weight quadrature nodes of a workload's prompt and output lengths (``length_quantiles``).

    The closed forms average a function of the lengths over these nodes for its expectation.

    >>> Lengths.of(Workload(rate=1, prompt_tokens=2048, output_tokens=512)).prompt
    array([2048.])
    """

    prompt: np.ndarray
    """Prompt-length nodes, sorted; one node for a fixed length. [token]"""
    output: np.ndarray
    """Output-length nodes (first token included), sorted; one node for a fixed length. [token]"""

    @classmethod
    def of(cls, workload: Workload, nodes: int = 24) -> Lengths:
        """The nodes of ``workload``: ``nodes`` per distributed length, one per fixed length (cached)."""
        return _lengths(workload, nodes)


@lru_cache(maxsize=64)
def _lengths(workload: Workload, nodes: int) -> Lengths:
    """Quadrature nodes of a workload's lengths; one node is exact for a fixed length (cached: a sweep
    asks for the same nodes thousands of times)."""
    prompt = 1 if workload.prompt_distribution == "fixed" else nodes
    output = 1 if workload.output_distribution == "fixed" else nodes
    return Lengths(
        length_quantiles(workload.prompt_tokens, workload.prompt_distribution, workload.prompt_cv, prompt),
        length_quantiles(workload.output_tokens, workload.output_distribution, workload.output_cv, output),
    )
