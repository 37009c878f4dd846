"""Vision towers of multimodal wrappers (Gemma 3 SigLIP, Llama 4, Mistral 3 Pixtral, Qwen2.5-VL, Qwen3-VL,
InternVL's InternViT, LLaVA's CLIP, LLaVA-OneVision's SigLIP, Kimi K2.5's MoonViT) as ``Vision`` records.

``WRAPPERS`` maps a wrapper ``model_type`` to its text ``model_type`` and its vision reader; the
projector parameter counts are given in each reader's docstring and in ``gpusizer.hf``.
``TEXT_DEFAULTS`` holds the defaults of the text configuration class a wrapper builds from a
``text_config`` that leaves keys out (LLaVA-1.5's Vicuna: ``LlamaConfig``'s; LLaVA-OneVision: ``Qwen2Config``'s).
"""

from __future__ import annotations

from collections.abc import Callable

from gpusizer.catalog import Vision
from gpusizer.hf.section import Section, show

__all__ = ["TEXT_DEFAULTS", "WRAPPERS", "clip", "intern_vit", "llama4_vision", "moonvit", "onevision_siglip", "pixtral",
           "qwen3_vl", "qwen25_vl", "siglip"]


def _vit(vision: Section, *, class_token: bool, projector: int) -> Vision:
    """A ViT tower from the standard vision keys, with the projector parameter count given."""
    vision.require("hidden_size", "num_hidden_layers", "intermediate_size", "patch_size", "image_size")
    patch, image = _side(vision, "patch_size", "small"), _side(vision, "image_size", "head_dim")
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


def _side(vision: Section, key: str, limit: str) -> int:
    """A square size: an integer, or a ``[height, width]`` pair of equal integers (transformers' InternVL)."""
    value = vision.raw(key)
    if isinstance(value, list | tuple):
        if len(value) != 2 or value[0] != value[1]:
            raise ValueError(f"{vision.name(key)} must be an integer or a square [height, width], got {show(value)}")
        vision = Section({key: value[0]}, vision.where, vision.notes)
    return vision.integer(key, limit)  # type: ignore[no-any-return]


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
    tower = _vit(vision, class_token=True, projector=projector)
    return tower.model_copy(update={"spatial_merge_size": _merge(vision, "pixel_shuffle_ratio", 0.5)})


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


