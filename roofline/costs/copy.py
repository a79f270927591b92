"""Copies and casts: clone, copy_, _to_copy, to, contiguous, _copy_from, type_as.

Category "data_movement", 0 FLOPs (a dtype conversion is not counted as arithmetic). Bytes: the
source read at ITS dtype and footprint, the destination written at ITS dtype: a float32 -> float16
cast of n elements reads 4n and writes 2n bytes. ``copy_`` does not read its destination.
``to``/``contiguous``/``type_as`` (normally resolved before capture) cost nothing when they return
their input unchanged (same dtype and device / already contiguous).

Kernels (CUDA eager): 1; a copy that changes device AND dtype is 2 (memcpy, then cast on the
device side). Cross-device copies are memcpys priced on the host<->device link, which is the
predictor's business: the source and destination devices are in the TensorMeta.
``_local_scalar_dense`` (``.item()``) copies one element to the host and synchronizes.
"""

from __future__ import annotations

import torch

from roofline.costs.registry import (
    VIEW_COST,
    arguments,
    existing_ops,
    footprint_bytes,
    is_contiguous,
    OpCost,
    register,
)
from roofline.graph.ops import CapturedOp, TensorMeta

aten = torch.ops.aten


def copy_cost(src: TensorMeta, dst: TensorMeta) -> OpCost:
    """One pass: src read at its footprint and dtype, dst written at its dtype."""
    kernels = 2 if (src.device != dst.device and src.dtype != dst.dtype) else 1
    return OpCost(flops=0, bytes_read=footprint_bytes(src), bytes_written=dst.nbytes,
                  kernels=kernels if dst.numel else 0, category="data_movement",
                  compute_dtype=dst.dtype)


@register(*existing_ops("clone", "_to_copy", "copy", "_to_dense", "to_dense", "_pin_memory"),
          category="data_movement")
def clone_cost(op: CapturedOp) -> OpCost:
    """A new tensor with self's values (possibly another dtype, device or layout)."""
    a = arguments(op)
    src = a["self"]
    cost = copy_cost(a.get("src", src) if op.packet == "aten.copy" else src, op.outputs[0])
    if op.packet == "aten._pin_memory":  # host-to-host: no device kernel
        cost = OpCost(**{**cost.__dict__, "kernels": 0})
    return cost


@register(aten.copy_, category="data_movement")
def copy__cost(op: CapturedOp) -> OpCost:
    """self.copy_(src): src read (broadcast at its own size), self written, self not read."""
    a = arguments(op)
    return copy_cost(a["src"], a["self"])


@register(*existing_ops("_copy_from", "_copy_from_and_resize"), category="data_movement")
def copy_from_cost(op: CapturedOp) -> OpCost:
    """Backend copy hook: self read, dst written."""
    a = arguments(op)
    return copy_cost(a["self"], a["dst"])


@register(*existing_ops("to", "type_as"), category="data_movement")
def to_cost(op: CapturedOp) -> OpCost:
    """A copy when dtype or device change (or copy=True), otherwise the input itself."""
    src = op.tensor_inputs()[0]
    out = op.outputs[0]
    forced = bool(arguments(op).get("copy"))
    if not forced and src.dtype == out.dtype and src.device == out.device:
        return VIEW_COST
    return copy_cost(src, out)


@register(aten.contiguous, category="data_movement")
def contiguous_cost(op: CapturedOp) -> OpCost:
    """A copy only when the input is not already contiguous."""
    src = op.tensor_inputs()[0]
    if is_contiguous(src):
        return VIEW_COST
    return copy_cost(src, op.outputs[0])


@register(aten._local_scalar_dense, category="data_movement")
def item_cost(op: CapturedOp) -> OpCost:
    """``.item()``: one element copied to the host, with a device synchronization."""
    src = op.tensor_inputs()[0]
    return OpCost(flops=0, bytes_read=src.itemsize, bytes_written=0, kernels=1,
                  category="data_movement", compute_dtype=src.dtype)
