"""Padding advice: GEMM dimensions whose size costs time by itself.

cuBLAS picks its fastest kernels when every leading dimension is a multiple of 16 bytes and the
tiles divide the problem; a vocabulary of 50257 or a width of 1000 in float32 sends it to slower
kernels. The model of time prices that (the profile's misaligned-GEMM ratios, or the kernel table),
so the advice is the same model asked again with the dimension padded: every GEMM of the graph that
has the dimension as its N or K is priced at the padded size, and a padding is advised when it cuts
those GEMMs' time by more than ``MIN_GAIN``.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from roofline.costs.registry import OpCost, cost_of
from roofline.graph.ops import CapturedOp, TensorMeta
from roofline.model.device import DeviceModel
from roofline.model.kernels import kernel_s
from roofline.model.timeline import KernelTerms
from roofline.schema.report import PaddingAdvice
from roofline.units import seconds

PAD_TO = 64  # elements: a multiple of every dtype's 16-byte vector and of the common tile sizes
MIN_GAIN = 0.10  # of the GEMMs' own time
GEMM_PACKETS = ("aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm")


def padded_size(size: int) -> int:
    return -(-size // PAD_TO) * PAD_TO


def _padded_meta(t: TensorMeta, size: int, padded: int) -> TensorMeta:
    """``t`` with every dimension of ``size`` grown to ``padded``, dense in its own stride order."""
    shape = tuple(padded if s == size else s for s in t.shape)
    order = sorted(range(t.ndim), key=lambda i: (t.stride[i], -i))  # innermost first
    stride, acc = [0] * t.ndim, 1
    for i in order:
        stride[i] = acc
        acc *= shape[i]
    return dataclasses.replace(t, shape=shape, stride=tuple(stride), storage_offset=0)


def padded_op(op: CapturedOp, size: int, padded: int) -> CapturedOp:
    """The op with one dimension size padded in every tensor it reads and writes."""
    def walk(x):
        if isinstance(x, TensorMeta):
            return _padded_meta(x, size, padded)
        if isinstance(x, (list, tuple)):
            return type(x)(walk(y) for y in x)
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        return x

    return dataclasses.replace(op, args=walk(op.args), kwargs=walk(op.kwargs), outputs=walk(op.outputs))


def padding_advice(ops: Sequence[CapturedOp], costs: Sequence[OpCost], kernels: Sequence[KernelTerms], dev: DeviceModel) -> list[PaddingAdvice]:
    """Paddings that cut the predicted time of the GEMMs they touch by more than ``MIN_GAIN``, the
    largest saving first; ``kernels`` are the ops' priced kernel terms (``price_kernels``). GPU
    only: the calibrated alignment penalties are cuBLAS's."""
    if dev.kind != "cuda":
        return []
    found: dict[int, PaddingAdvice] = {}
    for op, cost, terms in zip(ops, costs, kernels):
        if op.packet not in GEMM_PACKETS or cost.gemm is None or not cost.kernels:
            continue
        _, _, n, k = cost.gemm
        for size in sorted({n, k}):
            if size < PAD_TO or size % PAD_TO == 0:
                continue
            twin = padded_op(op, size, padded_size(size))
            twin_cost, _ = cost_of(twin)
            entry = found.setdefault(size, PaddingAdvice(size=size, padded=padded_size(size), gemms=0, before_s=0.0, after_s=0.0))
            entry.gemms += 1
            entry.before_s += terms[0]
            entry.after_s += kernel_s(twin, twin_cost, dev)[0]
            if op.module and op.module not in entry.modules and len(entry.modules) < 3:
                entry.modules.append(op.module)
    advised = [e for e in found.values() if e.after_s < (1 - MIN_GAIN) * e.before_s]
    return sorted(advised, key=lambda e: e.after_s - e.before_s)


def padding_line(entry: PaddingAdvice) -> str:
    """'pad 50257 → 50304 (lm_head, 1 GEMM): 1.86 ms → 0.30 ms'."""
    where = ", ".join(entry.modules) or "top level"
    gemms = f"{entry.gemms} GEMM" + ("s" if entry.gemms != 1 else "")
    return f"pad {entry.size} → {entry.padded} ({where}, {gemms}): {seconds(entry.before_s)} → {seconds(entry.after_s)}"
