r"""FLOPs, bytes and collectives of one engine step on one GPU, by operator class: pure functions of numbers.

An engine step (a forward pass) of ``sequences`` sequences that each add ``new`` tokens after
``before`` cached ones is split into three operator classes, each timed on its own roofline
(``roofline.roofline_time``): dense matmuls (every linear weight but the routed experts, and the
LM head), routed experts (with expert parallelism: the busiest rank), and attention (KV reads and
attention FLOPs). Collectives come on top: tensor-parallel all-reduces, the MoE all-to-all dispatch
and combine under data-parallel attention, and one hop per pipeline-stage boundary.

Every function broadcasts like a ufunc. ``tp``, ``ep``, ``pp`` and ``attention_dp`` are the layout's
degrees (``parallel.Layout``). ``performance`` composes these; it adds no formula of its own.

References
----------
.. [1] R. Pope et al., "Efficiently scaling transformer inference," arXiv:2211.05102, 2022.
.. [2] M. Shoeybi et al., "Megatron-LM: Training multi-billion parameter language models using model
   parallelism," arXiv:1909.08053, 2019.
.. [3] D. Lepikhin et al., "GShard: Scaling giant models with conditional computation and automatic
   sharding," arXiv:2006.16668, 2020.
.. [4] T. Gale et al., "MegaBlocks: Efficient sparse training with mixture-of-experts," arXiv:2211.15841,
   2022.
"""

from __future__ import annotations

import math
from typing import Any

from gpusizer import architecture, decode, memory, parallel, prefill, roofline
from gpusizer.numeric import ceil, maximum, minimum, number, where

__all__ = [
    "activation_bytes",
    "allreduce_bytes",
    "allreduce_count",
    "alltoall_bytes",
    "alltoall_count",
    "alltoall_node_share",
    "attention_flops",
    "busiest_rank_assignments",
    "collective_seconds",
    "dense_flops",
    "dense_weight_bytes",
    "expert_compute_efficiency",
    "expert_flops",
    "expert_share",
    "expert_weight_bytes",
    "experts_held",
    "experts_touched",
    "kv_read_bytes",
    "micro_batch_sizes",
    "pipeline_hops",
]


def dense_flops(tokens: Any, head_tokens: Any, dense_params: Any, head_params: Any, tp: Any) -> Any:
    r"""Dense-matmul FLOPs of one step on one tensor-parallel rank.

    Parameters
    ----------
    tokens : array_like
        Tokens of the step. [token]
    head_tokens : array_like
        Tokens that reach the LM head (one per sequence in decode, the last chunk's in prefill). [token]
    dense_params, head_params : array_like
        Linear parameters outside the routed experts and the head, and the head's. [-]
    tp : array_like
        Tensor-parallel degree. [-]

    Returns
    -------
    numeric
        FLOPs per GPU. [FLOP]

    Notes
    -----
    .. math:: F_{dense} = (2\,T\,N_{dense} + 2\,T_{head}\,N_{head}) / t

    References
    ----------
    .. [1] J. Kaplan et al., "Scaling laws for neural language models," arXiv:2001.08361, 2020.
    """
    return (roofline.gemm_flops(tokens, dense_params) + roofline.gemm_flops(head_tokens, head_params)) / tp


def dense_weight_bytes(linear_bytes: Any, head_bytes: Any, head: Any, replicated_bytes: Any, tp: Any) -> Any:
    r"""Dense weights one tensor-parallel rank streams in a step.

    Parameters
    ----------
    linear_bytes : array_like
        Linear weights outside the routed experts and the head, plus vectors. [B]
    head_bytes : array_like
        LM head (a tied embedding streamed as the head). [B]
    head : array_like
        1 when the step reaches the head, else 0. [-]
    replicated_bytes : array_like
        Weights every rank keeps whole. [B]
    tp : array_like
        Tensor-parallel degree. [-]

    Returns
    -------
    numeric
        Bytes per GPU (``memory.shard_bytes``). [B]

    Notes
    -----
    .. math:: M = (M_{lin} + h\,M_{head} - M_{rep}) / t + M_{rep}

    References
    ----------
    .. [1] M. Shoeybi et al., arXiv:1909.08053, 2019.
    """
    return memory.shard_bytes(linear_bytes + head_bytes * head, replicated_bytes, tp)


