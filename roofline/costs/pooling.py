"""Pooling (max, average, adaptive) and resampling (upsample nearest / linear family).

FLOP rule (flop_counter does not count pooling), per output element:
    max pool            K compares (K = kernel taps = prod(kernel_size)); with indices the same
    avg pool            K adds + 1 divide
    adaptive pools      the exact window sizes: window i along a dim of size n -> m spans
                        [floor(i*n/m), ceil((i+1)*n/m)); max: one compare per tap, avg: +1 divide
    upsample nearest    0: pure gather, category "data_movement" (index math is integer)
    upsample linear/bilinear/trilinear/bicubic  2*taps - 1 (one multiply per tap, adds between):
                        taps = 2, 4, 8, 16 -> 3, 7, 15, 31 FLOPs
Padding taps are counted as real taps (like flop_counter does for convolution).
Pooling is category "reduction" (a windowed reduce); interpolation is "pointwise".

Bytes: input read once (overlapping windows hit in cache), outputs (and indices) written once.
Kernels (CUDA eager): 1.
"""

from __future__ import annotations

import math

import torch

from roofline.costs.registry import arguments, compute_dtype_of, existing_ops, OpCost, register, rw_bytes
from roofline.graph.ops import CapturedOp

aten = torch.ops.aten


def spatial_dims(op: CapturedOp) -> int:
    for d in (1, 2, 3):
        if f"{d}d" in op.packet:
            return d
    return 2


def kernel_taps(kernel_size, dims: int) -> int:
    ks = [int(k) for k in (kernel_size if isinstance(kernel_size, (list, tuple)) else [kernel_size])]
    if len(ks) == 1:
        ks = ks * dims
    return math.prod(ks)


def _pool_cost(op: CapturedOp, flops: int) -> OpCost:
    read, written = rw_bytes(op)
    return OpCost(flops=max(1, flops), bytes_read=read, bytes_written=written, kernels=1,
                  category="reduction", compute_dtype=compute_dtype_of(op))


@register(*existing_ops(
    "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "mkldnn_max_pool2d", "mkldnn_max_pool3d", "quantized_max_pool2d",
), category="reduction")
def max_pool_cost(op: CapturedOp) -> OpCost:
    """K compares per output element."""
    a = arguments(op)
    taps = kernel_taps(a["kernel_size"], spatial_dims(op))
    return _pool_cost(op, taps * op.outputs[0].numel)


@register(*existing_ops("avg_pool1d", "avg_pool2d", "avg_pool3d"), category="reduction")
def avg_pool_cost(op: CapturedOp) -> OpCost:
    """K adds + 1 divide per output element."""
    a = arguments(op)
    taps = kernel_taps(a["kernel_size"], spatial_dims(op))
    return _pool_cost(op, (taps + 1) * op.outputs[0].numel)


def adaptive_taps(in_sizes, out_sizes) -> int:
    """Total window taps of one (N, C) plane for adaptive pooling (exact PyTorch windows)."""
    total = 1
    for n, m in zip(in_sizes, out_sizes):
        total *= sum(math.ceil((i + 1) * n / m) - (i * n) // m for i in range(m)) if m else 0
    return total


@register(*existing_ops(
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "_adaptive_avg_pool2d",
    "_adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
), category="reduction")
def adaptive_pool_cost(op: CapturedOp) -> OpCost:
    """One compare (max) or add (avg) per window tap, + 1 divide per output for avg."""
    x = op.tensor_inputs()[0]
    out = op.outputs[0]
    d = spatial_dims(op)
    planes = out.numel // max(1, math.prod(out.shape[-d:]))
    flops = planes * adaptive_taps(x.shape[-d:], out.shape[-d:])
    if "avg" in op.packet:
        flops += out.numel
    return _pool_cost(op, flops)


_INTERP_TAPS = {"linear1d": 2, "bilinear2d": 4, "trilinear3d": 8, "bicubic2d": 16}


@register(*existing_ops(
    "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
    "_upsample_nearest_exact1d", "_upsample_nearest_exact2d", "_upsample_nearest_exact3d",
), category="data_movement")
def upsample_nearest_cost(op: CapturedOp) -> OpCost:
    """Nearest-neighbour resampling: a gather, no floating-point arithmetic."""
    read, written = rw_bytes(op)
    return OpCost(flops=0, bytes_read=read, bytes_written=written, kernels=1,
                  category="data_movement", compute_dtype=compute_dtype_of(op))


@register(*existing_ops(
    "upsample_linear1d", "upsample_bilinear2d", "upsample_trilinear3d", "upsample_bicubic2d",
    "_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa",
), category="pointwise")
def upsample_interp_cost(op: CapturedOp) -> OpCost:
    """Interpolation: 2*taps - 1 FLOPs per output element (anti-aliased variants: same taps)."""
    taps = next(t for key, t in _INTERP_TAPS.items() if key in op.packet)
    read, written = rw_bytes(op)
    return OpCost(flops=(2 * taps - 1) * op.outputs[0].numel, bytes_read=read,
                  bytes_written=written, kernels=1, category="pointwise",
                  compute_dtype=compute_dtype_of(op))


@register(aten.grid_sampler_2d, aten.grid_sampler_3d, category="pointwise")
def grid_sampler_cost(op: CapturedOp) -> OpCost:
    """Sample ``input`` at ``grid`` locations (F.grid_sample).

    interpolation_mode 0 bilinear, 1 nearest, 2 bicubic. Per output element 2*taps - 1 (as
    upsampling: bilinear 4 taps -> 7, trilinear 8 -> 15, bicubic 16 -> 31, nearest 0); per grid
    coordinate 4 (unnormalize, clip/reflect). Bytes: the
    input is read once at most (an upper bound for sparse grids), the grid read, output written.
    """
    a = arguments(op)
    mode = int(a["interpolation_mode"])
    dims = 3 if "3d" in op.packet else 2
    taps = 0 if mode == 1 else (2 ** dims if mode == 0 else 16)
    out = op.outputs[0]
    flops = (2 * taps - 1 if taps else 0) * out.numel + 4 * a["grid"].numel
    read, written = rw_bytes(op)
    return OpCost(flops=max(1, flops), bytes_read=read, bytes_written=written, kernels=1,
                  category="pointwise", compute_dtype=compute_dtype_of(op))
