"""Advice from the model of time: CPU-vs-GPU placement, fusion groups, CUDA graphs.

Each piece compares whole alternatives by re-running the same timeline model on a changed program
(fused groups as one kernel; per-op host overhead replaced by a graph launch), so the gains are as
good as the predictions they rest on and can be checked with ``--measure``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from roofline.costs import OpCost
from roofline.curves import DeviceModel, transfer_s
from roofline.ops import CapturedGraph, CapturedOp
from roofline.predict import Timeline, predict_timeline
from roofline.report import FusionGroup, Placement
from roofline.units import count, seconds

FUSIBLE = {"pointwise", "transcendental"}
FUSIBLE_TAIL = {"reduction", "norm"}  # may end a group: the reduction reads the fused values once
EPILOGUE_HEADS = {"matmul", "conv"}


# ---- placement ---------------------------------------------------------------------------------


def transfer_time_s(dev: DeviceModel, nbytes: int, direction: str, host_memory: str) -> float:
    """Host<->device copy time at the calibrated points (``curves.transfer_s``); 0 for nothing to copy."""
    if nbytes <= 0:
        return 0.0
    curve = dev.part.measurements.transfer_curve(direction, host_memory)
    if curve is None:
        return 0.0
    return transfer_s(curve, nbytes)


def placement(
    graph: CapturedGraph,
    gpu_timeline: Timeline | None,
    cpu_timeline: Timeline,
    gpu: DeviceModel | None,
    *,
    host_memory: str = "pageable",
    weights_resident: bool = True,
    calls: int = 1,
    copies_per_call: bool = True,
) -> Placement:
    """CPU alone against the GPU plus the copies the user's code implies, over ``calls`` calls.

    ``copies_per_call``: inputs go in and outputs come out on every call (a model called from CPU
    code); False: once for the whole loop (state that stays on the device between steps)."""
    cpu_s = cpu_timeline.total_s
    if gpu is None or gpu_timeline is None:
        return Placement(recommended="cpu", cpu_s=cpu_s, gpu_s=0.0, transfer_s=0.0, calls=calls, reason="the profile has no GPU part")
    in_bytes = sum(t.nbytes for t in graph.inputs)
    out_bytes = sum(t.nbytes for t in graph.outputs)
    transfer = transfer_time_s(gpu, in_bytes, "h2d", host_memory) + transfer_time_s(gpu, out_bytes, "d2h", host_memory)
    weights = 0.0 if weights_resident else transfer_time_s(gpu, graph.parameters_bytes, "h2d", host_memory)
    gpu_s = gpu_timeline.total_s
    cpu_total = calls * cpu_s
    copies = transfer * (calls if copies_per_call else 1)
    gpu_total = calls * gpu_s + copies + weights
    recommended = "cuda" if gpu_total < cpu_total else "cpu"
    n_ops = len(graph.ops)
    what = f"{n_ops} ops moving {count(sum(t.nbytes for t in graph.inputs) + out_bytes, 'B')} in and out"
    if calls == 1:
        loop = ""
    else:
        loop = f" per call; over {calls} calls {seconds(cpu_total)} on the CPU against {seconds(gpu_total)} on the GPU" + (
            "" if copies_per_call else " with one copy in and out"
        )
    if recommended == "cpu":
        if transfer > gpu_s and cpu_s < gpu_s + transfer and copies_per_call:
            reason = f"{what}: {seconds(cpu_s)} on the CPU, {seconds(gpu_s)} on the GPU, but {seconds(transfer)} to copy in and out{loop}"
        else:
            reason = f"{what}: {seconds(cpu_s)} on the CPU against {seconds(gpu_s)} on the GPU{loop}: per-op GPU overhead outweighs its speed"
    else:
        reason = f"{what}: {seconds(gpu_s)} on the GPU plus {seconds(transfer)} of copies beats {seconds(cpu_s)} on the CPU{loop}"
    return Placement(
        recommended=recommended, cpu_s=cpu_s, gpu_s=gpu_s, transfer_s=(copies + weights) / calls,
        host_memory=host_memory, weights_resident=weights_resident, calls=calls, reason=reason,
    )


# ---- fusion ------------------------------------------------------------------------------------


@dataclass
class _Group:
    ops: list[int]
    kind: str


def fusion_groups(graph: CapturedGraph, costs: list[OpCost]) -> list[_Group]:
    """Chains of pointwise ops (ending at most in one reduction or norm) whose intermediates have no
    other consumer, and matmul/conv epilogues (bias, activation) that fold into the GEMM.

    Views inside a chain are free and ride along. A value that leaves the graph, or is read by an op
    outside the group, must be written out: the group stops before it.
    """
    group_of: dict[int, _Group] = {}
    groups: list[_Group] = []
    ops = graph.ops

    def sole_consumer(producer: CapturedOp, consumer: int) -> bool:
        return not producer.is_output and set(producer.users) == {consumer}

    for i, op in enumerate(ops):
        cat = costs[i].category
        joinable = cat in FUSIBLE or cat in FUSIBLE_TAIL or cat == "view"
        if not joinable:
            continue
        host = None
        for j in op.input_ops:
            if j in group_of and sole_consumer(ops[j], i):
                g = group_of[j]
                last_cat = costs[g.ops[-1]].category
                if last_cat in FUSIBLE_TAIL:
                    continue  # a group ends at its reduction
                host = g
                break
            if j not in group_of and costs[j].category in EPILOGUE_HEADS and cat in FUSIBLE and sole_consumer(ops[j], i):
                host = _Group([j], "matmul epilogue" if costs[j].category == "matmul" else "conv epilogue")
                groups.append(host)
                group_of[j] = host
                break
        if host is None:
            if cat == "view":
                continue
            host = _Group([], "pointwise chain")
            groups.append(host)
        host.ops.append(i)
        group_of[i] = host
        if cat in FUSIBLE_TAIL and host.kind == "pointwise chain":
            host.kind = "pointwise chain + reduction" if len(host.ops) > 1 else host.kind
    real = []
    for g in groups:
        kernels = sum(1 for i in g.ops if costs[i].kernels > 0)
        if kernels >= 2:
            # drop trailing views: they belong to whatever reads them
            while g.ops and costs[g.ops[-1]].category == "view":
                g.ops.pop()
            real.append(g)
    return real


def fused_cost(graph: CapturedGraph, costs: list[OpCost], members: list[int]) -> OpCost:
    """One kernel for the group: only values from outside are read, only values that escape are written.

    Each distinct value from outside the group is read once, however many members read it.
    """
    inside = set(members)
    read = written = 0
    seen: set[str] = set()
    for i in members:
        op = graph.ops[i]
        tensors = op.tensor_inputs()
        if len(op.input_sources) == len(tensors):
            # each distinct value from outside the group is read once, however many members use it
            for t, (value, producer) in zip(tensors, op.input_sources):
                if producer in inside or value in seen:
                    continue
                seen.add(value)
                read += t.nbytes
        else:  # a graph from elsewhere without sources: by producing op, a value used twice counts twice
            internal = sum(t.nbytes for j in op.input_ops if j in inside for t in graph.ops[j].outputs)
            read += max(sum(t.nbytes for t in tensors) - internal, 0)
        escapes = op.is_output or any(u not in inside for u in op.users) or i == members[-1]
        if escapes:
            written += sum(t.nbytes for t in op.outputs)
    head = costs[members[0]]
    gemm_head = head.category in EPILOGUE_HEADS
    return OpCost(
        flops=sum(costs[i].flops for i in members), bytes_read=read, bytes_written=written, kernels=1,
        category=head.category if gemm_head else "pointwise",
        gemm=head.gemm if gemm_head else None, compute_dtype=head.compute_dtype,
    )


def fuse_program(graph: CapturedGraph, costs: list[OpCost], groups: list[_Group]) -> tuple[CapturedGraph, list[OpCost]]:
    """The program with each group replaced by one op at the group's last position."""
    member_of = {i: g for g in groups for i in g.ops}
    ops, new_costs = [], []
    for i, op in enumerate(graph.ops):
        g = member_of.get(i)
        if g is None:
            ops.append(op)
            new_costs.append(costs[i])
        elif i == g.ops[-1]:
            ops.append(op)
            new_costs.append(fused_cost(graph, costs, g.ops))
    fused = CapturedGraph(ops=ops, inputs=graph.inputs, parameters_bytes=graph.parameters_bytes, outputs=graph.outputs, module_calls=graph.module_calls,
                          state_tensors=graph.state_tensors)
    return fused, new_costs


