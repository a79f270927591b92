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
(scale, bmm, softmax, bmm, plus the mask). The transformer layers' native fast paths run several
kernels; each is priced as its own op (``OpCost.parts``).
"""

from __future__ import annotations

import dataclasses
import math

import torch

from roofline.costs.registry import OpCost, arguments, composite, cpp_work, part, register, rw_bytes
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


def _bls(t: TensorMeta) -> tuple[int, int]:
    """(batch, seq) of a (B, L, E) or unbatched (L, E) tensor."""
    return (t.shape[0], t.shape[1]) if t.ndim == 3 else (1, t.shape[0])


def _t(shape, dtype) -> TensorMeta:
    return TensorMeta.contiguous(tuple(shape), dtype)


def _linear(rows: int, k: int, n: int, dtype, bias: bool) -> tuple[CapturedOp, OpCost]:
    """One (rows, k) @ (k, n) GEMM of a fused layer, with its bias in the GEMM where it has one."""
    x, w = _t((rows, k), dtype), TensorMeta(shape=(k, n), dtype=dtype, stride=(1, k))
    if bias:
        return part(aten.addmm.default, (_t((n,), dtype), x, w), (_t((rows, n), dtype),))
    return part(aten.mm.default, (x, w), (_t((rows, n), dtype),))


# ATen's native attention (native_multi_head_attention) takes its SDPA path for self-attention without
# a mask or returned weights whose heads are a multiple of SDPA_HEAD_MULTIPLE wide: the input
# projection with its bias in one GEMM, SDPA on views of its output (the heads split by strides), the
# output projection on SDPA's output, whose heads already lie merged: three kernels. Between them the
# path's own C++ work (nine views, a chunk, SDPA's backend choice) is priced as SDPA_PATH_CPP_WORK
# elementwise dispatches, the host time the two passes of the other path cost (not calibrated).
SDPA_HEAD_MULTIPLE = 8
SDPA_PATH_CPP_WORK = 2


SDPA_PATH_DTYPES = (torch.float16, torch.bfloat16, torch.float32)  # a fused SDPA backend's: float64 runs the math one


def sdpa_path(e: int, heads: int, dtype, *, separate_kv: bool, need_weights: bool, masked: bool) -> bool:
    """Whether the GPU's native attention takes its SDPA path (``SDPA_HEAD_MULTIPLE``'s comment);
    a CPU never does."""
    return not separate_kv and not need_weights and not masked and (e // heads) % SDPA_HEAD_MULTIPLE == 0 and dtype in SDPA_PATH_DTYPES


def _attention_parts(b: int, l: int, s: int, e: int, heads: int, dtype, *, separate_kv: bool, need_weights: bool, average: bool,
                     sdpa: bool = False) -> list:
    """The kernels of nn.MultiheadAttention's native fast path, in order.

    With ``sdpa``, the GPU's SDPA path (``SDPA_HEAD_MULTIPLE``'s comment): the input projection with
    its bias, the fused attention, the output projection with its bias. Otherwise: projections without bias (one GEMM
    to 3E for self-attention, three otherwise), one pass that adds the bias, scales q and splits the
    heads (priced as the copy it streams like), the attention (fused, or bmm + softmax + bmm when
    the weights are returned, with their mean over heads when averaged), one pass that merges the
    heads, and the output projection with its bias."""
    dh = e // heads
    if sdpa:
        q = _t((b, heads, l, dh), dtype)
        return [_linear(b * l, e, 3 * e, dtype, True), *[cpp_work(aten._fused_sdp_choice.default)] * SDPA_PATH_CPP_WORK,
                part(aten.scaled_dot_product_attention.default, (q, q, q), (_t((b, heads, l, dh), dtype),)),
                _linear(b * l, e, e, dtype, True)]
    if separate_kv:
        parts = [_linear(b * l, e, e, dtype, False), _linear(b * s, e, e, dtype, False), _linear(b * s, e, e, dtype, False)]
        qkv_rows = b * (l + 2 * s)
    else:
        parts = [_linear(b * l, e, 3 * e, dtype, False)]
        qkv_rows = 3 * b * l
    # ATen's _transform_bias_rescale_qkv: one vectorized pass that reads the projections, adds the
    # bias, scales q and writes the heads apart; it streams as a copy does (the bias is one row), and
    # its FLOPs and bytes are the bias add's
    pass_op, pass_cost = part(aten.clone.default, (_t((qkv_rows, e), dtype),), (_t((qkv_rows, e), dtype),))
    bias_bytes = _t((e,), dtype).nbytes
    parts.append((pass_op, dataclasses.replace(pass_cost, flops=qkv_rows * e, bytes_read=pass_cost.bytes_read + bias_bytes)))
    q, k, v = _t((b, heads, l, dh), dtype), _t((b, heads, s, dh), dtype), _t((b, heads, s, dh), dtype)
    if need_weights:
        scores = _t((b * heads, l, s), dtype)
        parts.append(part(aten.bmm.default, (_t((b * heads, l, dh), dtype), _t((b * heads, dh, s), dtype)), (scores,)))
        parts.append(part(aten._softmax.default, (scores, -1, False), (scores,)))
        parts.append(part(aten.bmm.default, (scores, _t((b * heads, s, dh), dtype)), (_t((b * heads, l, dh), dtype),)))
        if average:
            parts.append(part(aten.mean.dim, (_t((b, heads, l, s), dtype), [1]), (_t((b, l, s), dtype),)))
    else:
        parts.append(part(aten.scaled_dot_product_attention.default, (q, k, v), (_t((b, heads, l, dh), dtype),)))
    parts.append(part(aten.clone.default, (_t((b, heads, l, dh), dtype),), (_t((b, l, heads, dh), dtype),)))
    parts.append(_linear(b * l, e, e, dtype, True))
    return parts


@register(aten._native_multi_head_attention, category="attention")
def native_mha_cost(op: CapturedOp) -> OpCost:
    """nn.MultiheadAttention's inference fast path (eval, no_grad): one native op that runs the
    projections, the attention and the output projection as separate kernels (``_attention_parts``),
    each priced as its own op."""
    a = arguments(op)
    q, k = a["query"], a["key"]
    e, heads = int(a["embed_dim"]), int(a["num_head"])
    b, l = _bls(q)
    s = _bls(k)[1]
    if len(op.input_sources) >= 3:  # self-attention: one tensor passed as query, key and value
        same = op.input_sources[0][0] == op.input_sources[1][0] == op.input_sources[2][0]
    else:  # an op built without its graph: by metadata
        same = q == k == a["value"]
    shape = dict(separate_kv=not same, need_weights=bool(a.get("need_weights", True)))
    average = bool(a.get("average_attn_weights", True))
    parts = _attention_parts(b, l, s, e, heads, q.dtype, **shape, average=average)
    if not sdpa_path(e, heads, q.dtype, **shape, masked=a.get("mask") is not None):
        return composite(parts, "attention", q.dtype)
    return composite(_attention_parts(b, l, s, e, heads, q.dtype, **shape, average=average, sdpa=True), "attention", q.dtype, cpu_parts=parts)


@register(aten._transformer_encoder_layer_fwd, category="attention")
def transformer_encoder_layer_cost(op: CapturedOp) -> OpCost:
    """nn.TransformerEncoderLayer's inference fast path: one native op that runs self-attention
    (``_attention_parts``), a residual add and a layer norm, the feed-forward GEMMs with the
    activation between them, and another residual add and layer norm (the norms first with
    ``norm_first``), each kernel priced as its own op."""
    a = arguments(op)
    src = a["src"]
    e, heads = int(a["embed_dim"]), int(a["num_heads"])
    f = a["ffn_weight_1"].shape[0]
    b, l = _bls(src)
    dt, rows = src.dtype, b * l
    x, hidden = _t((rows, e), dt), _t((rows, f), dt)

    def norm():
        return part(aten.native_layer_norm.default, (x, [e], _t((e,), dt), _t((e,), dt), float(a["eps"])),
                    (x, _t((rows, 1), torch.float32), _t((rows, 1), torch.float32)))

    def residual():
        return part(aten.add.Tensor, (x, x), (x,))

    activation = part(aten.gelu.default if a.get("use_gelu") else aten.relu.default, (hidden,), (hidden,))
    ffn = [_linear(rows, e, f, dt, True), activation, _linear(rows, f, e, dt, True)]

    def layer(sdpa: bool) -> list:
        attention = _attention_parts(b, l, l, e, heads, dt, separate_kv=False, need_weights=False, average=False, sdpa=sdpa)
        if a.get("norm_first"):
            return [norm(), *attention, residual(), norm(), *ffn, residual()]
        return [*attention, residual(), norm(), *ffn, residual(), norm()]

    if not sdpa_path(e, heads, dt, separate_kv=False, need_weights=False, masked=a.get("mask") is not None):
        return composite(layer(False), "attention", dt)
    return composite(layer(True), "attention", dt, cpu_parts=layer(False))
