"""What every command shares: argument types with documented limits, input and output files, strict JSON
and the error every command exits with (the model argument is ``commands.model_argument``).

Errors are ``CommandError`` (a message naming the argument and an exit status: 2 for a bad value,
1 for the environment: a missing or unreadable file, a full disk); ``gpusizer.cli.main`` prints them
as one line, ``gpusizer: error: ...``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from gpusizer import catalog, checks, datafiles, units

__all__ = [
    "ENVIRONMENT",
    "MAX_CONCURRENCY",
    "MAX_GPUS",
    "MAX_GRID_ROWS",
    "MAX_NAME",
    "MAX_PREFILL_STEPS",
    "MAX_TOKENS",
    "SCHEMA_VERSION",
    "USAGE",
    "CommandError",
    "add_service_arguments",
    "check_context",
    "check_output",
    "choose_layout",
    "count",
    "default_context",
    "duration",
    "finite",
    "gpu_count",
    "help_options",
    "input_file",
    "json_text",
    "kv_cache",
    "positive_number",
    "positive_tokens",
    "service",
    "share",
    "tokens",
    "write_atomic",
]

#: Exit status of a bad argument value (as argparse's own errors).
USAGE = 2
#: Exit status of a problem of the environment: a missing, unreadable or oversize file, a full disk.
ENVIRONMENT = 1

MAX_TOKENS = checks.MAX_TOKENS
"""Most tokens per sequence any command accepts (``gpusizer.checks.MAX_TOKENS``: 16,777,216). [token]"""

MAX_CONCURRENCY = 2**24
"""Most sequences resident at once: 16,777,216, far past any KV pool of the catalogue. [-]"""

MAX_GPUS = 576
"""Most GPUs one replica is split over: the largest catalogue system (GB200 NVL72, 72 GPUs) times 8
scale-out nodes. ``gpusizer layouts`` ranks every layout of this many GPUs in about a second. [-]"""

MAX_GRID_ROWS = checks.MAX_GRID_ROWS
"""Most rows ``gpusizer sweep`` computes (``gpusizer.checks.MAX_GRID_ROWS``: 5,000,000). [-]"""

MAX_PREFILL_STEPS = 50_000_000
"""Most prefill chunk steps ``gpusizer sweep`` computes: rows times the chunks of the longest prompt at
the smallest chunk of the engines asked for. A chunk step of a row costs about 0.1 us, so the prefill of
a grid stays within seconds (a 16M-token context on llama.cpp is 32,768 steps of 512 tokens). [-]"""

SCHEMA_VERSION = 1
"""Version of the ``--json`` objects of ``fit``, ``layouts``, ``shortlist`` and ``throughput``
(``"schema_version"``): raised when a field is renamed or removed or changes meaning. [-]"""

#: llama.cpp's ``--cache-type-k/-v`` names and the catalogue KV-cache precision each one is sized as.
#: ``q8_0`` stores 32 int8 values and one fp16 scale per block (34 bytes per 32 elements, ggml-org/llama.cpp
#: ``ggml/src/ggml-common.h`` ``block_q8_0``): sized as int8, the scale's 1/16 left out.
LLAMA_CPP_KV = {"f32": "fp32", "f16": "fp16", "bf16": "bf16", "q8_0": "int8"}

#: llama.cpp KV-cache types that no catalogue precision sizes (4- and 5-bit blocks).
LLAMA_CPP_KV_UNSIZED = ("q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl")

KV_CACHE_HELP = "bf16, fp16, fp8, fp8_e5m2, int8, fp32; llama.cpp's f16, bf16, f32 and q8_0 (sized as int8)"


def kv_cache(text: str) -> str:
    """Argument type of ``--kv-cache``: a catalogue KV precision, or llama.cpp's name of one (``LLAMA_CPP_KV``).

    >>> kv_cache("q8_0"), kv_cache("F16"), kv_cache("fp8")
    ('int8', 'fp16', 'fp8')
    """
    key = text.strip().lower()
    if key in LLAMA_CPP_KV_UNSIZED:
        raise argparse.ArgumentTypeError(
            f"llama.cpp's {key} KV cache is a 4/5-bit block type that the catalogue does not size; "
            "int8 (q8_0) is the smallest KV cache it sizes")
    return LLAMA_CPP_KV.get(key, key)


MAX_NAME = 255
"""Longest model name or path component accepted (NAME_MAX of Linux and macOS file systems). [character]"""


class CommandError(Exception):
    """A message naming the argument at fault, and the exit status (``USAGE`` or ``ENVIRONMENT``)."""

    def __init__(self, message: str, status: int = USAGE) -> None:
        super().__init__(message)
        self.status = status


def help_options(examples: str) -> dict[str, Any]:
    """Keyword arguments for ``add_parser``: an epilog of ``examples`` (one per line), kept as written."""
    lines = "\n".join(f"  {line}" for line in examples.splitlines())
    return {"epilog": f"examples:\n{lines}", "formatter_class": argparse.RawDescriptionHelpFormatter}


def _bounded(text: str, minimum: int, maximum: int, what: str) -> int:
    try:
        value = units.parse_tokens(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {text!r}")
    if value > maximum:
        raise argparse.ArgumentTypeError(f"at most {maximum:,} {what}, got {text!r} ({value:,})")
    return value


def tokens(text: str) -> int:
    """Argument type of a token count (``4096``, ``32k``, ``1M``): 0 to ``MAX_TOKENS``. [token]"""
    return _bounded(text, 0, MAX_TOKENS, "tokens (gpusizer.commands.common.MAX_TOKENS)")


def positive_tokens(text: str) -> int:
    """Argument type of a token count of at least 1, up to ``MAX_TOKENS``. [token]"""
    return _bounded(text, 1, MAX_TOKENS, "tokens (gpusizer.commands.common.MAX_TOKENS)")


def count(text: str) -> int:
    """Argument type of a count of sequences or requests: 1 to ``MAX_CONCURRENCY``. [-]"""
    return _bounded(text, 1, MAX_CONCURRENCY, "(gpusizer.commands.common.MAX_CONCURRENCY)")


def gpu_count(text: str) -> int:
    """Argument type of a number of GPUs: 1 to ``MAX_GPUS`` (576 = 72-GPU NVL72 x 8). [-]"""
    return _bounded(text, 1, MAX_GPUS, "GPUs (72-GPU NVL72 x 8 scale-out)")


def positive_number(text: str) -> float:
    """Argument type of a positive finite number (a request rate, a coefficient of variation). [-]"""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def duration(text: str) -> float:
    """Argument type of a positive duration (``500ms``, ``0.5s``, ``2min``; a bare number is seconds). [s]"""
    try:
        value = units.parse_seconds(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive duration, got {text!r}")
    return value


def share(text: str) -> float:
    """Argument type of a share strictly between 0 and 1 (a quantile: 0.95 is p95). [-]"""
    value = positive_number(text)
    if not value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (0.95 is p95), got {text!r}")
    return value


def add_service_arguments(parser: argparse.ArgumentParser, quantile_help: str = "default 0.95") -> None:
    """Add the latency targets (``--ttft-p95``, ``--tpot-p95``, ``--e2e-p95``, ``--quantile``) and the length
    distribution (``--lengths``, ``--cv``) that ``service`` reads."""
    parser.add_argument("--ttft-p95", type=duration, help="time-to-first-token target, e.g. 500ms")
    parser.add_argument("--tpot-p95", type=duration, help="time-per-output-token target, e.g. 50ms")
    parser.add_argument("--e2e-p95", type=duration, help="end-to-end latency target, e.g. 30s")
    parser.add_argument("--quantile", type=share, default=0.95,
                        help=f"quantile the targets apply to ({quantile_help})")
    parser.add_argument("--lengths", default="fixed", choices=("fixed", "exponential", "lognormal", "uniform"),
                        help="distribution of prompt and output lengths around their means (default fixed)")
    parser.add_argument("--cv", type=positive_number, default=0.5,
                        help="coefficient of variation of lengths for lognormal/uniform (default 0.5)")


def service(args: argparse.Namespace, rate: float) -> tuple[Any, Any]:
    """The ``serving.Workload`` at ``rate`` and the ``serving.SLO`` (None without any target) of the arguments
    ``add_service_arguments`` added, with ``--prompt`` and ``--output``."""
    from gpusizer.serving import SLO, Workload

    workload = Workload(rate=rate, prompt_tokens=args.prompt, output_tokens=args.output,
                        prompt_distribution=args.lengths, output_distribution=args.lengths, prompt_cv=args.cv,
                        output_cv=args.cv)
    targets = (args.ttft_p95, args.tpot_p95, args.e2e_p95)
    if all(target is None for target in targets):
        return workload, None
    return workload, SLO(ttft_p95=args.ttft_p95, tpot_p95=args.tpot_p95, e2e_p95=args.e2e_p95,
                         quantile=args.quantile)


def check_context(record: catalog.Model, context: int, prompt: int | None, allow: bool) -> None:
    """Refuse a context (or prompt) past the model's maximum context unless ``allow``
    (``--allow-beyond-max-context``); ``CommandError`` names the flag."""
    limit = record.max_context
    if allow or limit is None:
        return
    for flag, value in (("--context", context), ("--prompt", prompt)):
        if value is not None and value > limit:
            raise CommandError(
                f"{flag} {value:,} is beyond the maximum context of {record.id} ({limit:,} tokens); "
                "pass --allow-beyond-max-context to size it anyway"
            )


def choose_layout(record: catalog.Model, target: str, gpus: int | None, layout: str | None,
                  options: dict[str, Any], objective: str = "latency") -> tuple[str, str]:
    """The layout a command sizes (``fit``, ``throughput``), and a line saying how it was chosen.

    No ``--layout`` on one GPU: ``tp`` (one GPU, nothing to split). No ``--layout`` on several:
    ``layouts.default_layout``, the best valid layout for ``objective``. A ``--layout`` that engines refuse
    (``parallel.check``, heads included): ``CommandError`` listing the valid layouts of that many GPUs.
    ``options``: ``best_layout``'s (weights, kv_cache, context, concurrency, prompt, engine, calibration).
    """
    from gpusizer import estimator, layouts, parallel

    bare = layout is None or layout.strip().lower() in ("tp", "pp", "ep", "dp", "layer")
    if gpus is None and layout is not None and not bare and catalog.find_system(target) is None:
        gpus = parallel.layout(layout).gpus  # an explicit layout on a bare GPU says how many, as estimate reads it
    _, count = estimator.resolve_target(target, gpus)
    if layout is None:
        if count == 1:
            return "tp", "given"
        chosen = layouts.default_layout(record, target, count, objective=objective, **options)
        if chosen is None:
            raise CommandError(f"--gpus {count}: {record.id} allows no layout of {count} GPUs (more stages than "
                               "layers, or heads that divide by no tensor-parallel degree); try another count")
        name, fits = chosen
        fastest = "the fastest per user" if objective == "latency" else "the most tokens/s with full KV pools"
        how = f"{fastest} of the layouts that fit" if fits else "none fits; the nearest to fitting"
        return name, f"{name}: the best valid layout of {count} GPUs ({how}; --layout to choose, gpusizer layouts " \
                     "ranks them)"
    plan = parallel.layout(layout, count)
    try:
        parallel.check(plan, record)
    except ValueError as error:
        valid = [p.name for p in parallel.candidates(record, count)][:6]
        reason = str(error).split(";")[0]
        raise CommandError(f"--layout {layout}: {reason}, which engines refuse; valid layouts of {count} GPUs: "
                           f"{', '.join(valid) or 'none'} (gpusizer layouts {record.id} {target} --gpus {count} "
                           "ranks them)") from None
    return layout, "given"


def default_context(record: catalog.Model, context: int | None, default: int = 8192) -> int:
    """``context`` as given, else ``default`` or the model's maximum context if that is shorter. [token]"""
    if context is not None:
        return context
    return min(default, record.max_context or default)


