"""Normalization layers: batch, layer, group, instance and RMS norm, every aten entry point.

FLOP rule (flop_counter does not count norms), per input element:
    statistics      3   (accumulate x, square, accumulate x^2: mean and variance)   when computed
                    2   (square, accumulate)                                        for RMS norm
    normalize       2   ((x - mean) * rstd),  1 (x * rstd) for RMS norm
    affine          +1 with a weight, +1 with a bias
plus 2 per statistics row (add eps, rsqrt) and, for batch norm updating running statistics,
3 per channel per statistic (momentum blend and unbiased correction).
So LayerNorm with weight and bias is 7 FLOPs per element; batch norm in eval is 4.

Bytes: input, weight, bias and running statistics read once; output and saved mean/rstd written;
running statistics written back when training updates them.

Kernels (CUDA eager): batch norm training 3 (Welford statistics, update/invert, elementwise),
eval 1; layer norm 1 (vectorized kernel); group norm 3 (moments, fused params, elementwise;
2 without affine); RMS norm 1 (fused); instance norm (when kept whole) 3.
"""

from __future__ import annotations

import torch

from roofline.costs.registry import OpCost, arguments, compute_dtype_of, register, rw_bytes
from roofline.graph.ops import CapturedOp, TensorMeta

aten = torch.ops.aten

_STATS_FLOPS = 3
_RMS_STATS_FLOPS = 2
_NORMALIZE_FLOPS = 2
_RMS_NORMALIZE_FLOPS = 1
_PER_ROW_FLOPS = 2
_RUNNING_UPDATE_FLOPS = 3  # per channel, per running statistic


def _affine_flops(a: dict) -> int:
    return (a.get("weight") is not None) + (a.get("bias") is not None)


def _norm_cost(op: CapturedOp, flops: int, kernels: int, extra_written: int = 0) -> OpCost:
    read, written = rw_bytes(op)
    return OpCost(flops=flops, bytes_read=read, bytes_written=written + extra_written,
                  kernels=kernels, category="norm", compute_dtype=compute_dtype_of(op))


def _batch_norm_training(op: CapturedOp, a: dict) -> bool:
    if "training" in a:
        return bool(a["training"])
    if "use_input_stats" in a:
        return bool(a["use_input_stats"])
    return op.packet == "aten._batch_norm_with_update"  # _no_training / _no_update: eval


BATCH_NORM_FORWARD_OPS = (
    aten.native_batch_norm, aten.batch_norm, aten._batch_norm_impl_index,
    aten._native_batch_norm_legit, aten._native_batch_norm_legit_no_training,
    aten._native_batch_norm_legit_functional, aten._batch_norm_with_update,
    aten._batch_norm_no_update, aten.cudnn_batch_norm, aten.miopen_batch_norm,
)
BATCH_NORM_FORWARD = {str(packet) for packet in BATCH_NORM_FORWARD_OPS}  # as ``CapturedOp.packet`` names them


def is_batch_norm_forward(op: CapturedOp) -> bool:
    return op.packet in BATCH_NORM_FORWARD


def batch_norm_training(op: CapturedOp, a: dict | None = None) -> bool:
    """Whether a batch norm forward computes its statistics from the batch (training); ``a``: the
    op's ``arguments`` where the caller has them."""
    return _batch_norm_training(op, arguments(op) if a is None else a)


@register(*BATCH_NORM_FORWARD_OPS, aten.instance_norm, category="norm")
def batch_norm_cost(op: CapturedOp) -> OpCost:
    """Per-channel statistics over (N, *spatial) when training, running statistics in eval."""
    a = arguments(op)
    x: TensorMeta = a["input"]
    channels = x.shape[1] if x.ndim > 1 else 1
    training = _batch_norm_training(op, a)
    running = [t for t in (a.get("running_mean"), a.get("running_var")) if t is not None]
    per_element = _NORMALIZE_FLOPS + _affine_flops(a) + (_STATS_FLOPS if training else 0)
    stat_rows = channels * (x.shape[0] if op.packet == "aten.instance_norm" else 1)
    flops = x.numel * per_element + _PER_ROW_FLOPS * stat_rows
    extra_written = 0
    if training and running:
        flops += _RUNNING_UPDATE_FLOPS * channels * len(running)
        schema_marks_update = op.packet in (
            "aten._native_batch_norm_legit", "aten._batch_norm_with_update",
            "aten._native_batch_norm_legit_functional",  # returns the new statistics as outputs
        )
        if not schema_marks_update:  # native_batch_norm & co. update them without saying so
            extra_written = sum(t.nbytes for t in running)
    if op.packet == "aten.instance_norm":
        kernels = 3
    elif op.packet in ("aten.cudnn_batch_norm", "aten.miopen_batch_norm"):
        kernels = 1
    else:
        kernels = 3 if training else 1
    return _norm_cost(op, flops, kernels, extra_written)


@register(aten.native_layer_norm, aten.layer_norm, category="norm")
def layer_norm_cost(op: CapturedOp) -> OpCost:
    """Statistics over the trailing ``normalized_shape`` dims, one row per leading index."""
    a = arguments(op)
    x: TensorMeta = a["input"]
    row = 1
    for s in a["normalized_shape"]:
        row *= int(s)
    rows = x.numel // row if row else 0
    flops = x.numel * (_STATS_FLOPS + _NORMALIZE_FLOPS + _affine_flops(a)) + _PER_ROW_FLOPS * rows
    return _norm_cost(op, flops, kernels=1)


@register(aten.native_group_norm, aten.group_norm, category="norm")
def group_norm_cost(op: CapturedOp) -> OpCost:
    """Statistics per (sample, group); per-channel affine."""
    a = arguments(op)
    x: TensorMeta = a["input"]
    groups = int(a["group"] if "group" in a else a["num_groups"])
    rows = x.shape[0] * groups
    flops = x.numel * (_STATS_FLOPS + _NORMALIZE_FLOPS + _affine_flops(a)) + _PER_ROW_FLOPS * rows
    kernels = 3 if _affine_flops(a) else 2
    return _norm_cost(op, flops, kernels=kernels)


@register(aten.rms_norm, aten._fused_rms_norm, category="norm")
def rms_norm_cost(op: CapturedOp) -> OpCost:
    """Root-mean-square over the trailing dims: x * rsqrt(mean(x^2) + eps) (* weight)."""
    a = arguments(op)
    x: TensorMeta = a["input"]
    row = 1
    for s in a["normalized_shape"]:
        row *= int(s)
    rows = x.numel // row if row else 0
    per_element = _RMS_STATS_FLOPS + _RMS_NORMALIZE_FLOPS + _affine_flops(a)
    return _norm_cost(op, x.numel * per_element + _PER_ROW_FLOPS * rows, kernels=1)


@register("aten._weight_norm_interface", category="norm")
def weight_norm_cost(op: CapturedOp) -> OpCost:
    """torch.nn.utils.weight_norm's reparametrization, w = g * v / ||v|| per slice of ``dim`` (wav2vec2's
    and HuBERT's positional convolution): per element of v, 2 FLOPs for the norm (square, accumulate)
    and 1 to scale it, plus 2 per slice (sqrt, g / norm); v and g read once, w and the norms written.
    One kernel on CUDA (ATen's fused weight-norm kernel)."""
    a = arguments(op)
    v, g = a["v"], a["g"]
    read, written = rw_bytes(op)
    return OpCost(flops=3 * v.numel + 2 * g.numel, bytes_read=read, bytes_written=written, kernels=1,
                  category="norm", compute_dtype=v.dtype)
