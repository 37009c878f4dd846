"""The validation report: regenerated from the calibration data, accurate enough, never above a ceiling."""

import importlib.util
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _validation():
    spec = importlib.util.spec_from_file_location("validation", ROOT / "tools" / "validation.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_report_is_up_to_date(tmp_path):
    validation = _validation()
    shipped = (ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
    assert validation.report(plot_name="validation.png") == shipped, "run: python tools/validation.py"
    markdown, _ = validation.write(tmp_path)
    assert markdown.exists()


def test_single_stream_decode_median_error_at_most_15_percent():
    rows, _ = _validation().rows()
    errors = [r.error for r in rows if r.case.use == "fit" and r.case.metric == "decode" and r.case.batch == 1]
    assert len(errors) >= 20
    assert np.median(np.abs(errors)) <= 0.15


def test_no_measurement_beats_its_ceiling():
    rows, _ = _validation().rows()
    over = [(r.case.id, r.case.value, r.ceiling) for r in rows if r.over_ceiling]
    assert not over
    assert all(r.expected <= r.ceiling if not r.is_time else r.expected >= r.ceiling for r in rows)


def test_excluded_rows_say_why():
    _, excluded = _validation().rows()
    assert excluded and all(c.reason for c in excluded)
