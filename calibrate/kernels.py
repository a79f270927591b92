"""Time one captured op in isolation on the device: the shape-exact kernel table's measurement.

A captured op carries its target and every argument's shape, stride and dtype; here it is run on
fresh tensors of exactly those (random normal floats, zero integers and booleans: valid indices
for any gather, embedding or mask), timed by the shared protocol on the device clock. The result is
keyed by ``roofline.model.kernel_table.kernel_key``, so prediction finds it for any op with the same
signature, in any model.
"""

from __future__ import annotations

from typing import Any

import torch

from roofline.graph.ops import CapturedGraph, CapturedOp, TensorMeta
from roofline.schema.profile import KernelEntry, Stat
from roofline.timing import time_fn


def real_tensor(meta: TensorMeta, device: str, generator: torch.Generator | None = None) -> torch.Tensor:
    """A tensor with ``meta``'s shape, strides and dtype on ``device``: normal values for floats, zeros otherwise."""
    span = 1 + sum((s - 1) * st for s, st in zip(meta.shape, meta.stride) if s > 0) if all(s > 0 for s in meta.shape) else 0
    storage = torch.empty(span + meta.storage_offset, dtype=meta.dtype, device=device)
    if meta.dtype.is_floating_point or meta.dtype.is_complex:
        storage.normal_(generator=generator)
    else:
        storage.zero_()
    return storage.as_strided(meta.shape, meta.stride, meta.storage_offset)


def materialize_args(value: Any, device: str, generator: torch.Generator | None = None) -> Any:
    """The op's recorded arguments with every ``TensorMeta`` made a real tensor on ``device``."""
    if isinstance(value, TensorMeta):
        return real_tensor(value, device, generator)
    if isinstance(value, list):
        return [materialize_args(v, device, generator) for v in value]
    if isinstance(value, tuple):
        return tuple(materialize_args(v, device, generator) for v in value)
    if isinstance(value, dict):
        return {k: materialize_args(v, device, generator) for k, v in value.items()}
    if isinstance(value, torch.device):
        return torch.device(device)
    if isinstance(value, str) and value in ("cpu", "cuda") and device.startswith("cuda"):
        return device
    return value


def time_op(op: CapturedOp, device: str, *, budget_s: float = 0.02) -> Stat:
    """The op's kernel time on ``device``: its recorded call on fresh tensors, device clock, after warm-up."""
    gen = torch.Generator(device=device).manual_seed(op.index)
    args = materialize_args(op.args, device, gen)
    kwargs = materialize_args(op.kwargs, device, gen)
    kwargs = {k: (torch.device(device) if k == "device" and v is not None else v) for k, v in kwargs.items()}
    with torch.no_grad():
        t = time_fn(lambda: op.target(*args, **kwargs), device=device, budget_s=budget_s, warmup_budget_s=budget_s, min_samples=5, label=op.name)
    return t.stat()


def time_graph_kernels(graph: CapturedGraph, device: str, known: set[str] | None = None, *, budget_s: float = 0.01, model: str = "", progress=None) -> list[KernelEntry]:
    """One ``KernelEntry`` per distinct signature among the graph's ops that launch kernels and are
    not ``known`` already. An op that cannot run on fresh tensors (it needs real indices, say) is
    left to the curves."""
    from roofline.costs import cost_of
    from roofline.model.kernel_table import kernel_key

    seen = set(known or ())
    entries = []
    for op in graph.ops:
        cost, _ = cost_of(op)
        if not cost.kernels or not hasattr(op.target, "_opname"):
            continue
        key = kernel_key(op)
        if key in seen:
            continue
        seen.add(key)
        try:
            stat = time_op(op, device, budget_s=budget_s)
        except Exception:  # noqa: BLE001 - an op that needs real values stays on the curves
            continue
        entries.append(KernelEntry(key=key, op=op.name, time=stat, model=model))
        if progress:
            progress()
    return entries
