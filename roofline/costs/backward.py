"""Backward ops: the aten ops autograd runs for gradients that are not forward ops themselves.

Most of a backward pass is forward ops (a Linear's gradients are two ``mm``, a bias gradient a
``sum``), priced by their own families. The ops here exist only in backward passes.

FLOPs. ``torch.utils.flop_counter`` counts convolution and attention backward; we equal its count:
  * ``convolution_backward``: the gradient of the input (a convolution of the output's gradient with
    the weight, transposed), plus the gradient of the weight (a convolution of the input with the
    output's gradient): each equal to the forward's FLOPs for a dense convolution; the bias's
    gradient (a sum) is priced but not counted, as flop_counter does not. KNOWN DIVERGENCE:
    for a grouped convolution flop_counter's weight-gradient term is ``groups`` times the work
    (it forgets the groups); we count the work, which equals its count when groups == 1.
  * attention backward (every SDPA backend): flop_counter's ``sdpa_backward_flop_count``, five
    batched GEMMs (scores recomputed, dV, dP, dQ, dK): ``2 * B*Hq * Sq * Sk * (3 Dqk + 2 Dv)``, 2.5x
    the forward's for Dqk == Dv. The CPU flash backward, which flop_counter does not count, follows
    the same rule.
Ops flop_counter does not count, per element of the gradient they produce (rule beside each):
  * activation backward: the derivative times the incoming gradient (table ``ACTIVATION``);
  * softmax backward ``y * (g - sum(g * y))``: 4; log-softmax backward ``g - exp(y) * sum(g)``: 4;
  * norm backward: layer/RMS/group/batch norm, the input's gradient from the two row (or channel)
    sums of ``g * w`` and ``g * w * x_hat``: 8 per element (x_hat 2, g*w 1, two sums 2, combine 3),
    plus 3 for the weight's gradient (x_hat times g, summed) and 1 for the bias's; RMS norm 6 + 2;
  * losses: NLL backward writes a zero gradient and one value per row (1 FLOP per row); MSE 3;
  * dropout backward ``g * mask * scale``: 2; pooling backward: one add per (output, tap);
  * ``embedding_dense_backward``: one add per gradient element scattered into the weight's rows;
  * ``select_backward``/``slice_backward``: no arithmetic (zeros, then the gradient copied in).

Bytes: compulsory traffic, each tensor read once and each output written once (``rw_bytes``);
ops that first zero their output (select/slice/NLL/pooling/embedding backward) write it twice where
the scattered part is written again.

Kernels (CUDA eager): 1 for elementwise and softmax backward; layer and RMS norm backward 2 (input
gradient; weight and bias gradients); batch norm backward 2 (reduce, elementwise); group norm
backward 3; convolution backward one per gradient asked for (``output_mask``) plus a bias reduction;
flash attention backward 2 (a pass over out and its gradient, then the main kernel), the other
attention backends 1; zero-then-scatter ops 2.
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch

from roofline.costs.registry import (
    OpCost,
    arguments,
    composite,
    compute_dtype_of,
    existing_ops,
    part,
    register,
    rw_bytes,
)
from roofline.graph.ops import CapturedOp, TensorMeta

aten = torch.ops.aten

# ---- activations: FLOPs per gradient element (derivative x incoming gradient) ----------------------

ACTIVATION = {
    # (flops, category): pointwise ones compare or use the saved output; the rest recompute exp/erf/tanh
    "threshold_backward": (1, "pointwise"),  # relu: g where x > 0
    "hardtanh_backward": (2, "pointwise"),  # g where min < x < max
    "leaky_relu_backward": (2, "pointwise"),  # g * (x > 0 ? 1 : slope)
    "hardsigmoid_backward": (2, "pointwise"),  # g / 6 inside (-3, 3)
    "hardswish_backward": (4, "pointwise"),  # g * (2x + 3) / 6 inside (-3, 3)
    "sigmoid_backward": (3, "pointwise"),  # g * y * (1 - y)
    "tanh_backward": (3, "pointwise"),  # g * (1 - y^2)
    "elu_backward": (4, "transcendental"),  # g * (x > 0 ? 1 : a * exp(x)) (or y + a)
    "softplus_backward": (5, "transcendental"),  # g * sigmoid(b x)
    "log_sigmoid_backward": (5, "transcendental"),  # g * sigmoid(-x)
    "silu_backward": (6, "transcendental"),  # g * s * (1 + x (1 - s)), s = sigmoid(x)
    "mish_backward": (10, "transcendental"),  # tanh(softplus) and its derivative
    "gelu_backward": (8, "transcendental"),  # erf form: g * (cdf + x * pdf); tanh form 12 (below)
}
_GELU_TANH_BACKWARD = 12  # tanh(u) recomputed (u: 4), 1 - t^2 (2), du/dx (3), combine (3)


@register(*existing_ops(*ACTIVATION))
def activation_backward_cost(op: CapturedOp) -> OpCost:
    """Activation gradient: ACTIVATION[name] FLOPs per gradient element; one pass."""
    name = op.packet.split(".", 1)[1]
    flops, category = ACTIVATION[name]
    if name == "gelu_backward" and arguments(op).get("approximate") == "tanh":
        flops = _GELU_TANH_BACKWARD
    return _one_pass(op, flops * _grad_elements(op), category)


# ---- softmax ---------------------------------------------------------------------------------------

_SOFTMAX_BACKWARD_FLOPS = 4


@register(aten._softmax_backward_data, aten._log_softmax_backward_data, category="reduction")
def softmax_backward_cost(op: CapturedOp) -> OpCost:
    """(log-)softmax gradient along one dimension: 4 FLOPs per element, one row-wise pass."""
    return _one_pass(op, _SOFTMAX_BACKWARD_FLOPS * _grad_elements(op), "reduction")


# ---- normalization ---------------------------------------------------------------------------------

_NORM_INPUT_GRAD = 8
_NORM_WEIGHT_GRAD = 3
_NORM_BIAS_GRAD = 1
_RMS_INPUT_GRAD = 6
_RMS_WEIGHT_GRAD = 2


def _masked(a: dict, n: int) -> list[bool]:
    mask = a.get("output_mask")
    return [bool(m) for m in mask] if isinstance(mask, (list, tuple)) else [True] * n


def layer_norm_backward_reread_bytes(op: CapturedOp) -> int:
    """Bytes CUDA's GammaBetaBackward reads again after the input-gradient kernel has read them: the
    output's gradient and the input, when the backward asks for the input's gradient and for the
    weight's or the bias's; 0 otherwise (one kernel)."""
    a = arguments(op)
    want = _masked(a, 3)
    affine = (want[1] and a.get("weight") is not None) or (want[2] and a.get("bias") is not None)
    return a["grad_out"].nbytes + a["input"].nbytes if want[0] and affine else 0


@register(aten.native_layer_norm_backward, category="norm")
def layer_norm_backward_cost(op: CapturedOp) -> OpCost:
    """LayerNorm gradients: 8 FLOPs per element for the input's, 3 for the weight's, 1 for the bias's.
    Bytes: one pass; a GPU's second read is its kernels' (``layer_norm_backward_reread_bytes``, priced by
    ``roofline.model.kernels.rereads_bytes``)."""
    a = arguments(op)
    want = _masked(a, 3)
    n = a["input"].numel
    affine = (want[1] and a.get("weight") is not None) or (want[2] and a.get("bias") is not None)
    flops = n * (_NORM_INPUT_GRAD * want[0] + _NORM_WEIGHT_GRAD * (want[1] and a.get("weight") is not None)
                 + _NORM_BIAS_GRAD * (want[2] and a.get("bias") is not None))
    return _one_pass(op, flops, "norm", kernels=1 + int(affine))


@register(*existing_ops("native_batch_norm_backward", "batch_norm_backward", "cudnn_batch_norm_backward",
                        "miopen_batch_norm_backward"), category="norm")
def batch_norm_backward_cost(op: CapturedOp) -> OpCost:
    """BatchNorm gradients (training statistics): as layer norm's, per channel instead of per row."""
    a = arguments(op)
    want = _masked(a, 3)
    x = a.get("input")
    n = x.numel if isinstance(x, TensorMeta) else 0
    flops = n * (_NORM_INPUT_GRAD * want[0] + _NORM_WEIGHT_GRAD * want[1] + _NORM_BIAS_GRAD * want[2])
    return _one_pass(op, flops, "norm", kernels=2)


