"""Issue 14 item 5: public functions reject bad arguments with TypeError/ValueError naming the parameter."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpusizer
from gpusizer import checks, cost, engines, parallel, precision, serving
from gpusizer.hf import from_hf_config
from gpusizer.serving import SLO, Workload

W = Workload(rate=2, prompt_tokens=1024, output_tokens=256)
S = SLO(ttft_p95=0.5, tpot_p95=0.05)


def _shortlist(**kwargs):
    arguments = {"gpus": ["h100"], "max_gpus": 1, "simulate": 0} | kwargs
    return gpusizer.shortlist("llama-3.1-8b", W, S, **arguments)


CASES = [
    ("gpu(None)", lambda: gpusizer.gpu(None), TypeError, "name"),
    ("model(None)", lambda: gpusizer.model(None), TypeError, "model"),
    ("system(None)", lambda: gpusizer.catalog.system(None), TypeError, "name"),
    ("best_layout gpus=2.5", lambda: gpusizer.best_layout("llama-3.1-8b", "h100", gpus=2.5), TypeError, "gpus"),
    ("best_layout gpus=0", lambda: gpusizer.best_layout("llama-3.1-8b", "h100", gpus=0), ValueError, "gpus"),
    ("best_layout gpus=-3", lambda: gpusizer.best_layout("llama-3.1-8b", "h100", gpus=-3), ValueError, "gpus"),
    ("best_layout gpus=[1,2]", lambda: gpusizer.best_layout("llama-3.1-8b", "h100", gpus=[1, 2]), TypeError, "gpus"),
    ("best_layout gpu=None", lambda: gpusizer.best_layout("llama-3.1-8b", None), TypeError, "gpu"),
    ("best_layout objective", lambda: gpusizer.best_layout("llama-3.1-8b", "h100", objective="x"), ValueError,
     "objective"),
    ("calibrate(None)", lambda: gpusizer.calibrate(None), TypeError, "measurements"),
    ("calibrate('x')", lambda: gpusizer.calibrate("x"), TypeError, "measurements"),
    ("calibrate([1])", lambda: gpusizer.calibrate([1]), TypeError, "measurements"),
    ("shortlist max_gpus=0", lambda: _shortlist(max_gpus=0), ValueError, "max_gpus"),
    ("shortlist max_gpus=1.5", lambda: _shortlist(max_gpus=1.5), TypeError, "max_gpus"),
    ("shortlist simulate=-1", lambda: _shortlist(simulate=-1), ValueError, "simulate"),
    ("shortlist simulate=None", lambda: _shortlist(simulate=None), TypeError, "simulate"),
    ("shortlist requests=0", lambda: _shortlist(requests=0), ValueError, "requests"),
    ("shortlist requests='x'", lambda: _shortlist(requests="x"), TypeError, "requests"),
    ("shortlist seed=-1", lambda: _shortlist(seed=-1), ValueError, "seed"),
    ("shortlist seed=0.5", lambda: _shortlist(seed=0.5), TypeError, "seed"),
    ("shortlist gpus='h100'", lambda: _shortlist(gpus="h100"), TypeError, "gpus"),
    ("shortlist gpus=[None]", lambda: _shortlist(gpus=[None]), TypeError, "gpus"),
    ("shortlist weights='fp8'", lambda: _shortlist(weights="fp8"), TypeError, "weights"),
    ("shortlist weights=[1]", lambda: _shortlist(weights=[1]), TypeError, "weights"),
    ("shortlist layouts='tp'", lambda: _shortlist(layouts="tp"), TypeError, "layouts"),
    ("shortlist layouts=[None]", lambda: _shortlist(layouts=[None]), TypeError, "layouts"),
    ("shortlist workload=None", lambda: gpusizer.shortlist("llama-3.1-8b", None, S), TypeError, "workload"),
    ("shortlist slo=None", lambda: gpusizer.shortlist("llama-3.1-8b", W, None), TypeError, "slo"),
    ("shortlist prices=[]", lambda: _shortlist(prices=[]), TypeError, "prices"),
    ("layout(None)", lambda: parallel.layout(None), TypeError, "layout"),
    ("layout gpus=0", lambda: parallel.layout("tp", 0), ValueError, "gpus"),
    ("engine(None)", lambda: engines.engine(None), TypeError, "engine"),
    ("precision(None)", lambda: precision.precision(None), TypeError, "precision"),
    ("usd_per_million_tokens price<0", lambda: cost.usd_per_million_tokens(-1.0, 1, 100.0), ValueError,
     "usd_per_gpu_hour"),
    ("usd_per_million_tokens price=nan", lambda: cost.usd_per_million_tokens(math.nan, 1, 100.0), ValueError,
     "usd_per_gpu_hour"),
    ("usd_per_million_tokens gpus=0", lambda: cost.usd_per_million_tokens(2.0, 0, 100.0), ValueError, "gpus"),
    ("tokens_per_dollar price<0", lambda: cost.tokens_per_dollar(-1.0, 1, 100.0), ValueError, "usd_per_gpu_hour"),
    ("usd_per_month price=nan", lambda: cost.usd_per_month(math.nan, 1), ValueError, "usd_per_gpu_hour"),
    ("usd_per_month price<0", lambda: cost.usd_per_month(-2.0, 1), ValueError, "usd_per_gpu_hour"),
    ("phase price<0", lambda: cost.phase_usd_per_million_tokens(-1.0, 1.0, 1.0, 0.5, 0.5), ValueError,
     "usd_per_hour"),
    ("prices override<0", lambda: cost.prices({"h100": -1.0}), ValueError, "price of h100"),
    ("prices override=nan", lambda: cost.prices({"h100": math.nan}), ValueError, "price of h100"),
    ("prices overrides=list", lambda: cost.prices([1]), TypeError, "overrides"),
    ("price level", lambda: cost.price("h100", level="x"), ValueError, "level"),
    ("from_hf_config id=3", lambda: from_hf_config({}, id=3), TypeError, "id"),
    ("max_rate step=None", lambda: serving.max_rate(None, W, S), TypeError, "step"),
    ("simulate step=None", lambda: serving.simulate(None, W), TypeError, "step"),
    ("load step=None", lambda: serving.load(None, W), TypeError, "step"),
    ("concurrency_curve step=None", lambda: serving.concurrency_curve(None, 1, prompt_tokens=1, output_tokens=1),
     TypeError, "step"),
    ("Workload rate<0", lambda: Workload(rate=-1, prompt_tokens=1, output_tokens=1), ValueError, "rate"),
    ("SLO ttft nan", lambda: SLO(ttft_p95=math.nan, tpot_p95=0.05), ValueError, "ttft_p95"),
]


@pytest.mark.parametrize(("call", "error", "parameter"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_argument_raises_naming_the_parameter(call, error, parameter):
    with pytest.raises(error) as raised:
        call()
    assert parameter in str(raised.value)


def test_unknown_ids_still_suggest_the_closest():
    with pytest.raises(KeyError, match="h100"):
        gpusizer.gpu("h10O")


def test_validators():
    assert checks.count(3, "n") == 3
    assert checks.one_of("a", "x", ("a", "b")) == "a"
    assert checks.names(("a",), "x") == ["a"] and checks.names(None, "x") is None
    with pytest.raises(TypeError, match="n must"):
        checks.count(True, "n")
    with pytest.raises(ValueError, match="n must be >= 1 and <= 2"):
        checks.count(3, "n", maximum=2)


JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-10, 10), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, -1, 0, 2**70]), st.text(max_size=5),
    st.lists(st.integers(-2, 2), max_size=3), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
ALLOWED = (TypeError, ValueError, KeyError)


def _only_allowed(call):
    try:
        call()
    except ALLOWED:
        pass


FAST = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(JUNK)
def test_lookups_raise_only_argument_errors(junk):
    for function in (gpusizer.gpu, gpusizer.model, gpusizer.catalog.system, engines.engine, precision.precision,
                     parallel.layout, gpusizer.calibrate):
        try:
            _only_allowed(lambda: function(junk))  # noqa: B023
        except Exception as error:  # pragma: no cover - the failure message
            raise AssertionError(f"{function.__name__}({junk!r}) raised {type(error).__name__}: {error}") from error


@FAST
@given(JUNK, st.sampled_from(["price", "gpus", "rate"]))
def test_cost_raises_only_argument_errors(junk, which):
    arguments = {"price": 2.0, "gpus": 1, "rate": 100.0} | {which: junk}
    _only_allowed(lambda: cost.usd_per_million_tokens(arguments["price"], arguments["gpus"], arguments["rate"]))
    _only_allowed(lambda: cost.usd_per_month(arguments["price"], arguments["gpus"]))


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(JUNK, st.sampled_from(["gpus", "objective", "gpu", "model"]))
def test_best_layout_raises_only_argument_errors(junk, which):
    arguments = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 1, "objective": "latency"} | {which: junk}
    _only_allowed(lambda: gpusizer.best_layout(**arguments))


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(JUNK, st.sampled_from(["gpus", "max_gpus", "weights", "layouts", "simulate", "requests", "seed", "prices",
                              "engine"]))
def test_shortlist_raises_only_argument_errors(junk, which):
    if which in ("max_gpus", "simulate", "requests") and isinstance(junk, int) and junk > 2:
        junk = 2  # a valid but large run is slow, not wrong
    _only_allowed(lambda: _shortlist(**{which: junk}))
