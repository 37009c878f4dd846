"""``gpusizer serve``: the command line's answers over HTTP on localhost, and a web page (docs/serve.md).

    gpusizer serve                       # http://127.0.0.1:8000
    gpusizer serve --port 8080

Needs the optional extra ``gpusizer[serve]`` (FastAPI and uvicorn); without it the command says so in one
line and exits 1. A host other than a loopback address needs ``--allow-remote``. Argument parsing only:
the app is ``gpusizer.web.app``.
"""

from __future__ import annotations

import argparse
from typing import Any

from gpusizer.commands import common

__all__ = ["register"]

EXAMPLES = "gpusizer serve\ngpusizer serve --port 8080\ngpusizer serve --host 0.0.0.0 --allow-remote"

#: The one line ``gpusizer serve`` prints when the extra is missing.
MISSING = "gpusizer serve needs the serve extra: pip install 'gpusizer[serve]' (FastAPI and uvicorn)"


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be from 1 to 65535, got {text!r}")
    return value


def register(commands: Any) -> None:
    """Add the ``serve`` subcommand to ``gpusizer``'s subparsers."""
    parser = commands.add_parser(
        "serve", help="answer fit, layouts, shortlist, sweep and the catalogue over HTTP, with a web page",
        description="Serve the command line's --json answers over HTTP (OpenAPI at /docs) and a web page at /. "
        "Nothing is kept between requests; localhost only unless --allow-remote.",
        **common.help_options(EXAMPLES),
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=8000, help="port to listen on (default 8000)")
    parser.add_argument("--allow-remote", action="store_true",
                        help="accept a --host other than a loopback address (0.0.0.0 answers every network)")
    parser.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> str:
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise common.CommandError(MISSING, common.ENVIRONMENT) from None
    from gpusizer.web import app

    if not app.is_loopback(args.host) and not args.allow_remote:
        raise common.CommandError(f"--host {args.host}: not a loopback address; the server has no authentication, "
                                  "so pass --allow-remote to answer other machines")
    app.serve(args.host, args.port)
    return "gpusizer serve: stopped"
