"""Dropout in all its aten forms.

In eval mode ``nn.Dropout`` emits no op at all (nothing to price). When an op IS emitted:

* ``native_dropout(x, p, train=True)`` (and ``train=None``): one fused kernel that draws, compares
  and scales: 3 FLOPs per element (draw, compare with p, scaled multiply); reads x, writes the
  output and the bool mask. Category "pointwise".
* ``native_dropout(x, p, train=False)``: ATen returns ``(x.clone(), ones_like(x, bool))`` — a COPY,
  not a view: reads x, writes the output and the mask, 2 kernels, 0 FLOPs, "data_movement".
* ``dropout`` / ``feature_dropout`` / ``alpha_dropout`` / ``feature_alpha_dropout`` and their
  in-place ``_`` forms (CompositeImplicit; seen only if a capture keeps them): with train=False or
  p == 0 they return the input itself: a view (no kernel, no bytes). With train=True:
    dropout                as native_dropout (the CUDA path is the fused kernel; mask written)
    feature_dropout        mask over (N, C) only: bernoulli + divide per mask element (2 FLOPs),
                           1 multiply per element; 3 kernels (bernoulli_, div_, mul)
    alpha_dropout, feature_alpha_dropout  4 FLOPs per element (draw, mask multiply, affine a*x+b);
                           6 kernels, as the decomposition launches them
"""

from __future__ import annotations

import torch

from roofline.costs.registry import VIEW_COST, arguments, existing_ops, OpCost, register, rw_bytes
from roofline.graph.ops import CapturedOp

aten = torch.ops.aten


@register(aten.native_dropout, category="pointwise")
def native_dropout_cost(op: CapturedOp) -> OpCost:
    """Fused dropout kernel (train), or clone + ones mask (train=False)."""
    a = arguments(op)
    x = a["input"]
    read, written = rw_bytes(op)
    train = a.get("train")
    if train is not None and not train:
        return OpCost(flops=0, bytes_read=read, bytes_written=written, kernels=2,
                      category="data_movement", compute_dtype=x.dtype)
    return OpCost(flops=3 * x.numel, bytes_read=read, bytes_written=written, kernels=1,
                  category="pointwise", compute_dtype=x.dtype)


@register(*existing_ops("dropout", "dropout_", "feature_dropout", "feature_dropout_", "alpha_dropout",
                     "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_"),
          category="pointwise")
def dropout_cost(op: CapturedOp) -> OpCost:
    """Composite dropouts: a view when inactive, else their decomposition's cost."""
    a = arguments(op)
    x = a.get("input", a.get("self"))  # the in-place forms name it self
    if not a.get("train") or float(a.get("p") or 0.0) == 0.0:
        return VIEW_COST
    read, written = rw_bytes(op)
    name = op.packet.split(".", 1)[1].rstrip("_")
    if name == "dropout":
        mask_bytes = x.numel  # the bool mask the fused kernel writes
        return OpCost(flops=3 * x.numel, bytes_read=read, bytes_written=written + mask_bytes,
                      kernels=1, category="pointwise", compute_dtype=x.dtype)
    if name == "feature_dropout":
        mask_elems = x.shape[0] * x.shape[1] if x.ndim >= 2 else x.numel
        return OpCost(flops=x.numel + 2 * mask_elems, bytes_read=read,
                      bytes_written=written, kernels=3, category="pointwise", compute_dtype=x.dtype)
    return OpCost(flops=4 * x.numel, bytes_read=read, bytes_written=written, kernels=6,
                  category="pointwise", compute_dtype=x.dtype)
