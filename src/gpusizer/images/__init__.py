r"""Images and video frames as LLM tokens, and the vision-encoder work they cost.

Pure functions of numbers that broadcast like numpy ufuncs, one module per rule family (``qwen``,
``pixtral``, ``llama4``, ``internvl``, ``llava``, ``onevision``, ``gemma``, ``kimi``) and the encoder's work
(``encoder``); every public name is importable from ``gpusizer.images``. A vision-language model turns an image
into placeholder tokens of its LLM's sequence, which occupy the KV cache and the prefill like text
tokens; the vision encoder (a ViT) first runs over the image's patches. Each model family publishes
its own rule for the token count:

* Qwen2-VL, Qwen2.5-VL (14 px patches) and Qwen3-VL (16 px patches): dynamic resolution. The image
  is resized so that each side is a multiple of ``patch * merge`` and the pixel count lies within
  ``[min_pixels, max_pixels]`` (``qwen_resized``); the ViT sees one patch per ``patch x patch`` square
  and a 2x2 merger makes one token of four patches (``qwen_tokens``); video frames are grouped by
  the temporal patch (2).
* Gemma 3: every image is resized to 896x896 (4096 SigLIP patches of 14 px) and pooled to a fixed
  256 tokens (``mm_tokens_per_image``); with pan-and-scan (off by default) each crop of an elongated
  image is one more such image (``gemma3_crops``).
* Pixtral and Mistral 3: the image is scaled down to fit ``longest_edge``, cut into patches of
  ``patch * merge`` pixels, one token each, with an ``[IMG_BREAK]`` after every row (the last one is
  ``[IMG_END]``) (``pixtral_tokens``).
* Llama 4: the image is fitted, without distortion, to the canvas of ``rows x cols`` tiles of 336 px
  (``rows * cols <= max_patches``, 16) that needs the least upscaling (or, failing any, the least
  downscaling), the smallest such canvas; each tile is 24 x 24 patches of 14 px, pixel-shuffled by 1/2
  to 144 tokens; with more than one tile a global tile (the whole image at 336 px) follows, with one
  separator token after each tile and the ``<|image|>`` token before the global tile (``llama4_tiles``,
  ``llama4_tokens``).
* LLaVA-NeXT (anyres): the ``image_grid_pinpoints`` canvas showing the most pixels, in 336 px tiles of 24 x 24
  features less the padding rows, each row ending in an ``image_newline``, and the image at 336 px (576 tokens).
* InternVL: the image is split into ``cols x rows`` tiles of 448 px (``min_tiles <= cols * rows <=
  max_tiles``) whose aspect ratio is closest to the image's, plus a thumbnail tile when there is more than
  one; 256 tokens a tile (``internvl_tiles``, ``internvl_tokens``).
* LLaVA-OneVision (anyres-max-9): LLaVA-NeXT's canvas choice over 384 px SigLIP tiles (27 x 27 features each),
  unpadded, then shrunk by ``q = sqrt(features / (9 * 729))`` when ``q > 1.1``, a newline a row, plus the 729 of
  the base image (``llava_onevision_tokens``; videos ``llava_onevision_video_tokens``).
* Kimi K2.5 (MoonViT): the image scaled down (never up) to at most ``in_patch_limit`` patches of 14 px and
  ``patch_limit_on_one_side`` a side, padded to whole 2x2 merges, one token a merge (``kimi_tokens``).

The delimiters Qwen (``<|vision_start|>``, ``<|vision_end|>``) and Gemma 3 (``<start_of_image>``,
``<end_of_image>``) add around each image are not counted (2 tokens an image).

References
----------
.. [1] huggingface/transformers, src/transformers/models/qwen2_vl/image_processing_qwen2_vl.py
   (commit cb0fc56f3caccab77d00d44051a67d4b0980cbd2), ``smart_resize``; Qwen2.5-VL's
   preprocessor_config.json: ``min_pixels`` 3136, ``max_pixels`` 12845056, patch 14, merge 2,
   temporal patch 2 (https://huggingface.co/Qwen/Qwen2.5-VL-7B-Instruct/blob/main/preprocessor_config.json).
.. [2] huggingface/transformers, src/transformers/models/pixtral/image_processing_pixtral.py
   (commit c801cd786e2e8cd35767125b8a8e8c26538fb648), ``get_resize_output_image_size``.
.. [3] Gemma Team, "Gemma 3 technical report," arXiv:2503.19786, 2025 (896x896 input, 256 tokens).
.. [4] huggingface/transformers, src/transformers/models/llama4/image_processing_llama4_fast.py (commit
   e1b551679e267be053b45581cbabd028a14defd2), ``find_supported_resolutions``, ``get_best_fit``, the global
   tile in ``_preprocess``; src/transformers/models/llama4/processing_llama4.py (commit
   f5d3f1e134fe49e8dd4009846e54c1ccfe747328), ``_prompt_split_image`` and ``num_patches_per_chunk``.
.. [5] huggingface/transformers, src/transformers/models/got_ocr2/image_processing_got_ocr2.py (commit
   66951798c714fe51da4968c5034a350687ffc413), ``find_closest_aspect_ratio`` and ``crop_to_multi_image``
   (InternVL's ``dynamic_preprocess``: 448 px tiles, thumbnail, ``max_num`` 12 on the InternVL2.5/3 cards).
.. [6] huggingface/transformers, src/transformers/models/gemma3/image_processing_gemma3.py (commit
   a391a51d5a0f01de151d84427aabaefea4e7fb85), ``pan_and_scan``; processing_gemma3.py, ``Gemma3ProcessorKwargs``
   defaults: ``do_pan_and_scan`` False, ``pan_and_scan_min_crop_size`` 256, ``pan_and_scan_max_num_crops`` 4,
   ``pan_and_scan_min_ratio_to_activate`` 1.2.
.. [7] huggingface/transformers, src/transformers/image_processing_utils.py (commit
   091630d58781404f2b35a7f5dff1c29bda71b549), ``select_best_resolution``; models/llava_next/processing_llava_next.py
   (commit 81bb907ccf3494b5409b0b745bb10c8a617050b7), ``_get_number_of_features``, ``_get_unpadded_features``.
.. [8] huggingface/transformers, src/transformers/models/llava_onevision/processing_llava_onevision.py (commit
   d2759a76fd10845a9c010ac0693fdc3b6b924050), ``_get_number_of_features`` (anyres_max_9).
"""

from __future__ import annotations

from gpusizer.images.encoder import encoder_flops
from gpusizer.images.gemma import gemma3_crops
from gpusizer.images.internvl import internvl_tiles, internvl_tokens
from gpusizer.images.kimi import kimi_tokens
from gpusizer.images.llama4 import llama4_tiles, llama4_tokens
from gpusizer.images.llava import LLAVA_NEXT_PINPOINTS, llava_next_resolution, llava_next_tokens
from gpusizer.images.onevision import LLAVA_ONEVISION_PINPOINTS, llava_onevision_tokens, llava_onevision_video_tokens
from gpusizer.images.pixtral import pixtral_tokens
from gpusizer.images.qwen import qwen_resized, qwen_tokens

__all__ = [
    "LLAVA_NEXT_PINPOINTS",
    "LLAVA_ONEVISION_PINPOINTS",
    "encoder_flops",
    "gemma3_crops",
    "internvl_tiles",
    "internvl_tokens",
    "kimi_tokens",
    "llama4_tiles",
    "llama4_tokens",
    "llava_next_resolution",
    "llava_next_tokens",
    "llava_onevision_tokens",
    "llava_onevision_video_tokens",
    "pixtral_tokens",
    "qwen_resized",
    "qwen_tokens",
]
