"""Fused attention: scaled_dot_product_attention, each backend kernel, and the fused nn fast paths.

FLOPs: the two batched GEMMs of attention, exactly as ``torch.utils.flop_counter.sdpa_flop_count``:
    Q @ K^T : 2 * B*Hq * Sq * Sk * Dqk
    P @ V   : 2 * B*Hq * Sq * Sk * Dv
with Hq the QUERY heads (grouped-query attention broadcasts K/V heads; the work is per query head).
Like flop_counter, we do NOT count the softmax, scaling or mask, and we do NOT halve the count for
``is_causal=True`` even though flash kernels skip the masked upper triangle (about half the work
when Sq == Sk). This is flop_counter's documented convention and we keep it for exact agreement;
it means causal attention is predicted up to ~2x slow when compute-bound.

Layouts: the ``_scaled_dot_product_*`` ops take (B, H, S, D). ``_flash_attention_forward`` and
``_efficient_attention_forward`` take (B, S, H, D), or packed variable-length sequences
(total, H, D) / (1, total, H, D) with cumulative-length tensors; a packed batch is counted, as
flop_counter does on fake tensors, as (number of sequences) x (max_q, max_k).

KNOWN DIVERGENCE from flop_counter (torch 2.13): for the dense (non-packed) (B, S, H, D) inputs of
``_flash_attention_forward`` / ``_efficient_attention_forward``, flop_counter reads the tensors as if
they were (B, H, S, D), swapping heads and sequence length (pytorch/pytorch PRs #184348, #196132
fix it). We count the true layout; the two agree whenever S == H. These two ops are called by the
SDPA kernels internally and appear in a capture only when user code calls them directly.

Equivalent GEMM: ``(B*Hq, Sq, Sk, Dqk + Dv)``: the same FLOPs as the two GEMMs, at their M and N.

Bytes: Q, K, V (and mask/bias) read once at their own size (GQA K/V are NOT re-read per query
head: that is the point of GQA); output and log-sum-exp written once. The S x S score matrix
never reaches memory in a fused kernel.

Kernels (CUDA eager): 1 for each fused backend. The math fallback
``_scaled_dot_product_attention_math`` (normally decomposed before capture) is ~5 kernels
(scale, bmm, softmax, bmm, plus the mask).
"""

from __future__ import annotations

import math

import torch

from roofline.costs.registry import OpCost, arguments, register, rw_bytes
from roofline.graph.ops import CapturedOp, TensorMeta

aten = torch.ops.aten

# Softmax FLOPs per score (max, subtract, exp, sum, divide): the rule of roofline.costs.softmax.
_SOFTMAX_FLOPS_PER_ELEMENT = 5


def attention_flops(batch_heads: int, s_q: int, s_k: int, d_qk: int, d_v: int) -> int:
    """flop_counter.sdpa_flop_count: two bmm_flop terms."""
    return 2 * batch_heads * s_q * d_qk * s_k + 2 * batch_heads * s_q * s_k * d_v


def _attention_cost(op: CapturedOp, batch_heads: int, s_q: int, s_k: int, d_qk: int, d_v: int,
                    q: TensorMeta, kernels: int = 1) -> OpCost:
    read, written = rw_bytes(op)
    return OpCost(
        flops=attention_flops(batch_heads, s_q, s_k, d_qk, d_v),
        bytes_read=read,
        bytes_written=written,
        kernels=kernels,
        category="attention",
        gemm=(batch_heads, s_q, s_k, d_qk + d_v),
        compute_dtype=q.dtype,
    )


@register(
    aten.scaled_dot_product_attention,
    aten._scaled_dot_product_flash_attention,
    aten._scaled_dot_product_efficient_attention,
    aten._scaled_dot_product_cudnn_attention,
    aten._scaled_dot_product_flash_attention_for_cpu,
    aten._scaled_dot_product_fused_attention_overrideable,
    aten._scaled_dot_product_attention_math,
    aten._scaled_dot_product_attention_math_for_mps,
    category="attention",
)
def sdpa_cost(op: CapturedOp) -> OpCost:
    """(..., Sq, D) x (..., Sk, D) x (..., Sk, Dv), batch dims = query's (B, Hq)."""
    a = arguments(op)
    q, k, v = a["query"], a["key"], a["value"]
    batch_heads = math.prod(q.shape[:-2])
    kernels = 5 if op.packet.startswith("aten._scaled_dot_product_attention_math") else 1
    return _attention_cost(op, batch_heads, q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1], q,
                           kernels=kernels)


def _packed_or_dense(q: TensorMeta, k: TensorMeta, v: TensorMeta, cum_q, max_q, max_k):
    """(batch*heads, s_q, s_k, d_qk, d_v) for (B, S, H, D) or packed varlen inputs."""
    if cum_q is not None:  # packed: (total, H, D) or (1, total, H, D)
        n_seq = max(0, cum_q.shape[0] - 1)
        return n_seq * q.shape[-2], int(max_q), int(max_k), q.shape[-1], v.shape[-1]
    b, s_q, h_q, d_qk = q.shape
    return b * h_q, s_q, k.shape[1], d_qk, v.shape[-1]


