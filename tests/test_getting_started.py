"""Issue 20: the newcomer transcript of docs/getting-started.md and the README's example are real output.

Every ```text block that starts with ``$ gpusizer ...`` is run through ``gpusizer.cli.main`` and its
stdout compared, line for line, with the lines shown under the command; the ```pycon block runs as a
doctest. The README's "What it answers" block is checked the same way.
"""

import doctest
import re
import shlex
from pathlib import Path

import pytest

from gpusizer.cli import main

ROOT = Path(__file__).resolve().parents[1]
GETTING_STARTED = ROOT / "docs" / "getting-started.md"


def transcripts(path):
    """``(command line, expected output)`` of each ```text block of ``path`` that starts with ``$ gpusizer``."""
    blocks = re.findall(r"```text\n(\$ gpusizer [^\n]*)\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)
    return [(command[len("$ gpusizer "):], output.rstrip("\n")) for command, output in blocks]


CASES = [(path.name, *case) for path in (GETTING_STARTED, ROOT / "README.md") for case in transcripts(path)]


def test_the_transcript_covers_the_four_questions():
    commands = [command for name, command, _ in CASES if name == "getting-started.md"]
    assert any(c.startswith("fit llama-3.1-70b h200 --weights fp8") for c in commands)  # the README's question
    assert any("rtx-4090" in c for c in commands)  # a consumer card
    assert any("gb300-nvl72" in c for c in commands)  # a rack
    assert 'update={' in GETTING_STARTED.read_text(encoding="utf-8")  # a custom GPU (the pycon block)
    assert any(name == "README.md" for name, _, _ in CASES)


@pytest.mark.parametrize(("page", "command", "expected"), CASES, ids=[f"{p}: {c}" for p, c, _ in CASES])
def test_each_command_prints_what_the_page_shows(capsys, page, command, expected):
    assert main(shlex.split(command)) == 0
    assert capsys.readouterr().out.rstrip("\n") == expected


def test_the_python_transcript_runs_as_shown():
    text = GETTING_STARTED.read_text(encoding="utf-8")
    blocks = re.findall(r"```pycon\n(.*?)```", text, flags=re.S)
    assert blocks
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for i, block in enumerate(blocks):
        runner.run(parser.get_doctest(block, {}, f"getting-started pycon {i}", str(GETTING_STARTED), 0))
    assert runner.summarize(verbose=False).failed == 0
