"""The restructured code reproduces every recorded number (``tools/golden.py``; issue 13).

The golden file holds every field of ``estimate`` on 820 seeded random configurations (every engine,
layouts from ``tp`` to ``tp8+ep8``, 1-72 GPUs, contexts of 128 to 1M tokens, scalar and broadcast
inputs; the ones ``estimate`` rejects are recorded as the exception type), four sweeps, four
``best_layout`` and two ``shortlist`` cases, recorded before the restructure. Numbers must agree to
1e-12 relative; strings, booleans and missing values exactly.
"""

from __future__ import annotations

import gzip
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import golden  # noqa: E402

RECORDED = json.loads(gzip.decompress(golden.PATH.read_bytes()))


def differences(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Paths at which two JSON-like values disagree (numbers beyond 1e-12 relative)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = [f"{where}.{k}: missing" for k in expected.keys() - actual.keys()]
        out += [f"{where}.{k}: unexpected" for k in actual.keys() - expected.keys()]
        for k in expected.keys() & actual.keys():
            out += differences(expected[k], actual[k], f"{where}.{k}")
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{where}: length {len(actual)} != {len(expected)}"]
        pairs = enumerate(zip(expected, actual, strict=True))
        return [d for i, (e, a) in pairs for d in differences(e, a, f"{where}[{i}]")]
    numbers = (int, float)
    if isinstance(expected, numbers) and isinstance(actual, numbers) and not isinstance(expected, bool):
        if isinstance(actual, bool):
            return [f"{where}: {actual!r} != {expected!r}"]
        if math.isnan(expected) and math.isnan(actual):
            return []
        if expected == actual or math.isclose(expected, actual, rel_tol=1e-12, abs_tol=0.0):
            return []
        return [f"{where}: {actual!r} != {expected!r}"]
    same = expected == actual and isinstance(expected, bool) == isinstance(actual, bool)
    return [] if same else [f"{where}: {actual!r} != {expected!r}"]


def test_the_recorded_file_covers_the_issue() -> None:
    answered = [c for c in RECORDED["estimate"] if "error" not in c["result"]]
    assert len(answered) >= 600
    assert {c["kwargs"]["engine"] for c in answered} == set(golden.ENGINES)
    assert max(c["kwargs"]["context"] for c in answered if isinstance(c["kwargs"]["context"], int)) > 500_000
    assert {c["result"]["gpus"] for c in answered} >= set(range(1, 9)) - {5, 7}


def test_differences_sees_a_change_in_the_thirteenth_digit() -> None:
    assert differences({"a": [1.0, 2.0]}, {"a": [1.0, 2.0 * (1 + 1e-11)]}) == [".a[1]: 2.00000000002 != 2.0"]
    assert differences({"a": True}, {"a": 1}) == [".a: 1 != True"]


@pytest.mark.parametrize("chunk", range(8))
def test_estimate_reproduces_the_golden_file(chunk: int) -> None:
    cases = RECORDED["estimate"][chunk::8]
    found = [d for case in cases for d in differences(case["result"], golden.run_estimate(case["kwargs"]),
                                                      str(case["kwargs"]))]
    assert found == [], found[:20]


@pytest.mark.parametrize("index", range(len(golden.SWEEPS)))
def test_sweep_reproduces_the_golden_file(index: int) -> None:
    assert differences(RECORDED["sweep"][index], golden.run_sweep(golden.SWEEPS[index]))[:20] == []


@pytest.mark.parametrize("index", range(len(golden.BEST)))
def test_best_layout_reproduces_the_golden_file(index: int) -> None:
    assert differences(RECORDED["best_layout"][index], golden.run_best(golden.BEST[index]))[:20] == []


@pytest.mark.parametrize("index", range(len(golden.SHORTLISTS)))
def test_shortlist_reproduces_the_golden_file(index: int) -> None:
    assert differences(RECORDED["shortlist"][index], golden.run_shortlist(golden.SHORTLISTS[index]))[:20] == []
