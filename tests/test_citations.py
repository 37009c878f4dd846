"""Citations resolve: every file a citation in data/ or docs/ names exists in the repository.

A citation may name a public primary source (a URL, a DOI or arXiv id, ``owner/repo:path`` for a file
of a public repository, a datasheet title) or a file of this repository by its path from the root
(``data/calibration/measurements.csv``, ``docs/methods.md#default-constants``). A repository path must
exist and its ``#anchor`` must be a heading of that page; a bare ``something.md``, ``.csv`` or ``.toml``
names no file (``methods.md 1.3`` was the old way of citing a method page the repository did not have).
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
DOCS = ROOT / "docs"

#: Fields of the data files that cite sources.
FIELDS = {"source", "notes", "reference", "basis"}
#: The repository's own kinds of document: a bare name of one of these must be a repository file.
OWN_KINDS = {"md", "csv", "toml"}
TOP = ("data", "docs", "src", "tests", "tools", "examples", "benchmarks")
#: The vendored model configs move from tests/data/ to data/ (issue 13 item 8): either path resolves.

PUBLIC = re.compile(r"(?:https?://|doi:|arxiv:)\S+|\b[\w.-]+/[\w.-]+:[\w./@+-]+(?:#[\w.-]+)?", re.IGNORECASE)
PATH = re.compile(
    r"(?<![\w/.:~-])((?:[\w.-]+/)*[\w-][\w.-]*\.(md|csv|toml|json|py|ya?ml|rst|txt|cuh|cu|cc|h|png|pdf))"
    r"(?:#([\w-]*))?(?![\w/])"
)
REPO_PATH = re.compile(r"(?<![\w/.:~-])((?:" + "|".join(TOP) + r")/[\w./*-]*[\w/*])(?:#([\w-]*))?")
OLD_STYLE = re.compile(r"methods (?:notes|reference)\b", re.IGNORECASE)


def slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension gives a heading (its default ``slugify``)."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    """Anchors of the headings of a Markdown page (outside fenced code)."""
    found, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)):
            found.add(slug(m.group(1)))
    return found


def _exists(path: str) -> bool:
    return bool(list(ROOT.glob(path))) if "*" in path else (ROOT / path).exists()


def problems(text: str, *, bare: bool = True) -> list[str]:
    """What in one citation names no repository file (or anchor) and no public source.

    ``bare=False`` (documentation prose, where ``grid.csv`` or ``./my-finetune/config.json`` is a
    user's file) checks only paths from the repository root and mentions of the method page.
    """
    found = []
    if OLD_STYLE.search(text):
        found.append(f"{OLD_STYLE.search(text).group(0)!r}: cite docs/methods.md#<section> or the primary source")
    rest = PUBLIC.sub(" ", text.replace("\\_", "_"))
    for m in PATH.finditer(rest):
        path, kind, anchor = m.groups()
        if "/" not in path and kind not in OWN_KINDS:
            continue  # a file name of the public source the citation names (config.json, a .yaml)
        if bare or path.endswith("methods.md") or path.startswith(tuple(f"{d}/" for d in TOP)):
            found += _check(path, anchor)
    for m in REPO_PATH.finditer(rest):
        if not PATH.fullmatch(m.group(0)):
            found += _check(m.group(1).rstrip("/."), m.group(2))
    return found


def _check(path: str, anchor: str | None) -> list[str]:
    if not _exists(path):
        return [f"{path}: no such file in the repository"]
    if anchor and path.endswith(".md") and anchor not in anchors(ROOT / path):
        return [f"{path}#{anchor}: no such section"]
    return []


def _strings(value, key=None):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v, key)
    elif key in FIELDS and isinstance(value, str):
        yield value


def data_citations() -> list[tuple[str, str]]:
    """(file, text) of every citation field of the data files."""
    out = []
    for path in sorted(DATA.rglob("*.toml")):
        for text in _strings(tomllib.loads(path.read_text(encoding="utf-8"))):
            out.append((path.relative_to(ROOT).as_posix(), text))
    return out


def test_every_data_citation_resolves():
    bad = [f"{f}: {p}" for f, text in data_citations() for p in problems(text)]
    assert bad == [], "\n".join(bad)


def test_every_data_comment_citation_resolves():
    bad = []
    for path in sorted(DATA.rglob("*.toml")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("#") and "methods" in line:
                bad += [f"{path.name}:{n}: {p}" for p in problems(line)]
    assert bad == [], "\n".join(bad)


def _links(page: Path) -> list[tuple[str, str | None]]:
    """(target, anchor) of the Markdown links of a page that point into the repository."""
    out = []
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        out.append((file, anchor or None))
    return out


@pytest.mark.parametrize("page", sorted(DOCS.rglob("*.md")), ids=lambda p: p.relative_to(DOCS).as_posix())
def test_every_docs_link_and_path_resolves(page):
    bad = []
    for file, anchor in _links(page):
        target = (page.parent / file).resolve() if file else page
        if not target.exists():
            bad.append(f"link {file}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            bad.append(f"link {file}#{anchor}: no such section")
    text = re.sub(r"\]\([^)\s]+\)", "]", page.read_text(encoding="utf-8"))
    bad += problems(text, bare=False)
    assert bad == [], "\n".join(bad)


@pytest.mark.parametrize("text", [
    "methods.md B: t_layer 15 us",
    "prior from */hbm/16bit: methods.md 1.3 and 2.3: eta_w 0.76",
    "see docs/methods.md#no-such-section",
    "measurements.csv m262",
    "the reference notes gpu-specs-notes.md 1.4",
    "gpusizer's methods notes (section B)",
])
def test_a_dangling_citation_is_caught(text):
    assert problems(text)


@pytest.mark.parametrize("text", [
    "(balls into bins, methods.md 1.4)",
    "(methods notes, A.5)",
    "see [methods](docs/methods.md#no-such-section)",
    "`data/calibration/no-such-file.csv`",
])
def test_a_dangling_citation_in_documentation_prose_is_caught(text):
    assert problems(text, bare=False)


@pytest.mark.parametrize("text", [
    "docs/methods.md#default-constants: t_layer 15 us",
    "data/calibration/measurements.csv m262",
    "NVIDIA/nccl:src/graph/tuning.cc hwLat[NVLINK][RING][LL]",
    "https://github.com/NVIDIA/nccl/issues/1161; arXiv:1909.08053",
    "Config: verbatim copy of the HF config.json",
    "data/model-configs/",
    "NVIDIA H100 Tensor Core GPU Datasheet",
])
def test_a_public_or_repository_citation_passes(text):
    assert problems(text) == []
