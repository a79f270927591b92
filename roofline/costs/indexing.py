"""Indexing: gathers, scatters, index/index_put, masked ops, nonzero, sort/topk and searches.

Bytes: a gather reads the elements it gathers (at most the whole source), not the whole source,
plus its indices; a scatter writes the elements it updates. Out-of-place scatters (scatter,
index_add, index_put, ... without ``_``) first copy ``self`` into the result: that copy is counted
(read self, write result) and is a second kernel. Accumulating scatters read the destination
elements they update.

FLOPs: gathers, copies and plain scatters do no arithmetic (0, category "data_movement").
Accumulating scatters (scatter_add, scatter_reduce, index_add, index_reduce, index_put with
accumulate=True, put with accumulate) are 1 FLOP per update (+1 for index_add with alpha != 1).
masked_fill / masked_scatter are a select: 1 FLOP per output element. nonzero / masked_select
do 1 compare per input element. sort: n * ceil(log2(slice)) compares; topk: 1 compare per input
element + k*ceil(log2 k) per slice when sorted; kthvalue/median/mode: n * ceil(log2(slice));
searchsorted/bucketize: ceil(log2(len(boundaries))) compares per query.

Kernels (CUDA eager): 1 per gather/in-place scatter; +1 for the copy of out-of-place scatters;
boolean-mask ``index`` / ``index_put`` add 2 (the nonzero that converts the mask) and a host sync;
nonzero 2 + a device-to-host sync of the count (masked_select 3 + sync); index_put with
accumulate 4 (sort-based); sort 1 when slices fit in shared memory (<= 4096), else 4 (segmented
radix sort); topk 2; unique 6 + sync.
"""

from __future__ import annotations

import math

import torch

from roofline.costs.registry import (
    arguments,
    compute_dtype_of,
    existing_ops,
    footprint_bytes,
    OpCost,
    register,
    rw_bytes,
    tensors_in,
)
from roofline.graph.ops import CapturedOp, TensorMeta

aten = torch.ops.aten


def log2_ceil(n: int) -> int:
    """ceil(log2(n)), at least 1: compares per element of a comparison sort / binary search."""
    return max(1, math.ceil(math.log2(max(2, n))))


def _host_only() -> OpCost:
    """Overloads over Python lists/strings (e.g. aten.index.str): no kernel."""
    return OpCost(flops=0, bytes_read=0, bytes_written=0, kernels=0, category="other")


def _gather_cost(op: CapturedOp, source: TensorMeta, index_bytes: int, extra_kernels: int = 0,
                 flops: int = 0, category: str = "data_movement") -> OpCost:
    out_bytes = sum(t.nbytes for t in op.outputs)
    gathered = op.outputs[0].numel * source.itemsize if op.outputs else 0
    return OpCost(
        flops=flops,
        bytes_read=min(footprint_bytes(source), gathered) + index_bytes,
        bytes_written=out_bytes,
        kernels=1 + extra_kernels,
        category=category,
        compute_dtype=source.dtype,
    )


@register(aten.gather, aten.index_select, aten.take, aten.take_along_dim, category="data_movement")
def gather_cost(op: CapturedOp) -> OpCost:
    """out[i] = self[index[i]]: gathered elements + index read, output written."""
    a = arguments(op)
    index = a.get("index", a.get("indices"))
    return _gather_cost(op, a["self"], index.nbytes)


def _has_bool_index(indices) -> bool:
    return any(t.dtype in (torch.bool, torch.uint8) for t in tensors_in(indices))


@register(aten.index, aten._unsafe_index, category="data_movement")
def index_cost(op: CapturedOp) -> OpCost:
    """Advanced indexing self[i0, i1, ...]: a gather of the output's elements."""
    a = arguments(op)
    x = a["self"]
    if not isinstance(x, TensorMeta):
        return _host_only()
    indices = a["indices"]
    idx_bytes = sum(t.nbytes for t in tensors_in(indices))
    return _gather_cost(op, x, idx_bytes, extra_kernels=2 if _has_bool_index(indices) else 0)


def _scatter_cost(op: CapturedOp, dest: TensorMeta, n_updates: int, read_inputs: int,
                  flops_per_update: int = 0, kernels: int = 1) -> OpCost:
    """Shared by all scatters: ``n_updates`` destination elements written (and read if
    accumulating); ``read_inputs`` bytes of index/source; out-of-place adds the copy of self."""
    update_bytes = n_updates * dest.itemsize
    read = read_inputs + (update_bytes if flops_per_update else 0)
    written = update_bytes
    inplace = op.packet.endswith("_")
    if not inplace:
        read += footprint_bytes(dest)
        written += sum(t.nbytes for t in op.outputs)
        kernels += 1
    return OpCost(
        flops=flops_per_update * n_updates,
        bytes_read=read,
        bytes_written=written,
        kernels=kernels,
        category="data_movement",
        compute_dtype=dest.dtype,
    )


