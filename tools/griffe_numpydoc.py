"""Griffe extension for the docs build: read gpusizer's numpydoc docstrings as Markdown renders them.

The docstrings follow numpydoc, whose prose is reStructuredText; mkdocstrings renders them as
Markdown. This extension, loaded by ``mkdocs.yml`` (``extensions``), changes nothing outside the
documentation and keeps every docstring's content:

* RST roles become code spans: ``:math:`M = N b``` shows as ``M = N b``, ``:term:`x``` as ``x``;
* a ``.. math::`` directive becomes a fenced block holding the formula;
* reference labels ``.. [1]`` become ``[1]`` and citations ``[1]_`` become ``[1]``;
* each name of a grouped parameter (``window, block_size : array_like, optional``) gets its own
  default from the signature (griffe gives every name of a group the first one's default).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:math|term|func|class|meth|attr|mod|obj|data|ref):`([^`]+)`")
_CITATION = re.compile(r"\[(\w+)\]_")
_LABEL = re.compile(r"^(\s*)\.\. \[(\w+)\]")


def _math_blocks(lines: list[str]) -> list[str]:
    """Replace each ``.. math::`` directive and its indented body by a fenced text block."""
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.lstrip()
        if not stripped.startswith(".. math::"):
            out.append(line)
            index += 1
            continue
        indent = line[: len(line) - len(stripped)]
        body = [stripped[len(".. math::"):].strip()]
        index += 1
        while index < len(lines) and (not lines[index].strip() or len(lines[index]) - len(lines[index].lstrip())
                                      > len(indent)):
            body.append(lines[index].strip())
            index += 1
        formula = [b for b in body if b]
        out += ["", f"{indent}```text", *(f"{indent}{b}" for b in formula), f"{indent}```", ""]
    return out


def markdown(text: str) -> str:
    """A numpydoc docstring with its reStructuredText constructs rewritten for Markdown."""
    text = _ROLE.sub(r"`\1`", text)
    text = _CITATION.sub(r"[\1]", text)
    lines = [_LABEL.sub(r"\1[\2]", line) for line in text.splitlines()]
    return "\n".join(_math_blocks(lines))


class NumpydocMarkdown(griffe.Extension):
    """Rewrite RST constructs of every docstring, and fix the defaults of grouped parameters."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if obj.docstring is None:
            return
        obj.docstring.value = markdown(obj.docstring.value)
        if isinstance(obj, griffe.Function):
            _own_defaults(obj)


def _own_defaults(func: griffe.Function) -> None:
    for section in func.docstring.parsed if func.docstring else ():
        if section.kind is griffe.DocstringSectionKind.parameters:
            for parameter in section.value:
                if parameter.name in func.parameters:
                    parameter.value = func.parameters[parameter.name].default
