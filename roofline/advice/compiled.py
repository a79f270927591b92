"""torch.compile and CUDA graphs: the forward predicted as Inductor would run it, and as one CUDA
graph replay, on the same model of time as eager.

- A CUDA graph replaces every op's host dispatch by one graph launch; each kernel still takes at
  least the device's per-kernel time inside a graph.
- torch.compile fuses pointwise chains as Inductor does (a GEMM stays a cuBLAS call, its epilogue
  becomes one fused kernel), and launches kernels from generated Python at a calibrated cost per
  call, per graph input and per kernel (``Overheads.compiled_*``), all measured as ratios to eager
  dispatch so both move with the host's speed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from roofline.advice.fusion import EPILOGUE_HEADS, Group, fuse_program, fusion_groups
from roofline.costs import OpCost
from roofline.graph.ops import CapturedGraph
from roofline.model.device import DeviceModel
from roofline.model.kernels import kernel_s
from roofline.model.timeline import KernelTerms, Timeline, group_reach, op_reaches, predict_timeline

# Graph inputs of the chain compiled_call_s is measured on (``calibrate.compiled.compiled_chain``'s
# (x, w)); compiled_input_s prices each one beyond them (tests/test_compiled_costs.py checks the count).
COMPILED_CHAIN_INPUTS = 2


def compile_groups(groups: list[Group], costs: Sequence[OpCost]) -> list[Group]:
    """What Inductor fuses: pointwise chains (with a trailing reduction); a GEMM stays a cuBLAS call,
    so a matmul epilogue becomes the GEMM plus one fused kernel for the ops after it."""
    out = []
    for g in groups:
        if costs[g.ops[0]].category in EPILOGUE_HEADS:
            rest = g.ops[1:]
            if sum(1 for i in rest if costs[i].kernels) >= 2:
                out.append(Group(rest, "pointwise chain"))
        else:
            out.append(g)
    return out


def graph_inputs(graph: CapturedGraph) -> int:
    """Tensors a torch.compile'd call of this forward takes: the user's inputs and the model's state."""
    return len(graph.inputs) + graph.state_tensors


def cuda_graph_total_s(costs: Sequence[OpCost], timeline: Timeline, dev: DeviceModel) -> float | None:
    """Replay of the whole forward as one CUDA graph: one launch, each kernel at least the in-graph floor."""
    ov = dev.overheads
    if dev.kind != "cuda" or ov.graph_kernel_s is None or ov.graph_launch_s is None:
        return None
    per_kernel = ov.graph_kernel_s.median_s
    device = 0.0
    for cost, op_t in zip(costs, timeline.ops):
        if cost.kernels:
            work = max(op_t.compute_s, op_t.memory_s)
            device += max(work, per_kernel * cost.kernels)
    return ov.graph_launch_s.median_s + device + timeline.sync_s


def compiled_total_s(
    graph: CapturedGraph, costs: Sequence[OpCost], dev: DeviceModel, kernels: Sequence[KernelTerms], *, cuda_graphs: bool = False,
) -> float | None:
    """Predicted forward under torch.compile: Inductor's fusion, its generated-code launch costs and,
    with ``cuda_graphs`` (mode="reduce-overhead"), one graph replay instead of per-kernel launches.
    ``kernels``: the eager ops' kernel terms on ``dev``."""
    ov = dev.overheads
    if dev.kind != "cuda":
        return None
    # Without calibrated torch.compile host costs (an older profile), launches are priced like eager
    # dispatch: the fusion gain is still predicted, the host saving is not.
    call_s = ov.compiled_call_s.median_s if ov.compiled_call_s else 0.0
    if ov.compiled_input_s is not None:
        # Each graph input (Dynamo lifts a module's parameters and buffers into inputs) is guarded
        # and size-checked on every call.
        call_s += ov.compiled_input_s.median_s * max(graph_inputs(graph) - COMPILED_CHAIN_INPUTS, 0)
    per_kernel = ov.compiled_kernel_s.median_s if ov.compiled_kernel_s else ov.dispatch_s.median_s
    all_groups = fusion_groups(graph, costs)
    # A GEMM with an epilogue is one cuBLAS call: Inductor moves its bias into the fused epilogue
    # kernel, where eager torch before 2.10 copied the bias in first (2 kernels) at batch 1.
    heads = {g.ops[0] for g in all_groups if costs[g.ops[0]].category in EPILOGUE_HEADS and costs[g.ops[0]].kernels > 1}
    costs = [replace(c, kernels=1) if i in heads else c for i, c in enumerate(costs)]
    reaches = op_reaches(graph.ops, dev) if heads else None
    base = [kernel_s(graph.ops[i], costs[i], dev, group_reach(reaches, (i,))) if i in heads else k for i, k in enumerate(kernels)]
    program = fuse_program(graph, costs, compile_groups(all_groups, costs))
    fused_kernels = program.kernels(base, dev)
    if cuda_graphs:
        eager = predict_timeline(program.graph, program.costs, dev, is_module=False, kernels=fused_kernels)
        graphed = cuda_graph_total_s(program.costs, eager, dev)
        return None if graphed is None else graphed + call_s
    tl = predict_timeline(
        program.graph, program.costs, dev, is_module=False, kernels=fused_kernels,
        host_cost=lambda op, cost: per_kernel * cost.kernels, start_host_s=call_s,
    )
    return tl.total_s