@register(aten.native_group_norm_backward, category="norm")
def group_norm_backward_cost(op: CapturedOp) -> OpCost:
    """GroupNorm gradients: as layer norm's; 3 kernels (per-group sums, coefficients, elementwise)."""
    a = arguments(op)
    want = _masked(a, 3)
    n = a["input"].numel
    flops = n * (_NORM_INPUT_GRAD * want[0] + _NORM_WEIGHT_GRAD * want[1] + _NORM_BIAS_GRAD * want[2])
    return _one_pass(op, flops, "norm", kernels=3)


@register(*existing_ops("_fused_rms_norm_backward"), category="norm")
def rms_norm_backward_cost(op: CapturedOp) -> OpCost:
    """RMSNorm gradients: 6 FLOPs per element for the input's, 2 for the weight's."""
    a = arguments(op)
    want = _masked(a, 2)
    n = a["input"].numel
    flops = n * (_RMS_INPUT_GRAD * want[0] + _RMS_WEIGHT_GRAD * (want[1] and a.get("weight") is not None))
    return _one_pass(op, flops, "norm", kernels=1 + int(want[1]))


# ---- losses, dropout, pooling, embedding, views' gradients ------------------------------------------


@register(*existing_ops("nll_loss_backward", "nll_loss2d_backward"), category="data_movement")
def nll_loss_backward_cost(op: CapturedOp) -> OpCost:
    """A zero gradient of the log-probabilities, then -1 (times the weight) at each row's target."""
    a = arguments(op)
    target = a["target"]
    read, written = rw_bytes(op)
    rows = max(target.numel, 1)
    return OpCost(flops=rows, bytes_read=read, bytes_written=written, kernels=2, category="data_movement",
                  compute_dtype=compute_dtype_of(op))


