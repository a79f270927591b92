"""CPU against GPU: the whole program on the CPU alone, against the GPU plus the copies the user's
code implies (inputs in, outputs out, weights when not resident), per call and over a loop."""

from __future__ import annotations

import re

from roofline.graph.ops import CapturedGraph
from roofline.model.curves import transfer_s
from roofline.model.device import DeviceModel
from roofline.model.timeline import Timeline
from roofline.schema.report import Placement
from roofline.units import count, seconds


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
    what = f"{n_ops} ops moving {count(in_bytes + out_bytes, 'B')} in and out"
    if calls == 1:
        loop = ""
    else:
        loop = f" per call; over {calls} calls {seconds(cpu_total)} on the CPU against {seconds(gpu_total)} on the GPU" + (
            "" if copies_per_call else " with one copy in and out"
        )
    if recommended == "cpu":
        if gpu_s < cpu_s:  # the GPU computes faster, but its copies cost more than that gain
            reason = f"{what}: {seconds(cpu_s)} on the CPU, {seconds(gpu_s)} on the GPU, but {seconds(copies / calls)} per call to copy in and out{loop}"
        else:
            reason = f"{what}: {seconds(cpu_s)} on the CPU against {seconds(gpu_s)} on the GPU{loop}: per-op GPU overhead outweighs its speed"
    else:
        # every figure per call: a loop's one copy in and out is spread over its calls
        reason = f"{what}: {seconds(gpu_s)} on the GPU plus {seconds((copies + weights) / calls)} of copies beats {seconds(cpu_s)} on the CPU{loop}"
    return Placement(
        recommended=recommended, cpu_s=cpu_s, gpu_s=gpu_s, transfer_s=(copies + weights) / calls,
        host_memory=host_memory, weights_resident=weights_resident, calls=calls, reason=reason,
    )


def crossover(decisions: list[tuple[int, str]]) -> int | None:
    """Smallest size from which every larger size prefers the GPU."""
    found = None
    for size, rec in sorted(decisions):
        if rec == "cuda":
            found = size if found is None else found
        else:
            found = None
    return found


def size_of(label: str) -> int:
    """The number in a sweep label such as 'dim=4096' or 'numel=2**20' (0 when there is none)."""
    m = re.search(r"=\s*(\d+)\s*\*\*\s*(\d+)", label)
    if m:
        return int(m.group(1)) ** int(m.group(2))
    m = re.search(r"=\s*(\d+)", label)
    return int(m.group(1)) if m else 0
