"""Shape ops: views (free) and the ops that really move data (cat, stack, pad, repeat, flip, ...).

Views change metadata only: category "view", 0 FLOPs, 0 bytes, 0 kernels. ``reshape``/``flatten``
(normally decomposed before capture) are views when the strides allow it (ATen's own
``computeStride`` rule, reproduced below) and a copy otherwise. ``set_``/``resize_`` only
(re)allocate: no kernel.

Data movement does no arithmetic (0 FLOPs), except col2im (1 add per input element: overlapping
patches are summed). Bytes: every input read once at its footprint, the output written once; the
``*_copy`` forms of views read only the elements they keep.

Kernels (CUDA eager): 1, except constant_pad_nd 2 (fill the output, then copy the interior),
diag_embed 2 (zeros, then copy the diagonal), repeat_interleave with a tensor of repeats 3
(cumsum, fill, index_select) and a host sync for the output size.
"""

from __future__ import annotations

import torch

from roofline.costs.registry import (
    VIEW_COST,
    existing_ops,
    footprint_bytes,
    OpCost,
    register,
    rw_bytes,
)
from roofline.graph.ops import CapturedOp

aten = torch.ops.aten


VIEWS = (
    "view", "_unsafe_view", "expand", "expand_as", "view_as", "permute", "transpose", "t",
    "squeeze", "unsqueeze", "slice", "select", "split", "split_with_sizes", "chunk", "unbind",
    "narrow", "as_strided", "alias", "detach", "unflatten", "view_as_real", "view_as_complex",
    "diagonal", "lift_fresh", "unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk",
    "_reshape_alias", "unfold", "movedim", "moveaxis", "swapaxes", "swapdims", "tensor_split",
    "hsplit", "vsplit", "dsplit", "_conj", "conj", "_neg_view", "real", "imag", "resolve_conj",
    "resolve_neg", "positive", "numpy_T", "mT", "mH", "adjoint",
    # in-place views
    "squeeze_", "unsqueeze_", "transpose_", "t_", "as_strided_", "detach_", "swapaxes_", "swapdims_",
    # allocation only
    "set_", "resize_", "resize_as_",
)


@register(*existing_ops(*VIEWS), category="view")
def view_cost(op: CapturedOp) -> OpCost:
    """Metadata only: no kernel, no bytes."""
    return VIEW_COST


def view_strides(old_shape, old_stride, new_shape) -> tuple[int, ...] | None:
    """Strides of ``old.view(new_shape)``, or None when a view is impossible (ATen computeStride)."""
    numel = 1
    for s in old_shape:
        numel *= s
    if numel <= 1:
        return tuple(1 for _ in new_shape)
    new_stride = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_stride[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (
            old_shape[tensor_d - 1] != 1
            and old_stride[tensor_d - 1] != tensor_numel * chunk_base_stride
        ):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_stride[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_stride[tensor_d - 1]
                tensor_numel = view_numel = 1
    return tuple(new_stride) if view_d == -1 else None


@register(*existing_ops("reshape", "reshape_as", "flatten", "ravel"), category="view")
def reshape_cost(op: CapturedOp) -> OpCost:
    """A view when the strides allow it, else a copy (read input, write output, 1 kernel)."""
    x = op.tensor_inputs()[0]
    out = op.outputs[0]
    if view_strides(x.shape, x.stride, out.shape) is not None:
        return VIEW_COST
    return OpCost(flops=0, bytes_read=footprint_bytes(x), bytes_written=out.nbytes, kernels=1,
                  category="data_movement", compute_dtype=x.dtype)


VIEW_COPIES = (
    "expand_copy", "permute_copy", "view_copy", "transpose_copy", "t_copy", "unsqueeze_copy",
    "squeeze_copy", "slice_copy", "select_copy", "as_strided_copy", "alias_copy", "detach_copy",
    "split_copy", "split_with_sizes_copy", "unbind_copy", "diagonal_copy", "narrow_copy",
    "unfold_copy", "_reshape_alias_copy", "view_as_real_copy", "view_as_complex_copy",
    "lift_fresh_copy", "_neg_view_copy", "_conj_copy", "_reshape_copy",
)


@register(*existing_ops(*VIEW_COPIES), category="data_movement")
def view_copy_cost(op: CapturedOp) -> OpCost:
    """Materialized view: reads the elements it keeps (at most the input), writes the output."""
    x = op.tensor_inputs()[0]
    written = sum(t.nbytes for t in op.outputs)
    return OpCost(flops=0, bytes_read=min(footprint_bytes(x), written), bytes_written=written,
                  kernels=1 if written else 0, category="data_movement", compute_dtype=x.dtype)


MOVES = {  # name -> CUDA kernels
    "cat": 1, "concat": 1, "concatenate": 1, "stack": 1, "hstack": 1, "vstack": 1, "dstack": 1,
    "column_stack": 1, "repeat": 1, "tile": 1, "constant_pad_nd": 2, "pad": 2,
    "reflection_pad1d": 1, "reflection_pad2d": 1, "reflection_pad3d": 1,
    "replication_pad1d": 1, "replication_pad2d": 1, "replication_pad3d": 1,
    "_pad_circular": 1, "_pad_enum": 2, "roll": 1, "flip": 1, "fliplr": 1, "flipud": 1, "rot90": 1,
    "tril": 1, "triu": 1, "tril_": 1, "triu_": 1, "pixel_shuffle": 1, "pixel_unshuffle": 1,
    "channel_shuffle": 1, "native_channel_shuffle": 1, "im2col": 1, "diag_embed": 2, "diag": 1,
    "block_diag": 2, "_pack_padded_sequence": 1, "_pad_packed_sequence": 2,
}


@register(*existing_ops(*MOVES), category="data_movement")
def move_cost(op: CapturedOp) -> OpCost:
    """Pure data movement: inputs read once, output written once, no arithmetic."""
    read, written = rw_bytes(op)
    first = op.tensor_inputs()
    return OpCost(flops=0, bytes_read=read, bytes_written=written,
                  kernels=MOVES[op.packet.split(".", 1)[1]], category="data_movement",
                  compute_dtype=first[0].dtype if first else None)


@register(aten.col2im, category="data_movement")
def col2im_cost(op: CapturedOp) -> OpCost:
    """Fold patches back into an image, summing overlaps: 1 add per input element."""
    read, written = rw_bytes(op)
    x = op.tensor_inputs()[0]
    return OpCost(flops=x.numel, bytes_read=read, bytes_written=written, kernels=1,
                  category="data_movement", compute_dtype=x.dtype)


@register(aten.repeat_interleave, category="data_movement")
def repeat_interleave_cost(op: CapturedOp) -> OpCost:
    """Repeat each element: with a tensor of repeats, cumsum + index (3 kernels, host sync)."""
    read, written = rw_bytes(op)
    return OpCost(flops=0, bytes_read=read, bytes_written=written, kernels=3,
                  category="data_movement")