@register(aten.mse_loss_backward, category="pointwise")
def mse_loss_backward_cost(op: CapturedOp) -> OpCost:
    """2 (x - y) g / n: 3 FLOPs per element."""
    return _one_pass(op, 3 * _grad_elements(op), "pointwise")


@register(aten.native_dropout_backward, category="pointwise")
def dropout_backward_cost(op: CapturedOp) -> OpCost:
    """g * mask * scale: 2 FLOPs per element."""
    return _one_pass(op, 2 * _grad_elements(op), "pointwise")


_POOL_TAPS_ARG = "kernel_size"


@register(*existing_ops("max_pool2d_with_indices_backward", "max_pool3d_with_indices_backward",
                        "adaptive_max_pool2d_backward", "adaptive_max_pool3d_backward"), category="data_movement")
def max_pool_backward_cost(op: CapturedOp) -> OpCost:
    """A zero input gradient, then each output's gradient added at its argmax: 1 FLOP per output."""
    g = op.tensor_inputs()[0]
    read, written = rw_bytes(op)
    return OpCost(flops=g.numel, bytes_read=read, bytes_written=written, kernels=2, category="data_movement",
                  compute_dtype=g.dtype)


@register(*existing_ops("avg_pool2d_backward", "avg_pool3d_backward"), category="reduction")
def avg_pool_backward_cost(op: CapturedOp) -> OpCost:
    """Each output's gradient spread over its window: one multiply-add per (output, tap)."""
    a = arguments(op)
    g = a["grad_output"]
    dims = 3 if "3d" in op.packet else 2
    ks = a[_POOL_TAPS_ARG]
    ks = [int(k) for k in (ks if isinstance(ks, (list, tuple)) else [ks])]
    taps = math.prod(ks * dims if len(ks) == 1 else ks)
    return _one_pass(op, max(1, taps * g.numel), "reduction")


@register(*existing_ops("_adaptive_avg_pool2d_backward", "_adaptive_avg_pool3d_backward"), category="reduction")
def adaptive_avg_pool_backward_cost(op: CapturedOp) -> OpCost:
    """Each input element takes its window's gradient over the window size: 1 FLOP per input element."""
    a = arguments(op)
    return _one_pass(op, max(1, a["self"].numel), "reduction")


@register(aten.embedding_dense_backward, category="data_movement")
def embedding_backward_cost(op: CapturedOp) -> OpCost:
    """A zero weight gradient, then each looked-up row's gradient added into its row: one add per
    gradient element; the rows touched are read and written again. Kernels: 2 (zero, scatter-add)."""
    a = arguments(op)
    g = a["grad_output"]
    read, written = rw_bytes(op)
    return OpCost(flops=g.numel, bytes_read=read + g.nbytes, bytes_written=written + g.nbytes, kernels=2,
                  category="data_movement", compute_dtype=g.dtype)


@register(aten.select_backward, aten.slice_backward, *existing_ops("diagonal_backward", "as_strided_backward"),
          category="data_movement")
def view_backward_cost(op: CapturedOp) -> OpCost:
    """The gradient of a view: a zero tensor of the input's size with the view's gradient copied in."""
    g = op.tensor_inputs()[0]
    read, written = rw_bytes(op)
    return OpCost(flops=0, bytes_read=read, bytes_written=written + g.nbytes, kernels=2, category="data_movement",
                  compute_dtype=g.dtype)


# ---- convolution -----------------------------------------------------------------------------------


