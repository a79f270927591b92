"""Layout advice: convolutions whose input's memory layout sends cuDNN to a slow path.

A reshape of a vision transformer's tokens (batch, tokens, channels) into a grid hands the next
convolution a channels-last input, and cuDNN runs it channels-last. For most convolutions that is as
fast or faster; a half-precision depthwise one with a channel multiplier and a stride (PiT's pooling)
it runs one group at a time, a launch a group (``kernels.cudnn_depthwise_group_launches``), where
ATen's own kernel runs the NCHW twin in one. The advice is the model of time asked again with the
input made NCHW (``.contiguous()``, whose copy it pays): advised when that cuts those convolutions'
time, the host's launches included, by more than ``MIN_GAIN``.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from roofline.costs.registry import OpCost, cost_of
from roofline.graph.ops import CapturedOp, TensorMeta
from roofline.model.device import DeviceModel
from roofline.model.kernels import contiguous_copy_s, cudnn_depthwise_group_launches, kernel_s
from roofline.model.timeline import KernelTerms, group_loop_host_s
from roofline.schema.report import LayoutAdvice
from roofline.units import seconds

MIN_GAIN = 0.10  # of the convolutions' own time


def nchw_op(op: CapturedOp) -> CapturedOp:
    """The convolution with its input and output dense NCHW (the weight and bias as they are)."""
    x, out = op.args[0], op.outputs[0]
    dense = lambda t: TensorMeta.contiguous(t.shape, t.dtype, t.device)  # noqa: E731
    return dataclasses.replace(op, args=(dense(x), *op.args[1:]), outputs=[dense(out), *op.outputs[1:]])


def layout_advice(ops: Sequence[CapturedOp], costs: Sequence[OpCost], kernels: Sequence[KernelTerms], dev: DeviceModel) -> list[LayoutAdvice]:
    """Per module, the convolutions cuDNN loops over groups for their channels-last input, where an
    NCHW input cuts their predicted time by more than ``MIN_GAIN``; the largest saving first. GPU only."""
    if dev.kind != "cuda":
        return []
    found: dict[str, list[float]] = {}  # module -> [convolutions, before, after]
    for op, cost, terms in zip(ops, costs, kernels):
        if not cudnn_depthwise_group_launches(op) or not isinstance(op.args[0], TensorMeta) or not op.outputs:
            continue
        twin = nchw_op(op)
        entry = found.setdefault(op.module, [0, 0.0, 0.0])
        entry[0] += 1
        entry[1] += terms[0] + group_loop_host_s(op, cost, dev)
        entry[2] += kernel_s(twin, cost_of(twin)[0], dev)[0] + contiguous_copy_s(op.args[0], dev)
    advised = [LayoutAdvice(module=m, convs=n, before_s=b, after_s=a) for m, (n, b, a) in found.items() if a < (1 - MIN_GAIN) * b]
    return sorted(advised, key=lambda e: e.after_s - e.before_s)


def layout_line(entry: LayoutAdvice) -> str:
    """'make the input of pool.conv NCHW (x.contiguous()), 1 convolution cuDNN runs a group at a time channels-last: 1.37 ms → 28 µs'."""
    where = entry.module or "the top level"
    convs = f"{entry.convs} convolution" + ("s" if entry.convs != 1 else "")
    return (f"make the input of {where} NCHW (x.contiguous()), {convs} cuDNN runs a group at a time channels-last: "
            f"{seconds(entry.before_s)} → {seconds(entry.after_s)}")