def moonvit(vision: Section, top: Section, text_hidden: int) -> Vision:
    """Kimi K2.5: MoonViT-3D, a ViT whose keys are ``vt_*`` (biased Conv2d patches, a learned ``init_pos_emb_height x
    init_pos_emb_width`` position grid, LayerNorm blocks with biased ``wqkv``/``wo`` and a plain GELU MLP, a final
    LayerNorm; 2-D rotary and the frames' sin-cos table are not parameters), and the ``patchmerger`` projector:
    LayerNorm (w) + Linear (w m^2 x w m^2, bias) + Linear (w m^2 x d, bias) after the ``sd2_tpool`` 2x2 merge.

    Moonshot AI, Kimi-K2.5 ``modeling_kimi_k25.py`` (``MoonVision3dPatchEmbed``,
    ``Learnable2DInterpPosEmbDivided_fixed``, ``MoonViTEncoderLayer`` with ``attn_bias=True``,
    ``MoonViT3dEncoder``, ``PatchMergerMLP``), as copied in Ascend/MindSpeed-MM,
    mindspeed_mm/fsdp/models/kimik2_5/modeling_kimi_k25.py (commit d300ee2852601b3c907406467ee29720b281f7ad).
    """
    vision.require("vt_hidden_size", "vt_num_hidden_layers", "vt_intermediate_size", "patch_size")
    for key, known in (("merge_type", "sd2_tpool"), ("mm_projector_type", "patchmerger"),
                       ("pos_emb_type", "divided_fixed")):
        if vision.text(key, known) != known:
            raise ValueError(f"{vision.name(key)} = {vision.text(key)!r}: only {known!r} is modelled (MoonViT-3D)")
    kernel = vision.items("merge_kernel_size", 2) or [2, 2]
    grid = (vision.integer("init_pos_emb_height", "small", default=64),
            vision.integer("init_pos_emb_width", "small", default=64))
    if len(kernel) != 2 or kernel[0] != kernel[1] or grid[0] != grid[1]:
        raise ValueError(f"{vision.name('merge_kernel_size')} and the position grid must be square, got "
                         f"{show(kernel)} and {show(list(grid))}")
    merge = Section({"merge_kernel_size": kernel[0]}, vision.where, vision.notes).integer("merge_kernel_size",
                                                                                          "small")
    width, patch = vision.integer("vt_hidden_size", "hidden"), vision.integer("patch_size", "small")
    merged = vision.integer("mm_hidden_size", "hidden", default=width) * merge**2
    return Vision(
        hidden_size=width,
        num_layers=vision.integer("vt_num_hidden_layers", "layers"),
        intermediate_size=vision.integer("vt_intermediate_size", "ffn"),
        patch_size=patch,
        image_size=grid[0] * patch,
        projector_params=2 * (merged // merge**2) + merged * merged + merged + merged * text_hidden + text_hidden,
        spatial_merge_size=merge,
    )


def _merge(section: Section, key: str, default: float) -> int:
    """The merge factor per side ``1 / ratio`` of a pixel-shuffle ratio ``key`` that must be ``1/k``."""
    ratio = section.raw(key)
    ratio = default if ratio is None else ratio
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 < ratio <= 1 \
            or abs(1 / ratio - round(1 / ratio)) > 1e-9:
        raise ValueError(f"{section.name(key)} must be 1/k for a whole k, got {ratio!r}")
    return round(1 / ratio)


def intern_vit(vision: Section, top: Section, text_hidden: int) -> Vision:
    """InternVL (``internvl_chat``, and transformers' ``internvl``): InternViT, a ViT with a class token, a biased
    patch embedding, layer scales ``ls1``/``ls2`` (``lambda_1``/``lambda_2``: 2w a block) and no final norm;
    projector ``mlp1`` = LayerNorm (w m^2) + Linear (w m^2 x d, bias) + Linear (d x d, bias), after a pixel
    shuffle of ``downsample_ratio`` (1/2: m = 2).

    OpenGVLab/InternVL3-1B, modeling_intern_vit.py (``InternVisionEmbeddings``, ``InternVisionEncoderLayer``) and
    modeling_internvl_chat.py (``mlp1``, ``pixel_shuffle``); its printed module tree in the source of
    ``data/model-configs/internvl3-1b.json``; transformers' models/internvl/modeling_internvl.py
    (``InternVLVisionEmbeddings``, ``InternVLVisionLayer``, ``InternVLMultiModalProjector``) for ``internvl``.
    """
    merge = _merge(top, "downsample_ratio", 0.5)
    bias = vision.flag("qkv_bias", vision.flag("attention_bias", True))
    if vision.flag("qk_normalization", False) or vision.flag("use_qk_norm", False) or not bias:
        top.notes.append("InternViT counted with a biased qkv and no query/key norms (InternViT-6B differs by "
                         "a few thousand parameters)")
    width = vision.integer("hidden_size", "hidden")
    merged = width * merge**2
    projector = 2 * merged + merged * text_hidden + text_hidden + text_hidden * text_hidden + text_hidden
    tower = _vit(vision, class_token=True, projector=projector)
    norm = "rms" if vision.text("norm_type", "layer_norm") == "rms_norm" else "layer"
    return tower.model_copy(update={"final_norm": False, "layer_scale": True, "norm": norm,
                                    "spatial_merge_size": merge})


def clip(vision: Section, top: Section, text_hidden: int) -> Vision:
    """LLaVA (``llava``, ``llava_next``): CLIP's vision transformer (class token, bias-free patch embedding,
    ``pre_layrnorm`` and ``post_layernorm``) and a projector Linear (w n x d, bias) + Linear (d x d, bias), n the
    number of ``vision_feature_layer`` entries (one for LLaVA-1.5: the penultimate layer); LLaVA-NeXT adds its
    ``image_newline`` (d).

    huggingface/transformers, src/transformers/models/clip/modeling_clip.py (``CLIPVisionEmbeddings``,
    ``CLIPVisionTransformer``) and src/transformers/models/llava/modeling_llava.py (``LlavaMultiModalProjector``).
    """
    newline = text_hidden if top.text("model_type") == "llava_next" else 0  # LLaVA-NeXT's ``image_newline``
    projector = _llava_projector(vision.integer("hidden_size", "hidden"), top, text_hidden) + newline
    tower = _vit(vision, class_token=True, projector=projector)
    return tower.model_copy(update={"patch_bias": False, "pre_norm": True, "grid_pinpoints": _pinpoints(top)})


def onevision_siglip(vision: Section, top: Section, text_hidden: int) -> Vision:
    """LLaVA-OneVision (``llava_onevision``): SigLIP's vision transformer (no class token, biased patch embedding,
    ``post_layernorm``; 26 layers in llava-hf's checkpoints), its attention-pooling ``head`` when
    ``vision_use_head`` (SiglipVisionConfig's default True; llava-hf's checkpoints set False): probe w + attention
    4w^2 + 4w + LayerNorm 2w + MLP 2wf + f + w; the projector of ``clip`` (Linear (w n x d, bias) + Linear (d x d,
    bias)) and the ``image_newline`` (d).

    huggingface/transformers, src/transformers/models/siglip/modeling_siglip.py (``SiglipVisionEmbeddings``,
    ``SiglipVisionTransformer``, ``SiglipMultiheadAttentionPoolingHead``) and
    src/transformers/models/llava_onevision/convert_llava_onevision_weights_to_hf.py (commit
    d058e0f712f346209059c8bbdcaaf5d9cd762075: ``num_hidden_layers=26``, ``vision_use_head=False``,
    ``use_image_newline_parameter=True``).
    """
    width, ffn = vision.integer("hidden_size", "hidden"), vision.integer("intermediate_size", "ffn")
    head = (4 * width * width + 2 * width * ffn + 8 * width + ffn) * vision.flag("vision_use_head", True)
    projector = _llava_projector(width, top, text_hidden) + text_hidden + head
    tower = _vit(vision, class_token=False, projector=projector)
    return tower.model_copy(update={"grid_pinpoints": _pinpoints(top)})


def _llava_projector(width: int, top: Section, text_hidden: int) -> int:
    """LLaVA's ``LlavaMultiModalProjector`` (LLaVA-NeXT's and LLaVA-OneVision's too): Linear (w n x d, bias) +
    Linear (d x d, bias), n the number of ``vision_feature_layer`` entries (1 for a single layer)."""
    layers = top.raw("vision_feature_layer")
    width_in = width * (len(top.items("vision_feature_layer", 64) or []) if isinstance(layers, list) else 1)
    bias = top.flag("multimodal_projector_bias", True)
    return (width_in + bias) * text_hidden + (text_hidden + bias) * text_hidden


def _pinpoints(top: Section) -> tuple[tuple[int, int], ...] | None:
    """LLaVA-NeXT's and LLaVA-OneVision's ``image_grid_pinpoints``: at most 64 (height, width) pairs of whole
    pixels."""
    pairs = top.items("image_grid_pinpoints", 64)
    if pairs is None:
        return None
    if not pairs or not all(isinstance(p, list | tuple) and len(p) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 65536 for v in p) for p in pairs):
        raise ValueError(f"{top.name('image_grid_pinpoints')} must list [height, width] pairs of 1 to 65536 px")
    return tuple((p[0], p[1]) for p in pairs)


