"""Convolutions, forward and transposed, every aten entry point that can be captured.

FLOPs (``torch.utils.flop_counter.conv_flop_count``, reproduced exactly):
    2 * N * prod(spatial) * prod(kernel) * weight.shape[0] * weight.shape[1]
where spatial is the OUTPUT spatial size for a normal conv and the INPUT spatial size for a transposed
one. Because ``weight`` is (Cout, Cin/groups, *k) normally and (Cin, Cout/groups, *k) transposed,
this is one multiply-add per (output, input-channel-in-group, kernel tap): grouped and depthwise
convs are counted correctly. Complex operands count 8 real FLOPs per multiply-add (flop_counter 2). Padding taps are counted as if real (as flop_counter does) and the bias
add is not counted (as flop_counter does, so that counts agree exactly).

Equivalent GEMM (for pricing on the matmul curve), one GEMM per group, ``batch = groups``:
    normal:     m = N * prod(out_spatial), n = Cout/groups,                k = Cin/groups * prod(kernel)
                (implicit GEMM / im2col: each output pixel is a row, each filter a column)
    transposed: m = N * prod(in_spatial),  n = Cout/groups * prod(kernel), k = Cin/groups
                (each input pixel times the filter bank, then col2im scatter-add)
so ``2 * batch * m * n * k`` equals the FLOPs above. Depthwise (groups = C, one filter per group)
becomes C tiny GEMMs with n = 1, which is why depthwise convs run far below matmul peak.

Bytes: input, weight and bias read once; output written once.

Kernels (CUDA eager): 1 for the convolution, plus 1 when ``convolution``/``_convolution``/
``convN d`` adds a bias (cuDNN convolves without bias and ATen adds it with a separate kernel,
which reads and writes the output once more: ``bias_pass_bytes``, priced after the conv).
Backend entry points that take a bias fuse it (1 kernel). cuDNN may add layout-transform kernels
for non channels-last inputs; they are not counted.
"""

from __future__ import annotations

import math

import torch

from roofline.costs.registry import OpCost, arguments, real_flops_factor, register, rw_bytes
from roofline.graph.ops import CapturedOp

aten = torch.ops.aten

# Entry points whose schema has no 'transposed' flag, by kind.
_TRANSPOSED = {
    "aten.conv_transpose1d", "aten.conv_transpose2d", "aten.conv_transpose3d",
    "aten.cudnn_convolution_transpose", "aten.slow_conv_transpose2d", "aten.slow_conv_transpose3d",
    "aten.miopen_convolution_transpose",
}
# Entry points where ATen adds the bias with its own kernel after the convolution.
_SEPARATE_BIAS = {
    "aten.convolution", "aten._convolution", "aten.convolution_overrideable", "aten._convolution_mode",
    "aten.conv1d", "aten.conv2d", "aten.conv3d",
    "aten.conv_transpose1d", "aten.conv_transpose2d", "aten.conv_transpose3d",
}
# Fused epilogues, FLOPs per output element (not counted by flop_counter): z*alpha + out, relu.
_EPILOGUE_FLOPS = {"aten.cudnn_convolution_relu": 1, "aten.cudnn_convolution_add_relu": 3}


def is_transposed(op: CapturedOp, args: dict | None = None) -> bool:
    """A transposed convolution: by its 'transposed' argument, or by an entry point that is one."""
    a = arguments(op) if args is None else args
    return bool(a["transposed"]) if "transposed" in a else op.packet in _TRANSPOSED


def conv_flops(x_shape, w_shape, out_shape, transposed: bool) -> int:
    """flop_counter.conv_flop_count, verbatim in meaning."""
    batch = x_shape[0]
    conv_shape = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *kernel = w_shape
    return 2 * math.prod(conv_shape) * math.prod(kernel) * batch * c_out * c_in


