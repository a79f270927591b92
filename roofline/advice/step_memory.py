"""Device memory over one training step, from its capture alone.

Running the ops in order, what is allocated after each op is
  * what stays: parameters and buffers, the batch, the optimizer's state on the device;
  * gradients: each made by a backward op and kept to the end of the step (``zero_grad`` frees
    them before the next forward);
  * every other value: allocated by the op that makes it, freed after the last op that reads it or
    a view of it (what autograd saved for backward is read by a backward op, so it lives until
    then); views and in-place ops allocate nothing; what the step returns lives to its end;
  * on a GPU, the caching allocator's rounding of every block to ``CUDA_BLOCK_BYTES`` and the
    cuBLAS workspace of each thread that runs GEMMs (the model's, and autograd's for the backward
    pass): ``CUBLAS_WORKSPACE_BYTES`` each, PyTorch's default on compute capability 9.0 and later,
    ``CUBLAS_WORKSPACE_BYTES_OLDER`` before. These are PyTorch's defaults, not measured: the GPU run
    of ``benchmarks/train_check.py`` compares the peak with ``torch.cuda.max_memory_allocated``.

  * on a GPU, the staging buffer of a reduction over leading dimensions of at least
    ``REDUCE_STAGING_MIN_ROWS`` rows (autograd's sum of a Linear's bias gradient over the tokens):
    ATen's reduce kernel splits those rows across blocks and stages ``REDUCE_STAGING_BYTES``
    per input element, whatever the dtype, for the op's duration (``benchmarks/reduce_staging.py``:
    ``torch.cuda.max_memory_allocated`` around sums from 128 to 16384 rows).

It is a lower bound where the allocator fragments or a library allocates scratch memory of its own
(cuDNN's convolution workspaces, oneDNN's on the CPU).
"""

from __future__ import annotations

from typing import Sequence

from roofline.advice.applicability import _aliases
from roofline.costs import OpCost
from roofline.graph.ops import CapturedGraph
from roofline.schema.report import MemoryPoint, StepMemory

CUDA_BLOCK_BYTES = 512  # c10's CUDACachingAllocator rounds every request up to this
CUBLAS_WORKSPACE_BYTES = 32 << 20  # per (handle, stream): 4096 KiB x 8 on sm_90+
CUBLAS_WORKSPACE_BYTES_OLDER = (4096 << 10) * 2 + (16 << 10) * 8
GEMM_THREADS = 2  # the thread that runs the forward, and autograd's device thread
TIMELINE_POINTS = 240
REDUCE_OPS = {"aten.sum", "aten.mean"}
REDUCE_STAGING_MIN_ROWS = 1024  # 512 rows stage nothing, 1024 do
REDUCE_STAGING_BYTES = 8


