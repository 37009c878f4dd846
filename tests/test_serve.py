"""``gpusizer serve``'s API (issue 22): the JSON of the command line's ``--json``, validated bodies, limits."""

import csv
import io
import json
import re
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient

from gpusizer import catalog
from gpusizer.cli import main
from gpusizer.web import questions
from gpusizer.web.app import LOOPBACK_HOSTS, create_app
from gpusizer.web.questions import Limits

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ROOT = Path(__file__).resolve().parents[1]
FLAGSHIP = {"model": "llama-3.1-70b", "gpu": "h200", "weights": "fp8", "kv_cache": "fp8", "context": "32k",
            "concurrency": 16}
FLAGSHIP_ARGV = ["fit", "llama-3.1-70b", "h200", "--weights", "fp8", "--kv-cache", "fp8", "--context", "32k",
                 "--concurrency", "16", "--json"]
SHORTLIST = {"model": "llama-3.1-8b", "rate": 4, "ttft_p95": "500ms", "tpot_p95": "50ms", "gpus": ["h100", "l40s"],
             "max_gpus": 2}
SHORTLIST_ARGV = ["shortlist", "llama-3.1-8b", "--rate", "4", "--ttft-p95", "500ms", "--tpot-p95", "50ms",
                  "--gpus", "h100,l40s", "--max-gpus", "2", "--json"]


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app()) as c:
        yield c


def cli_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_fit_is_the_cli_json_of_the_same_question(client, capsys):
    r = client.post("/api/fit", json=FLAGSHIP)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    data = r.json()
    assert data == cli_json(capsys, FLAGSHIP_ARGV)
    # 80 layers x 8 KV heads x 128 x (K, V) x 1 byte (fp8) = 163,840 B/token; x 32,768 tokens x 16 sequences
    assert data["memory"]["kv_cache_bytes"] == 163_840 * 32_768 * 16 == 80 * 2**30
    assert data["fits"] is False and data["gpu"] == "h200-sxm"
    assert client.post("/api/estimate", json=FLAGSHIP).json() == data


def test_the_command_header_asks_the_same_question(client, capsys):
    r = client.post("/api/fit", json=FLAGSHIP)
    command = r.headers["x-gpusizer-command"]
    assert command == ("gpusizer fit llama-3.1-70b h200 --weights=fp8 --kv-cache=fp8 --context=32768 "
                       "--concurrency=16 --json")
    assert cli_json(capsys, shlex.split(command)[1:]) == r.json()


def test_layouts_and_shortlist_are_the_cli_json(client, capsys):
    question = {"model": "llama-3.1-70b", "gpu": "h100", "gpus": 4, "weights": "fp8"}
    assert client.post("/api/layouts", json=question).json() == cli_json(
        capsys, ["layouts", "llama-3.1-70b", "h100", "--gpus", "4", "--weights", "fp8", "--json"])
    r = client.post("/api/shortlist", json=SHORTLIST)
    assert r.status_code == 200
    assert r.json() == cli_json(capsys, SHORTLIST_ARGV)


