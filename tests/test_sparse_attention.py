"""DeepSeek Sparse Attention (DSA): the indexer's weights and key cache, and attention capped at top-k keys.

Figures of DeepSeek-V3.2 (config.json: index_n_heads 64, index_head_dim 128, index_topk 2048, 61 layers,
MLA kv_lora_rank 512 + qk_rope_head_dim 64 = 576 cached elements per token and layer) and of the official
inference code, deepseek-ai/DeepSeek-V3.2-Exp:inference/model.py@6d8cb70dfdd6f37c83c5208105a3e2c8da117485
(``Indexer``: k_cache FP8 of index_head_dim, k_scale_cache FP32 of index_head_dim / 128 per token).
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from gpusizer import architecture, catalog, estimator, memory, step
from gpusizer.hf import from_hf_config

V3, V32 = catalog.model("deepseek-v3"), catalog.model("deepseek-v3.2")
CONTEXT = 131072


def test_the_importer_reads_the_indexer_from_the_config():
    sparse = V32.sparse_attention
    assert (sparse.index_n_heads, sparse.index_head_dim, sparse.index_topk) == (64, 128, 2048)
    assert V3.sparse_attention is None


def test_a_config_with_only_some_indexer_keys_is_refused():
    config = {"model_type": "deepseek_v32", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "vocab_size": 100, "intermediate_size": 128, "moe_intermediate_size": 32, "n_routed_experts": 4,
              "num_experts_per_tok": 2, "q_lora_rank": 32, "kv_lora_rank": 16, "qk_nope_head_dim": 16,
              "qk_rope_head_dim": 8, "v_head_dim": 16, "index_topk": 8}
    with pytest.raises(ValueError, match="index_n_heads"):
        from_hf_config(config)


def test_indexer_weights_per_layer():
    # wq_b 1536 x 64*128 = 12,582,912; wk 7168 x 128 = 917,504; weights_proj 7168 x 64 = 458,752;
    # LayerNorm on the key 2 x 128 = 256: 13,959,168 matrix + 256 vector per layer, 61 layers
    # -> V3.2's main model is V3's plus 61 x 13,959,424 = 851,524,864 parameters.
    per_layer = 13_959_168 + 256
    gap = architecture.parameter_counts(V32).main - architecture.parameter_counts(V3).main
    assert gap == 61 * per_layer == 851_524_864


def test_indexer_key_cache_is_added_to_the_kv_cache():
    # 61 layers x 128 elements x (1 B FP8 + 4 B FP32 scale / 128) = 61 x 132 = 8,052 B per token, on top of
    # V3's 61 x 576 latent elements (bf16: 70,272 B per token).
    layout = architecture.kv_layout(V32)
    assert layout.indexed == 8052 and layout.full == architecture.kv_layout(V3).full == 61 * 576
    assert memory.sequence_cache_bytes(CONTEXT, layout, 2.0) == CONTEXT * (70272 + 8052)
    # every tensor-parallel rank holds the indexer keys whole (the MLA latent too: one KV head)
    assert memory.sequence_cache_bytes(CONTEXT, layout, 2.0, tensor_parallel=8) == CONTEXT * (70272 + 8052)


def test_decode_attention_flops_at_128k_by_hand():
    # one decode step of one sequence at context 131,072 (new 1, before 131,071), MLA absorbed dims (576, 512):
    # main attention: 61 layers x 2,048 selected keys x 2 x 128 heads x (576 + 512) = 34,795,945,984 FLOP
    # indexer: 61 layers x 131,072 keys x 2 x 64 x 128 = 130,996,502,528 FLOP (not split by tensor parallelism)
    windows = ((math.inf, 61),)
    flops = step.attention_flops(1, 1, CONTEXT - 1, windows, 128, (576, 512), 0, 1,
                                 selected_keys=2048, index_width=64 * 128)
    assert flops == 34_795_945_984 + 130_996_502_528
    tp8 = step.attention_flops(1, 1, CONTEXT - 1, windows, 128, (576, 512), 0, 8,
                               selected_keys=2048, index_width=64 * 128)
    assert tp8 == 34_795_945_984 / 8 + 130_996_502_528
    dense = step.attention_flops(1, 1, CONTEXT - 1, windows, 128, (576, 512), 0, 1)
    assert dense == 61 * CONTEXT * 2 * 128 * 1088  # V3: every key, 2,226,940,542,976 FLOP


def test_decode_kv_reads_at_128k_by_hand():
    # V3.2, bf16 latent: 2,048 selected latents x (70,272 + 8,052) B + the indexer keys of the other
    # 129,024 tokens x 8,052 B = 160,407,552 + 1,038,901,248 = 1,199,308,800 B per sequence and step;
    # V3 reads all 131,072 latents: 131,072 x 70,272 = 9,210,691,584 B.
    sparse = step.kv_read_bytes(1, 1, CONTEXT - 1, architecture.kv_layout(V32), 2.0, 2.0, 1, selected_keys=2048)
    assert sparse == 1_199_308_800
    assert step.kv_read_bytes(1, 1, CONTEXT - 1, architecture.kv_layout(V3), 2.0, 2.0, 1) == 9_210_691_584


def test_fit_at_128k_differs_from_v3_as_the_mechanism_implies():
    """``gpusizer fit deepseek-v3.2 h200 --gpus 8 --context 128k`` against V3 (same weights but the indexers):
    the KV cache per GPU grows by the indexer keys and a decode step reads the hand-derived bytes above."""
    v3 = estimator.estimate("deepseek-v3", "h200", gpus=8, context=CONTEXT)
    v32 = estimator.estimate("deepseek-v3.2", "h200", gpus=8, context=CONTEXT)
    # KV cache per GPU: V3 131,072 x 70,272 = 9,210,691,584 B; V3.2 adds 131,072 x 8,052 = 1,055,391,744 B
    # (tp8: the MLA latent and the indexer keys are whole on every rank)
    assert v3.memory.kv_cache_bytes == 9_210_691_584
    assert v32.memory.kv_cache_bytes == 9_210_691_584 + 1_055_391_744
    # decode reads per step and GPU: 9,210,691,584 B (V3) against 1,199,308,800 B (V3.2)
    assert v3.decode.kv_bytes == 9_210_691_584 and v32.decode.kv_bytes == 1_199_308_800
    # weights: + 61 indexers x 13,959,424 parameters, replicated on every rank
    assert v32.memory.weights_bytes > v3.memory.weights_bytes
    assert v32.decode.ceiling_tokens_per_second > 1.5 * v3.decode.ceiling_tokens_per_second


def test_dense_models_are_unchanged():
    layout = architecture.kv_layout(V3)
    assert layout.indexed == 0.0
    dense = step.kv_read_bytes(3, 1, 999, layout, 2.0, 2.0, 1)
    assert step.kv_read_bytes(3, 1, 999, layout, 2.0, 2.0, 1, selected_keys=np.array([np.inf])) == dense


@given(before=st.integers(0, 300_000), new=st.integers(1, 8192), topk=st.integers(1, 4096))
def test_sparse_attention_never_exceeds_dense_and_equals_it_below_topk(before, new, topk):
    windows = ((math.inf, 2),)
    sparse = step.attention_flops(1, new, before, windows, 16, (576, 512), 0, 1, selected_keys=topk)
    dense = step.attention_flops(1, new, before, windows, 16, (576, 512), 0, 1)
    assert sparse <= dense
    if before + new <= topk:
        assert sparse == dense
    # each query attends to at most topk keys
    assert sparse <= 2 * new * topk * 2 * 16 * 1088


@given(before=st.integers(0, 300_000), topk=st.integers(1, 4096))
def test_decode_kv_reads_are_capped_at_topk_plus_the_indexer(before, topk):
    layout = architecture.kv_layout(V32)
    read = step.kv_read_bytes(1, 1, before, layout, 2.0, 2.0, 1, selected_keys=topk)
    context = before + 1
    assert_allclose(read, min(context, topk) * 70272 + context * 8052, rtol=1e-12)