_LLAMA = {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
          "num_attention_heads": 32, "max_position_embeddings": 2048}
_QWEN2 = {"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016, "num_hidden_layers": 32,
          "num_attention_heads": 32, "num_key_value_heads": 32, "max_position_embeddings": 32768,
          "sliding_window": 4096, "max_window_layers": 28}

#: Defaults of the text configuration class a wrapper builds from a ``text_config`` that leaves keys out, by the
#: wrapper's ``model_type``: (text ``model_type``, defaults). The wrapper builds ``CONFIG_MAPPING[model_type]`` of
#: the text_config (that text model_type when it names none), so the defaults apply to that model_type alone
#: (a Mistral text_config in LLaVA-NeXT gets none). huggingface/transformers: LLaVA's Vicuna ``LlamaConfig``
#: (src/transformers/models/llama/configuration_llama.py); LLaVA-OneVision's ``Qwen2Config``
#: (src/transformers/models/qwen2/configuration_qwen2.py, commit caa3177646255d2cf73626315c8582722af4749c;
#: tie_word_embeddings False and use_sliding_window False are the readers' own defaults;
#: src/transformers/models/llava_onevision/configuration_llava_onevision.py, commit
#: 04ea11d8880b62cea38d4eafaf47b49608287719, defaults the text model_type to qwen2). Standalone configs and
#: wrappers with a text configuration class of their own (Qwen2.5-VL's) keep ``DEFAULTS`` alone.
TEXT_DEFAULTS: dict[str, tuple[str, dict[str, int]]] = {
    "llava": ("llama", _LLAMA),
    "llava_next": ("llama", _LLAMA),
    "llava_onevision": ("qwen2", _QWEN2),
}


#: Multimodal wrappers: text model_type and vision reader.
WRAPPERS: dict[str, tuple[str, Callable[[Section, Section, int], Vision]]] = {
    "gemma3": ("gemma3_text", siglip),
    "internvl": ("qwen2", intern_vit),
    "internvl_chat": ("qwen2", intern_vit),
    "kimi_k25": ("kimi_k2", moonvit),
    "llava": ("llama", clip),
    "llava_next": ("llama", clip),
    "llava_onevision": ("qwen2", onevision_siglip),
    "llama4": ("llama4_text", llama4_vision),
    "mistral3": ("mistral", pixtral),
    "qwen2_5_vl": ("qwen2", qwen25_vl),
    "qwen3_vl": ("qwen3", qwen3_vl),
}