@register(aten.convolution_backward, category="conv")
def convolution_backward_cost(op: CapturedOp) -> OpCost:
    """The input's and the weight's gradient, each its own cuDNN kernel, each priced as the layer's
    forward convolution (marked with its gradient: a depthwise one has calibrated gradient families,
    ``roofline.model.families.ConvFamilyModel``): the same implicit GEMM (FLOPs equal the forward's,
    as flop_counter counts them) on kernels of about its efficiency: cuDNN's gradient kernels are
    implicit GEMMs of the forward's size, not the transposed convolution the input gradient is
    mathematically nor a plain GEMM over N x pixels (docs/design.md, "Prices" of training). Bytes
    are each gradient's own: the output's gradient and the weight read, the input's gradient
    written; the output's gradient and the input read, the weight's gradient written. The bias
    gradient is a sum."""
    a = arguments(op)
    g, x, w = a["grad_output"], a["input"], a["weight"]
    transposed, groups = bool(a["transposed"]), int(a["groups"] or 1)
    want = _masked(a, 3)
    forward_args = (x, w, None, list(a["stride"]), list(a["padding"]), list(a["dilation"]), transposed, list(a["output_padding"]), groups)
    forward_out = (TensorMeta.contiguous(g.shape, g.dtype, g.device),)
    stand_in, forward = part(aten.convolution.default, forward_args, forward_out)
    parts = []
    if want[0]:
        parts.append((stand_in, replace(forward, bytes_read=g.nbytes + w.nbytes, bytes_written=x.nbytes, bias_pass_bytes=0, conv_gradient="input")))
    if want[1]:
        parts.append((stand_in, replace(forward, bytes_read=g.nbytes + x.nbytes, bytes_written=w.nbytes, bias_pass_bytes=0, conv_gradient="weight")))
    if want[2] and a.get("bias_sizes") is not None:
        dims = [0, *range(2, g.ndim)]
        bias = part(aten.sum.dim_IntList, (g, dims), (TensorMeta.contiguous((g.shape[1],), g.dtype, g.device),))
        parts.append(bias)
    cost = composite(parts, "conv", x.dtype)
    # like flop_counter (and the forward's bias), the bias's sum is not counted; its pass is priced
    return replace(cost, flops=cost.flops - sum(c.flops for _, c in parts if c.category == "reduction"))


# ---- attention -------------------------------------------------------------------------------------


def attention_backward_flops(batch_heads: int, s_q: int, s_k: int, d_qk: int, d_v: int) -> int:
    """flop_counter.sdpa_backward_flop_count: five batched GEMMs."""
    return 2 * batch_heads * s_q * s_k * (3 * d_qk + 2 * d_v)


def _attention_backward(op: CapturedOp, bshd: bool, kernels: int) -> OpCost:
    a = arguments(op)
    q, k, v = a["query"], a["key"], a["value"]
    if bshd:  # (B, S, H, D)
        b, s_q, h, d_qk = q.shape
        s_k, d_v = k.shape[1], v.shape[-1]
    else:  # (B, H, S, D)
        *lead, s_q, d_qk = q.shape
        b, h = math.prod(lead[:-1]) if len(lead) > 1 else 1, lead[-1] if lead else 1
        s_k, d_v = k.shape[-2], v.shape[-1]
    read, written = rw_bytes(op)
    return OpCost(
        flops=attention_backward_flops(b * h, s_q, s_k, d_qk, d_v), bytes_read=read, bytes_written=written, kernels=kernels,
        category="attention", gemm=(b * h, s_q, s_k, 3 * d_qk + 2 * d_v), compute_dtype=q.dtype,
    )


@register(*existing_ops("_scaled_dot_product_flash_attention_backward", "_scaled_dot_product_flash_attention_for_cpu_backward"),
          category="attention")
def flash_attention_backward_cost(op: CapturedOp) -> OpCost:
    """Flash attention's backward, (B, H, S, D): flop_counter's five GEMMs; 2 kernels."""
    return _attention_backward(op, bshd=False, kernels=2)


@register(*existing_ops("_scaled_dot_product_efficient_attention_backward", "_scaled_dot_product_cudnn_attention_backward"),
          category="attention")
def efficient_attention_backward_cost(op: CapturedOp) -> OpCost:
    """Memory-efficient and cuDNN attention backward, (B, H, S, D): flop_counter's five GEMMs."""
    return _attention_backward(op, bshd=False, kernels=1)


@register(*existing_ops("_flash_attention_backward", "_efficient_attention_backward"), category="attention")
def attention_kernel_backward_cost(op: CapturedOp) -> OpCost:
    """The backends' own backward kernels, (B, S, H, D) dense inputs (the layout divergence of
    roofline.costs.attention applies)."""
    return _attention_backward(op, bshd=True, kernels=1)


# ---- helpers ---------------------------------------------------------------------------------------


def _grad_elements(op: CapturedOp) -> int:
    """Elements of the gradient an op produces (its first output, else its first input)."""
    if op.outputs:
        return op.outputs[0].numel
    ins = op.tensor_inputs()
    return ins[0].numel if ins else 0


def _one_pass(op: CapturedOp, flops: int, category: str, kernels: int = 1) -> OpCost:
    read, written = rw_bytes(op)
    return OpCost(flops=max(0, flops), bytes_read=read, bytes_written=written, kernels=kernels, category=category,
                  compute_dtype=compute_dtype_of(op))
