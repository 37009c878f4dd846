"""The questions ``gpusizer serve`` answers: pydantic request bodies, each the command line it stands for.

A question is validated with the command line's own argument types (``gpusizer.commands.common``), turned
into the ``gpusizer`` command line it stands for (``argv``) and answered by the command's own handler
(``ask``), so that an answer is the text of ``gpusizer ... --json``, field for field. No FastAPI here:
the app (``gpusizer.web.app``) imports it.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import shlex
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from gpusizer import catalog, checks, engines
from gpusizer.commands import common

__all__ = ["LIMITS", "FitQuestion", "LayoutsQuestion", "Limits", "Question", "Refused", "ShortlistQuestion",
           "SweepQuestion", "ask", "command", "run", "unknown_gpu", "unknown_model"]


@dataclass(frozen=True)
class Limits:
    """What one request may ask of the server."""

    body_bytes: int = 1_048_576
    """Largest request body (a pasted config.json is a few kB). [B]"""
    gpus: int = 72
    """Most GPUs of one replica (``fit``, ``layouts``) and ``shortlist``'s ``max_gpus``: one NVL72. [-]"""
    sweep_rows: int = 10_000
    """Most rows of one sweep. [-]"""
    shortlist_candidates: int = 2_000
    """Most GPUs x GPU counts x weight precisions one shortlist screens. [-]"""
    simulate: int = 5
    """Most shortlist rows checked by simulation. [-]"""
    seconds: float = 30.0
    """Longest a request's computation may take before the server answers 503. [s]"""


LIMITS = Limits()


class Refused(Exception):
    """A question the command refused: HTTP ``status``, the request ``field`` at fault (None: the body), why,
    and the closest catalogue ids where an id was unknown."""

    def __init__(self, status: int, field: str | None, message: str, suggestions: list[str] | None = None) -> None:
        super().__init__(message)
        self.status, self.field, self.message, self.suggestions = status, field, message, suggestions or []


def _suggest(kind: str, name: str, ids: list[str], error: KeyError) -> PydanticCustomError:
    near = catalog.closest(catalog.normalise(name), ids)
    message = str(error.args[0]) if error.args else f"unknown {kind} {name!r}"
    return PydanticCustomError("unknown_id", "{message}", {"message": message, "suggestions": near})


def unknown_model(name: str) -> str:
    """``name``'s catalogue id; ``PydanticCustomError`` ``unknown_id`` with the closest ids when unknown."""
    try:
        return catalog.model(name).id
    except KeyError as error:
        raise _suggest("model", name, [m.id for m in catalog.models()], error) from None


def unknown_gpu(name: str) -> str:
    """``name`` as given when it names a GPU, a system or a GPU spec (``rtx-4090:memory=48GB``); else
    ``PydanticCustomError`` ``unknown_id`` with the closest GPU and system ids."""
    if name.startswith("-"):
        raise ValueError(f"not a GPU id: {name!r}")
    try:
        if catalog.find_system(name) is None:
            catalog.gpu(name)
    except KeyError as error:
        ids = [g.id for g in catalog.gpus()] + [s.id for s in catalog.systems()]
        raise _suggest("gpu", name.partition(":")[0], ids, error) from None
    return name


def _cli_type(parse: Any) -> BeforeValidator:
    """A validator that reads a value as the command line reads the flag's text (``"32k"``, ``"500ms"``)."""

    def check(value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError("expected a number or text such as 32k or 500ms")
        try:
            return parse(str(value))
        except argparse.ArgumentTypeError as error:
            raise ValueError(str(error)) from None

    return BeforeValidator(check)


def _engine(name: str) -> str:
    engines.engine(name)  # ValueError naming the known engines
    return name


Id = Annotated[str, Field(min_length=1, max_length=128)]
ModelId = Annotated[Id, BeforeValidator(lambda v: unknown_model(v) if isinstance(v, str) else v)]
GpuId = Annotated[Id, BeforeValidator(lambda v: unknown_gpu(v) if isinstance(v, str) else v)]
Name = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._+:-]*$")]
Engine = Annotated[Name, BeforeValidator(lambda v: _engine(v) if isinstance(v, str) else v)]
Tokens = Annotated[int | str | None, _cli_type(common.tokens)]
PositiveTokens = Annotated[int | str | None, _cli_type(common.positive_tokens)]
Count = Annotated[int | str, _cli_type(common.count)]
Seconds = Annotated[float | str | None, _cli_type(common.duration)]
Positive = Annotated[float | str, _cli_type(common.positive_number)]
KvCache = Annotated[Name | None, _cli_type(common.kv_cache)]
Short = Annotated[list[Any], Field(min_length=1, max_length=64)]