def activation_bytes(
    tokens: Any, num_layers: Any, hidden: Any, ffn_width: Any, vocab: Any, act_bpe: Any, tp: Any
) -> Any:
    r"""Activations one tensor-parallel rank moves in a step (``decode.activation_bytes`` over ``tp``). [B]

    Notes
    -----
    .. math:: M_{act} = M_{act}(T, L, d, d_{ffn}, V, b_{act}) / t

    References
    ----------
    .. [1] R. Pope et al., arXiv:2211.05102, 2022.
    """
    return decode.activation_bytes(tokens, num_layers, hidden, ffn_width, vocab, act_bpe) / tp


def attention_flops(
    sequences: Any, new: Any, before: Any, windows: Any, heads: Any, dims: tuple[Any, Any], state_elements: Any,
    tp: Any, *, selected_keys: Any = math.inf, index_width: Any = 0,
) -> Any:
    r"""Attention and recurrent-state FLOPs of one step on one tensor-parallel rank.

    Parameters
    ----------
    sequences : array_like
        Sequences of the step. [-]
    new, before : array_like
        Tokens each sequence adds, and tokens it holds before the step. [token]
    windows : sequence of (window, layers)
        Attention window of each group of layers (``inf`` for full attention) and its layer count.
    heads : array_like
        Query heads. [-]
    dims : (qk_dim, v_dim)
        Query-key and value head dimensions (MLA's absorbed ones in decode). [-]
    state_elements : array_like
        Recurrent-state elements of the linear-attention and Mamba layers, summed. [-]
    tp : array_like
        Tensor-parallel degree. [-]
    selected_keys, index_width : array_like, optional
        Top-k sparse attention: keys a query attends to :math:`k` (``inf``: dense), indexer :math:`H_I d_I`.

    Returns
    -------
    numeric
        FLOPs per GPU. [FLOP]

    Notes
    -----
    .. math:: F_{att} = \left(F(s \sum_w L_w P_{\min(w, k)}, n_h, d_{qk}, d_v) + F_{rec}(s\,n, S)\right) / t
              + 2 H_I d_I\, s \sum_w L_w P_w

    with :math:`P_w` the query-key pairs under window :math:`w` (``prefill.attention_pairs``). Top-k caps a
    query's keys as a window does; the indexer (``roofline.indexer_flops``) scores every key on every rank
    (DeepSeek's inference code keeps it replicated: plain ``Linear`` layers, not column-parallel ones).

    References
    ----------
    .. [1] R. Pope et al., arXiv:2211.05102, 2022.
    .. [2] deepseek-ai/DeepSeek-V3.2-Exp:inference/model.py@6d8cb70dfdd6f37c83c5208105a3e2c8da117485 (``Indexer``).
    """
    pairs = sum(layers * prefill.attention_pairs(new, before, minimum(window, selected_keys))
                for window, layers in windows)
    flops = roofline.attention_flops(sequences * pairs, heads, *dims)
    dense = (flops + prefill.recurrent_flops(sequences * new, state_elements)) / tp
    if isinstance(index_width, int | float) and index_width == 0:
        return dense
    scanned = sum(layers * prefill.attention_pairs(new, before, window) for window, layers in windows)
    return dense + roofline.indexer_flops(sequences * scanned, index_width)


def kv_read_bytes(
    sequences: Any, new: Any, before: Any, layout: architecture.KvLayout, kv_bpe: Any, act_bpe: Any, tp: Any,
    *, selected_keys: Any = math.inf,
) -> Any:
    r"""KV cache and recurrent state one tensor-parallel rank reads in a step.

    ``selected_keys`` (top-k; ``inf``: dense): :math:`n` queries read at most :math:`n k` cached latents or keys
    per layer, and the indexer every token's indexer key.

    Notes
    -----
    .. math:: M_{KV} = s \left(M_{seq}(S') + m_{idx} (S - S')\right), \; S = n_{before} + n_{new},
       \; S' = \min(S, n_{new} k)

    (``memory.sequence_cache_bytes``; :math:`m_{idx}`: ``KvLayout.indexed``); dense: :math:`s\,M_{seq}(S)`.

    References
    ----------
    .. [1] J. Ainslie et al., "GQA," arXiv:2305.13245, 2023.
    """
    context = before + new
    if isinstance(selected_keys, int | float) and selected_keys == math.inf:
        return sequences * memory.sequence_cache_bytes(context, layout, kv_bpe, act_bpe, tensor_parallel=tp)
    read = minimum(context, new * minimum(selected_keys, context))  # no inf x 0 when a step adds no token
    attended = memory.sequence_cache_bytes(read, layout, kv_bpe, act_bpe, tensor_parallel=tp)
    return sequences * (attended + (context - read) * layout.indexed)


