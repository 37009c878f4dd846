"""The image flags of ``gpusizer fit`` and ``gpusizer shortlist``, and their output.

``--images N``, ``--image-size WxH``, ``--video-frames F`` and ``--pan-and-scan`` become a ``multimodal.Images``;
``text`` shows an ``Estimate.images``; ``workload`` adds the image tokens to a shortlist's mean prompt. Parsing and
output only.
"""

from __future__ import annotations

import argparse
from typing import Any

from gpusizer import catalog, multimodal
from gpusizer.commands.common import CommandError

__all__ = ["add_arguments", "images", "text", "workload"]


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels (1024x768), got {text!r}") from None
    if not (1 <= width <= 65536 and 1 <= height <= 65536):
        raise argparse.ArgumentTypeError(f"image sides must be from 1 to 65536 px, got {text!r}")
    return width, height


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 0 <= value <= 4096:
        raise argparse.ArgumentTypeError(f"must be from 0 to 4096, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the image flags."""
    group = parser.add_argument_group("images and video (docs/vision.md)")
    group.add_argument("--images", type=_count, default=None,
                       help="images in every request to a vision-language model (gemma-3-27b --images 2)")
    group.add_argument("--image-size", type=_size, default=None,
                       help="their size WIDTHxHEIGHT before resizing (default 1024x768; Gemma 3 always 256 tokens)")
    group.add_argument("--video-frames", type=_count, default=None,
                       help="frames of one video per request (Qwen-VL: temporal patches of 2; InternVL: a tile each; "
                       "LLaVA-OneVision: 196 tokens each)")
    group.add_argument("--pan-and-scan", action="store_true",
                       help="Gemma 3's pan-and-scan: crops of an elongated image (up to 4) as more images")


def images(args: argparse.Namespace) -> multimodal.Images | None:
    """The ``Images`` the flags ask for, or None without ``--images`` and ``--video-frames``."""
    count, size, frames = (getattr(args, name, None) for name in ("images", "image_size", "video_frames"))
    pan = bool(getattr(args, "pan_and_scan", False))
    if count is None and frames is None:
        if size is not None or pan:
            raise CommandError(f"{'--image-size' if size is not None else '--pan-and-scan'} needs --images or "
                               "--video-frames")
        return None
    width, height = size or (1024, 768)
    return multimodal.Images(count=1 if count is None else count, width=width, height=height, frames=frames or 1,
                             pan_and_scan=pan)


def workload(args: argparse.Namespace, record: catalog.Model, traffic: Any) -> Any:
    """``traffic`` (a ``serving.Workload``) with the image tokens added to its mean prompt (the encoder's time is
    not in a shortlist's TTFT)."""
    shown = images(args)
    if shown is None:
        return traffic
    try:
        _, tokens, _ = multimodal.image_tokens(record, shown)
    except ValueError as error:
        raise CommandError(str(error)) from None
    return traffic.model_copy(update={"prompt_tokens": traffic.prompt_tokens + tokens})


def text(result: Any) -> str:
    """The readable lines of ``Estimate.images``."""
    s = result.images
    return (f"Images: {s.count} per request ({s.rule} rule): {s.image_tokens_per_request:,.0f} image tokens "
            f"(in context, KV cache and prefill), {s.patches_per_request:,.0f} encoder patches; encoder "
            f"{float(s.encoder_flops) / 1e12:,.2f} TFLOP, {float(s.encoder_seconds_expected) * 1e3:,.1f} ms; TTFT "
            f"with encoder {float(s.ttft_seconds_expected):,.3f} s (ceiling {float(s.ttft_seconds_ceiling):,.3f} s); "
            f"vision weights {s.vision_weights_bytes / 1e9:,.2f} GB")
