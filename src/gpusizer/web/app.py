"""The ``gpusizer serve`` app: the command line's ``--json`` answers over HTTP, and the page in ``static/``.

Each ``POST /api/<command>`` takes a question (``gpusizer.web.questions``), runs the command's own handler
on the command line it stands for and answers its ``--json`` text unchanged; the header
``X-Gpusizer-Command`` is that command line. Nothing is kept between requests, nothing from a request is
executed or read from disk (a pasted config.json is written to a temporary folder of its own and read
back as JSON). Needs the optional extra ``gpusizer[serve]`` (FastAPI, uvicorn).
"""

from __future__ import annotations

import csv
import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterator
from importlib import resources
from typing import Any

import anyio
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse

from gpusizer import catalog, engines, precision
from gpusizer.web import questions
from gpusizer.web.questions import (
    LIMITS,
    FitQuestion,
    LayoutsQuestion,
    Limits,
    Question,
    Refused,
    ShortlistQuestion,
    SweepQuestion,
)

__all__ = ["LOOPBACK_HOSTS", "create_app", "is_loopback", "serve"]

#: Host names a server bound to a loopback address answers (a guard against DNS rebinding).
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")

#: Files of the page, served from ``gpusizer/web/static`` (nothing else under /static is served).
STATIC = {"app.js": "text/javascript", "style.css": "text/css", "docs.js": "text/javascript",
          "index.html": "text/html", "docs.html": "text/html"}

#: Headers of every answer: the page loads nothing from elsewhere and runs no inline script.
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
                                 b"base-uri 'none'; form-action 'self'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback address (``127.0.0.1``, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _Guard:
    """ASGI middleware: refuse a body over ``limit`` bytes (413) before the app reads it, refuse a Host
    header outside ``hosts`` (400; None: any), and add ``SECURITY_HEADERS`` to every answer."""

    def __init__(self, app: Any, limit: int, hosts: tuple[str, ...] | None) -> None:
        self.app, self.limit, self.hosts = app, limit, hosts

    async def __call__(self, scope: Any, receive: Callable[[], Awaitable[Any]], send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        host = _host(headers.get(b"host", b"").decode("latin-1"))
        if self.hosts is not None and host.lower() not in self.hosts:
            await _plain(send, 400, {"detail": [{"loc": ["header", "host"], "msg": f"unexpected host {host!r}",
                                                 "type": "host"}]})
            return
        body, more = b"", True
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            more = False
            body = b"x" * (self.limit + 1)
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False) and len(body) <= self.limit
        if len(body) > self.limit:
            await _plain(send, 413, {"detail": [{"loc": ["body"], "msg": f"request body over {self.limit:,} bytes",
                                                 "type": "body_too_large"}]})
            return
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def secured(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, replay, secured)


def _host(header: str) -> str:
    """The name of a Host header without its port: ``127.0.0.1:8000`` -> ``127.0.0.1``, ``[::1]:80`` -> ``[::1]``."""
    if header.endswith("]") or (header.count(":") != 1 and not header.startswith("[")):
        return header
    return header.rpartition(":")[0]


async def _plain(send: Any, status: int, data: Any) -> None:
    body = json.dumps(data).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})


def _error(status: int, loc: list[Any], message: str, kind: str, suggestions: list[str] | None = None) -> JSONResponse:
    entry: dict[str, Any] = {"loc": loc, "msg": message, "type": kind}
    if suggestions is not None:
        entry["suggestions"] = suggestions
    return JSONResponse({"detail": [entry]}, status_code=status)


def _typed(text: str) -> Any:
    """A CSV field of ``gpusizer sweep`` as JSON: empty is null, ``True``/``False`` booleans, numbers numbers."""
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        return value if value == value and abs(value) != float("inf") else None
    return text


def _ndjson(text: str) -> Iterator[bytes]:
    rows = csv.reader(text.splitlines())
    header = next(rows)
    for row in rows:
        yield (json.dumps(dict(zip(header, map(_typed, row), strict=True)), allow_nan=False) + "\n").encode()


def _static(name: str) -> Response:
    data = resources.files("gpusizer.web").joinpath("static", name).read_bytes()
    return Response(data, media_type=STATIC[name])


def _rows(command: str) -> list[dict[str, Any]]:
    return list(json.loads(questions.run([command, "--json"])))


def _row(command: str, wanted: str) -> dict[str, Any]:
    for row in _rows(command):
        if row["id"] == wanted:
            return row
    raise HTTPException(404)


def _engine_row(profile: engines.EngineProfile) -> dict[str, Any]:
    data = profile.model_dump()
    return {key: round(value) if key.endswith("_bytes") else value for key, value in data.items()}


