"""Read an engine's command line (``vllm serve ...``, ``llama-server ...``) into an ``EngineCommand``.

Nothing is executed: the line is split with ``shlex`` (or given as an argv list) and matched against the
engine's own flags (``gpusizer.commandline.flags``). Every token lands somewhere: a modelled setting, an
ignored flag (known to the engine, not modelled) or an unknown flag; none is dropped.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gpusizer import checks
from gpusizer.commandline.flags import ENGINE_FLAGS, Flag, lookup

__all__ = ["EngineCommand", "detect", "parse", "value_of"]

_SUFFIX = {"k": 1000, "m": 1000**2, "g": 1000**3, "K": 1024, "M": 1024**2, "G": 1024**3}
"""Human-readable token counts (vLLM's and SGLang's ``human_readable_int``): lower-case suffixes decimal
(``32k`` = 32,000, ``25.6k`` = 25,600), upper-case binary (``32K`` = 32,768)."""
MAX_INT = checks.MAX_TOKENS
"""Largest integer any flag takes (2^24 = 16,777,216; a context or a count above it is refused). [-]"""


@dataclass(frozen=True)
class EngineCommand:
    """An engine command line as gpusizer reads it. Data only."""

    engine: str
    """``vllm``, ``sglang``, ``trtllm`` or ``llama.cpp`` (``engines.ENGINES`` keys)."""
    model: str
    """The model as the command names it (a Hugging Face id, a local path or a GGUF file)."""
    settings: dict[str, Any]
    """Modelled settings the command sets (``Flag.setting`` keys); absent: the engine's default."""
    defaults: dict[str, Any]
    """The engine's defaults of the modelled settings the command does not set (None: derived at startup)."""
    flags: tuple[str, ...]
    """The modelled flags as written."""
    ignored_flags: tuple[str, ...] = ()
    """Flags the engine knows that gpusizer does not model, as written (with their values)."""
    unknown_flags: tuple[str, ...] = ()
    """Flags gpusizer does not know for this engine, as written (with the value that followed them)."""
    environment: tuple[str, ...] = field(default_factory=tuple)
    """Leading ``NAME=value`` assignments (``CUDA_VISIBLE_DEVICES=0,1``), listed, not modelled."""


def detect(argv: Sequence[str]) -> tuple[str, int]:
    """The engine of a command line and the index of its first argument after the program.

    ``vllm serve``, ``python -m vllm.entrypoints.openai.api_server``, ``python -m sglang.launch_server``,
    ``sglang serve``, ``trtllm-serve [serve]``, ``llama-server`` (any directory, ``.exe`` allowed).

    Raises
    ------
    ValueError
        When the line starts with none of them.
    """
    program = os.path.basename(argv[0]).removesuffix(".exe") if argv else ""
    rest = list(argv[1:])
    if program == "vllm" and rest[:1] == ["serve"]:
        return "vllm", 2
    if program == "sglang" and rest[:1] == ["serve"]:
        return "sglang", 2
    if program.startswith("python") and rest[:1] == ["-m"] and len(rest) > 1:
        module = rest[1]
        if module in ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server"):
            return "vllm", 3
        if module == "sglang.launch_server":
            return "sglang", 3
    if program == "trtllm-serve":
        return "trtllm", 2 if rest[:1] == ["serve"] else 1
    if program == "llama-server":
        return "llama.cpp", 1
    raise ValueError(f"command: {' '.join(argv[:3])!r} is not an engine command line; expected vllm serve, "
                     "python -m sglang.launch_server, trtllm-serve or llama-server")


def value_of(flag: Flag, written: str, text: str) -> Any:
    """A flag's value from its text, checked; ``written`` is the flag as the command spells it.

    Raises
    ------
    ValueError
        One line naming the flag: a value that is not of the flag's kind, or out of bounds (a count
        below 1 or over 2^24, a fraction outside (0, 1]).
    """
    kind = flag.kind
    if kind in ("int", "tokens"):
        number = _integer(text, kind == "tokens")
        if number is None:
            raise ValueError(f"{written}: {text!r} is not a whole number")
        allowed = (-1,) if flag.default == -1 or flag.setting == "batched_tokens" else ()
        low = 0 if flag.default == 0 or flag.setting in ("cpu_moe_layers",) else 1
        if number not in allowed and not low <= number <= MAX_INT:
            raise ValueError(f"{written}: {number} is out of bounds ({low} to {MAX_INT:,})")
        return number
    if kind in ("fraction", "number"):
        try:
            share = float(text)
        except ValueError:
            raise ValueError(f"{written}: {text!r} is not a number") from None
        top = 1.0 if kind == "fraction" else float(MAX_INT)
        if not (0.0 < share <= top or (kind == "number" and share == 0.0)):
            raise ValueError(f"{written}: {text!r} is out of bounds ({'0 < f <= 1' if kind == 'fraction' else '>= 0'})")
        return share
    if kind == "split":
        parts = [p for p in text.replace("/", ",").split(",") if p.strip()]
        try:
            shares = tuple(float(p) for p in parts)
        except ValueError:
            raise ValueError(f"{written}: {text!r} is not a list of proportions such as 3,1") from None
        if not shares or any(not 0.0 <= s <= MAX_INT for s in shares) or not sum(shares) > 0:
            raise ValueError(f"{written}: {text!r} needs non-negative proportions, not all 0")
        return shares
    if not text.strip():
        raise ValueError(f"{written}: empty value")
    return text