def experts_touched(routed: Any, num_experts: Any, experts_per_token: Any, moe_layers: Any) -> Any:
    r"""Distinct routed experts per MoE layer in a step; 0 for a model without MoE layers. [-]

    Notes
    -----
    ``decode.experts_touched`` of the routed tokens, times :math:`[L_{moe} > 0]`.
    """
    return decode.experts_touched(routed, num_experts, experts_per_token) * (moe_layers > 0)


def experts_held(num_experts: Any, ep: Any) -> Any:
    r"""Whole routed experts on the busiest expert-parallel rank: :math:`\lceil E / e \rceil`. [-]"""
    return ceil(num_experts / ep)


def expert_share(num_experts: Any, ep: Any, tp: Any) -> Any:
    r"""Share of the routed experts' weights one GPU holds.

    Notes
    -----
    .. math:: f = \lceil E/e \rceil / E \text{ when } e > 1, \text{ else } 1/t

    Expert parallelism divides the experts by expert (the busiest rank holds the most), otherwise
    tensor parallelism shards every expert [1]_.

    References
    ----------
    .. [1] D. Lepikhin et al., "GShard," arXiv:2006.16668, 2020.
    """
    return where(ep > 1, experts_held(num_experts, ep) / num_experts, 1.0 / tp)


def expert_weight_bytes(routed: Any, expert_bytes: Any, num_experts: Any, experts_per_token: Any, share: Any) -> Any:
    r"""Routed-expert weights one GPU streams in a step: the experts touched, times its ``share``. [B]

    Notes
    -----
    .. math:: M_{exp} = f \cdot M_E \cdot \bar E(T_{routed}) / E \quad (\texttt{decode.streamed\_weight\_bytes})
    """
    return decode.streamed_weight_bytes(routed, 0.0, expert_bytes, num_experts, experts_per_token) * share


def busiest_rank_assignments(routed: Any, experts_per_token: Any, ep: Any, tp: Any, held: Any) -> Any:
    r"""Token-expert assignments of the busiest GPU in one MoE layer.

    Parameters
    ----------
    routed : array_like
        Tokens that reach the MoE layer. [token]
    experts_per_token : array_like
        Experts each token is routed to. [-]
    ep, tp : array_like
        Expert- and tensor-parallel degrees. [-]
    held : array_like
        Experts on the busiest rank (``experts_held``). [-]

    Returns
    -------
    numeric
        Assignments. [-]

    Notes
    -----
    .. math:: A = \max\text{-rank load}(T, k, e, h) \text{ when } e > 1, \text{ else } T\,k / t

    (``parallel.max_rank_load``: routing imbalance makes the busiest rank wait for the others.)
    """
    spread = routed * experts_per_token / tp
    several = ep > 1
    if several is False:  # one configuration without expert parallelism: the load is spread evenly
        return spread
    return where(several, parallel.max_rank_load(routed, experts_per_token, ep, held), spread)


def expert_flops(assignments: Any, active_expert_params: Any, experts_per_token: Any) -> Any:
    r"""Routed-expert FLOPs of the busiest GPU: :math:`2\,A\,N_{active}/k`. [FLOP]

    References
    ----------
    .. [1] J. Kaplan et al., arXiv:2001.08361, 2020.
    """
    return 2.0 * assignments * (active_expert_params / experts_per_token)


def expert_compute_efficiency(compute_efficiency: Any, expert_compute: Any) -> Any:
    r"""Achieved fraction of the tensor peak in the routed experts' (grouped) GEMMs. [-]

    Parameters
    ----------
    compute_efficiency : array_like
        The dense GEMMs' efficiency of the phase (:math:`\mu` or :math:`\mu_{dec}`). [-]
    expert_compute : array_like
        The expert GEMMs' efficiency relative to the dense ones (``efficiency.Constants.expert_compute``),
        in (0, 1]. [-]

    Returns
    -------
    numeric
        :math:`\mu_{exp}`, at most 1. [-]

    Notes
    -----
    .. math:: \mu_{exp} = \min(1,\; r_{exp}\,\mu)

    A routed expert layer runs one small GEMM per expert on the tokens routed to it (a grouped GEMM)
    between a permutation that gathers each expert's tokens and an unpermutation that scatters and
    weights them back [4]_. Each expert's token count is padded to the kernel's row tile, the experts
    are unequally loaded and the gathers add traffic, so at the same shapes the grouped GEMM reaches a
    lower share of the peak than one dense GEMM (MegaBlocks reports its block-sparse kernels within a
    few percent of cuBLAS batched GEMMs only at equal expert loads [4]_). :math:`r_{exp}` is that ratio,
    a fitted engine constant (it depends on the engine's MoE kernels). The factor applies to the
    arithmetic time only: with few tokens per expert the expert GEMMs are bound by streaming their
    weights and :math:`r_{exp}` does not matter (``roofline.roofline_time``).

    Examples
    --------
    >>> round(float(expert_compute_efficiency(0.6, 0.5)), 3)
    0.3
    >>> float(expert_compute_efficiency(0.6, 1.0))
    0.6
    """
    return minimum(1.0, compute_efficiency * expert_compute)


