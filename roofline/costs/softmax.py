"""Softmax and log-softmax along one dimension.

FLOP rule (flop_counter does not count softmax), per input element:
    softmax      5   (running max, subtract, exp, accumulate, divide)
    log_softmax  5   (running max, subtract, exp, accumulate, subtract log-sum) + 1 log per row
    _safe_softmax 8  (softmax 5, then ``== -inf`` 1, row ``all`` 1, ``where`` 1: zeroes fully
                      masked rows; used by the math attention path)
The exp is counted as one FLOP (the transcendental rule of roofline.costs.pointwise).
Category "reduction": one pass that reduces along a dim; fusible at the end of a group.

Bytes: input read once, output written once (the row is re-read from cache, not memory).

Kernels (CUDA eager): 1; _safe_softmax 6 (softmax, two scalar_tensor fills, eq, all, where).
"""

from __future__ import annotations

import torch

from roofline.costs.registry import OpCost, compute_dtype_of, first_tensor, register, rw_bytes
from roofline.graph.ops import CapturedOp

aten = torch.ops.aten

_SOFTMAX_FLOPS = 5
_SAFE_SOFTMAX_FLOPS = 8


def _dim_size(op: CapturedOp) -> int:
    x = first_tensor(op)
    dim = op.args[1] if len(op.args) > 1 else op.kwargs.get("dim", -1)
    if x is None or x.ndim == 0:
        return 1
    return x.shape[int(dim) % x.ndim]


@register(aten._softmax, aten.softmax, aten.special_softmax, category="reduction")
def softmax_cost(op: CapturedOp) -> OpCost:
    """exp(x - max) / sum(exp(x - max)) along dim: 5 FLOPs per element."""
    x = first_tensor(op)
    read, written = rw_bytes(op)
    return OpCost(flops=_SOFTMAX_FLOPS * x.numel, bytes_read=read, bytes_written=written,
                  kernels=1, category="reduction", compute_dtype=compute_dtype_of(op))


@register(aten._log_softmax, aten.log_softmax, aten.special_log_softmax, category="reduction")
def log_softmax_cost(op: CapturedOp) -> OpCost:
    """x - max - log(sum(exp(x - max))): 5 FLOPs per element + 1 log per row."""
    x = first_tensor(op)
    rows = x.numel // max(1, _dim_size(op))
    read, written = rw_bytes(op)
    return OpCost(flops=_SOFTMAX_FLOPS * x.numel + rows, bytes_read=read, bytes_written=written,
                  kernels=1, category="reduction", compute_dtype=compute_dtype_of(op))


@register(aten._safe_softmax, category="reduction")
def safe_softmax_cost(op: CapturedOp) -> OpCost:
    """softmax that returns 0 (not NaN) for rows that are entirely -inf: 8 FLOPs per element."""
    x = first_tensor(op)
    read, written = rw_bytes(op)
    return OpCost(flops=_SAFE_SOFTMAX_FLOPS * x.numel, bytes_read=read, bytes_written=written,
                  kernels=6, category="reduction", compute_dtype=compute_dtype_of(op))