def _integer(text: str, readable: bool) -> int | None:
    body = text.strip().replace("_", "")
    scale = 1
    if readable and body[-1:] in _SUFFIX:
        scale, body = _SUFFIX[body[-1]], body[:-1]
    try:
        if "." not in body:
            return int(body) * scale
        value = float(body) * scale  # 25.6k: a whole number of tokens, or refused
        return int(value) if scale > 1 and value == int(value) else None
    except (ValueError, OverflowError):
        return None


def _tokens(argv: str | Sequence[str]) -> list[str]:
    if isinstance(argv, str):
        try:
            return shlex.split(argv.replace("\\\n", " "))
        except ValueError as error:
            raise ValueError(f"command: {error}") from None
    checks.instance(argv, "argv", (list, tuple))
    for token in argv:
        checks.instance(token, "argv item", str)
    return list(argv)


def parse(argv: str | Sequence[str]) -> EngineCommand:
    """Read an engine command line. Nothing is run.

    Parameters
    ----------
    argv : str or sequence of str
        The command as one shell string (split with ``shlex``; backslash-newlines joined) or an argv list.

    Returns
    -------
    EngineCommand
        The engine, the model string, the modelled settings, the engine defaults of the rest, and every
        other flag listed as ignored or unknown.

    Raises
    ------
    ValueError
        One line naming the flag: not an engine command, a flag without its value, a bad value, or no model.

    Examples
    --------
    >>> cmd = parse("vllm serve Qwen/Qwen3-8B -tp 2 --max-model-len=32k --foo 1")
    >>> cmd.engine, cmd.model, cmd.settings["tensor_parallel"], cmd.settings["context"], cmd.unknown_flags
    ('vllm', 'Qwen/Qwen3-8B', 2, 32000, ('--foo 1',))
    """
    tokens = _tokens(argv)
    environment = []
    while tokens and "=" in tokens[0] and not tokens[0].startswith("-") and tokens[0].split("=")[0].isidentifier():
        environment.append(tokens.pop(0))
    engine, start = detect(tokens)
    known = lookup(engine)
    settings: dict[str, Any] = {}
    modelled, ignored, unknown, positional = [], [], [], []
    i = start
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("-") or _negative(token):
            positional.append(token)
            continue
        name, equals, inline = token.partition("=")
        if engine == "vllm" and name.startswith("--"):
            name = "--" + name[2:].replace("_", "-")  # FlexibleArgumentParser: --max_model_len == --max-model-len
        flag = known.get(name)
        if flag is None:
            if not equals and i < len(tokens) and not tokens[i].startswith("-"):
                token, i = f"{token} {tokens[i]}", i + 1
            unknown.append(token)
            continue
        if flag.kind == "switch":
            if equals:
                raise ValueError(f"{name}: takes no value (got {inline!r})")
            text, shown = "true", token
        elif equals:
            text, shown = inline, token
        elif i < len(tokens) and (not tokens[i].startswith("-") or _negative(tokens[i])):
            text, shown, i = tokens[i], f"{token} {tokens[i]}", i + 1
        else:
            raise ValueError(f"{name}: expects a value")
        if flag.setting is None:
            ignored.append(shown)
            continue
        settings[flag.setting] = True if flag.kind == "switch" else value_of(flag, name, text)
        modelled.append(shown)
    model = settings.pop("model", None)
    if engine in ("vllm", "trtllm") and positional and model is None:
        model = positional.pop(0)
    unknown.extend(positional)
    if not model:
        raise ValueError(f"model: the {engine} command names no model")
    defaults = {f.setting: f.default for f in ENGINE_FLAGS[engine]
                if f.setting not in (None, "model") and f.setting not in settings}
    return EngineCommand(engine=engine, model=str(model), settings=settings, defaults=defaults,
                         flags=tuple(modelled), ignored_flags=tuple(ignored), unknown_flags=tuple(unknown),
                         environment=tuple(environment))


def _negative(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True
