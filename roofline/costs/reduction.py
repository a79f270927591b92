"""Reductions and scans: sum, mean, max/min, arg-reductions, var/std, norms, logsumexp, cumsum,
any/all, and the loss functions that reduce.

FLOP rule (flop_counter does not count reductions), per INPUT element unless said otherwise:
    sum, prod, amax/amin, max/min, argmax/argmin, any/all, cumsum/cumprod/cummax/cummin   1
    nansum 2 (select + add); count_nonzero 2 (compare + add); aminmax 2 (two compares)
    mean, nanmean       1, plus 1 per output (the divide)
    var, std, var_mean, std_mean   3 (Welford: subtract, multiply, add), plus 2 per output
                        (divide by N - correction; std adds 1 for the sqrt)
    vector norm         p = 2: 2 (square, add) + 1 sqrt per output; p = 1: 2 (abs, add);
                        p = +-inf: 2 (abs, max); p = 0: 2 (compare, add);
                        other p: 5 (abs, pow = 3, add) + 3 per output (pow 1/p)
    logsumexp           4 (max, subtract, exp, add) + 2 per output (log, add the max back)
    logcumsumexp        4
    losses              mse 3 (sub, square, add); l1 3 (sub, abs, add); smooth_l1/huber 5;
                        soft_margin 5; kl_div 4; binary_cross_entropy 7 (2 logs, 3 mul, 2 add);
                        bce_with_logits 8; nll_loss 1 per gathered target (+1 with class weights)
    (with reduction='none' the final accumulate is dropped: one fewer FLOP per element)
Transcendental steps (exp, log, sqrt) are counted as 1 FLOP each, as in pointwise.

Bytes: input read once (nll_loss reads only the gathered log-probabilities, one per target),
outputs written once.

Kernels (CUDA eager): 1, except logsumexp 9 (ATen computes amax, abs, eq, masked_fill_, sub, exp_,
sum, log_, add_ as separate ops), losses with a reduction 2 (elementwise + reduce; 1 with
reduction='none'), binary_cross_entropy_with_logits 6.
"""

from __future__ import annotations

import math

import torch

from roofline.costs.registry import (
    arguments,
    compute_dtype_of,
    existing_ops,
    first_tensor,
    OpCost,
    register,
    rw_bytes,
)
from roofline.graph.ops import CapturedOp

aten = torch.ops.aten

# (FLOPs per input element, FLOPs per output element)
REDUCTIONS = {
    "sum": (1, 0), "prod": (1, 0), "amax": (1, 0), "amin": (1, 0), "argmax": (1, 0),
    "argmin": (1, 0), "any": (1, 0), "all": (1, 0), "nansum": (2, 0), "count_nonzero": (2, 0),
    "aminmax": (2, 0), "mean": (1, 1), "nanmean": (2, 1),
    "var": (3, 2), "var_mean": (3, 2), "std": (3, 3), "std_mean": (3, 3),
    "cumsum": (1, 0), "cumprod": (1, 0), "cummax": (1, 0), "cummin": (1, 0),
    "logcumsumexp": (4, 0), "logsumexp": (4, 2), "special_logsumexp": (4, 2), "trace": (1, 0),
}
_KERNELS = {"logsumexp": 9, "special_logsumexp": 9}


def _reduce_cost(op: CapturedOp, per_in: int, per_out: int, kernels: int = 1) -> OpCost:
    x = first_tensor(op)
    if x is None:  # e.g. aten.sum.int over a Python list: host arithmetic, no kernel
        return OpCost(flops=0, bytes_read=0, bytes_written=0, kernels=0, category="other")
    n_in = x.numel if op.packet != "aten.trace" else min(x.shape)
    n_out = op.outputs[0].numel if op.outputs else 1
    read, written = rw_bytes(op)
    return OpCost(flops=max(1, per_in * n_in + per_out * n_out), bytes_read=read,
                  bytes_written=written, kernels=kernels, category="reduction",
                  compute_dtype=compute_dtype_of(op))


def _name(op: CapturedOp) -> str:
    return op.packet.split(".", 1)[1]


@register(*existing_ops(*REDUCTIONS), aten.cumsum_, aten.cumprod_, category="reduction")
def reduction_cost(op: CapturedOp) -> OpCost:
    """Table-driven: REDUCTIONS[name] FLOPs per input and per output element."""
    name = _name(op).rstrip("_")
    per_in, per_out = REDUCTIONS[name]
    return _reduce_cost(op, per_in, per_out, _KERNELS.get(name, 1))


