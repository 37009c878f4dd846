"""Rich display: units on every figure, readable repr/str, well-formed HTML, tables, CLI help."""

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import gpusizer
from gpusizer import catalog, cli, display, presentation, records

FLAGSHIP = dict(weights="fp8", kv_cache="fp8", context=32768)


def well_formed(html: str) -> ET.Element:
    """Parse the HTML fragment as XML: every tag closed, every attribute quoted, text escaped."""
    return ET.fromstring(f"<root>{html}</root>")


# --- numbers and tables ---------------------------------------------------------------------------


def test_numbers_carry_their_units():
    assert display.format_bytes(80 * 2**30, "GiB") == "80.00 GiB"
    assert display.format_size(85.9e9) == "85.90 GB (80.00 GiB)"
    assert display.format_seconds(0.0463) == "46.3 ms"
    assert display.format_rate(1761.2) == "1,761 tok/s"
    assert display.format_bandwidth(4.8e12) == "4.80 TB/s"
    assert display.format_flops(1979e12) == "1,979 TFLOP/s"
    assert display.format_seconds(float("nan")) == display.format_bytes(None) == "-"
    with pytest.raises(ValueError, match="GiB"):
        display.format_bytes(1.0, "gigabytes")


def test_text_table_right_aligns_numbers_and_puts_units_in_the_header():
    rows = [{"gpu": "h100-sxm", "memory": 80e9, "fits": True}, {"gpu": "b200", "memory": 180e9, "fits": False}]
    columns = [display.text_column("gpu", "gpu"), display.bytes_column("memory", "memory"),
               display.Column("fits", "fits")]
    lines = display.text_table(rows, columns).splitlines()
    assert lines[0].split() == ["gpu", "memory", "[GB]", "fits"]
    assert lines[1].index("80.00") + len("80.00") == lines[2].index("180.00") + len("180.00")
    assert lines[1].endswith("yes") and lines[2].endswith("no")
    more = display.text_table(rows, columns, max_rows=1)
    assert more.endswith("... 1 more rows")


def test_markdown_and_html_tables_escape_their_cells():
    rows = [{"name": "a|b <c>", "value": 1.5}]
    columns = [display.text_column("name", "name"), display.Column("value", "value", "ms")]
    markdown = display.markdown_table(rows, columns)
    assert "a\\|b <c>" in markdown and "| ---: |" in markdown
    root = well_formed(display.html_table(rows, columns, caption="c & d"))
    assert [td.text for td in root.iter("td")] == ["a|b <c>", "1.50"]
    assert root.find(".//caption").text == "c & d"


def test_sweep_rows_broadcast_and_flatten():
    rows = display.sweep_rows(context=np.array([[1024], [2048]]), concurrency=np.array([1, 4]), fits=True)
    assert len(rows) == 4
    assert rows[1] == {"context": 1024, "concurrency": 4, "fits": True}
    assert type(rows[0]["context"]) is int  # plain Python numbers, not numpy scalars


# --- estimates ------------------------------------------------------------------------------------


def test_scalar_estimate_repr_str_and_html():
    e = gpusizer.estimate("llama-3.1-70b", "h200", concurrency=16, **FLAGSHIP)
    assert repr(e).startswith("<Estimate llama-3.1-70b on 1 x H200 SXM") and "does not fit" in repr(e)
    assert "\n" not in repr(e)
    text = str(e)
    for piece in ("  KV cache         85.90 GB     80.00 GiB", "tok/s", " ms", "DOES NOT FIT", "11 sequences"):
        assert piece in text, piece
    # issue 20: print(estimate) and gpusizer fit show one and the same text
    from gpusizer import catalog, cli

    assert text == cli.fit_text(e, catalog.gpu("h200"), catalog.model("llama-3.1-70b"))
    root = well_formed(e._repr_html_())
    cells = [td.text for td in root.iter("td")]
    assert "KV cache" in cells and f"{e.memory.kv_cache_bytes / 1e9:,.2f}" in cells
    assert "DOES NOT FIT" in "".join(root.itertext())


def test_a_custom_gpu_shows_its_name():
    # issue 20: a GPU record that is not in the catalogue shows its name, not its id, in text, repr and HTML
    card = gpusizer.gpu("rtx-4090").model_copy(update={"id": "my-card", "name": "My Card 48GB", "memory": 48e9,
                                                       "memory_usable": None})
    e = gpusizer.estimate("qwen3-32b", card, weights="int4", context=16384, concurrency=4)
    assert str(e).startswith("qwen3-32b on 1 x My Card 48GB (vllm)")
    assert "My Card 48GB" in repr(e) and "My Card 48GB" in e._repr_html_()
    # 48e9 B as given, shown in GB and GiB: 48.00 GB, 48e9 / 2**30 = 44.70 GiB
    assert "  capacity         48.00 GB     44.70 GiB   as the GPU record gives it" in str(e)


def test_sweep_estimate_shows_one_row_per_point():
    e = gpusizer.estimate("llama-3.1-70b", "h200", concurrency=np.array([1, 8, 11, 16]), **FLAGSHIP)
    assert "sweep of 4 points, 3 fit" in repr(e)
    lines = str(e).splitlines()
    assert len(lines) == 2 + 4 and "TPOT [ms]" in lines[1] and "decode per user [tok/s]" in lines[1]
    root = well_formed(e._repr_html_())
    assert len(root.findall(".//tbody/tr")) == 4
    assert display.estimate_rows(e)[3]["fits"] is False