def input_file(path: str | Path, what: str, limit: int = datafiles.MAX_FILE_BYTES) -> Path:
    """``path`` checked as an input file before anything reads it.

    A regular file of at most ``limit`` bytes, or a character device that ends within ``limit``
    bytes (``/dev/null``; ``/dev/zero`` is refused at the cap). A FIFO is refused: reading it would
    wait for a writer.

    Raises
    ------
    CommandError
        Status 1, naming ``what``: missing, a directory, a symlink loop, no permission, a FIFO or
        socket, or larger than ``limit`` bytes.
    """
    path = Path(path)
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise CommandError(f"{what}: {path} is a directory, not a file", ENVIRONMENT)
        if stat.S_ISREG(info.st_mode):
            if info.st_size > limit:
                raise CommandError(f"{what}: {path} is larger than {limit:,} bytes", ENVIRONMENT)
            with path.open("rb"):
                pass
        elif stat.S_ISCHR(info.st_mode):
            with path.open("rb") as handle:
                if len(handle.read(limit + 1)) > limit:
                    raise CommandError(f"{what}: {path} is larger than {limit:,} bytes", ENVIRONMENT)
        else:
            raise CommandError(f"{what}: {path} is not a regular file (a FIFO, socket or device)", ENVIRONMENT)
    except OSError as error:
        raise CommandError(f"{what}: {path}: {error.strerror or error}", ENVIRONMENT) from None
    return path


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one is missing (or loops): compare the names
        return os.path.realpath(a) == os.path.realpath(b)


