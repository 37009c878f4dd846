"""Efficiency constants: provenance, physical bounds, lookup, bands, and a reproducible fit."""

import dataclasses
import importlib.util
import sys
import tomllib
from pathlib import Path

import pytest

from gpusizer import calibration, catalog, configuration, datafiles, efficiency, measurement, performance, readers

ROOT = Path(__file__).resolve().parents[1]


def _tool(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_shipped_table_carries_its_provenance():
    table = efficiency.bundled()
    assert {"method", "date", "measurements", "mapping", "priors", "rows", "informed"} <= set(table.fit)
    assert "least_squares" in table.fit["method"] and "soft_l1" in table.fit["method"]
    rows = set(table.fit["rows"])
    for entry in (*table.engines.values(), *table.groups, *table.fabrics.values()):
        assert entry.source, entry
        assert bool(entry.fitted) == bool(entry.rows), entry  # a fitted entry names the rows that informed it
        assert set(entry.rows) <= rows
    for name in ("vllm", "sglang", "trtllm", "llama.cpp", "mlc"):
        assert name in table.engines


def test_every_constant_is_physical():
    table = efficiency.bundled()
    for g in table.groups:
        for name in efficiency.FIELDS["group"]:
            low, high, _ = efficiency.BOUNDS[name]
            assert low <= getattr(g, name) <= high <= 1.0, (g.key, name)
    for e in table.engines.values():
        assert 0 < e.kv_bandwidth <= 1 and e.layer_seconds > 0 and e.step_seconds > 0
    for band in table.bands.values():
        assert band.low <= 1.0 <= band.high and band.rows >= 3


def test_every_prior_has_a_source():
    data = tomllib.loads((ROOT / "data" / "calibration" / "priors.toml").read_text())
    for kind in ("engine", "group", "fabric"):
        for entry in data[kind]:
            assert entry["source"], entry


def test_resolve_takes_the_most_specific_group():
    table = efficiency.bundled()
    assert efficiency.resolve(table, "llama.cpp", "gddr", "weight-only", "pcie").group == "llama.cpp/gddr/weight-only"
    assert efficiency.resolve(table, "vllm", "hbm", "16bit", "nvlink").group == "*/hbm/16bit"
    assert efficiency.resolve(table, "vllm", "hbm", "fp4", "nvlink").group == "*/*/fp4"
    # no F16 row of a 2025-26 build on an HBM card: the engine's prior group (the alias resolves first); on GDDR
    # cards the 2026 class has its own (fitted to m540, an RTX 3090 BF16 prefill row of PR #24216)
    assert efficiency.resolve(table, "llama-cpp", "hbm", "16bit", "pcie").group == "llama.cpp/*/16bit"
    assert efficiency.resolve(table, "llama-cpp", "gddr", "16bit", "pcie").group == "llama.cpp/gddr/16bit"
    with pytest.raises(ValueError, match="known: vllm"):
        efficiency.resolve(table, "tgi", "hbm", "16bit", "nvlink")


def test_bands_contain_one_and_widen_without_data():
    table = efficiency.bundled()
    low, high = efficiency.band_factors(table, "decode, batch 1, tensor parallel")
    wide = efficiency.band_factors(table, "decode, batch 1, tensor parallel", informed=False)
    assert low <= 1 <= high and wide[0] < low and wide[1] > high
    assert efficiency.band_factors(table, "decode, batch > 1") == efficiency.band_factors(table, "decode")


def test_classes():
    assert efficiency.gpu_class("HBM3e") == "hbm"
    assert efficiency.gpu_class("GDDR6 (ECC)") == "gddr"
    assert efficiency.gpu_class("LPDDR5 unified") == "unified"
    assert efficiency.format_family(16, "bf16", False, True) == "16bit"
    assert efficiency.format_family(4.5, "fp4", False, True) == "fp4"
    assert efficiency.format_family(4.5, "fp4", False, False) == "weight-only"
    assert efficiency.format_family(4.84, "bf16", True, True) == "weight-only"


def test_toml_round_trip(tmp_path):
    table = efficiency.bundled()
    path = tmp_path / "efficiency.toml"
    path.write_text(calibration.table_to_toml(table, "header"))
    again = efficiency.load(path)
    assert again == table  # every entry, every digit (a table compares by value)
    for a, b in zip(table.groups, again.groups, strict=True):
        for f in dataclasses.fields(a):
            assert getattr(b, f.name) == getattr(a, f.name)
    assert again.engines.keys() == table.engines.keys() and again.bands.keys() == table.bands.keys()
    assert tomllib.loads(path.read_text()) == tomllib.loads(datafiles.bundled("efficiency.toml").read_text())
    fitted = efficiency.with_constants(table, {("group", "vllm/hbm/16bit", "bandwidth"): 1 / 3,
                                               ("engine", "vllm", "layer_seconds"): 1.2345678901234e-05})
    path.write_text(calibration.table_to_toml(fitted))
    assert efficiency.load(path) == fitted  # a fitted table keeps every digit (the old writer kept 6)


def test_toml_writer_keeps_every_digit():
    data = {"a": 0.1 + 0.2, "b": 1 / 3, "tiny": 5e-324, "big": 1.7976931348623157e308, "n": 2**60,
            "inf": float("inf"), "text": 'q"uo\\te\nline\x7f', "fit": {"inline": {"x": 2 / 3}, "list": [1.0, 2]},
            "row": [{"id": "m1", "prior": {"k": 1e-05}}, {"id": "m2", "rows": ["x", "y"]}]}
    assert tomllib.loads(calibration.dumps(data, "a header")) == data
    assert calibration.toml.toml_value(0.1 + 0.2) == "0.30000000000000004"


def test_fit_reproduces_the_shipped_constants():
    tool = _tool("fit_efficiency")
    result = tool.fit(tool.cases("fit"))
    assert result.success
    shipped = efficiency.bundled()
    assert set(result.informed) == set(shipped.fit["informed"])
    for g in result.table.groups:
        other = next(x for x in shipped.groups if x.key == g.key)
        for name in efficiency.FIELDS["group"]:
            assert getattr(g, name) == pytest.approx(getattr(other, name), rel=1e-2), (g.key, name)
    for name, e in result.table.engines.items():
        for field in efficiency.FIELDS["engine"]:
            assert getattr(e, field) == pytest.approx(getattr(shipped.engines[name], field), rel=1e-2)


def test_fit_moves_constants_towards_data_and_stays_in_bounds():
    # Synthetic check: measurements made 20 % slower than the prior model pull the efficiency down.
    tool = _tool("fit_efficiency")
    priors = tool.priors()
    cases = [c for c in tool.cases("fit") if c.engine == "mlc"]
    slower = [dataclasses.replace(c, value=performance.predict(c, priors) * 0.8) for c in cases]
    result = calibration.fit(slower, priors, performance.keys, performance.predict)
    errors = [result.predictions[c.id] / c.value - 1 for c in slower]
    assert max(abs(e) for e in errors) < 0.12
    for g in result.table.groups:
        if g.engine == "mlc":
            assert 0.2 <= g.bandwidth <= 0.95


def test_an_era_class_has_its_own_constants_and_collectives():
    # llama.cpp@2024 (builds before ggml-org/llama.cpp PR #8075) has its own fixed costs, kernel path and fitted
    # groups; a group it lacks is llama.cpp's (efficiency.engine_family). The row split prices 7 split products per
    # Llama layer over 2 all-reduce sites = 3.5 (data/interconnect.toml).
    table = efficiency.bundled()
    old, new = (efficiency.resolve(table, e, "gddr", "weight-only", "pcie-host")
                for e in ("llama.cpp@2024", "llama.cpp"))
    assert (old.group, new.group) == ("llama.cpp@2024/gddr/weight-only", "llama.cpp/gddr/weight-only")
    assert efficiency.resolve(table, "llama.cpp@2024", "gddr", "fp4", "pcie").group == "llama.cpp/gddr/fp4"
    assert (old.dequantize_above, new.dequantize_above) == (32.0, 0.0)
    assert old.layer_seconds > new.layer_seconds  # fitted: before CUDA graphs and fusion, about 2x
    # A tensor split is the row split for the 2024 and 2025 builds and -sm tensor (Megatron's all-reduces, no row
    # split) for 2026 builds, which lost -sm row (ggml-org/llama.cpp PR #24216); layouts come from the engine.
    setups = [configuration.setup(catalog.model("llama-2-7b"), catalog.gpu("rtx-4090"), "q4_0", None, "fp16", 2, e,
                                  "tensor", table) for e in ("llama.cpp@2024", "llama.cpp@2025", "llama.cpp")]
    assert [s.tp_row_split for s in setups] == [3.5, 3.5, 0.0]


def test_expert_weights_of_a_case_reach_the_prediction():
    # gpt-oss-20b as llama.cpp's MXFP4_MOE GGUF stores it: Q8_0 (8.5 bits) outside the routed experts, MXFP4
    # (4.25 bits) experts. With every weight at Q8_0 a decode step reads about 4 of 32 experts x 24 layers at twice
    # the bytes, so it must be slower; the field survives readers.from_case and readers.to_case.
    case = efficiency.Case(id="x", metric="decode", value=200.0, model="gpt-oss-20b", gpu="rtx-4090", gpus=1,
                           split="tensor", engine="llama.cpp", weights="q8_0", kv_cache=None, prompt=0, output=128,
                           batch=1, use="fit", expert_weights="mxfp4")
    assert measurement.predict(case) > measurement.predict(dataclasses.replace(case, expert_weights=""))
    assert readers.to_case(readers.from_case(case)).expert_weights == "mxfp4"
