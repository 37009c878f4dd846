"""Fuzzed command lines through ``gpusizer.cli.main`` in-process: nothing but SystemExit escapes and
every exit status is 0, 1 or 2 (issue 14). Seeded and deterministic; ``tools/fuzz_cli.py`` runs 5,000."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "fuzz_cli.py"


def _fuzzer():
    spec = importlib.util.spec_from_file_location("fuzz_cli", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fuzzed_command_lines_never_raise():
    failures, statuses = _fuzzer().fuzz(1500, seed=2026)
    assert failures == [], failures[:3]
    assert sum(statuses.values()) == 1500
    assert statuses[0] > 50 and statuses[1] > 20 and statuses[2] > 500, statuses  # every path is exercised


def test_fuzzer_is_deterministic():
    fuzzer = _fuzzer()
    import random

    files = {k: k for k in ("measurements", "vllm", "missing", "dir", "loop", "unreadable", "oversize", "empty",
                            "deep", "out", "fifo", "config", "calibration", "gguf", "hostile_gguf")}
    first = [fuzzer.arguments(random.Random(7), files) for _ in range(3)]
    again = [fuzzer.arguments(random.Random(7), files) for _ in range(3)]
    assert first == again
