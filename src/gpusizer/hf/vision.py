"""Vision towers of multimodal wrappers (Gemma 3 SigLIP, Llama 4, Mistral 3 Pixtral, Qwen2.5-VL, Qwen3-VL) as
``Vision`` records.

``WRAPPERS`` maps a wrapper ``model_type`` to its text ``model_type`` and its vision reader; the
projector parameter counts are given in each reader's docstring and in ``gpusizer.hf``.
"""

from __future__ import annotations

from collections.abc import Callable

from gpusizer.catalog import Vision
from gpusizer.hf.section import Section

__all__ = ["WRAPPERS", "llama4_vision", "pixtral", "qwen3_vl", "qwen25_vl", "siglip"]


def _vit(vision: Section, *, class_token: bool, projector: int) -> Vision:
    """A ViT tower from the standard vision keys, with the projector parameter count given."""
    vision.require("hidden_size", "num_hidden_layers", "intermediate_size", "patch_size", "image_size")
    patch, image = vision.integer("patch_size", "small"), vision.integer("image_size", "head_dim")
    if patch > image:
        raise ValueError(f"{vision.name('patch_size')} = {patch} exceeds image_size = {image}")
    return Vision(
        hidden_size=vision.integer("hidden_size", "hidden"),
        num_layers=vision.integer("num_hidden_layers", "layers"),
        intermediate_size=vision.integer("intermediate_size", "ffn"),
        patch_size=patch,
        image_size=image,
        num_channels=vision.integer("num_channels", "small", default=3),
        class_token=class_token,
        projector_params=projector,
    )


def siglip(vision: Section, top: Section, text_hidden: int) -> Vision:
    """Gemma 3: SigLIP; projector = mm_input_projection (w x d) + mm_soft_emb_norm (w)."""
    width = vision.integer("hidden_size", "hidden")
    return _vit(vision, class_token=False, projector=width * text_hidden + width)


def llama4_vision(vision: Section, top: Section, text_hidden: int) -> Vision:
    """Llama 4: adapter fc1 (f x p_in) + fc2 (p_out x p_out) + projector (v_out x d), no biases."""
    vision.require("intermediate_size", "projector_input_dim", "projector_output_dim", "vision_output_dim")
    inner = vision.integer("intermediate_size", "ffn")
    p_in, p_out = vision.integer("projector_input_dim", "ffn"), vision.integer("projector_output_dim", "ffn")
    projector = inner * p_in + p_out * p_out + vision.integer("vision_output_dim", "ffn") * text_hidden
    shuffle = vision.raw("pixel_shuffle_ratio")
    shuffle = 0.5 if shuffle is None else shuffle
    if isinstance(shuffle, bool) or not isinstance(shuffle, int | float) or not 0 < shuffle <= 1 \
            or abs(1 / shuffle - round(1 / shuffle)) > 1e-9:
        raise ValueError(f"{vision.name('pixel_shuffle_ratio')} must be 1/k for a whole k, got {shuffle!r}")
    tower = _vit(vision, class_token=True, projector=projector)
    return tower.model_copy(update={"spatial_merge_size": round(1 / shuffle)})


def pixtral(vision: Section, top: Section, text_hidden: int) -> Vision:
    """Mistral 3: RMSNorm (w) + patch merger (w s^2 x w) + linear_1 (w x d) + linear_2 (d x d)."""
    width = vision.integer("hidden_size", "hidden")
    merge = top.integer("spatial_merge_size", "small", default=2)
    bias = top.flag("multimodal_projector_bias", False)
    projector = width + width * merge**2 * width + (width + bias) * text_hidden + (text_hidden + bias) * text_hidden
    top.notes.append(
        "Pixtral vision tower counted as a ViT (plain GELU MLP, LayerNorm); it uses a gated MLP "
        "and RMSNorm, about a quarter more parameters"
    )
    return _vit(vision, class_token=False, projector=projector).model_copy(update={"spatial_merge_size": merge})