# --- catalogue records ----------------------------------------------------------------------------


def test_every_record_renders():
    for record in (*gpusizer.gpus(), *gpusizer.systems(), *gpusizer.models()):
        summary = repr(record)
        assert summary.startswith(f"<{type(record).__name__} {record.id}") and "\n" not in summary
        assert record.id in str(record) and str(record.checked) in str(record)
        well_formed(record._repr_html_())


def test_gpu_sheet_has_units_and_linked_sources():
    g = gpusizer.gpu("h100")
    text = str(g)
    assert "3.35 TB/s" in text and "TFLOP/s" in text
    # issue 20: one way everywhere: the vendor's figure, then what the driver reports (79.22 GiB = 85.06 GB)
    memory = next(line for line in text.splitlines() if line.startswith("  memory  "))
    assert memory == "  memory            HBM3 80.00 GB listed; the driver reports 79.22 GiB (85.06 GB)"
    assert all(f"source: {s}" in text for s in g.source)
    links = [a.get("href") for a in well_formed(g._repr_html_()).iter("a")]
    assert "https://www.nvidia.com/en-us/data-center/h100/" in links


def test_model_and_system_summaries():
    assert repr(gpusizer.model("kimi-k2")) == "<Model kimi-k2: 1,026.41 B params, fp8, 131,072 tokens>"
    assert repr(gpusizer.system("gb200-nvl72")) == "<System gb200-nvl72: GB200 NVL72, 72 x gb200>"
    assert "384 routed (top 8)" in str(gpusizer.model("kimi-k2"))


# --- command line ---------------------------------------------------------------------------------


def _commands():
    parser = cli._parser()
    (subparsers,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return {"gpusizer": parser, **subparsers.choices}


@pytest.mark.parametrize("name", list(_commands()))
def test_every_command_help_ends_with_an_example(name):
    text = _commands()[name].format_help()
    assert "examples:\n  gpusizer" in text, (
        f"{name} --help has no example: pass **cli.help_options(name, examples) to add_parser"
    )


# --- sweeps and shortlists ------------------------------------------------------------------------


def test_sweep_shows_varying_axes_and_results():
    sweep = pytest.importorskip("gpusizer.sweeper")
    s = sweep.sweep(["llama-3.1-8b"], ["h100", "l40s"], context=[8192, 32768], concurrency=[1, 8])
    text = display.sweep_text(s, max_rows=3)
    lines = text.splitlines()
    assert lines[0].startswith("Sweep(8 rows") and "the first 3 shown" in lines[0]
    assert "gpu" in lines[1] and "TPOT [ms]" in lines[1] and "model" not in lines[1].split()  # one model: no column
    assert len(lines) == 2 + 3
    root = well_formed(display.sweep_html(s))
    assert len(root.findall(".//tbody/tr")) == 8


def test_shortlist_is_a_ranked_table_with_the_dropped_folded():
    from types import SimpleNamespace as Row

    rows = [Row(configuration="1 x h200-sxm, fp8", replicas=2, usd_per_million_tokens=0.5, usd_per_hour=7.0,
                max_rate=3.2, ttft=0.25, tpot=0.03, binding="tpot", joules_per_token=0.4)]
    dropped = (Row(gpu="l4", gpus=1, layout="tp", weights="bf16", reason="does not fit: <weights>"),)

    class Shortlist(list):
        model = "llama-3.1-70b"

    shortlist = Shortlist(rows)
    shortlist.dropped = dropped
    text = display.shortlist_text(shortlist)
    assert "cost [$/Mtok]" in text and "TTFT [ms]" in text and "250" in text and "1 dropped" in text
    root = well_formed(display.shortlist_html(shortlist))
    assert "does not fit: <weights>" in "".join(root.itertext())


def test_records_show_the_same_text_without_importing_display():
    # the renderers are registered by gpusizer.display; `import gpusizer` imports it on the first repr
    code = (
        "import sys, gpusizer\n"
        "g = gpusizer.gpu('h200')\n"
        "assert 'gpusizer.display' not in sys.modules\n"
        "print(repr(g)); print(str(gpusizer.model('llama-3.1-70b')).splitlines()[0])\n"
        "print(repr(gpusizer.estimate('llama-3.1-8b', 'h100')))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(gpusizer.__file__).parents[1]), "GPUSIZER_CACHE_DIR": ""}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    expected = [
        repr(gpusizer.gpu("h200")),
        str(gpusizer.model("llama-3.1-70b")).splitlines()[0],
        repr(gpusizer.estimate("llama-3.1-8b", "h100")),
    ]
    assert out.splitlines() == expected
    assert expected[0] == "<GPU h200-sxm: H200 SXM, 141.00 GB, 4.80 TB/s, 990 TFLOP/s bf16>"


def test_an_unregistered_class_keeps_its_plain_repr():
    class Plain(presentation.Presented):
        pass

    shown = repr(Plain())
    assert shown.startswith("<") and "Plain object at" in shown
    assert Plain()._repr_html_() is None


def test_records_import_neither_display_nor_hf_nor_architecture():
    import ast

    for module in (records, catalog):
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        names |= {f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert not {"gpusizer.display", "gpusizer.hf", "gpusizer.architecture"} & names, module.__name__
    assert not hasattr(records.Model, "from_hf_config")