def fusion_report(graph: CapturedGraph, costs: list[OpCost], dev: DeviceModel, timeline: Timeline, *, allow_tf32: bool = False, is_module: bool = True) -> tuple[list[FusionGroup], float]:
    """Fusion groups with their predicted gains, and the predicted total with every group fused."""
    groups = fusion_groups(graph, costs)
    out = []
    for g in groups:
        alone, alone_costs = fuse_program(graph, costs, [g])
        t = predict_timeline(alone, alone_costs, dev, allow_tf32=allow_tf32, is_module=is_module)
        gain = max(timeline.total_s - t.total_s, 0.0)
        before_bytes = sum(costs[i].bytes for i in g.ops)
        after = fused_cost(graph, costs, g.ops)
        out.append(
            FusionGroup(
                ops=list(g.ops), kind=g.kind, module=graph.ops[g.ops[0]].module, predicted_gain_s=gain,
                bytes_saved=max(before_bytes - after.bytes, 0),
                kernels_saved=max(sum(costs[i].kernels for i in g.ops) - 1, 0),
            )
        )
    all_fused, all_costs = fuse_program(graph, costs, groups)
    fused_total = predict_timeline(all_fused, all_costs, dev, allow_tf32=allow_tf32, is_module=is_module).total_s if groups else timeline.total_s
    out.sort(key=lambda f: -f.predicted_gain_s)
    return out, fused_total


# ---- torch.compile and CUDA graphs --------------------------------------------------------------