def qwen25_vl(vision: Section, top: Section, text_hidden: int) -> Vision:
    """Qwen2.5-VL: rotary ViT (Conv3d patches, no bias; RMSNorm; gated MLP with biases) and a merger of RMSNorm
    (w) + Linear (w m^2 x w m^2, bias) + Linear (w m^2 x ``out_hidden_size``, bias).

    huggingface/transformers, src/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py
    (``Qwen2_5_VisionPatchEmbed``, ``Qwen2_5_VLVisionBlock``, ``Qwen2_5_VLPatchMerger``). The tower has no fixed
    input size: ``image_size`` is set to one patch (it sizes only position embeddings, which it has none of).
    """
    vision.require("depth", "hidden_size", "intermediate_size", "patch_size", "out_hidden_size")
    width, patch = vision.integer("hidden_size", "hidden"), vision.integer("patch_size", "small")
    merge = vision.integer("spatial_merge_size", "small", default=2)
    merged = width * merge**2
    out = vision.integer("out_hidden_size", "hidden")
    return Vision(
        hidden_size=width,
        num_layers=vision.integer("depth", "layers"),
        intermediate_size=vision.integer("intermediate_size", "ffn"),
        patch_size=patch,
        image_size=patch,
        num_channels=vision.integer("in_channels", "small", default=3),
        projector_params=width + merged * merged + merged + merged * out + out,
        gated_mlp=True,
        norm="rms",
        temporal_patch_size=vision.integer("temporal_patch_size", "small", default=2),
        position_embeddings=False,
        patch_bias=False,
        final_norm=False,
        spatial_merge_size=merge,
    )


def qwen3_vl(vision: Section, top: Section, text_hidden: int) -> Vision:
    """Qwen3-VL: a ViT with a biased Conv3d patch embedding, learned position embeddings
    (``num_position_embeddings``, a square grid, interpolated), LayerNorm blocks with a plain GELU MLP, no final
    norm; a merger of LayerNorm (w) + Linear (w m^2 x w m^2, bias) + Linear (w m^2 x ``out_hidden_size``, bias),
    and one more merger per ``deepstack_visual_indexes`` entry whose LayerNorm acts after the shuffle (w m^2).

    huggingface/transformers, src/transformers/models/qwen3_vl/modeling_qwen3_vl.py (``Qwen3VLVisionPatchEmbed``,
    ``Qwen3VLVisionBlock``, ``Qwen3VLVisionPatchMerger``, ``deepstack_merger_list``).
    """
    vision.require("depth", "hidden_size", "intermediate_size", "patch_size", "out_hidden_size",
                   "num_position_embeddings")
    width, patch = vision.integer("hidden_size", "hidden"), vision.integer("patch_size", "small")
    merge = vision.integer("spatial_merge_size", "small", default=2)
    positions = vision.integer("num_position_embeddings", "vocab")
    side = round(positions**0.5)
    if side * side != positions:
        raise ValueError(f"{vision.name('num_position_embeddings')} = {positions} is not a square grid")
    deepstack = vision.items("deepstack_visual_indexes", 64) or []
    merged, out = width * merge**2, vision.integer("out_hidden_size", "hidden")
    linear = merged * merged + merged + merged * out + out
    return Vision(
        hidden_size=width,
        num_layers=vision.integer("depth", "layers"),
        intermediate_size=vision.integer("intermediate_size", "ffn"),
        patch_size=patch,
        image_size=side * patch,
        num_channels=vision.integer("in_channels", "small", default=3),
        projector_params=2 * width + linear + len(deepstack) * (2 * merged + linear),
        temporal_patch_size=vision.integer("temporal_patch_size", "small", default=2),
        final_norm=False,
        spatial_merge_size=merge,
    )


#: Multimodal wrappers: text model_type and vision reader.
WRAPPERS: dict[str, tuple[str, Callable[[Section, Section, int], Vision]]] = {
    "gemma3": ("gemma3_text", siglip),
    "llama4": ("llama4_text", llama4_vision),
    "mistral3": ("mistral", pixtral),
    "qwen2_5_vl": ("qwen2", qwen25_vl),
    "qwen3_vl": ("qwen3", qwen3_vl),
}