def create_app(limits: Limits = LIMITS, hosts: tuple[str, ...] | None = None) -> Any:
    """The ASGI app of ``gpusizer serve``: ``limits`` per request; ``hosts``: the Host names it answers
    (None: any; ``serve`` passes ``LOOPBACK_HOSTS`` on a loopback address)."""
    app = FastAPI(title="gpusizer", version=_version(), docs_url=None, redoc_url=None,
                  description="The answers of the gpusizer command line (`--json`) over HTTP. Every POST body is "
                  "the command's flags as fields; the header X-Gpusizer-Command is the command line.")

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        detail = []
        for e in error.errors():
            entry = {"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
            if e["type"] == "unknown_id":
                entry["suggestions"] = e.get("ctx", {}).get("suggestions", [])
            detail.append(entry)
        return JSONResponse({"detail": detail}, status_code=422)

    @app.exception_handler(Refused)
    async def refused(request: Request, error: Refused) -> JSONResponse:
        loc = ["body"] if error.field is None else ["body", error.field]
        return _error(error.status, loc, error.message, "refused", error.suggestions or None)

    async def answer(question: Question) -> Response:
        question.check(limits)
        try:
            with anyio.fail_after(limits.seconds):
                text = await anyio.to_thread.run_sync(questions.ask, question, abandon_on_cancel=True)
        except TimeoutError:
            return _error(503, ["body"], f"the answer took longer than {limits.seconds:g} s, this server's limit",
                          "timeout")
        headers = {"x-gpusizer-command": questions.command(question)}
        if isinstance(question, SweepQuestion):
            if question.format == "csv":
                return Response(text + "\n", media_type="text/csv", headers=headers)
            return StreamingResponse(_ndjson(text), media_type="application/x-ndjson", headers=headers)
        return Response(text, media_type="application/json", headers=headers)

    @app.post("/api/fit", summary="gpusizer fit MODEL GPU --json")
    async def fit(question: FitQuestion) -> Response:
        return await answer(question)

    app.post("/api/estimate", summary="the same as /api/fit")(fit)

    @app.post("/api/layouts", summary="gpusizer layouts MODEL GPU --json")
    async def layouts(question: LayoutsQuestion) -> Response:
        return await answer(question)

    @app.post("/api/shortlist", summary="gpusizer shortlist MODEL --json")
    async def shortlist(question: ShortlistQuestion) -> Response:
        return await answer(question)

    @app.post("/api/sweep", summary="gpusizer sweep: one JSON object per CSV row (NDJSON), or the CSV")
    async def sweep(question: SweepQuestion) -> Response:
        return await answer(question)

    _catalogue_routes(app)
    _page_routes(app)
    return _Guard(app, limits.body_bytes, hosts)


def _catalogue_routes(app: Any) -> None:
    @app.get("/api/gpus", summary="gpusizer gpus --json")
    def gpus() -> list[dict[str, Any]]:
        return _rows("gpus")

    @app.get("/api/systems", summary="gpusizer systems --json")
    def systems() -> list[dict[str, Any]]:
        return _rows("systems")

    @app.get("/api/models", summary="gpusizer models --json")
    def models() -> list[dict[str, Any]]:
        return _rows("models")

    @app.get("/api/engines", summary="the engine memory profiles")
    def engine_list() -> list[dict[str, Any]]:
        return [_engine_row(p) for p in engines.ENGINES.values()]

    @app.get("/api/precisions", summary="weight precisions and KV-cache dtypes")
    def precisions() -> dict[str, list[str]]:
        return {"weights": list(precision.names()), "kv_cache": ["bf16", "fp16", "fp8", "fp8_e5m2", "int8", "fp32"]}

    @app.get("/api/gpus/{name}", summary="one row of gpusizer gpus --json (an alias finds its GPU)")
    def gpu(name: str) -> Any:
        return _lookup(lambda: _row("gpus", catalog.gpu(name).id), "gpu", name,
                       [g.id for g in catalog.gpus()] + [s.id for s in catalog.systems()])

    @app.get("/api/systems/{name}", summary="one row of gpusizer systems --json")
    def system(name: str) -> Any:
        return _lookup(lambda: _row("systems", catalog.system(name).id), "system", name,
                       [s.id for s in catalog.systems()])

    @app.get("/api/models/{name}", summary="one row of gpusizer models --json")
    def model(name: str) -> Any:
        return _lookup(lambda: _row("models", catalog.model(name).id), "model", name, [m.id for m in catalog.models()])

    @app.get("/api/engines/{name}", summary="one engine memory profile")
    def engine(name: str) -> Any:
        try:
            return _engine_row(engines.engine(name))
        except (ValueError, TypeError) as error:
            return _error(404, ["path", "name"], str(error), "unknown_id",
                          catalog.closest(name.lower(), list(engines.ENGINES)))


def _lookup(find: Callable[[], Any], kind: str, name: str, ids: list[str]) -> Any:
    try:
        return find()
    except (KeyError, ValueError, HTTPException) as error:
        message = str(error.args[0]) if isinstance(error, KeyError) and error.args else f"unknown {kind} {name!r}"
        return _error(404, ["path", "name"], message, "unknown_id", catalog.closest(catalog.normalise(name), ids))


def _page_routes(app: Any) -> None:
    @app.get("/", include_in_schema=False)
    def index() -> Response:
        return _static("index.html")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return Response(status_code=204)

    @app.get("/docs", include_in_schema=False)
    def docs() -> Response:
        return _static("docs.html")

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in STATIC:
            raise HTTPException(404)
        return _static(name)


def _version() -> str:
    from gpusizer import cli

    return cli.version()


def serve(host: str = "127.0.0.1", port: int = 8000, limits: Limits = LIMITS) -> None:
    """Run the app with uvicorn until interrupted; on a loopback ``host`` it answers loopback Host names only."""
    import uvicorn

    hosts = LOOPBACK_HOSTS if is_loopback(host) else None
    uvicorn.run(create_app(limits, hosts), host=host, port=port, limit_concurrency=64, timeout_keep_alive=5,
                log_level="info")