def compile_groups(groups: list[_Group], costs: list[OpCost]) -> list[_Group]:
    """What Inductor fuses: pointwise chains (with a trailing reduction); a GEMM stays a cuBLAS call,
    so a matmul epilogue becomes the GEMM plus one fused kernel for the ops after it."""
    out = []
    for g in groups:
        if costs[g.ops[0]].category in EPILOGUE_HEADS:
            rest = g.ops[1:]
            if sum(1 for i in rest if costs[i].kernels) >= 2:
                out.append(_Group(rest, "pointwise chain"))
        else:
            out.append(g)
    return out


# Graph inputs of the chain compiled_call_s is measured on, ``calibrate.overhead._compiled_chain``'s
# (x, w); compiled_input_s prices each one beyond them (tests/test_compiled_costs.py checks the count).
COMPILED_CHAIN_INPUTS = 2


def graph_inputs(graph: CapturedGraph) -> int:
    """Tensors a torch.compile'd call of this forward takes: the user's inputs and the model's state."""
    return len(graph.inputs) + graph.state_tensors


def compiled_total_s(graph: CapturedGraph, costs: list[OpCost], dev: DeviceModel, *, allow_tf32: bool = False, cuda_graphs: bool = False) -> float | None:
    """Predicted forward under torch.compile: Inductor's fusion, its generated-code launch costs and,
    with ``cuda_graphs`` (mode="reduce-overhead"), one graph replay instead of per-kernel launches."""
    ov = dev.overheads
    if dev.kind != "cuda":
        return None
    # Without calibrated torch.compile host costs (an older profile), launches are priced like eager
    # dispatch: the fusion gain is still predicted, the host saving is not.
    call_s = ov.compiled_call_s.median_s if ov.compiled_call_s else 0.0
    if ov.compiled_input_s is not None:
        # Each graph input (Dynamo lifts a module's parameters and buffers into inputs) is guarded
        # and size-checked on every call: seed 003's 17 inputs cost ~16 µs more than the 2 of the
        # chain the call cost is measured on (benchmarks/gpu_runs/run35/compile_probe.txt).
        call_s += ov.compiled_input_s.median_s * max(graph_inputs(graph) - COMPILED_CHAIN_INPUTS, 0)
    per_kernel = ov.compiled_kernel_s.median_s if ov.compiled_kernel_s else ov.dispatch_s.median_s
    all_groups = fusion_groups(graph, costs)
    # A GEMM with an epilogue is one cuBLAS call: Inductor moves its bias into the fused epilogue
    # kernel, where eager torch before 2.10 copied the bias in first (2 kernels) at batch 1.
    heads = {g.ops[0] for g in all_groups if costs[g.ops[0]].category in EPILOGUE_HEADS}
    costs = [replace(c, kernels=1) if i in heads and c.kernels > 1 else c for i, c in enumerate(costs)]
    groups = compile_groups(all_groups, costs)
    fused, fused_costs = fuse_program(graph, costs, groups)
    if cuda_graphs:
        base = predict_timeline(fused, fused_costs, dev, allow_tf32=allow_tf32, is_module=False)
        graphed = cuda_graph_total_s(fused_costs, base, dev)
        return None if graphed is None else graphed + call_s
    tl = predict_timeline(
        fused, fused_costs, dev, allow_tf32=allow_tf32, is_module=False,
        host_cost=lambda op, cost: per_kernel * cost.kernels, start_host_s=call_s,
    )
    return tl.total_s



def cuda_graph_total_s(costs: list[OpCost], timeline: Timeline, dev: DeviceModel) -> float | None:
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




# ---- copies and streams (seed 004) ---------------------------------------------------------------


def stream_pipeline(dev: DeviceModel, compute_s: float, in_bytes: int, out_bytes: int, batches: int) -> dict | None:
    """A stream of ``batches`` independent batches: copy in, compute, copy out.

    Sequential on one stream, each stage waits for the last: N x (in + compute + out). Pageable copies
    are staged through a bounce buffer by the host and cannot overlap anything. With pinned memory and
    one stream per stage the copy engines (one per direction) and the SMs work at once: after the
    pipeline fills, each batch costs only its slowest stage: sum + (N - 1) x max.
    """
    if dev.kind != "cuda" or not dev.part.measurements.transfers:
        return None
    stages = {}
    for mem in ("pageable", "pinned"):
        stages[mem] = (transfer_time_s(dev, in_bytes, "h2d", mem), compute_s, transfer_time_s(dev, out_bytes, "d2h", mem))
    seq_pageable = batches * sum(stages["pageable"])
    seq_pinned = batches * sum(stages["pinned"])
    pinned = stages["pinned"]
    overlapped = sum(pinned) + (batches - 1) * max(pinned)
    return dict(
        batches=batches, h2d_pageable_s=stages["pageable"][0], h2d_pinned_s=pinned[0], compute_s=compute_s,
        d2h_pageable_s=stages["pageable"][2], d2h_pinned_s=pinned[2],
        sequential_pageable_s=seq_pageable, sequential_pinned_s=seq_pinned, streams_pinned_s=overlapped,
        pinned_gain=seq_pageable / seq_pinned if seq_pinned else None,
        streams_gain=seq_pinned / overlapped if overlapped else None,
    )
