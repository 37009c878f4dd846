"""The page of ``gpusizer serve`` in headless Chromium (Debian's, driven by Playwright; issue 22).

The README's flagship question is typed into the form; the verdict and the numbers shown must be the
library's. Skipped without a chromium binary, except when GPUSIZER_REQUIRE_BROWSER is set
(.ci/run sets it once chromium is installed), where it fails instead.
"""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

import gpusizer

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def _needed(what: str) -> None:
    if os.environ.get("GPUSIZER_REQUIRE_BROWSER"):
        pytest.fail(f"{what} is missing although GPUSIZER_REQUIRE_BROWSER is set")
    pytest.skip(f"{what} is missing: apt-get install chromium, pip install -e '.[test]'")


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _needed("playwright")
    if CHROMIUM is None:
        _needed("a chromium binary (/usr/bin/chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def server():
    """``gpusizer serve`` on a free localhost port, in a process of its own."""
    pytest.importorskip("uvicorn")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(Path(gpusizer.__file__).parents[1])}
    process = subprocess.Popen([sys.executable, "-m", "gpusizer.cli", "serve", "--port", str(port)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(url + "/api/engines", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("gpusizer serve did not answer within 30 s")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def _answered(page):
    page.wait_for_selector("body[data-state=answered]", timeout=60_000)


def test_the_flagship_question_in_the_page_shows_the_library_numbers(browser, server, tmp_path):
    page = browser.new_page(viewport={"width": 1280, "height": 1400})
    page.goto(server + "/")
    page.wait_for_selector("body[data-state=ready]", timeout=30_000)
    page.select_option("#model", "llama-3.1-70b")
    page.select_option("#gpu", "h200-sxm")
    page.select_option("#weights", "fp8")
    page.select_option("#kv_cache", "fp8")
    page.fill("#context", "32k")
    page.fill("#concurrency", "16")
    page.select_option("#engine", "vllm")
    page.click("#ask")
    _answered(page)
    assert page.inner_text("#error") == "" and page.is_hidden("#error")
    e = gpusizer.estimate("llama-3.1-70b", "h200", weights="fp8", kv_cache="fp8", context=32768, concurrency=16)
    assert page.inner_text("#verdict") == ("fits" if e.fits else "does not fit") == "does not fit"
    assert page.inner_text("#headroom") == f"{-e.memory.headroom_bytes / 1e9:.1f} GB short per GPU"
    shown = {key: page.inner_text(f"#{key}") for key in
             ("decode-expected", "decode-band", "decode-ceiling", "decode-aggregate", "ttft", "max-concurrency")}
    d = e.decode
    assert shown == {
        "decode-expected": f"{d.expected_tokens_per_second:.1f}",
        "decode-band": f"{d.band[0]:.1f}–{d.band[1]:.1f}",
        "decode-ceiling": f"{d.ceiling_tokens_per_second:.1f}",
        "decode-aggregate": f"{d.expected_aggregate_tokens_per_second:.0f}",
        "ttft": f"{e.prefill.ttft_seconds_expected:.2f}",
        "max-concurrency": f"{e.max_concurrency}",
    }
    assert float(page.get_attribute("#decode-expected", "data-value")) == d.expected_tokens_per_second
    for part, value in (("weights", e.memory.weights_bytes), ("kv", e.memory.kv_cache_bytes),
                        ("capacity", e.memory.capacity_bytes)):
        assert page.get_attribute(f"#memory-{part}", "data-value") == str(round(value))
    assert e.memory.kv_cache_bytes == 80 * 2**30  # 163,840 B/token (fp8) x 32,768 x 16
    assert page.inner_text("#command") == ("gpusizer fit llama-3.1-70b h200-sxm --weights=fp8 --kv-cache=fp8 "
                                           "--context=32768 --concurrency=16 --json")
    page.wait_for_selector("#shortlist tbody tr", timeout=60_000)
    assert page.locator("#shortlist tbody tr").count() >= 1
    page.screenshot(path=str(tmp_path / "flagship.png"), full_page=True)
    assert (tmp_path / "flagship.png").stat().st_size > 10_000
    link = page.get_attribute("#permalink", "href")
    query = parse_qs(urlparse(link).query)
    assert query["model"] == ["llama-3.1-70b"] and query["context"] == ["32k"] and query["concurrency"] == ["16"]
    again = browser.new_page()  # the permalink asks the same question on load
    again.goto(server + link)
    _answered(again)
    assert again.inner_text("#verdict") == "does not fit"
    assert again.inner_text("#decode-expected") == shown["decode-expected"]
    assert again.input_value("#kv_cache") == "fp8"


def test_an_unknown_model_in_a_permalink_shows_the_suggestions(browser, server):
    page = browser.new_page()
    page.goto(server + "/?model=llama-70b&gpu=h200")
    _answered(page)
    assert "model: unknown model 'llama-70b'" in page.inner_text("#error")
    assert "llama-3.1-70b" in page.inner_text("#error")
