"""Embedding lookups: embedding and embedding_bag.

Bytes: a lookup reads the rows it gathers, not the table. Rows gathered = min(indices, table rows)
(an index repeated beyond the table size must hit a row already read); each row is
``embedding_dim * itemsize`` bytes. Plus the indices (and offsets, per-sample weights) read, and
the outputs written.

FLOPs: embedding is a pure gather (0 FLOPs, category "data_movement"). embedding_bag reduces the
gathered rows into bags: 1 FLOP per gathered element (sum: add; max: compare), +1 per gathered
element with per_sample_weights (the multiply), +1 per output element for mean (the divide).

Kernels (CUDA eager): embedding 1 (index_select); embedding_bag 3 (offset-to-bag fill and scan,
then the bag kernel).
"""

from __future__ import annotations

import torch

from roofline.costs.registry import OpCost, arguments, register
from roofline.graph.ops import CapturedOp, TensorMeta

aten = torch.ops.aten

_MODE_SUM, _MODE_MEAN, _MODE_MAX = 0, 1, 2


def gathered_row_bytes(weight: TensorMeta, n_indices: int) -> int:
    rows = min(n_indices, weight.shape[0])
    row_bytes = (weight.numel // max(1, weight.shape[0])) * weight.itemsize
    return rows * row_bytes


@register(aten.embedding, category="data_movement")
def embedding_cost(op: CapturedOp) -> OpCost:
    """weight[indices]: gathered rows + indices read, output written; no arithmetic."""
    a = arguments(op)
    weight, indices = a["weight"], a["indices"]
    return OpCost(
        flops=0,
        bytes_read=gathered_row_bytes(weight, indices.numel) + indices.nbytes,
        bytes_written=sum(t.nbytes for t in op.outputs),
        kernels=1,
        category="data_movement",
        compute_dtype=weight.dtype,
    )


@register(aten.embedding_bag, aten._embedding_bag, aten._embedding_bag_forward_only,
          category="reduction")
def embedding_bag_cost(op: CapturedOp) -> OpCost:
    """Gather rows, then sum/mean/max them per bag."""
    a = arguments(op)
    weight, indices, offsets = a["weight"], a["indices"], a["offsets"]
    psw = a.get("per_sample_weights")
    mode = int(a.get("mode") or 0)
    dim = weight.numel // max(1, weight.shape[0])
    gathered = indices.numel * dim
    flops = gathered * (2 if psw is not None else 1)
    if mode == _MODE_MEAN and op.outputs:
        flops += op.outputs[0].numel
    read = gathered_row_bytes(weight, indices.numel) + indices.nbytes + offsets.nbytes
    read += psw.nbytes if psw is not None else 0
    return OpCost(
        flops=max(1, flops),
        bytes_read=read,
        bytes_written=sum(t.nbytes for t in op.outputs),
        kernels=3,
        category="reduction",
        compute_dtype=weight.dtype,
    )


@register(aten.embedding_renorm_, category="reduction")
def embedding_renorm_cost(op: CapturedOp) -> OpCost:
    """nn.Embedding(max_norm=...): rescale, in place, the looked-up rows whose norm exceeds max_norm.

    Per gathered element: 2 for the norm (p = 2: square, add) + 1 for the rescale; rows read and
    written. Kernels (CUDA): 3 (sort and unique the indices, then renormalize).
    """
    a = arguments(op)
    weight, indices = a["self"], a["indices"]
    rows_bytes = gathered_row_bytes(weight, indices.numel)
    elements = min(indices.numel, weight.shape[0]) * (weight.numel // max(1, weight.shape[0]))
    return OpCost(flops=max(1, 3 * elements), bytes_read=rows_bytes + indices.nbytes,
                  bytes_written=rows_bytes, kernels=3, category="reduction",
                  compute_dtype=weight.dtype)
