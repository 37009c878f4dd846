"""How records and results show themselves: a registry that the display layer fills from above.

Records hold data only: ``GPU.__repr__``, ``Estimate.__str__`` and the notebook ``_repr_html_`` call
:func:`render`, which looks the object's class up in this registry and returns ``None`` when nothing
is registered (the record then falls back to its plain pydantic or dataclass repr). The renderers
themselves live in ``gpusizer.display``, which calls :func:`register` for each class when it is
imported. This module sits at the bottom layer, next to ``units`` and ``checks``, and imports nothing
of gpusizer, so the bottom of the house never imports its top.

``import gpusizer`` installs, with :func:`add_loader`, a loader that imports ``gpusizer.display`` the
first time a record is shown: a record returned by ``gpusizer.gpu(...)`` prints the same text
whether or not the caller imported ``gpusizer.display``, and a command that shows nothing never
pays for importing it.

>>> class Point:
...     def __repr__(self) -> str:
...         return render("summary", self) or "Point(?)"
>>> repr(Point())
'Point(?)'
>>> register(Point, summary=lambda p: "<Point>", text=str, html=lambda p: "<b>Point</b>")
>>> repr(Point())
'<Point>'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

__all__ = ["Presented", "View", "add_loader", "register", "render"]

View = Literal["summary", "text", "html"]
"""What a renderer produces: ``summary`` for ``repr``, ``text`` for ``str``, ``html`` for notebooks."""

_RENDERERS: dict[str, dict[str, Callable[[Any], str]]] = {}
"""Qualified class name (``gpusizer.records.GPU``) -> view -> renderer."""
_LOADERS: list[Callable[[], object]] = []


def register(
    cls: type | str,
    *,
    summary: Callable[[Any], str],
    text: Callable[[Any], str],
    html: Callable[[Any], str],
) -> None:
    """Make ``summary``, ``text`` and ``html`` the renderings of ``cls`` and its subclasses.

    Parameters
    ----------
    cls : type or str
        Record or result class, or its qualified name (``"gpusizer.estimator.Estimate"``): a name
        lets the display layer register a class without importing its module.
    summary, text, html : callable
        Functions of one instance returning the one-line ``repr``, the ``str`` sheet and the HTML.
    """
    _RENDERERS[cls if isinstance(cls, str) else _name(cls)] = {"summary": summary, "text": text, "html": html}


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def add_loader(loader: Callable[[], object]) -> None:
    """Run ``loader`` (once) before the first lookup that finds no renderer.

    ``gpusizer/__init__.py`` adds one that imports ``gpusizer.display``, whose import registers the
    renderers of every record and result.
    """
    _LOADERS.append(loader)


def _lookup(cls: type, view: View) -> Callable[[Any], str] | None:
    for base in cls.__mro__:
        views = _RENDERERS.get(_name(base))
        if views is not None:
            return views[view]
    return None


def render(view: View, obj: Any) -> str | None:
    """The ``view`` rendering of ``obj``, or ``None`` when no renderer is registered for its class.

    Pending loaders run first when the class has no renderer yet.
    """
    renderer = _lookup(type(obj), view)
    while renderer is None and _LOADERS:
        _LOADERS.pop(0)()
        renderer = _lookup(type(obj), view)
    return None if renderer is None else renderer(obj)


class Presented:
    """Mixin giving a class ``repr``, ``str`` and ``_repr_html_`` from the registry.

    Put it first among the bases (``class GPU(Presented, Record)``) and, on a dataclass, pass
    ``repr=False``. A class with no registered renderer keeps the repr and str of its other bases.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        shown = render("summary", self)
        return super().__repr__() if shown is None else shown

    def __str__(self) -> str:
        shown = render("text", self)
        return super().__str__() if shown is None else shown

    def _repr_html_(self) -> str | None:
        """HTML for notebooks (``gpusizer.display`` registers it); ``None`` when none is registered."""
        return render("html", self)