def alltoall_bytes(
    tokens: Any, assignments: Any, experts_per_token: Any, hidden: Any, act_bpe: Any, tp: Any, ep: Any,
    attention_dp: Any, dispatch_bpe: Any = None,
) -> Any:
    r"""What the busiest GPU moves in one MoE all-to-all, its own share excluded: the mean of the dispatch
    (tokens at ``dispatch_bpe``) and the combine (expert outputs at ``act_bpe``), so that the dispatch and the
    combine of a layer (``alltoall_count``) add up to both.

    ``tokens``, ``assignments`` (``busiest_rank_assignments``), ``experts_per_token``, ``hidden`` and the
    layout degrees as above; ``act_bpe`` the combine's bytes per element, ``dispatch_bpe`` the dispatched
    tokens' (``unpack.dispatch_bytes_per_element``; default ``act_bpe``). Returns bytes. [B]

    Notes
    -----
    .. math:: M_{a2a} = \max(T\,k/t, A)\; d\; \frac{b_{disp} + b_{act}}{2}\; (e - 1)/e

    and 0 unless attention is data parallel (:math:`n_{adp} > 1`): otherwise every GPU already
    holds every token and the MoE FFN is all-reduced like a dense one. DeepEP's kernels dispatch in FP8
    and combine in BF16 [2]_: at :math:`b_{disp} = 1` the dispatch moves half the combine's bytes.

    References
    ----------
    .. [1] D. Lepikhin et al., "GShard," arXiv:2006.16668, 2020.
    .. [2] deepseek-ai/DeepEP:docs/legacy.md@0297fc80: "FP8 dispatching and BF16 combining";
       low-latency kernels at EP64 move 128 tokens x 8 experts x 7,168 FP8 values in 173 us (43 GB/s) and
       their BF16 combine in 314 us (46 GB/s).

    Examples
    --------
    >>> float(alltoall_bytes(128, 1024, 8, 7168, 2.0, 1, 8, 8, dispatch_bpe=1.0)) / 1e6  # 1024 x 7168 x 1.5 x 7/8
    9.633792
    """
    sent = maximum(tokens * experts_per_token / tp, assignments)
    element = (act_bpe if dispatch_bpe is None else dispatch_bpe) + act_bpe
    return where(attention_dp > 1, sent * hidden * element / 2.0 * (ep - 1.0) / ep, 0.0)


