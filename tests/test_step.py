"""Tests of gpusizer.step: the FLOPs, bytes and collectives of one engine step."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from gpusizer import step

counts = st.integers(1, 4096)
degrees = st.sampled_from([1, 2, 4, 8])


@given(tokens=counts, tp=degrees)
def test_tensor_parallel_conserves_dense_flops(tokens, tp):
    """p ranks x per-rank FLOPs = the FLOPs of one GPU (Shoeybi et al., arXiv:1909.08053)."""
    one = step.dense_flops(tokens, 1, 7e9, 5e8, 1)
    assert_allclose(tp * step.dense_flops(tokens, 1, 7e9, 5e8, tp), one, rtol=1e-12)


def test_dense_flops_are_two_per_parameter_and_token():
    """2 N FLOPs per token (Kaplan et al., arXiv:2001.08361)."""
    assert step.dense_flops(10, 1, 1e9, 1e8, 1) == 2 * 10 * 1e9 + 2 * 1e8


def test_expert_share_is_tensor_sharding_without_expert_parallelism():
    assert_allclose(step.expert_share(256, np.array([1, 8, 3]), np.array([4, 1, 1])), [1 / 4, 32 / 256, 86 / 256])


@given(num_experts=st.integers(1, 512), ep=degrees)
def test_busiest_rank_holds_at_least_its_even_share(num_experts, ep):
    assert step.experts_held(num_experts, ep) * ep >= num_experts


def test_alltoall_only_under_data_parallel_attention():
    tokens = np.array([64.0, 64.0])
    moved = step.alltoall_bytes(tokens, 512.0, 8, 7168, 2, 1, 8, np.array([1, 8]))
    assert moved[0] == 0 and moved[1] == 512 * 7168 * 2 * 7 / 8
    assert_allclose(step.alltoall_count(61, np.array([1, 8])), [0, 122])
    assert_allclose(step.allreduce_count(122, 58, np.array([1, 8])), [122, 64])


def test_assignments_spread_evenly_without_expert_parallelism():
    assert step.busiest_rank_assignments(100, 8, 1, 2, 256) == 400
    several = step.busiest_rank_assignments(np.array([100, 100]), 8, np.array([1, 8]), 1, np.array([256, 32]))
    assert several[0] == 800 and several[1] >= 100


def test_collectives_broadcast_like_the_scalars():
    allreduces, hops = np.array([[80], [0]]), np.array([0, 1, 3])
    out = step.collective_seconds(allreduces, 1e-5, 0, 0.0, hops, 2e-5)
    expected = [[step.collective_seconds(a, 1e-5, 0, 0.0, h, 2e-5) for h in hops] for a in allreduces.ravel()]
    assert_allclose(out, expected)
    assert step.pipeline_hops(1) == 0


fractions = st.floats(0.01, 1.0)


@given(mu=fractions, ratio=fractions)
def test_expert_compute_efficiency_is_a_share_of_the_dense_one(mu, ratio):
    """mu_exp = min(1, r mu): never above the dense GEMMs' efficiency for r <= 1, and within (0, 1]."""
    value = step.expert_compute_efficiency(mu, ratio)
    assert 0 < value <= mu * (1 + 1e-12) and value <= 1


@given(mu=fractions, low=fractions, high=fractions)
def test_expert_compute_efficiency_grows_with_the_ratio(mu, low, high):
    low, high = sorted((low, high))
    assert step.expert_compute_efficiency(mu, low) <= step.expert_compute_efficiency(mu, high)


def test_expert_compute_efficiency_of_one_is_the_dense_efficiency_and_broadcasts():
    assert_allclose(step.expert_compute_efficiency(np.array([0.3, 0.6]), 1.0), [0.3, 0.6])
    assert_allclose(step.expert_compute_efficiency(0.9, np.array([0.5, 2.0])), [0.45, 1.0])