def test_sweep_streams_the_cli_csv_rows_as_ndjson(client, capsys):
    question = {"models": ["llama-3.1-8b", "qwen3-32b"], "gpus": ["h100", "rtx-4090"], "context": ["4k", 32768],
                "concurrency": [1, 8]}
    argv = ["sweep", "--models", "llama-3.1-8b,qwen3-32b", "--gpus", "h100,rtx-4090", "--context", "4k,32k",
            "--concurrency", "1,8"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    expected = list(csv.DictReader(io.StringIO(text)))
    r = client.post("/api/sweep", json=question)
    assert r.status_code == 200 and r.headers["content-type"] == "application/x-ndjson"
    rows = [json.loads(line) for line in r.text.splitlines()]
    assert len(rows) == len(expected) == 2 * 2 * 2 * 2
    for row, want in zip(rows, expected, strict=True):
        assert list(row) == list(want)
        for key, value in row.items():  # the same value, typed: "" is null, numbers numbers
            assert ("" if value is None else str(value)) == want[key], key
    assert isinstance(rows[0]["weights_bytes"], int) and isinstance(rows[0]["fits"], bool)
    csv_answer = client.post("/api/sweep", json={**question, "format": "csv"})
    assert csv_answer.headers["content-type"].startswith("text/csv") and csv_answer.text == text


@pytest.mark.parametrize("body, field", [
    ({**FLAGSHIP, "context": "lots"}, "context"),
    ({**FLAGSHIP, "concurrency": 0}, "concurrency"),
    ({**FLAGSHIP, "kv_cache": "q4_0"}, "kv_cache"),
    ({**FLAGSHIP, "engine": "vllm2"}, "engine"),
    ({**FLAGSHIP, "colour": "red"}, "colour"),
    ({k: v for k, v in FLAGSHIP.items() if k != "gpu"}, "gpu"),
    ({**FLAGSHIP, "gpus": 3, "layout": "tp3"}, "layout"),  # refused by the command: 64 heads, no tp3
    ({**FLAGSHIP, "gpus": 2, "layout": "tp4"}, "layout"),  # refused by the library: tp4 is not 2 GPUs
])
def test_an_invalid_field_is_a_422_naming_it(client, body, field):
    r = client.post("/api/fit", json=body)
    assert r.status_code == 422, r.text
    assert [d["loc"][-1] for d in r.json()["detail"]] == [field]


def test_a_context_past_the_model_maximum_names_the_field(client):
    r = client.post("/api/fit", json={"model": "llama-3.1-8b", "gpu": "h100", "context": "1M"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "context"]
    assert "131,072" in r.json()["detail"][0]["msg"]  # llama-3.1-8b's maximum context


def test_unknown_ids_come_with_the_catalogue_suggestions(client):
    r = client.post("/api/fit", json={**FLAGSHIP, "model": "llama-70b"})
    (detail,) = r.json()["detail"]
    assert r.status_code == 422 and detail["loc"] == ["body", "model"] and detail["type"] == "unknown_id"
    assert detail["suggestions"] == catalog.closest("llama-70b", [m.id for m in catalog.models()])
    assert "llama-3.1-70b" in detail["suggestions"]
    r = client.post("/api/fit", json={**FLAGSHIP, "gpu": "h2000"})
    assert r.json()["detail"][0]["loc"] == ["body", "gpu"] and "h200-sxm" in r.json()["detail"][0]["suggestions"]
    r = client.get("/api/models/llama-70b")
    assert r.status_code == 404 and "llama-3.1-70b" in r.json()["detail"][0]["suggestions"]
    assert client.get("/api/engines/vlm").json()["detail"][0]["suggestions"][0] == "vllm"


def test_catalogue_listing_and_lookup_are_the_cli_rows(client, capsys):
    for name in ("gpus", "systems", "models"):
        assert client.get(f"/api/{name}").json() == cli_json(capsys, [name, "--json"])
    assert client.get("/api/gpus/h200").json()["id"] == "h200-sxm"  # an alias finds its GPU
    assert client.get("/api/models/llama-3.1-70b").json() == next(
        row for row in cli_json(capsys, ["models", "--json"]) if row["id"] == "llama-3.1-70b")
    assert client.get("/api/systems/hgx-h200-8x").json()["gpu_count"] == 8
    vllm = client.get("/api/engines/vllm").json()
    assert vllm["memory_fraction"] == 0.9 and vllm["block_size"] == 16  # vLLM's defaults
    assert [e["name"] for e in client.get("/api/engines").json()] == ["vllm", "sglang", "trtllm", "trtllm-engine",
                                                                       "llama.cpp"]
    trt = client.get("/api/engines/trtllm-cpp").json()  # an alias of TensorRT-LLM's C++ runtime
    assert (trt["name"], trt["memory_fraction"], trt["activation"]) == ("trtllm-engine", 0.9, "tensorrt")


def test_a_pasted_config_is_the_cli_json_of_that_file(client, capsys, tmp_path):
    config = json.loads((ROOT / "data" / "model-configs" / "llama-3.1-8b.json").read_text())["config"]
    folder = tmp_path / "my-llama"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    r = client.post("/api/fit", json={"config": config, "config_name": "my-llama", "gpu": "l40s", "context": 4096})
    assert r.status_code == 200, r.text
    expected = cli_json(capsys, ["fit", str(folder), "l40s", "--context", "4096", "--json"])
    assert r.json() == expected and r.json()["model"] == "my-llama"
    assert r.headers["x-gpusizer-command"].startswith("gpusizer fit ./my-llama/config.json l40s")
    bad = client.post("/api/fit", json={"config": {"model_type": "llama"}, "gpu": "l40s"})
    assert bad.status_code == 422 and "gpusizer-serve-" not in bad.text  # the temporary path is not shown
    both = client.post("/api/fit", json={"config": config, "model": "llama-3.1-8b", "gpu": "l40s"})
    assert both.status_code == 422 and "exactly one of model and config" in both.text


def test_an_oversize_body_is_a_413(capsys):
    with TestClient(create_app(Limits(body_bytes=2_000))) as small:
        padded = {**FLAGSHIP, "config_name": "x" * 5_000}
        assert small.post("/api/fit", json=padded).status_code == 413
        chunks = (b" " * 1_000 for _ in range(5))  # no content-length: counted as it arrives
        r = small.post("/api/fit", content=chunks, headers={"content-type": "application/json"})
        assert r.status_code == 413 and r.json()["detail"][0]["type"] == "body_too_large"
        assert small.post("/api/fit", json=FLAGSHIP).status_code == 200


def test_work_limits_refuse_a_large_sweep_or_shortlist_naming_the_field():
    with TestClient(create_app(Limits(sweep_rows=100, shortlist_candidates=10, simulate=1, gpus=8))) as small:
        big = {"models": ["llama-3.1-8b"], "gpus": ["h100", "l40s"], "context": [1024 * k for k in range(1, 8)],
               "concurrency": [1, 2, 4, 8]}  # 1 x 2 x 7 x 4 = 56 rows: within 100
        assert small.post("/api/sweep", json=big).status_code == 200
        r = small.post("/api/sweep", json={**big, "gpu_count": [1, 2]})  # 112 rows > 100
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "models"]
        r = small.post("/api/shortlist", json={**SHORTLIST, "gpus": ["h100", "l40s", "h200"],
                                                          "simulate": 1})  # 3 x 2 x 3 = 18 candidates
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "gpus"]
        r = small.post("/api/shortlist", json={**SHORTLIST, "simulate": 2})
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "simulate"]
        r = small.post("/api/fit", json={**FLAGSHIP, "gpus": 16})
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "gpus"]
    with TestClient(create_app(Limits(seconds=0.01))) as hurried:  # a shortlist takes about a second
        r = hurried.post("/api/shortlist", json={**SHORTLIST, "gpus": None, "max_gpus": 8})
        assert r.status_code == 503 and r.json()["detail"][0]["type"] == "timeout"


