r"""Images and video frames in a request to a vision-language model: their tokens and encoder work.

``Images`` (a record: how many images, their size, video frames) is what ``estimate(..., images=...)``
takes. ``image_tokens`` applies the model family's published token rule (``gpusizer.images``) to the
model's vision tower; the estimator adds those tokens to every sequence's context and to the prompt, so
that the KV cache, the maximum concurrency, the prefill and the time to first token all hold them;
``encode`` then adds the vision encoder's forward pass at the prefill's achieved FLOP rate. The rules:

* Gemma 3: a fixed 256 tokens per image (``mm_tokens_per_image``) from 896x896 px (4096 SigLIP patches),
  whatever the image size; with pan-and-scan (``Images(pan_and_scan=True)``, off by default as in the processor)
  each of the ``images.gemma3_crops`` crops of an elongated image is one more such image, encoded on its own (the
  text the processor writes around the crops is not counted). Other families refuse pan-and-scan.
* Qwen2-VL / Qwen2.5-VL (14 px patches) and Qwen3-VL (16 px): ``images.qwen_tokens``, 2x2 merge,
  video frames in temporal patches of 2.
* Mistral 3 / Pixtral: ``images.pixtral_tokens`` (rows of merged patches plus a break per row), with the
  tower's patch, its ``spatial_merge_size`` and its ``image_size`` as the longest edge;
* Llama 4: ``images.llama4_tokens`` (336 px tiles up to 16, a global tile, 144 tokens a tile).
* InternVL: ``images.internvl_tokens`` (448 px tiles up to 12, the aspect ratio closest to the image's, a
  thumbnail when there is more than one; ``(448/14)^2 / 2^2`` = 256 tokens a tile after the pixel shuffle); a
  video of ``F`` frames is ``F`` single tiles (the model card's ``load_video(..., max_num=1)``), 256 tokens each.
* LLaVA-NeXT: ``images.llava_next_tokens`` (anyres: the ``image_grid_pinpoints`` canvas in 336 px tiles, a newline
  token a row, the base image's 576 tokens); 1024x768 on the v1.6 pinpoints: 2340 tokens.
* LLaVA-1.5: a fixed ``(336/14)^2`` = 576 tokens per image (the CLIP patches of the image resized to 336 px; the
  ``default`` feature strategy drops the class token, which the encoder still sees: 577 patches).
* LLaVA-OneVision: ``images.llava_onevision_tokens`` (anyres-max-9: the canvas of 384 px SigLIP tiles, its features
  shrunk to about 9 tiles' worth, a newline token a row, the base image's 729 tokens; 1024x768: 4725 tokens); a
  video of ``F`` frames is ``F`` 384 px images pooled 2x2 to 196 tokens each, plus one newline.
* Kimi K2.5: ``images.kimi_tokens`` (native resolution within 16384 patches and 512 a side, padded to whole 2x2
  merges, one token each: 1024x768 is 1036 tokens).

Families without a published rule here raise ``ValueError`` rather than guess.

References
----------
.. [1] google/gemma-3-27b-it, config.json ``mm_tokens_per_image`` 256 and processor_config.json
   ``image_seq_length`` 256 (https://huggingface.co/google/gemma-3-27b-it, checked 2026-12-03); Gemma Team,
   arXiv:2503.19786, 2025.
.. [2] huggingface/transformers, src/transformers/models/qwen2_vl/image_processing_qwen2_vl.py
   (commit cb0fc56f3caccab77d00d44051a67d4b0980cbd2).
.. [3] huggingface/transformers, src/transformers/models/pixtral/image_processing_pixtral.py
   (commit c801cd786e2e8cd35767125b8a8e8c26538fb648).
.. [4] OpenGVLab/InternVL3-1B model card, ``dynamic_preprocess`` (448 px tiles, ``max_num`` 12, thumbnail) and
   config.json (``force_image_size`` 448, ``downsample_ratio`` 0.5, ``max_dynamic_patch`` 12), revision
   4415a3b810e636d11dfa86b0e9ba40bb00535aa8; ``images.internvl_tiles``' reference for the grid rule; the card's
   video example (``load_video``, ``max_num=1``) in shivangjhalani/multicoco:InternVL3-1B_README.md (commit
   5acca2879ab1cd0c2e2a8f0e734496f0d73b7f8c).
.. [5] huggingface/transformers, src/transformers/models/llava/processing_llava.py (commit
   79f1fc71ad1e0220e2b05723f5fd2e14bc270de5), ``LlavaProcessor.__call__``: ``(height // patch_size) * (width //
   patch_size) + num_additional_image_tokens``, less one for the ``default`` strategy, on the 336 px crop.
.. [6] huggingface/transformers, src/transformers/models/llava_next/processing_llava_next.py (commit
   81bb907ccf3494b5409b0b745bb10c8a617050b7), ``_get_number_of_features``.
.. [7] Moonshot AI, Kimi-K2.5 media_utils.py, ``navit_resize_image`` (``images.kimi_tokens``' reference).
.. [8] huggingface/transformers, src/transformers/models/llava_onevision/processing_llava_onevision.py (commit
   d2759a76fd10845a9c010ac0693fdc3b6b924050), ``_get_number_of_features`` and the video token count.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from gpusizer import architecture, catalog, images, performance
from gpusizer.checks import scalar_or_array
from gpusizer.numeric import number, where
from gpusizer.records import Record

__all__ = ["GEMMA3_TOKENS", "ImageLoad", "Images", "encode", "encoder_seconds", "image_tokens"]

#: Gemma 3's tokens per image (``mm_tokens_per_image``). [token]
GEMMA3_TOKENS = 256


class Images(Record):
    """Images (or one video) in every request: ``Images(count=2, width=1024, height=768)``."""

    count: int = Field(default=1, ge=0, le=4096)
    """Images per request (0: none, today's text-only answer). [-]"""
    width: int = Field(default=1024, ge=1, le=65536)
    """Image width before the processor resizes it. [px]"""
    height: int = Field(default=768, ge=1, le=65536)
    """Image height. [px]"""
    frames: int = Field(default=1, ge=1, le=65536)
    """Video frames sampled per video (1: a still image); Qwen-VL, InternVL and LLaVA-OneVision only. [-]"""
    pan_and_scan: bool = False
    """Gemma 3's pan-and-scan (``do_pan_and_scan``): crops of an elongated image added as more images. [-]"""


@dataclass(frozen=True)
class ImageLoad:
    """What the images of one request cost (``Estimate.images``)."""

    rule: str
    """The token rule applied (``"gemma3"``, ``"qwen"``, ``"pixtral"``, ``"llama4"``, ``"internvl"``, ``"llava"``,
    ``"llava_next"``, ``"llava_onevision"``, ``"kimi"``)."""
    count: int
    image_tokens_per_request: float
    """LLM tokens all the images of one request become (added to ``context`` and the prompt). [token]"""
    patches_per_request: float
    """ViT patches the encoder attends over for them. [token]"""
    encoder_flops: Any
    """The vision encoder's forward pass over them (``images.encoder_flops``). [FLOP]"""
    encoder_seconds_ceiling: Any
    encoder_seconds_expected: Any
    """Encoder time at the prefill's ceiling and expected FLOP rates (``encoder_seconds``); expected None where
    the prefill's is (``prefill.unknown``). [s]"""
    ttft_seconds_ceiling: Any
    ttft_seconds_expected: Any
    """Time to first token: the encoder, then the prefill of the prompt with its image tokens. [s]"""
    vision_weights_bytes: float
    """The vision tower and projector at the activation dtype (inside ``memory.weights_bytes``). [B]"""


def _grid(vision: catalog.Vision) -> int:
    """ViT patches of one tile or fixed-size image."""
    return (vision.image_size // vision.patch_size) ** 2


def _gemma3(vision: catalog.Vision, shown: Images) -> tuple[Any, Any]:
    crops = images.gemma3_crops(shown.height, shown.width) if shown.pan_and_scan else 0.0
    return GEMMA3_TOKENS * (1.0 + crops), _grid(vision) * (1.0 + crops)


def _llava(vision: catalog.Vision, shown: Images) -> tuple[Any, Any]:
    return float(_grid(vision)), float(_grid(vision) + vision.class_token)


def _llava_next(vision: catalog.Vision, shown: Images) -> tuple[Any, Any]:
    return images.llava_next_tokens(shown.height, shown.width, tile=vision.image_size, patch=vision.patch_size,
                                    pinpoints=vision.grid_pinpoints or images.LLAVA_NEXT_PINPOINTS)


def _llava_onevision(vision: catalog.Vision, shown: Images) -> tuple[Any, Any]:
    if shown.frames > 1:
        return images.llava_onevision_video_tokens(shown.frames, tile=vision.image_size, patch=vision.patch_size)
    return images.llava_onevision_tokens(shown.height, shown.width, tile=vision.image_size, patch=vision.patch_size,
                                         pinpoints=vision.grid_pinpoints or images.LLAVA_ONEVISION_PINPOINTS)


def _internvl(vision: catalog.Vision, shown: Images) -> tuple[Any, Any]:
    per_tile = _grid(vision) // vision.spatial_merge_size**2
    if shown.frames > 1:  # the model card's load_video: every frame one tile (max_num=1), no thumbnail
        return float(shown.frames * per_tile), float(shown.frames * _grid(vision))
    return images.internvl_tokens(shown.height, shown.width, tile=vision.image_size, tokens_per_tile=per_tile)


def _qwen(vision: catalog.Vision, shown: Images) -> tuple[Any, Any]:
    return images.qwen_tokens(shown.height, shown.width, patch=vision.patch_size, frames=shown.frames)


def _llama4(vision: catalog.Vision, shown: Images) -> tuple[Any, Any]:
    return images.llama4_tokens(shown.height, shown.width, tile=vision.image_size, patch=vision.patch_size,
                                merge=vision.spatial_merge_size)


def _kimi(vision: catalog.Vision, shown: Images) -> tuple[Any, Any]:
    return images.kimi_tokens(shown.height, shown.width, patch=vision.patch_size, merge=vision.spatial_merge_size)


def _pixtral(vision: catalog.Vision, shown: Images) -> tuple[Any, Any]:
    return images.pixtral_tokens(shown.height, shown.width, patch=vision.patch_size,
                                 merge=vision.spatial_merge_size, longest_edge=vision.image_size)


#: Each rule's tokens and patches of one image (or video): the published rules above.
_RULES: dict[str, Callable[[catalog.Vision, Images], tuple[Any, Any]]] = {
    "gemma3": _gemma3, "qwen": _qwen, "pixtral": _pixtral, "llama4": _llama4, "internvl": _internvl,
    "llava": _llava, "llava_next": _llava_next, "llava_onevision": _llava_onevision, "kimi": _kimi,
}

#: Rules with a video rule (``Images.frames`` > 1).
_VIDEO_RULES = ("qwen", "internvl", "llava_onevision")

#: Rules whose patches the encoder sees one tile or crop at a time (attention within each).
_TILED_RULES = ("llama4", "internvl", "gemma3", "llava_next", "llava_onevision")

#: The rule of a ``Model.family`` by its prefix (lower case, no spaces, dashes or underscores); the first match
#: wins.
_FAMILIES: tuple[tuple[str, str | None], ...] = (
    ("gemma3", "gemma3"), ("qwen2vl", "qwen"), ("qwen2.5vl", "qwen"), ("qwen25vl", "qwen"), ("qwen3vl", "qwen"),
    ("mistral3", "pixtral"), ("pixtral", "pixtral"), ("mistralsmall3", "pixtral"), ("llama4", "llama4"),
    ("internvl", "internvl"), ("llavanext", "llava_next"), ("llava1.6", "llava_next"),
    ("llavaonevision", "llava_onevision"), ("llava", "llava"), ("kimik2", "kimi"),
)


def _rule(model: catalog.Model) -> str:
    family = model.family.lower().replace(" ", "").replace("-", "").replace("_", "")  # "Qwen2.5-VL", "qwen3_vl"
    rule = next((rule for prefix, rule in _FAMILIES if family.startswith(prefix)), None)
    if rule is None:
        raise ValueError(f"images: no published image-token rule is modelled for {model.id} ({model.family})")
    return rule


def image_tokens(model: catalog.Model, shown: Images) -> tuple[str, float, float]:
    """The rule, LLM tokens and ViT patches of the images of one request. [token]

    Raises
    ------
    ValueError
        ``images`` on a model without a vision tower, or without a modelled rule; pan-and-scan on a model other
        than Gemma 3; video frames on a model other than Qwen-VL, InternVL and LLaVA-OneVision (``_VIDEO_RULES``).
    """
    if shown.count == 0:
        return "none", 0.0, 0.0
    vision = model.vision
    if vision is None:
        raise ValueError(f"images: {model.id} has no vision tower")
    rule = _rule(model)
    if shown.pan_and_scan and rule != "gemma3":
        raise ValueError(f"images: pan-and-scan is Gemma 3's rule; {model.id} ({model.family}) has none")
    if shown.frames > 1 and rule not in _VIDEO_RULES:
        raise ValueError(f"images: frames = {shown.frames}: video is modelled for Qwen-VL, InternVL and "
                         "LLaVA-OneVision only")
    tokens, patches = _RULES[rule](vision, shown)
    return rule, shown.count * float(tokens), shown.count * float(patches)


def encoder_seconds(flops: Any, prefill_flops: Any, prefill_seconds: Any) -> Any:
    r"""Encoder time at the FLOP rate the prefill achieves. [s]

    :math:`t = F_\text{enc} \, t_\text{prefill} / F_\text{prefill}`: the ViT's GEMMs run on the same GPUs at
    the same efficiency as the LLM's prefill GEMMs (an assumption; encoders are small and may run slower).
    """
    f, pf, ps = number(flops), number(prefill_flops), number(prefill_seconds)
    return scalar_or_array(where(pf > 0, f * ps / where(pf > 0, pf, 1.0), 0.0))


def encode(model: catalog.Model, shown: Images, rule: str, tokens: float, patches: float,
           prefill: performance.Prefill, act_bpe: float) -> ImageLoad:
    """The ``ImageLoad`` of the images, given the prefill that already holds their tokens.

    Every encoder layer attends over all the patches of an image (of a video's temporal group of 2 frames, as
    Qwen-VL's attention is cut per group; of a Llama 4 tile): an upper bound for Qwen2.5-VL, whose 28 of 32
    window-attention blocks attend within 64 patches (attention is 2.6 of its 7.7 TFLOP for a 1024x768 image).
    """
    vision = model.vision
    if vision is None or shown.count == 0:
        flops, weights = 0.0, 0.0
    else:
        groups = float(shown.count * (-(-shown.frames // 2) if rule == "qwen" else 1))  # a video: per temporal group
        if rule in _TILED_RULES:  # every tile or crop alone (a LLaVA-NeXT tile with its class token)
            groups = patches / (_grid(vision) + (rule == "llava_next"))
        flops = groups * images.encoder_flops(patches / groups, vision.hidden_size, vision.intermediate_size,
                                              vision.num_layers, gated=vision.gated_mlp)
        weights = architecture.vit_params(vision) * act_bpe
    ceiling = encoder_seconds(flops, prefill.flops, prefill.seconds_ceiling)
    known = prefill.seconds_expected is not None  # None where the GPU's matrix rate is unpublished (prefill.unknown)
    expected = encoder_seconds(flops, prefill.flops, prefill.seconds_expected) if known else None
    return ImageLoad(
        rule=rule, count=shown.count, image_tokens_per_request=tokens, patches_per_request=patches,
        encoder_flops=flops, encoder_seconds_ceiling=ceiling, encoder_seconds_expected=expected,
        ttft_seconds_ceiling=scalar_or_array(number(prefill.ttft_seconds_ceiling) + number(ceiling)),
        ttft_seconds_expected=scalar_or_array(number(prefill.ttft_seconds_expected) + number(expected))
        if known else None,
        vision_weights_bytes=float(weights),
    )