def conv_gemm(x_shape, w_shape, out_shape, transposed: bool) -> tuple[int, int, int, int]:
    """(groups, m, n, k) of the implicit GEMM; see the module docstring."""
    n_batch = x_shape[0]
    kernel = math.prod(w_shape[2:])
    if transposed:
        c_in, c_out_g = w_shape[0], w_shape[1]  # w: (Cin, Cout/groups, *k)
        groups = max(1, out_shape[1] // max(1, c_out_g))
        return groups, n_batch * math.prod(x_shape[2:]), c_out_g * kernel, c_in // groups
    c_out, c_in_g = w_shape[0], w_shape[1]  # w: (Cout, Cin/groups, *k)
    groups = max(1, x_shape[1] // max(1, c_in_g))
    return groups, n_batch * math.prod(out_shape[2:]), c_out // groups, c_in_g * kernel


@register(
    aten.convolution, aten._convolution, aten.convolution_overrideable, aten._convolution_mode,
    aten.conv1d, aten.conv2d, aten.conv3d,
    aten.conv_transpose1d, aten.conv_transpose2d, aten.conv_transpose3d,
    aten.cudnn_convolution, aten.cudnn_convolution_transpose,
    aten.cudnn_convolution_relu, aten.cudnn_convolution_add_relu,
    aten._slow_conv2d_forward, aten.thnn_conv2d, aten.mkldnn_convolution,
    aten.slow_conv_transpose2d, aten.slow_conv_transpose3d,
    aten.slow_conv_dilated2d, aten.slow_conv_dilated3d, aten.slow_conv3d, aten.slow_conv3d_forward,
    aten._conv_depthwise2d, aten.conv_depthwise3d, aten._nnpack_spatial_convolution,
    aten.miopen_convolution, aten.miopen_convolution_transpose, aten.miopen_depthwise_convolution,
    category="conv",
)
def conv_cost(op: CapturedOp) -> OpCost:
    """Any convolution: flop_counter's count, implicit-GEMM shape, one pass over the tensors."""
    a = arguments(op)
    x = a.get("input", a.get("self"))
    w = a["weight"]
    out = op.outputs[0]
    transposed = is_transposed(op, a)
    x_shape, out_shape = x.shape, out.shape
    if len(x_shape) == w.ndim - 1:  # unbatched input to convNd / conv_transposeNd
        x_shape, out_shape = (1, *x_shape), (1, *out_shape)
    flops = conv_flops(x_shape, w.shape, out_shape, transposed) * real_flops_factor(x.dtype)
    flops += _EPILOGUE_FLOPS.get(op.packet, 0) * out.numel
    read, written = rw_bytes(op)
    has_bias = a.get("bias") is not None
    separate_bias = has_bias and op.packet in _SEPARATE_BIAS
    return OpCost(
        flops=flops, bytes_read=read, bytes_written=written, kernels=1 + int(separate_bias), category="conv",
        gemm=conv_gemm(x_shape, w.shape, out_shape, transposed), compute_dtype=x.dtype,
        bias_pass_bytes=2 * out.nbytes if separate_bias else 0,
    )


@register(aten.conv_tbc, category="conv")
def conv_tbc_cost(op: CapturedOp) -> OpCost:
    """Time-batch-channel 1-D conv: input (T, B, Cin), weight (k, Cin, Cout), output (T', B, Cout).

    2 FLOPs per (output, input channel, tap), bias not counted: 2 * T' * B * Cout * Cin * k.
    """
    a = arguments(op)
    w = a["weight"]
    out = op.outputs[0]
    k, c_in, c_out = w.shape
    t_out, batch = out.shape[0], out.shape[1]
    read, written = rw_bytes(op)
    return OpCost(
        flops=2 * t_out * batch * c_out * c_in * k * real_flops_factor(a["self"].dtype), bytes_read=read, bytes_written=written,
        kernels=1, category="conv", gemm=(1, t_out * batch, c_out, c_in * k),
        compute_dtype=a["self"].dtype,
    )