def _rounded(nbytes: int, device: str) -> int:
    if device != "cuda" or nbytes == 0:
        return nbytes
    return -(-nbytes // CUDA_BLOCK_BYTES) * CUDA_BLOCK_BYTES


def staging_bytes(op, device: str) -> int:
    """The buffer a GPU reduction over leading dimensions stages for its duration (module docstring)."""
    inputs = op.tensor_inputs()
    if device != "cuda" or op.packet not in REDUCE_OPS or not inputs or len(op.args) < 2 or not isinstance(op.args[1], (list, tuple)):
        return 0
    x = inputs[0]
    dims = {d % x.ndim for d in op.args[1]} if x.ndim else set()
    if not dims or x.ndim - 1 in dims:
        return 0
    rows = 1
    for d in dims:
        rows *= x.shape[d]
    return REDUCE_STAGING_BYTES * x.numel if rows >= REDUCE_STAGING_MIN_ROWS else 0


def workspace_bytes(graph: CapturedGraph, costs: Sequence[OpCost], device: str, compute_capability: str | None) -> int:
    """The cuBLAS workspaces a step on a GPU allocates (none on the CPU, or without a GEMM)."""
    if device != "cuda" or not any(c.category in ("matmul", "conv", "attention") for c in costs):
        return 0
    major = int(str(compute_capability or "9.0").split(".")[0])
    each = CUBLAS_WORKSPACE_BYTES if major >= 9 else CUBLAS_WORKSPACE_BYTES_OLDER
    threads = GEMM_THREADS if any(op.phase == "backward" for op in graph.ops) else 1
    return threads * each


class Values:
    """The values a step allocates, each an output of an op: ``(op, k)`` -> bytes, the op after
    which it is freed, and whether the backward pass reads it (what autograd saved). A view's or an
    in-place op's output is the value it aliases (``root``)."""

    def __init__(self, graph: CapturedGraph, costs: Sequence[OpCost], device: str):
        ops = graph.ops
        n = len(ops)
        self.size: dict[tuple[int, int], int] = {}
        alias: dict[tuple[int, int], tuple[int, int] | None] = {}
        for op, cost in zip(ops, costs):
            aliases = cost.category != "creation" and (cost.category == "view" or cost.kernels == 0 or _aliases(op.name))
            first = next(((int(p), int(name.rsplit(".", 1)[1])) for name, p in op.input_sources if p >= 0), None)
            for k, t in enumerate(op.outputs):
                if op.host_scalar:  # a step count stays on the host
                    alias[(op.index, k)] = None
                elif aliases:
                    alias[(op.index, k)] = self.root(first, alias) if first is not None else None
                else:
                    alias[(op.index, k)] = (op.index, k)
                    self.size[(op.index, k)] = _rounded(t.nbytes, device)
        self.alias = alias
        self.last_use = {v: v[0] for v in self.size}
        self.read_in_backward = dict.fromkeys(self.size, False)
        for op in ops:
            for name, p in op.input_sources:
                if p < 0:
                    continue
                v = alias.get((p, int(name.rsplit(".", 1)[1])))
                if v is not None and v in self.last_use:
                    self.last_use[v] = max(self.last_use[v], op.index)
                    if op.phase == "backward" and ops[v[0]].phase == "forward":
                        self.read_in_backward[v] = True
            if op.is_output:
                for k in range(len(op.outputs)):
                    v = alias.get((op.index, k))
                    if v is not None:
                        self.last_use[v] = n
        self.gradients: set[tuple[int, int]] = set()
        for producer, k in (graph.training.gradients if graph.training else []):
            v = alias.get((producer, k))
            if v is not None:
                self.last_use[v] = n
                self.gradients.add(v)

    @staticmethod
    def root(v: tuple[int, int], alias: dict) -> tuple[int, int] | None:
        return alias.get(v, v)


def step_memory(graph: CapturedGraph, costs: Sequence[OpCost], device: str, capacity_bytes: int | None,
                compute_capability: str | None = None) -> StepMemory:
    """Bytes allocated after each op of a captured training step, its peak and the peak's parts."""
    info = graph.training
    ops = graph.ops
    n = len(ops)
    values = Values(graph, costs, device)
    made: dict[int, list[tuple[int, int]]] = {}
    frees: dict[int, list[tuple[int, int]]] = {}
    for v, end in values.last_use.items():
        made.setdefault(v[0], []).append(v)
        frees.setdefault(end, []).append(v)

    weights = graph.parameters_bytes
    inputs = sum(t.nbytes for t in graph.inputs)
    state = info.optimizer_state_bytes if info else 0
    workspace = workspace_bytes(graph, costs, device, compute_capability)
    resident = weights + inputs + state + workspace
    forward_end = max((op.index for op in ops if op.phase == "forward"), default=-1)

    alive = grads = saved = 0
    peak, peak_index, peak_grads, peak_staging = -1, 0, 0, 0
    after: list[int] = []
    for i in range(n):
        for v in made.get(i, ()):
            alive += values.size[v]
            if v in values.gradients:
                grads += values.size[v]
        staging = staging_bytes(ops[i], device)
        total = resident + alive + staging
        after.append(total)
        if total > peak:
            peak, peak_index, peak_grads, peak_staging = total, i, grads, staging
        for v in frees.get(i, ()):
            alive -= values.size[v]
        if i == forward_end:
            saved = sum(values.size[v] for v, end in values.last_use.items() if v[0] <= i < end and values.read_in_backward[v])
    at_peak = {
        "weights": weights, "inputs": inputs, "optimizer_state": state, "gradients": peak_grads,
        "activations": max(peak - resident - peak_grads - peak_staging, 0), "workspace": workspace + peak_staging,
    }
    return StepMemory(
        device=device, weights_bytes=weights, inputs_bytes=inputs, optimizer_state_bytes=state,
        gradients_bytes=grads, saved_activations_bytes=saved, peak_bytes=max(peak, resident), peak_index=peak_index,
        peak_phase=ops[peak_index].phase if ops else "forward", at_peak=at_peak, workspace_bytes=workspace,
        capacity_bytes=capacity_bytes, fits=capacity_bytes is None or peak <= capacity_bytes,
        timeline=_thin(after, ops, peak_index),
    )


def _thin(after: list[int], ops, peak_index: int) -> list[MemoryPoint]:
    """At most about ``TIMELINE_POINTS`` points: evenly spaced, plus each phase's last op and the peak."""
    n = len(after)
    keep = set(range(0, n, max(1, n // TIMELINE_POINTS))) | {peak_index, n - 1} if n else set()
    keep |= {i for i in range(n - 1) if ops[i].phase != ops[i + 1].phase}
    return [MemoryPoint(index=i, phase=ops[i].phase, bytes=after[i]) for i in sorted(keep)]