class Question(BaseModel):
    """A question: the fields are the command's flags (``kv_cache`` is ``--kv-cache``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    command: ClassVar[str] = ""
    positional: ClassVar[tuple[str, ...]] = ()
    flags: ClassVar[tuple[str, ...]] = ("--json",)

    def argv(self, model: str | None = None) -> list[str]:
        """The ``gpusizer`` command line of this question; ``model``: the MODEL argument to pass."""
        out = [self.command]
        skip = {"config", "config_name", "format", *self.positional}
        for name in self.positional:
            out.append(model if name == "model" and model is not None else str(getattr(self, name)))
        fields = type(self).model_fields
        for name, value in [*self, *(getattr(self, "options", None) or {}).items()]:
            if name == "options" or name in skip or value is None or value is False:
                continue
            if name in fields and value == fields[name].default:
                continue  # the command's own default
            flag = "--" + name.replace("_", "-")
            if value is True:
                out.append(flag)
            else:
                out.append(f"{flag}={_text(value)}")
        return out + list(self.flags)

    def check(self, limits: Limits) -> None:
        """Refuse (422, naming the field) a question that asks more work than ``limits`` allow."""


def _text(value: Any) -> str:
    if isinstance(value, dict):
        return ",".join(f"{k}={_text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ",".join(_text(v) for v in value)
    return repr(value) if isinstance(value, float) else str(value)


class _Model(Question):
    model: ModelId | None = Field(None, description="catalogue id (GET /api/models)")
    config: dict[str, Any] | None = Field(None, description="a pasted Hugging Face config.json, instead of model")
    config_name: Name = Field("pasted-config", description="the id a pasted config gets (its folder's name)")

    @model_validator(mode="after")
    def _one_model(self) -> _Model:
        if (self.model is None) == (self.config is None):
            raise PydanticCustomError("model_or_config", "give exactly one of model and config")
        return self


#: The flags of ``gpusizer fit`` a request may add under ``options`` (none of them names a file).
FIT_OPTIONS = ("speculative", "draft", "draft_tokens", "acceptance", "eagle_version", "prefix_cache",
               "shared_prefix", "prefix_granularity", "lora", "lora_targets", "max_loras", "max_cpu_loras",
               "offload", "n_cpu_moe", "no_kv_offload", "cpu_offload_gb", "host", "host_bandwidth", "host_memory",
               "images", "image_size", "video_frames", "pan_and_scan")


def option_problem(command: str, name: str, value: Any) -> str | None:
    """Why the command's parser would refuse ``--name=value`` (its type and choices), or None."""
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    flag = "--" + name.replace("_", "-")
    action = next(a for a in sub.choices[command]._actions if flag in a.option_strings)
    if action.nargs == 0:  # a switch
        return None if isinstance(value, bool) else "true or false"
    if isinstance(value, bool):
        return "expected a value, not true or false"
    try:
        read = action.type(str(value)) if callable(action.type) else str(value)
    except (argparse.ArgumentTypeError, ValueError, TypeError) as error:
        return str(error)
    if action.choices is not None and read not in action.choices:
        return f"one of {', '.join(map(str, action.choices))}"
    return None


