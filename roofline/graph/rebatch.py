"""One model's graph at other batch sizes, from three captures instead of one per size.

The batch is the leading dimension of every input. Nearly every integer in a captured graph (a
shape, a stride, an offset, a size argument) is an affine function of the batch: ``B``, ``B*T``,
``B*heads``, a constant. Captured at the model's own batch b0, at 2*b0 and at 4*b0, each integer's
line is fitted on the first two and checked on the third; when every integer fits and everything
else (ops, dtypes, modules, floats) is equal, the graph at any batch but 1 is computed, not
captured. Batch 1 is always captured: a dimension of size 1 changes what torch runs (a transposed
tensor of batch 1 is already contiguous, so ``.contiguous()`` copies nothing; broadcasting and
squeezes take other paths). Otherwise (the structure depends on the batch, or an integer grows
faster than it) each batch is captured.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any, Callable

import torch

from roofline.graph.ops import CapturedGraph, CapturedOp, TensorMeta
from roofline.graph.structure import map_tensors, tensors_in


def leading_batch(args: tuple, kwargs: dict | None = None) -> int | None:
    """The batch size: the common leading dimension of every tensor input, or None."""
    tensors = list(tensors_in((args, kwargs or {})))
    if not tensors or any(t.ndim < 2 for t in tensors):
        return None  # a 1-D input's length is a problem size, not a batch
    dims = {t.shape[0] for t in tensors}
    return dims.pop() if len(dims) == 1 else None


def with_batch(args: tuple, kwargs: dict | None, batch: int, real: bool = False) -> tuple[tuple, dict]:
    """The inputs with the leading dimension replaced: meta tensors of that shape, or (``real``)
    the real inputs' rows repeated or cut to that many."""

    def resize(t: torch.Tensor) -> torch.Tensor:
        if t.ndim == 0:
            return t
        if real:
            return t.index_select(0, torch.arange(batch) % t.shape[0])
        return torch.empty((batch, *t.shape[1:]), dtype=t.dtype, device="meta")

    return map_tensors(args, resize), map_tensors(kwargs or {}, resize)


class NotAffine(Exception):
    """A value does not follow an affine function of the integer it is fitted on."""


Template = Callable[[int], Any]


def _fit(values: list, batches: list[int]) -> Template:
    """A function of the batch that gives ``values[i]`` at ``batches[i]``: affine in every integer
    leaf (fitted on the first two, checked on the third), equal elsewhere; else ``NotAffine``."""
    first = values[0]
    if any(type(v) is not type(first) for v in values):
        raise NotAffine
    if isinstance(first, bool) or not isinstance(first, (int, list, tuple, dict, TensorMeta)):
        if any(v != first for v in values[1:]):
            raise NotAffine
        return lambda b: first
    if isinstance(first, int):
        (b0, b1, b2), (v0, v1, v2) = batches, values
        slope = Fraction(v1 - v0, b1 - b0)
        if v0 + slope * (b2 - b0) != v2:
            raise NotAffine
        if slope == 0:
            return lambda b: v0

        def line(b: int) -> int:
            v = v0 + slope * (b - b0)
            if v.denominator != 1 or v < 0:
                raise NotAffine
            return int(v)

        return line
    if isinstance(first, TensorMeta):
        if any(v.dtype != first.dtype or v.device != first.device or v.ndim != first.ndim for v in values):
            raise NotAffine
        shape = _fit([v.shape for v in values], batches)
        stride = _fit([v.stride for v in values], batches)
        offset = _fit([v.storage_offset for v in values], batches)
        return lambda b: TensorMeta(shape=shape(b), dtype=first.dtype, stride=stride(b), device=first.device, storage_offset=offset(b))
    if isinstance(first, dict):
        if any(v.keys() != first.keys() for v in values):
            raise NotAffine
        parts = {k: _fit([v[k] for v in values], batches) for k in first}
        return lambda b: {k: f(b) for k, f in parts.items()}
    if any(len(v) != len(first) for v in values):
        raise NotAffine
    items = [_fit([v[i] for v in values], batches) for i in range(len(first))]
    kind = type(first)
    return lambda b: kind(f(b) for f in items)


def _op_template(ops: list[CapturedOp], batches: list[int]) -> Callable[[int], CapturedOp]:
    first = ops[0]
    if any(
        op.target != first.target or op.module != first.module or op.input_ops != first.input_ops or op.users != first.users
        or op.input_sources != first.input_sources or op.is_output != first.is_output or op.torch_call != first.torch_call
        for op in ops[1:]
    ):
        raise NotAffine
    args = _fit([op.args for op in ops], batches)
    kwargs = _fit([op.kwargs for op in ops], batches)
    outputs = _fit([op.outputs for op in ops], batches)
    return lambda b: replace(first, args=args(b), kwargs=kwargs(b), outputs=outputs(b))


def affine_template(graphs: list[CapturedGraph], xs: list[int]) -> Callable[[int], CapturedGraph]:
    """The graph as a function of one integer ``x`` (the batch, a cache length), from the graphs at
    three values ``xs``: every integer leaf affine in ``x``, everything else equal; else ``NotAffine``."""
    first = graphs[0]
    if any(len(g.ops) != len(first.ops) or g.module_calls != first.module_calls or g.state_tensors != first.state_tensors for g in graphs):
        raise NotAffine
    ops = [_op_template([g.ops[i] for g in graphs], xs) for i in range(len(first.ops))]
    inputs = _fit([g.inputs for g in graphs], xs)
    outputs = _fit([g.outputs for g in graphs], xs)

    def at(x: int) -> CapturedGraph:
        made = [op(x) for op in ops]
        return replace(first, ops=made, inputs=list(inputs(x)), outputs=list(outputs(x)), warnings=list(first.warnings), replay=None)

    return at


class Rebatcher:
    """The graph at any batch: derived from three captures where every integer is affine in the
    batch, else captured. ``capture_at(b)`` captures the model at batch ``b`` (None if it fails)."""

    def __init__(self, capture_at: Callable[[int], CapturedGraph | None], b0: int, graph0: CapturedGraph):
        self.capture_at = capture_at
        self.captured: dict[int, CapturedGraph | None] = {b0: graph0}
        self.derive: Callable[[int], CapturedGraph] | None = None
        batches = [b0, 2 * b0, 4 * b0]
        graphs = [self._captured(b) for b in batches]
        if all(g is not None for g in graphs):
            try:
                self.derive = affine_template(graphs, batches)
            except NotAffine:
                self.derive = None

    def _captured(self, b: int) -> CapturedGraph | None:
        if b not in self.captured:
            self.captured[b] = self.capture_at(b)
        return self.captured[b]

    def at(self, b: int) -> CapturedGraph | None:
        """The graph at batch ``b``: captured if it was, else derived, else captured now."""
        if b in self.captured:
            return self.captured[b]
        if self.derive is not None and b > 1:
            try:
                return self.derive(b)
            except NotAffine:
                pass
        return self._captured(b)
