"""Whether a model can run a given way at all: host syncs that a CUDA graph cannot capture, dtypes
a device has no kernel for, and memory that does not fit.

These facts come from the captured graph alone; ``roofline.advice.plans`` turns them into the
``applicable`` flag and the reason of each plan.
"""

from __future__ import annotations

from typing import Sequence

import torch

from roofline.costs import OpCost
from roofline.graph.ops import CapturedGraph, reads_to_host
from roofline.schema.report import MemoryFit

_INTEGER = {torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.bool}
# GEMM-shaped aten ops: cuBLAS has no integer GEMM behind them (torch raises "not implemented for
# 'Long'" on CUDA); ``_int_mm`` is the one integer product CUDA runs.
_GEMM_PACKETS = {"aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm", "aten.addbmm", "aten.mv", "aten.addmv", "aten.dot", "aten.matmul", "aten.linear"}
_CONV_PACKETS = {"aten.convolution", "aten.conv1d", "aten.conv2d", "aten.conv3d", "aten._convolution", "aten.conv_transpose1d", "aten.conv_transpose2d", "aten.conv_transpose3d"}


def host_syncs(graph: CapturedGraph) -> list[str]:
    """Where the model makes the host wait for tensor values: "`.item()` at model.py:12", in order,
    each place once (``.tolist()`` and friends recorded at capture, then the ops of ``reads_to_host``).
    A library's own checks that it skips under torch.compile and CUDA-graph capture
    (``CapturedGraph.library_check_ops``) are not among them."""
    found = list(graph.host_reads)
    seen_sources = {r.rsplit(" at ", 1)[-1] for r in found if " at " in r}
    library = set(graph.library_check_ops)
    for op in graph.ops:
        what = reads_to_host(op)
        if what is None or op.index in library or (op.source and op.source in seen_sources):
            continue
        found.append(f"{what} at {op.source}" if op.source else what)
        if op.source:
            seen_sources.add(op.source)
    return list(dict.fromkeys(found))


def missing_kernels(graph: CapturedGraph, device: str) -> list[str]:
    """Ops this device has no kernel for (torch raises NotImplementedError): "aten.mm on int64"."""
    out = []
    for op in graph.ops:
        inputs = op.tensor_inputs()
        if not inputs:
            continue
        dtype = inputs[0].dtype
        if op.packet in _CONV_PACKETS and dtype in _INTEGER:
            out.append(f"{op.packet} on {str(dtype).replace('torch.', '')}")
        elif device == "cuda" and op.packet in _GEMM_PACKETS and dtype in _INTEGER:
            out.append(f"{op.packet} on {str(dtype).replace('torch.', '')}")
    return list(dict.fromkeys(out))


def _aliases(name: str) -> bool:
    """An in-place op (``add_``) or an ``out=`` variant writes into memory it was given."""
    base = name.split(".")[1] if name.count(".") >= 2 else name
    return base.endswith("_") and not base.startswith("_")


def peak_activation_bytes(graph: CapturedGraph, costs: Sequence[OpCost]) -> int:
    """Most bytes of op outputs alive at once, running the ops in order: each output is allocated
    when its op runs and freed after the last op that reads it or a view of it (never, for what
    the model returns). Views and in-place ops allocate nothing."""
    owner = list(range(len(graph.ops)))  # the op whose allocation each op's output lives in
    size = [0] * len(graph.ops)
    for op, cost in zip(graph.ops, costs):
        i = op.index
        if cost.category != "creation" and (cost.category == "view" or cost.kernels == 0 or _aliases(op.name)):
            owner[i] = owner[op.input_ops[0]] if op.input_ops else -1
        else:
            size[i] = sum(t.nbytes for t in op.outputs)
    last_use = [i for i in range(len(graph.ops))]
    for op in graph.ops:
        a = owner[op.index]
        if a < 0:
            continue
        if op.is_output:
            last_use[a] = len(graph.ops)
        for u in op.users:
            last_use[a] = max(last_use[a], u)
    frees: dict[int, int] = {}
    for a, end in enumerate(last_use):
        if size[a]:
            frees[end] = frees.get(end, 0) + size[a]
    alive = peak = 0
    for i in range(len(graph.ops)):
        alive += size[i]
        peak = max(peak, alive)
        alive -= frees.get(i, 0)
    return peak


def memory_fit(graph: CapturedGraph, costs: Sequence[OpCost], device: str, capacity_bytes: int | None) -> MemoryFit:
    """What one call holds (weights, inputs, peak activations) against ``capacity_bytes``."""
    weights = graph.parameters_bytes
    inputs = sum(t.nbytes for t in graph.inputs)
    peak = peak_activation_bytes(graph, costs)
    need = weights + inputs + peak
    return MemoryFit(
        device=device, weights_bytes=weights, inputs_bytes=inputs, peak_activations_bytes=peak, need_bytes=need,
        capacity_bytes=capacity_bytes, fits=capacity_bytes is None or need <= capacity_bytes,
    )