@register(aten._flash_attention_forward, category="attention")
def flash_attention_forward_cost(op: CapturedOp) -> OpCost:
    """Flash-attention kernel entry: (B, S, H, D) or packed varlen with cum_seq_q/k."""
    a = arguments(op)
    q, k, v = a["query"], a["key"], a["value"]
    dims = _packed_or_dense(q, k, v, a["cum_seq_q"], a["max_q"], a["max_k"])
    return _attention_cost(op, *dims, q)


@register(aten._efficient_attention_forward, category="attention")
def efficient_attention_forward_cost(op: CapturedOp) -> OpCost:
    """Memory-efficient kernel entry: (B, M, H, K) or packed (1, total, H, K) with cu_seqlens."""
    a = arguments(op)
    q, k, v = a["query"], a["key"], a["value"]
    dims = _packed_or_dense(q, k, v, a["cu_seqlens_q"], a["max_seqlen_q"], a["max_seqlen_k"])
    return _attention_cost(op, *dims, q)


def _mha_flops(b: int, l: int, s: int, e: int, heads: int) -> tuple[int, int]:
    """(GEMM FLOPs, softmax FLOPs) of one nn.MultiheadAttention forward.

    Q projection 2*B*L*E*E, K and V projections 2*B*S*E*E each, attention 4*B*L*S*E (all heads),
    output projection 2*B*L*E*E; softmax 5 FLOPs per score (B*heads*L*S scores).
    """
    gemm = 2 * b * l * e * e + 2 * (2 * b * s * e * e) + attention_flops(b, l, s, e, e) + 2 * b * l * e * e
    return gemm, _SOFTMAX_FLOPS_PER_ELEMENT * b * heads * l * s


def _bls(t: TensorMeta) -> tuple[int, int]:
    """(batch, seq) of a (B, L, E) or unbatched (L, E) tensor."""
    return (t.shape[0], t.shape[1]) if t.ndim == 3 else (1, t.shape[0])


@register(aten._native_multi_head_attention, category="attention")
def native_mha_cost(op: CapturedOp) -> OpCost:
    """nn.MultiheadAttention's inference fast path (eval, no_grad): projections + attention.

    Kernels (CUDA): QKV GEMM, bias/reshape, attention (fused SDPA, or bmm+softmax+bmm when
    need_weights), head merge, output GEMM: 5 without weights, 7 with.
    Equivalent GEMM: M = B*L, N = E, K chosen so that 2*M*N*K equals the GEMM FLOPs.
    """
    a = arguments(op)
    q, k = a["query"], a["key"]
    e, heads = int(a["embed_dim"]), int(a["num_head"])
    b, l = _bls(q)
    s = _bls(k)[1]
    gemm_flops, softmax_flops = _mha_flops(b, l, s, e, heads)
    read, written = rw_bytes(op)
    m, n = b * l, e
    return OpCost(
        flops=gemm_flops + softmax_flops, bytes_read=read, bytes_written=written,
        kernels=7 if a.get("need_weights", True) else 5, category="attention",
        gemm=(1, m, n, max(1, round(gemm_flops / (2 * m * n)))), compute_dtype=q.dtype,
    )


@register(aten._transformer_encoder_layer_fwd, category="attention")
def transformer_encoder_layer_cost(op: CapturedOp) -> OpCost:
    """nn.TransformerEncoderLayer's fast path: self-attention + 2 layer norms + FFN + 2 residuals.

    FLOPs: self-attention (as native MHA) + FFN GEMMs 2*B*L*E*F*2 + activation per B*L*F
    (GELU 5, ReLU 1, the pointwise rules) + layer norms 7 per element each (the norm rule) +
    residual adds 1 per element each.
    Kernels (CUDA): ~11 (attention 5, 2 norms, 2 FFN GEMMs with fused bias/activation, 2 adds).
    """
    a = arguments(op)
    src = a["src"]
    e, heads = int(a["embed_dim"]), int(a["num_heads"])
    f = a["ffn_weight_1"].shape[0]
    b, l = _bls(src)
    gemm_flops, softmax_flops = _mha_flops(b, l, l, e, heads)
    gemm_flops += 2 * (2 * b * l * e * f)
    act = 5 if a.get("use_gelu") else 1
    pointwise = softmax_flops + act * b * l * f + 2 * 7 * b * l * e + 2 * b * l * e
    read, written = rw_bytes(op)
    m, n = b * l, e
    return OpCost(
        flops=gemm_flops + pointwise, bytes_read=read, bytes_written=written, kernels=11,
        category="attention", gemm=(1, m, n, max(1, round(gemm_flops / (2 * m * n)))),
        compute_dtype=src.dtype,
    )