def test_concurrent_requests_get_identical_answers(client):
    questions = [("/api/fit", FLAGSHIP), ("/api/fit", {**FLAGSHIP, "gpu": "h100", "gpus": 2}),
                 ("/api/layouts", {"model": "qwen3-32b", "gpu": "l40s", "gpus": 2}),
                 ("/api/fit", {"model": "qwen3-30b-a3b", "gpu": "rtx-4090", "engine": "llama.cpp",
                               "weights": "q4_k_m"})]
    alone = [client.post(url, json=body).text for url, body in questions]
    answers: list[list[str]] = [[] for _ in range(8)]

    def ask(slot):
        for _ in range(3):
            answers[slot].append([client.post(url, json=body).text for url, body in questions])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(round_ == alone for slot in answers for round_ in slot) and sum(map(len, answers)) == 24


def test_pages_docs_and_security_headers(client):
    page = client.get("/")
    assert page.status_code == 200 and "<form id=\"question\">" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert "http" not in page.text.replace("http-equiv", "")  # nothing loaded from elsewhere
    for name in ("app.js", "style.css", "docs.js"):
        assert client.get(f"/static/{name}").status_code == 200
    assert client.get("/static/../questions.py").status_code == 404
    assert client.get("/static/questions.py").status_code == 404
    spec = client.get("/openapi.json").json()
    assert {"/api/fit", "/api/layouts", "/api/shortlist", "/api/sweep", "/api/gpus/{name}"} <= set(spec["paths"])
    assert "kv_cache" in spec["components"]["schemas"]["FitQuestion"]["properties"]
    assert "/openapi.json" in client.get("/docs").text


