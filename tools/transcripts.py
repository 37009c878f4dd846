"""Rewrite the outputs of the ``$ gpusizer ...`` transcripts in docs/getting-started.md and README.md.

Each ```text block that starts with ``$ gpusizer`` gets the command's current stdout under it, and each
```pycon block is run again as an interactive session, so the pages show real output after a change
moves a number; ``tests/test_getting_started.py`` checks them. Run ``python tools/transcripts.py`` and
review the diff.
"""

import contextlib
import doctest
import io
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gpusizer.cli import main  # noqa: E402

PAGES = (ROOT / "docs" / "getting-started.md", ROOT / "README.md")
BLOCK = re.compile(r"```text\n(\$ gpusizer [^\n]*)\n(.*?)```", flags=re.S)
PYCON = re.compile(r"```pycon\n(.*?)```", flags=re.S)


def rerun(match: re.Match[str]) -> str:
    """The block of one transcript with the command's current output."""
    command = match.group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(shlex.split(command[len("$ gpusizer "):]))
    return f"```text\n{command}\n{out.getvalue().rstrip()}\n```"


def rerun_pycon(match: re.Match[str]) -> str:
    """The block of one ``pycon`` session with each statement's current output (as the interpreter echoes it)."""
    namespace: dict[str, object] = {}
    lines = []
    for example in doctest.DocTestParser().get_examples(match.group(1)):
        source = example.source.rstrip("\n").split("\n")
        lines += [f">>> {source[0]}"] + [f"... {line}" for line in source[1:]]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(example.source, "<pycon>", "single"), namespace)
        shown = out.getvalue().rstrip("\n")
        lines += [line if line.strip() else "<BLANKLINE>" for line in shown.split("\n")] if shown else []
    return "```pycon\n" + "\n".join(lines) + "\n```"


if __name__ == "__main__":
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        page.write_text(PYCON.sub(rerun_pycon, BLOCK.sub(rerun, text)), encoding="utf-8")
        print(page.relative_to(ROOT))