def check_output(path: str | Path, *, what: str = "-o", inputs: Iterable[str | Path] = ()) -> Path:
    """``path`` checked as an output file before any work: not an input, not a directory, its folder there.

    Raises
    ------
    CommandError
        ``path`` is one of ``inputs`` (status 2), a directory, or in a missing folder (status 1).
    """
    path = Path(path)
    if len(str(path)) > 4096 or any(len(part) > MAX_NAME for part in path.parts):
        raise CommandError(f"{what}: a path component longer than {MAX_NAME} characters")
    for source in inputs:
        if _same_file(path, Path(source)):
            raise CommandError(f"{what}: {path} is also an input of this run; write elsewhere")
    try:
        if path.is_dir():
            raise CommandError(f"{what}: {path} is a directory", ENVIRONMENT)
        if not path.parent.is_dir():
            raise CommandError(f"{what}: folder {path.parent} does not exist", ENVIRONMENT)
    except OSError as error:
        raise CommandError(f"{what}: {path}: {error.strerror or error}", ENVIRONMENT) from None
    return path


def write_atomic(path: str | Path, write: Callable[[Path], object], *, what: str = "-o",
                 inputs: Iterable[str | Path] = ()) -> Path:
    """Write an output file through ``write(temporary_path)``, then move it onto ``path`` at once.

    The temporary file lies in the same folder and keeps the suffix (writers choose the format by
    it), so ``os.replace`` is atomic and a failed write leaves ``path`` as it was. A character device
    (``/dev/null``, ``/dev/stdout``) is written directly.

    Raises
    ------
    CommandError
        ``path`` is one of ``inputs`` (status 2); its folder is missing, it is a directory, or the
        write fails: no permission, a full disk (status 1).
    """
    path = check_output(path, what=what, inputs=inputs)
    try:
        if path.exists() and not path.is_file():
            if not stat.S_ISCHR(path.stat().st_mode):  # a FIFO would wait for a reader
                raise CommandError(f"{what}: {path} is not a regular file or a device", ENVIRONMENT)
            write(path)
            return path
        folder = path.parent
        handle, name = tempfile.mkstemp(dir=folder, prefix=f".{path.stem[:64]}.", suffix=path.suffix[:32])
        os.close(handle)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(name, 0o666 & ~umask)  # as open() would create it, not mkstemp's 0600
        try:
            write(Path(name))
            os.replace(name, path)
        finally:
            if os.path.exists(name):
                os.unlink(name)
    except OSError as error:
        raise CommandError(f"{what}: {path}: {error.strerror or error}", ENVIRONMENT) from None
    return path


def finite(value: Any) -> Any:
    """``value`` with NaN and infinities replaced by ``None``, through dicts, lists and tuples."""
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def number_text(value: Any, digits: int = 1) -> str:
    """A number with thousands separators and ``digits`` decimals; an array as its range ``min-max``."""
    try:
        return f"{float(value):,.{digits}f}"
    except TypeError:  # an array: its range
        return f"{float(min(value)):,.{digits}f}-{float(max(value)):,.{digits}f}"


def json_text(data: Any) -> str:
    """Strict JSON of ``data`` (indented): ``null`` for NaN and infinities, never a bare ``NaN``."""
    return json.dumps(finite(data), indent=2, allow_nan=False)
