"""Test utility: record the aten ops a function runs, as ``CapturedOp``s.

Runs ``fn`` on real (small) CPU tensors under a ``TorchDispatchMode`` and returns one ``CapturedOp``
per aten call, with every tensor argument replaced by ``TensorMeta.of(t)`` and outputs flattened.
This is independent of ``roofline.graph.capture`` on purpose: the cost tests need realistic ops, not a
particular capture implementation. Graph links (input_ops/users) are not filled in.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from roofline.graph.ops import CapturedOp, TensorMeta

# Metadata queries that FlopCounterMode also skips; they launch nothing.
_SKIP = {
    torch.ops.aten.sym_is_contiguous.default,
    torch.ops.aten.is_contiguous.default,
    torch.ops.aten.is_contiguous.memory_format,
    torch.ops.aten.is_strides_like_format.default,
    torch.ops.aten.is_non_overlapping_and_dense.default,
    torch.ops.aten.size.default,
    torch.ops.aten.sym_size.default,
    torch.ops.aten.stride.default,
    torch.ops.aten.sym_stride.default,
    torch.ops.aten.storage_offset.default,
    torch.ops.aten.sym_storage_offset.default,
    torch.ops.aten.numel.default,
    torch.ops.aten.sym_numel.default,
    torch.ops.aten.dim.default,
    torch.ops.prim.layout.default,
    torch.ops.prim.device.default,
}


def _meta(x):
    return TensorMeta.of(x) if isinstance(x, torch.Tensor) else x


class _Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops: list[CapturedOp] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        # Snapshot inputs before running: in-place ops would otherwise report their new metadata.
        margs, mkwargs = tree_map(_meta, (tuple(args), dict(kwargs)))
        out = func(*args, **kwargs)
        if func not in _SKIP:
            flat, _ = tree_flatten(out)
            outs = tuple(TensorMeta.of(t) for t in flat if isinstance(t, torch.Tensor))
            self.ops.append(
                CapturedOp(index=len(self.ops), target=func, args=margs, kwargs=mkwargs, outputs=outs)
            )
        return out


def capture_ops(fn, *args, **kwargs) -> list[CapturedOp]:
    """Run ``fn(*args, **kwargs)`` and return the aten ops it dispatched, in order."""
    with torch.no_grad(), _Recorder() as rec:
        fn(*args, **kwargs)
    return rec.ops


def capture_with_grad(fn, *args, **kwargs) -> list[CapturedOp]:
    """Like ``capture_ops`` but with autograd enabled (some ops decompose differently)."""
    with _Recorder() as rec:
        fn(*args, **kwargs)
    return rec.ops


def only(ops: list[CapturedOp], packet: str) -> CapturedOp:
    """The single op of this packet (e.g. ``'aten.mm'``) in ``ops``; fails if absent or repeated."""
    found = [o for o in ops if o.packet == packet]
    assert len(found) == 1, f"expected one {packet}, got {[o.name for o in ops]}"
    return found[0]


def names(ops: list[CapturedOp]) -> list[str]:
    return [o.name for o in ops]


def priced(packet: str, fn, *args, **kwargs):
    """Capture ``fn(*args)``, find the single op of ``packet`` and return ``(op, cost)``; the op
    must have a formula (``supported``)."""
    from roofline.costs import cost_of

    op = only(capture_ops(fn, *args, **kwargs), packet)
    cost, supported = cost_of(op)
    assert supported, f"{op.name} has no formula"
    return op, cost


def op_of(target, *args, outputs=(), **kwargs) -> CapturedOp:
    """A hand-built ``CapturedOp`` (for ops that cannot run on CPU): args may hold TensorMeta."""
    return CapturedOp(index=0, target=target, args=tuple(args), kwargs=kwargs, outputs=tuple(outputs))


def meta(*shape, dtype=torch.float32, device="cpu") -> TensorMeta:
    return TensorMeta.contiguous(shape, dtype=dtype, device=device)