class FitQuestion(_Model):
    """``gpusizer fit MODEL GPU ... --json``: does the model fit, with what memory and speed."""

    command: ClassVar[str] = "fit"
    positional: ClassVar[tuple[str, ...]] = ("model", "gpu")
    gpu: GpuId = Field(description="GPU id or alias, or a system id (GET /api/gpus)")
    weights: Name | None = Field(None, description="weight precision (GET /api/precisions); default: checkpoint")
    kv_cache: KvCache = Field(None, description="KV-cache dtype; default: the model's activation dtype")
    context: Tokens = Field(None, description="tokens per sequence, 32768 or '32k'; default 8k or the model's max")
    allow_beyond_max_context: bool = False
    concurrency: Count = Field(1, description="sequences resident at once")
    prompt: PositiveTokens = Field(None, description="prompt tokens for prefill and TTFT; default: context")
    gpus: Annotated[int | str | None, _cli_type(common.gpu_count)] = Field(
        None, description="GPUs to split the model over; default 1 or the system's")
    layout: Name | None = Field(None, description="tp, pp, ep, tp2xpp2, tp8+ep8, ...; default: the best valid one")
    engine: Engine = Field("vllm", description="engine memory profile (GET /api/engines)")
    options: Annotated[dict[str, int | float | str | bool], Field(max_length=32)] = Field(
        {}, description="more flags of gpusizer fit by name, read as the flags read them: "
        + ", ".join(f"{name}" for name in FIT_OPTIONS))

    @field_validator("options")
    @classmethod
    def _options(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        for name, item in (value or {}).items():
            if name not in FIT_OPTIONS:
                near = catalog.closest(name, FIT_OPTIONS)
                raise ValueError(f"options: no flag {name!r}" + (f"; did you mean {', '.join(near)}?" if near else ""))
            problem = option_problem(cls.command, name, item)
            if problem:
                raise ValueError(f"options.{name}: {problem}")
        return value

    def check(self, limits: Limits) -> None:
        if self.gpus is not None and int(self.gpus) > limits.gpus:
            raise Refused(422, "gpus", f"at most {limits.gpus} GPUs per request on this server")


class LayoutsQuestion(FitQuestion):
    """``gpusizer layouts MODEL GPU ... --json``: the layouts of the model on N GPUs, best first."""

    command: ClassVar[str] = "layouts"
    objective: Literal["latency", "throughput"] = "latency"
    prompt: None = None
    layout: None = None
    options: None = None  # type: ignore[assignment]


class ShortlistQuestion(_Model):
    """``gpusizer shortlist MODEL ... --json``: configurations that serve the traffic within the targets."""

    command: ClassVar[str] = "shortlist"
    positional: ClassVar[tuple[str, ...]] = ("model",)
    prompt: PositiveTokens = 2048
    output_tokens: PositiveTokens = 512
    rate: Positive = Field(description="requests per second")
    ttft_p95: Seconds = None
    tpot_p95: Seconds = None
    e2e_p95: Seconds = None
    quantile: Annotated[float | str, _cli_type(common.share)] = 0.95
    lengths: Literal["fixed", "exponential", "lognormal", "uniform"] = "fixed"
    cv: Positive = 0.5
    price: Annotated[dict[GpuId, float], Field(max_length=64)] = {}
    gpus: Annotated[list[GpuId], Field(min_length=1, max_length=64)] | None = None
    max_gpus: Annotated[int, Field(ge=1)] = 8
    weights: Annotated[list[Name], Field(min_length=1, max_length=8)] | None = None
    engine: Engine = "vllm"
    simulate: Annotated[int, Field(ge=0)] = 3
    seed: Annotated[int, Field(ge=0, lt=2**32)] = 0

    def check(self, limits: Limits) -> None:
        if self.max_gpus > limits.gpus:
            raise Refused(422, "max_gpus", f"at most {limits.gpus} GPUs per replica on this server")
        if self.simulate > limits.simulate:
            raise Refused(422, "simulate", f"at most {limits.simulate} simulated rows on this server")
        counts = self.max_gpus.bit_length()  # the powers of two up to max_gpus
        gpus = len(self.gpus) if self.gpus is not None else len(catalog.gpus())
        candidates = gpus * counts * (len(self.weights) if self.weights else 3)
        if candidates > limits.shortlist_candidates:
            raise Refused(422, "gpus", f"{gpus} GPUs x {counts} counts x weights is {candidates:,} candidates, "
                          f"more than {limits.shortlist_candidates:,} on this server: name fewer gpus or weights")


class SweepQuestion(Question):
    """``gpusizer sweep ...``: a grid of estimates, one row per configuration (the CSV's rows)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    command: ClassVar[str] = "sweep"
    flags: ClassVar[tuple[str, ...]] = ()
    models: Annotated[list[ModelId], Field(min_length=1, max_length=64)]
    gpus: Annotated[list[GpuId], Field(min_length=1, max_length=64)]
    gpu_count: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1, max_length=16)] = [1]
    weights: Annotated[list[Name], Field(min_length=1, max_length=16)] | None = None
    kv_cache: Annotated[list[Name], Field(min_length=1, max_length=8)] | None = None
    engine: Annotated[list[Engine], Field(min_length=1, max_length=4)] = ["vllm"]
    context: Annotated[list[Annotated[int | str, _cli_type(common.positive_tokens)]],
                       Field(min_length=1, max_length=64)] = [8192]
    concurrency: Annotated[list[Count], Field(min_length=1, max_length=64)] = [1]
    prompt: Annotated[list[Annotated[int | str, _cli_type(common.positive_tokens)]],
                      Field(min_length=1, max_length=64)] | None = None
    layout: Literal["tp", "pp", "ep", "layer"] = "tp"
    prices: Literal["table"] | Annotated[dict[GpuId, float], Field(max_length=64)] | None = None
    fits: bool = False
    columns: Annotated[list[Name], Field(min_length=1, max_length=200)] | None = None
    format: Literal["ndjson", "csv"] = "ndjson"

    def check(self, limits: Limits) -> None:
        if max(self.gpu_count) > limits.gpus or min(self.gpu_count) < 1:
            raise Refused(422, "gpu_count", f"GPU counts from 1 to {limits.gpus} on this server")
        sizes = {name: len(getattr(self, name) or [None]) for name in
                 ("models", "gpus", "gpu_count", "weights", "kv_cache", "engine", "context", "concurrency", "prompt")}
        try:
            checks.grid_rows(sizes, limits.sweep_rows)
        except ValueError as error:
            raise Refused(422, "models", f"{error} (the server's limit of rows per sweep)") from None


def _flag_field(question: Question, message: str) -> str | None:
    """The field of the first ``--flag`` that ``message`` names, or None."""
    names = {"--" + name.replace("_", "-"): name for name in type(question).model_fields}
    words = [word.strip(":,;'\"()") for word in message.replace("=", " ").split()]
    for word in words:
        if word in names:
            return names[word]
    for word in words:  # the library's own messages name the parameter
        if word in type(question).model_fields:
            return word
    return "model" if "MODEL" in message else None


@functools.lru_cache(maxsize=1)
def _parser() -> argparse.ArgumentParser:
    """The ``gpusizer`` argument parser, built once: read-only afterwards (every parse makes a new namespace)."""
    from gpusizer import cli

    return cli.parser()


@contextlib.contextmanager
def _model_argument(question: Question) -> Iterator[str | None]:
    """The MODEL argument: the catalogue id, or a pasted config written to a folder of its own for the call."""
    config = getattr(question, "config", None)
    if config is None:
        model = getattr(question, "model", None)
        if model is not None and os.path.lexists(model):  # the command would read that file instead
            raise Refused(500, None, f"the server's working folder holds a file named {model!r}; "
                          "start gpusizer serve elsewhere")
        yield model
        return
    with tempfile.TemporaryDirectory(prefix="gpusizer-serve-") as folder:
        path = Path(folder) / question.config_name  # type: ignore[attr-defined]
        path.mkdir()
        (path / "config.json").write_text(json.dumps(config), encoding="utf-8")
        try:
            yield str(path)
        except Refused as refused:
            refused.message = refused.message.replace(str(path), question.config_name)  # type: ignore[attr-defined]
            raise


def run(argv: list[str]) -> str:
    """The text ``gpusizer ARGV`` prints, from the command's own parser and handler (no process, no stdout).

    Raises
    ------
    Refused
        422 when the parser refuses ``argv`` (the questions' validators read values as the flags do, so a
        question does not reach this).
    """
    try:
        args = _parser().parse_args(argv)
    except SystemExit:
        raise Refused(422, None, f"the command line {shlex.join(argv)!r} was refused") from None
    return str(args.handler(args))


def ask(question: Question) -> str:
    """The text the command prints for ``question`` (``--json``'s JSON; ``sweep``'s CSV).

    Raises
    ------
    Refused
        422 naming the field for what the command refuses (a layout engines refuse, a context past the
        model's maximum, a config.json that is not a model).
    """
    with _model_argument(question) as model:
        try:
            return run(question.argv(model))
        except (common.CommandError, KeyError, ValueError, TypeError) as error:
            message = str(error.args[0] if isinstance(error, KeyError) and error.args else error)
            raise Refused(422, _flag_field(question, message), message) from None


def command(question: Question) -> str:
    """The ``gpusizer`` command line that asks ``question`` (a pasted config as ``./NAME/config.json``)."""
    config_name = getattr(question, "config_name", None)
    model = f"./{config_name}/config.json" if getattr(question, "config", None) is not None else None
    return shlex.join(["gpusizer", *question.argv(model)])