def test_fp8_dispatch_moves_half_the_bf16_combine():
    # 64 tokens x k=8 on one GPU of EP8 (no imbalance: assignments 512), d = 7168: dispatch 512 x 7168 x 1 B,
    # combine 512 x 7168 x 2 B; the mean of the pair, times the off-GPU share 7/8: 512 x 7168 x 1.5 x 7/8 = 4,816,896
    moved = step.alltoall_bytes(64, 512.0, 8, 7168, 2.0, 1, 8, 8, dispatch_bpe=1.0)
    assert_allclose(moved, 4_816_896.0)
    # without a dispatch precision both directions move BF16: 512 x 7168 x 2 x 7/8 = 6,422,528
    assert_allclose(step.alltoall_bytes(64, 512.0, 8, 7168, 2.0, 1, 8, 8), 6_422_528.0)


def test_node_share_counts_remote_servers_a_token_reaches():
    # DeepSeek k=8 on EP32 over 4 servers: remote servers reached 3 x (1 - 0.75^8) = 2.69966 of the 8 x 31/32
    # = 7.75 per-expert copies: 0.348344; on 2 servers (EP16): 1 x (1 - 0.5^8) = 0.99609 of 8 x 15/16 = 7.5: 0.13281
    assert_allclose(step.alltoall_node_share(8, np.array([32, 16, 8]), np.array([4, 2, 1])),
                    [0.348344, 0.132813, 1.0], rtol=1e-5)


@given(st.integers(1, 16), st.integers(2, 64), st.integers(2, 256))
def test_node_share_is_a_share_and_never_exceeds_the_per_expert_copies(k, nodes, ep):
    share = float(step.alltoall_node_share(k, max(ep, nodes), nodes))
    assert 0.0 < share <= 1.0


def test_dispatch_precision_follows_the_experts_format():
    from gpusizer import precision, unpack

    # FP8 experts: 1 B per element plus the 128x128 block scales of the format (4 B / 16384 values);
    # NVFP4: 0.5 B plus an FP8 scale per 16 values = 0.5625 B; MXFP4 (W4A16 on Hopper) and BF16: activations (2 B)
    found = [unpack.dispatch_bytes_per_element(precision.precision(name), 2.0) for name in
             ("fp8", "nvfp4", "mxfp4", "bf16")]
    assert_allclose(found, [1.0 + 4 / 16384, 0.5625, 2.0, 2.0])


def test_prefill_dispatch_across_servers_sends_a_token_once_per_server():
    from gpusizer import configuration, efficiency, passes

    def setup(gpu, gpus, layout):
        record, device, w, e, kv = configuration.resolve("deepseek-v3", gpu, None, None, None)
        return configuration.setup(record, device, w, e, kv, gpus, "sglang", layout, efficiency.bundled())

    # EP32 of H100 (8 per server) spans 4 servers; EP8 one; EP48 on an NVL72 rack stays in its NVLink domain
    far, near, rack = setup("h100-sxm", 32, "ep32"), setup("h100-sxm", 8, "ep8"), setup("gb200", 48, "ep48")
    assert (far.ep_nodes, near.ep_nodes, rack.ep_nodes) == (4, 1, 1)
    # a prefill pass of 32 prompts of 1,024 tokens (one per rank): its all-to-all bytes are the per-expert
    # copies times the node share 0.348344 (test above); a decode pass keeps one copy per expert
    prefill = passes.prefill_steps(far, 1024, np.inf, 32)
    m = far.model
    tokens, load = 1024.0, float(step.busiest_rank_assignments(1024.0 * 32, 8, 32, 1, step.experts_held(256, 32)))
    copies = step.alltoall_bytes(tokens, load, 8, m.hidden, m.act_bpe, 1, 32, 32, m.dispatch_bpe)
    assert_allclose(prefill.alltoall_bytes, copies * 0.348344, rtol=1e-5)
    decode = passes.decode_step(far, 2048, 32)
    busiest = float(step.busiest_rank_assignments(32.0, 8, 32, 1, 8))
    assert_allclose(decode.alltoall_bytes,
                    step.alltoall_bytes(1.0, busiest, 8, m.hidden, m.act_bpe, 1, 32, 32, m.dispatch_bpe))