def alltoall_node_share(experts_per_token: Any, ep: Any, nodes: Any) -> Any:
    r"""Share of the per-expert copies of ``alltoall_bytes`` that cross the scale-out network when the dispatch
    sends each token once per remote server and forwards it over NVLink inside the server (DeepEP's normal,
    "NVLink and RDMA forwarding" kernels, which SGLang and vLLM run for prefill; their low-latency decode
    kernels send one copy per expert: share 1).

    Parameters
    ----------
    experts_per_token : array_like
        :math:`k`. [-]
    ep : array_like
        Expert-parallel degree :math:`e`. [-]
    nodes : array_like
        Servers the group spans :math:`N` (``configuration.Setup.ep_nodes``; 1: no scale-out). [-]

    Returns
    -------
    numeric
        :math:`s`, in (0, 1]. [-]

    Notes
    -----
    .. math:: s = \min\left(1,\; \frac{(N-1)\,\left(1-(1-1/N)^k\right)}{k\,(e-1)/e}\right)
       \text{ for } N > 1, \text{ else } 1

    The numerator is the expected number of remote servers a token's :math:`k` experts fall on under uniform
    routing, the denominator the off-GPU copies ``alltoall_bytes`` counts. The NVLink leg inside the server
    runs concurrently and is taken as hidden (about :math:`k` copies at the NVLink rate against :math:`s\,k`
    at the NIC rate); DeepSeek-V3's node-limited routing (at most 4 servers) is not modelled.

    References
    ----------
    .. [1] deepseek-ai/DeepEP:docs/legacy.md@0297fc80: normal kernels "optimized for asymmetric-domain
       bandwidth forwarding, such as forwarding data from NVLink domain to RDMA domain", 43-58 GB/s RDMA
       bottleneck bandwidth at EP16-64 on CX7 400 Gb/s; low-latency kernels "with pure RDMA".
    .. [2] DeepSeek-AI, "DeepSeek-V3 technical report," arXiv:2412.19437, 2024, section 3.2.2 (each token
       is sent over IB once per target node, then forwarded over NVLink).

    Examples
    --------
    >>> round(float(alltoall_node_share(8, 32, 4)), 3)  # 4 servers: 2.70 remote servers against 7.75 copies
    0.348
    >>> float(alltoall_node_share(8, 8, 1))
    1.0
    """
    k, n = number(experts_per_token), number(nodes)
    several = maximum(n, 1.0)
    remote = (several - 1.0) * (1.0 - (1.0 - 1.0 / several) ** k)
    copies = k * (number(ep) - 1.0) / maximum(number(ep), 1.0)
    return where(n > 1, minimum(1.0, remote / maximum(copies, 1e-30)), 1.0)


def allreduce_bytes(tokens: Any, hidden: Any, act_bpe: Any) -> Any:
    r"""One tensor-parallel all-reduce, and what a pipeline stage hands the next: :math:`T\,d\,b_{act}`. [B]

    References
    ----------
    .. [1] M. Shoeybi et al., arXiv:1909.08053, 2019.
    """
    return tokens * hidden * act_bpe


def allreduce_count(allreduce_layers: Any, moe_layers: Any, attention_dp: Any) -> Any:
    r"""All-reduces per forward pass: one per mixer and FFN, the MoE FFNs' only when every GPU sees
    every token (no data-parallel attention). [-]

    References
    ----------
    .. [1] M. Shoeybi et al., arXiv:1909.08053, 2019.
    """
    return where(attention_dp > 1, allreduce_layers - moe_layers, allreduce_layers)


def alltoall_count(moe_layers: Any, attention_dp: Any) -> Any:
    r"""All-to-alls per forward pass: a dispatch and a combine per MoE layer under data-parallel attention. [-]"""
    return where(attention_dp > 1, 2 * moe_layers, 0)


def pipeline_hops(pp: Any) -> Any:
    r"""Stage boundaries a micro-batch crosses in one pass: :math:`p - 1`. [-]"""
    return pp - 1


def collective_seconds(
    allreduces: Any, allreduce: Any, alltoalls: Any, alltoall: Any, hops: Any, hop: Any
) -> Any:
    r"""All collectives of a pass. [s]

    Notes
    -----
    .. math:: t_{comm} = n_{ar}\,t_{ar} + n_{a2a}\,t_{a2a} + n_{hop}\,t_{hop}
    """
    return allreduces * allreduce + alltoalls * alltoall + hops * hop


def micro_batch_sizes(sequences: Any, micro_batches: Any) -> tuple[Any, Any, Any]:
    r"""Sequences of the larger and the smaller micro-batches when ``sequences`` split into
    ``micro_batches`` as evenly as whole sequences allow, and the share of micro-batches that are the larger.

    Parameters
    ----------
    sequences : array_like
        Sequences of one data-parallel group. [-]
    micro_batches : array_like
        Micro-batches in flight (``parallel.micro_batches``). [-]

    Returns
    -------
    (numeric, numeric, numeric)
        Larger and smaller micro-batch [-], and the share of the larger [-] (1 when all are equal).

    Notes
    -----
    .. math:: s_- = \lfloor s / m \rfloor, \quad r = s - m\,s_-, \quad s_+ = s_- + [r > 0],
       \quad f_+ = r / m \text{ if } r > 0 \text{ else } 1

    References
    ----------
    .. [1] Y. Huang et al., "GPipe: Efficient training of giant neural networks using pipeline
       parallelism," arXiv:1811.06965, 2019.
    """
    small = sequences // micro_batches
    extra = sequences - small * micro_batches
    return small + (extra > 0), small, where(extra > 0, extra / micro_batches, 1.0)