def test_a_loopback_server_answers_loopback_host_names_only():
    app = create_app(hosts=LOOPBACK_HOSTS)
    with TestClient(app, base_url="http://127.0.0.1:8000") as local:
        assert local.get("/api/engines").status_code == 200
    with TestClient(app, base_url="http://localhost") as local:
        assert local.get("/api/engines").status_code == 200
    with TestClient(app, base_url="http://attacker.example:8000") as rebound:  # DNS rebinding
        assert rebound.get("/api/engines").status_code == 400


def test_a_file_named_like_the_model_in_the_working_folder_is_not_read(client, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "llama-3.1-8b").write_text("{}")
    r = client.post("/api/fit", json={"model": "llama-3.1-8b", "gpu": "h100"})
    assert r.status_code == 500 and "working folder" in r.json()["detail"][0]["msg"]


def test_serve_without_the_extra_says_so_in_one_line(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "fastapi", None)
    assert main(["serve"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'gpusizer[serve]'" in err


def test_serve_refuses_a_public_address_without_the_flag(capsys):
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    assert "--allow-remote" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--port", "70000"])
    assert exit_.value.code == 2 and "--port: must be from 1 to 65535" in capsys.readouterr().err


def test_import_gpusizer_and_the_parser_do_not_import_fastapi():
    code = ("import sys, gpusizer, gpusizer.cli\ngpusizer.cli.parser()\n"
            "print(sorted(m for m in ('fastapi', 'uvicorn', 'starlette', 'gpusizer.web.app') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "src")}).stdout
    assert out.strip() == "[]"


def test_the_page_files_ship_in_the_package():
    from importlib import resources

    from gpusizer.web.app import STATIC

    folder = resources.files("gpusizer.web").joinpath("static")
    assert all(folder.joinpath(name).is_file() for name in STATIC)
    page = folder.joinpath("index.html").read_text() + folder.joinpath("docs.html").read_text()
    assert set(re.findall(r"/static/([\w.]+)", page)) <= set(STATIC)


@settings(max_examples=15, deadline=None)
@given(model=st.sampled_from(["llama-3.1-8b", "qwen3-30b-a3b", "gemma-3-27b"]),
       gpu=st.sampled_from(["h100", "rtx-4090", "mi300x", "hgx-h200-8x"]),
       context=st.integers(1, 131_072), concurrency=st.integers(1, 512),
       kv_cache=st.sampled_from([None, "fp8", "bf16"]))
def test_any_fit_question_is_answered_as_the_command_line_answers_it(model, gpu, context, concurrency, kv_cache):
    # the invariant of the API: its JSON is the command's --json for the same flags, whatever they are
    body = {"model": model, "gpu": gpu, "context": context, "concurrency": concurrency, "kv_cache": kv_cache,
            "allow_beyond_max_context": True}
    with TestClient(create_app()) as c:
        r = c.post("/api/fit", json=body)
    argv = ["fit", model, gpu, "--context", str(context), "--concurrency", str(concurrency),
            "--allow-beyond-max-context", "--json", *(["--kv-cache", kv_cache] if kv_cache else [])]
    assert r.status_code == 200, r.text
    assert r.json() == json.loads(questions.run(argv))


def test_more_fit_flags_under_options_are_the_cli_json(client, capsys):
    options = {"speculative": "eagle", "prefix_cache": 0.6, "shared_prefix": "4k", "lora": "4:r16"}
    r = client.post("/api/fit", json={"model": "llama-3.1-8b", "gpu": "h100", "concurrency": 8, "options": options})
    assert r.status_code == 200, r.text
    argv = ["fit", "llama-3.1-8b", "h100", "--concurrency", "8", "--speculative", "eagle", "--prefix-cache", "0.6",
            "--shared-prefix", "4k", "--lora", "4:r16", "--json"]
    assert r.json() == cli_json(capsys, argv) and {"speculation", "prefix_cache", "lora"} <= set(r.json())


@pytest.mark.parametrize("options, says", [
    ({"speculative": "eagle2"}, "options.speculative: one of draft, eagle, mtp"),
    ({"no_kv_offload": "yes"}, "options.no_kv_offload: true or false"),
    ({"gpu_file": "/etc/passwd"}, "no flag 'gpu_file'"),  # no flag that reads a file is offered
    ({"calibration": "my.toml"}, "no flag 'calibration'"),
])
def test_an_invalid_option_is_a_422_naming_it(client, options, says):
    r = client.post("/api/fit", json={**FLAGSHIP, "options": options})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "options"]
    assert says in r.json()["detail"][0]["msg"]