_ACCUMULATING = {"scatter_add", "scatter_reduce", "index_add", "index_reduce"}


@register(*existing_ops("scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce",
                     "scatter_reduce_"), category="data_movement")
def scatter_cost(op: CapturedOp) -> OpCost:
    """self[index[i]] (op)= src[i] along dim: one update per index element."""
    a = arguments(op)
    index, src = a["index"], a.get("src")
    base = op.packet.split(".", 1)[1].rstrip("_")
    accumulate = base in _ACCUMULATING or a.get("reduce") is not None
    src_bytes = min(footprint_bytes(src), index.numel * src.itemsize) if src is not None else 0
    return _scatter_cost(op, a["self"], index.numel, index.nbytes + src_bytes,
                         flops_per_update=1 if accumulate else 0)


@register(*existing_ops("index_add", "index_add_", "index_copy", "index_copy_", "index_reduce",
                     "index_reduce_"), category="data_movement")
def index_add_cost(op: CapturedOp) -> OpCost:
    """self.index_add(dim, index, source): one update per source element (+1 FLOP for alpha)."""
    a = arguments(op)
    source = a["source"]
    base = op.packet.split(".", 1)[1].rstrip("_")
    flops = 0
    if base in _ACCUMULATING:
        flops = 1 + (0 if a.get("alpha", 1) in (None, 1) else 1)
    return _scatter_cost(op, a["self"], source.numel,
                         a["index"].nbytes + footprint_bytes(source), flops_per_update=flops)


@register(*existing_ops("index_fill", "index_fill_"), category="data_movement")
def index_fill_cost(op: CapturedOp) -> OpCost:
    """Fill the slices self.select(dim, i) for i in index: index.numel slices written."""
    a = arguments(op)
    x, index = a["self"], a["index"]
    dim = int(a["dim"]) % max(1, x.ndim)
    slice_elems = x.numel // max(1, x.shape[dim]) if x.ndim else 1
    value_bytes = sum(t.nbytes for t in tensors_in(a.get("value")))
    return _scatter_cost(op, x, index.numel * slice_elems, index.nbytes + value_bytes)


def indexed_positions(x: TensorMeta, indices) -> int:
    """Elements addressed by self[indices]: broadcast index shape x the dims taken whole.

    A bool mask addresses at most all of its elements (its True count is data-dependent): an
    upper bound.
    """
    idx = list(indices) if isinstance(indices, (list, tuple)) else [indices]
    shapes, indexed_dims, dim = [], set(), 0
    for t in idx:
        if isinstance(t, TensorMeta):
            is_mask = t.dtype in (torch.bool, torch.uint8)
            shapes.append((t.numel,) if is_mask else t.shape)
            span = t.ndim if is_mask else 1
            indexed_dims.update(range(dim, dim + span))
            dim += span
        else:  # None: that dim is taken whole
            dim += 1
    positions = math.prod(torch.broadcast_shapes(*shapes)) if shapes else 1
    rest = math.prod(s for d, s in enumerate(x.shape) if d not in indexed_dims)
    return positions * rest


@register(*existing_ops("index_put", "index_put_", "_index_put_impl_", "_unsafe_index_put", "put",
                     "put_"), category="data_movement")
def index_put_cost(op: CapturedOp) -> OpCost:
    """self[indices] = values (or += with accumulate=True)."""
    a = arguments(op)
    x = a["self"]
    if op.packet in ("aten.put", "aten.put_"):
        idx_list, values = [a["index"]], a["source"]
        n = a["index"].numel
    else:
        idx_list, values = a["indices"], a["values"]
        n = indexed_positions(x, idx_list)
    accumulate = bool(a.get("accumulate"))
    idx_bytes = sum(t.nbytes for t in tensors_in(idx_list))
    kernels = 4 if accumulate else 1
    if op.packet not in ("aten.put", "aten.put_") and _has_bool_index(idx_list):
        kernels += 2
    return _scatter_cost(op, x, n, idx_bytes + footprint_bytes(values),
                         flops_per_update=1 if accumulate else 0, kernels=kernels)


@register(*existing_ops("masked_fill", "masked_fill_", "masked_scatter", "masked_scatter_"),
          category="pointwise")
def masked_fill_cost(op: CapturedOp) -> OpCost:
    """where(mask, value-or-source, self): 1 select per output element, one pass.

    masked_scatter also prefix-sums the mask to find each source element (3 kernels on CUDA).
    """
    read, written = rw_bytes(op)
    n = op.outputs[0].numel if op.outputs else arguments(op)["self"].numel
    scatter = "masked_scatter" in op.packet
    return OpCost(flops=n, bytes_read=read, bytes_written=written, kernels=3 if scatter else 1,
                  category="pointwise", compute_dtype=compute_dtype_of(op))


