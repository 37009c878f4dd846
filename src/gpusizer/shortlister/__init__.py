r"""The buying question: which configuration serves my traffic within my latency targets at the lowest cost.

``shortlist(model, workload, slo)`` sweeps the catalogue (GPU x count x layout x weight precision),
drops what does not fit or cannot meet the ``SLO`` at any rate, and ranks the rest by the cost of a
million tokens of the workload: each configuration is replicated until the replicas together
sustain the workload's rate within the SLO (``serving.max_rate``), and the bill of those replicas is
divided by the tokens they serve. Every row carries the largest rate one replica sustains, what
binds it, dollars per million input / output / all tokens, joules per token, the latencies at the
workload, and the uncertainty band (speed band of the efficiency fit x price range of the quotes).

The sweep is two-stage. Every candidate is screened with the closed forms of ``serving.load``
(milliseconds each); the ``simulate`` cheapest are then checked with the discrete-event simulation
(``serving.simulate``), whose tails are the ones to trust: ``Row.simulated_max_rate`` and the
``simulated_*`` latencies sit beside the closed forms, which alone rank and price, so that a
configuration's row does not depend on which other rows are simulated.

Modules: ``shortlister.screen`` (the candidates and the screens that drop them),
``shortlister.search`` (pricing, ranking, ``shortlist``) and ``shortlister.table`` (the records).
Composition only: the physics lives in ``serving``, ``cost``, ``estimator`` and ``performance``.

Deliberate omissions: mixed fleets (one GPU type per answer), disaggregated prefill/decode, and
spot or reserved pricing beyond the quotes in ``data/prices.toml``.
"""

from gpusizer.serving import SLO, Workload
from gpusizer.shortlister.search import shortlist
from gpusizer.shortlister.table import Dropped, Row, Shortlist

__all__ = ["SLO", "Dropped", "Row", "Shortlist", "Workload", "shortlist"]