@register(aten.max, aten.min, category="reduction")
def max_min_cost(op: CapturedOp) -> OpCost:
    """max/min over all elements or a dim (values + indices): 1 compare per input element.

    The binary overload ``max.other(a, b)`` is elementwise (1 FLOP per output element).
    """
    if arguments(op).get("other") is not None:
        from roofline.costs.pointwise import elementwise_cost

        return elementwise_cost(op, 1, "pointwise")
    return _reduce_cost(op, 1, 0)


def vector_norm_flops(p) -> tuple[int, int]:
    """(per input element, per output element) for a p-norm."""
    p = 2 if p is None else p
    if isinstance(p, str):  # 'fro' -> 2-norm; 'nuc' is not a vector norm
        p = 2
    p = float(p)
    if p == 2.0:
        return 2, 1
    if p in (1.0, 0.0, float("inf"), float("-inf")):
        return 2, 0
    return 5, 3


@register(aten.linalg_vector_norm, aten.norm, aten.frobenius_norm, category="reduction")
def vector_norm_cost(op: CapturedOp) -> OpCost:
    """p-norm over all elements or some dims; see the module docstring for the per-p rule."""
    a = arguments(op)
    p = a.get("ord", a.get("p", 2))
    per_in, per_out = vector_norm_flops(p)
    return _reduce_cost(op, per_in, per_out)


@register(aten.dist, category="reduction")
def dist_cost(op: CapturedOp) -> OpCost:
    """p-norm of (a - b): the norm rule + 1 subtract per element."""
    per_in, per_out = vector_norm_flops(arguments(op).get("p", 2))
    return _reduce_cost(op, per_in + 1, per_out)


# (FLOPs per element with a reduction, kernels with a reduction); reduction='none' is 1 fewer/1.
LOSSES = {
    "mse_loss": (3, 2), "l1_loss": (3, 2), "smooth_l1_loss": (5, 2), "huber_loss": (5, 2),
    "soft_margin_loss": (5, 2), "kl_div": (4, 2), "binary_cross_entropy": (7, 2),
    "binary_cross_entropy_with_logits": (8, 6),
}


@register(*existing_ops(*LOSSES), category="reduction")
def elementwise_loss_cost(op: CapturedOp) -> OpCost:
    """Elementwise loss then (unless reduction='none') a sum or mean over all elements."""
    per_elem, kernels = LOSSES[_name(op)]
    reduced = arguments(op).get("reduction", 1) != 0
    if not reduced:
        per_elem, kernels = per_elem - 1, 1
    return _reduce_cost(op, per_elem, 1 if reduced else 0, kernels)


@register(aten.nll_loss_forward, aten.nll_loss2d_forward, aten.nll_loss, aten.nll_loss_nd,
          aten.nll_loss2d, category="reduction")
def nll_loss_cost(op: CapturedOp) -> OpCost:
    """-input[i, target[i]] (* weight[target[i]]), summed or averaged over targets.

    FLOPs: 1 per target (+1 with class weights) + 1 for a mean. Bytes: targets, weight, and ONE
    gathered log-probability per target (not the whole input), outputs written.
    """
    a = arguments(op)
    x, target, weight = a["self"], a["target"], a.get("weight")
    n = target.numel
    flops = n * (2 if weight is not None else 1) + (1 if a.get("reduction", 1) == 1 else 0)
    read = n * x.itemsize + target.nbytes + (weight.nbytes if weight is not None else 0)
    written = sum(t.nbytes for t in op.outputs)
    return OpCost(flops=max(1, flops), bytes_read=min(read, rw_bytes(op)[0]), bytes_written=written,
                  kernels=1, category="reduction", compute_dtype=x.dtype)


@register(aten._fft_r2c, aten._fft_c2r, aten._fft_c2c, category="reduction")
def fft_cost(op: CapturedOp) -> OpCost:
    """FFT over ``dim``: 5 * n * log2(n) FLOPs per complex transform of n points (the classic
    radix-2 count), half that for a real-input (r2c) or real-output (c2r) transform.

    n is the product of the transformed logical sizes (the real side for r2c and c2r); there
    are numel / n independent transforms. Kernels (CUDA): 1 (one cuFFT plan execution).
    """
    a = arguments(op)
    x = a["self"]
    full = op.outputs[0] if op.packet == "aten._fft_c2r" else x
    dims = [int(d) % max(1, full.ndim) for d in a["dim"]]
    n = math.prod(full.shape[d] for d in dims) if dims else 1
    transforms = full.numel // max(1, n)
    per_transform = 5 * n * max(1, math.ceil(math.log2(max(2, n))))
    if op.packet != "aten._fft_c2c":
        per_transform //= 2
    read, written = rw_bytes(op)
    return OpCost(flops=max(1, transforms * per_transform), bytes_read=read, bytes_written=written,
                  kernels=1, category="reduction", compute_dtype=x.dtype)