def nonzero_cost(op: CapturedOp) -> OpCost:
    """Indices of non-zero elements: 1 compare per input element; 2 kernels + a host sync.

    Also used for ``where(cond)`` (registered in pointwise) and ``argwhere``.
    """
    x = op.tensor_inputs()[0]
    return OpCost(flops=max(1, x.numel), bytes_read=footprint_bytes(x),
                  bytes_written=sum(t.nbytes for t in op.outputs), kernels=2,
                  category="data_movement", compute_dtype=x.dtype)


register(*existing_ops("nonzero", "nonzero_static", "argwhere", "nonzero_numpy"),
         category="data_movement")(nonzero_cost)


@register(aten.masked_select, category="data_movement")
def masked_select_cost(op: CapturedOp) -> OpCost:
    """self[mask]: 1 compare per mask element; 3 kernels + a host sync (the count)."""
    read, written = rw_bytes(op)
    mask = arguments(op)["mask"]
    return OpCost(flops=max(1, mask.numel), bytes_read=read, bytes_written=written, kernels=3,
                  category="data_movement", compute_dtype=compute_dtype_of(op))


def _slice(x: TensorMeta, dim) -> int:
    if x.ndim == 0:
        return 1
    return x.shape[int(dim if dim is not None else -1) % x.ndim]


def _sort_like_cost(op: CapturedOp, flops: int, kernels: int) -> OpCost:
    read, written = rw_bytes(op)
    return OpCost(flops=max(1, flops), bytes_read=read, bytes_written=written, kernels=kernels,
                  category="reduction", compute_dtype=op.tensor_inputs()[0].dtype)


@register(*existing_ops("sort", "argsort", "msort"), category="reduction")
def sort_cost(op: CapturedOp) -> OpCost:
    """Comparison sort along dim: n * ceil(log2(slice)) compares."""
    a = arguments(op)
    x = a["self"]
    if not isinstance(x, TensorMeta):  # sort.int & co. over Python lists
        return _host_only()
    slice_len = _slice(x, a.get("dim", -1) if op.packet != "aten.msort" else 0)
    return _sort_like_cost(op, x.numel * log2_ceil(slice_len), 1 if slice_len <= 4096 else 4)


@register(aten.topk, category="reduction")
def topk_cost(op: CapturedOp) -> OpCost:
    """Radix select (1 compare per element) + sorting the k results per slice."""
    a = arguments(op)
    x, k = a["self"], int(a["k"])
    slices = x.numel // max(1, _slice(x, a.get("dim", -1)))
    flops = x.numel + (slices * k * log2_ceil(k) if a.get("sorted", True) else 0)
    return _sort_like_cost(op, flops, 2)


@register(*existing_ops("kthvalue", "median", "nanmedian", "mode"), category="reduction")
def select_kth_cost(op: CapturedOp) -> OpCost:
    """Order statistics along a dim (or all elements): n * ceil(log2(slice)) compares."""
    a = arguments(op)
    x = a["self"]
    slice_len = _slice(x, a["dim"]) if a.get("dim") is not None else x.numel
    return _sort_like_cost(op, x.numel * log2_ceil(slice_len), 2)


@register(*existing_ops("_unique2", "unique_dim", "unique_consecutive", "_unique"), category="reduction")
def unique_cost(op: CapturedOp) -> OpCost:
    """Sort (n log2 n compares, skipped by unique_consecutive) + adjacent compare and scan (2n)."""
    x = arguments(op)["self"]
    sort = 0 if op.packet == "aten.unique_consecutive" else x.numel * log2_ceil(x.numel)
    return _sort_like_cost(op, sort + 2 * x.numel, 6)


@register(aten.searchsorted, aten.bucketize, category="reduction")
def searchsorted_cost(op: CapturedOp) -> OpCost:
    """Binary search: ceil(log2(len(boundaries))) compares per query."""
    a = arguments(op)
    boundaries = a.get("sorted_sequence", a.get("boundaries"))
    queries = op.outputs[0].numel
    flops = queries * log2_ceil(boundaries.shape[-1] if boundaries.ndim else 1)
    read, written = rw_bytes(op)
    return OpCost(flops=max(1, flops), bytes_read=read, bytes_written=written, kernels=1,
                  category="reduction", compute_dtype=boundaries.dtype)


@register(aten.bincount, aten.histc, category="data_movement")
def histogram_cost(op: CapturedOp) -> OpCost:
    """Count (or weight-sum) values into bins: an accumulating scatter.

    bincount: 1 add per input element (+1 multiply with weights); histc: 3 per element (scale to a
    bin: subtract, multiply, floor) + 1 add. Kernels (CUDA): 3 (min/max reductions that size or
    range the bins, read back to the host, then the histogram kernel).
    """
    a = arguments(op)
    x = a["self"]
    if op.packet == "aten.bincount":
        per = 2 if a.get("weights") is not None else 1
    else:
        per = 4
    read, written = rw_bytes(op)
    return OpCost(flops=max(1, per * x.numel), bytes_read=read, bytes_written=written, kernels=3,
                  category="data_movement", compute_dtype=x.dtype)
