"""A training step's figures and advice: time per phase on the step's timeline, what is and is not
calibrated about it, and what would make the step faster or smaller.

The step is one program on the eager timeline (``roofline.model.timeline``): the autograd engine's
ops and the optimizer's are issued like the forward's. What calibration measures for them today is
the forward's dispatch cost per op kind; the engine's own work per autograd node and the
optimizer's Python per parameter are not measured yet, and the report says so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from roofline.advice.step_memory import Values
from roofline.costs import OpCost
from roofline.graph.ops import CapturedGraph
from roofline.graph.training import PHASES
from roofline.model.device import DeviceModel
from roofline.model.timeline import (IDENTITY, Timeline, apply_step, compose, dispatch_kinds, dispatch_payers, inner_ops, modules_entered,
                                     op_dispatch_s, op_step, parts_host_s)
from roofline.schema.report import PhaseTime, StepMemory, TrainingStep
from roofline.units import count, seconds

UNCALIBRATED_HOST = (
    "training step: backward and optimizer ops are priced with the forward's dispatch cost per op kind; "
    "the profile has no training host costs (the autograd engine's per node, the optimizer's per parameter tensor): "
    "a full `roofline calibrate` (not --quick) measures them"
)
OPTIMIZER_UNMEASURED = "training step: the profile has no host cost for {key}; its ops are priced with the forward's dispatch cost per op kind"


def samples_per_s(rate: float) -> str:
    """A throughput as people write it: 17,080 rather than 1.708e+04."""
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:.3g}"


def training_host_cost(graph: CapturedGraph, costs: Sequence[OpCost], dev: DeviceModel, *, is_module: bool = True):
    """``(host_cost(op, cost), start_host_s)`` for ``predict_timeline`` of a training step on a
    profile with training host costs (``Overheads.training``); None without them.

    Every op pays what the eager timeline charges it (its kind's dispatch, the module calls it
    enters, the model's own Python before it); a forward op autograd records pays ``grad_record_s`` more; the backward pass pays
    ``autograd_node_s`` per node the engine runs, spread over its ops; the optimizer's ops together
    cost the measured host time of its step over this many parameter tensors, its lead
    (``OPTIMIZER_LEAD_SHARE``) before the first of them and the rest spread over them in proportion
    to their dispatch. Each op's host time is then multiplied by its phase's measured
    ``phase_switch`` (a phase run among the others is slower than in the hot loops that timed these
    costs). Module calls that launch nothing are billed before the first op.
    The training costs move with the host's speed as the dispatch cost does."""
    training = dev.overheads.training
    info = graph.training
    if training is None or info is None:
        return None
    ops = graph.ops
    kinds = dispatch_kinds(ops, costs)
    pays = dispatch_payers(ops, kinds)
    distinct = len({k for k, p in zip(kinds, pays) if p})
    dispatch = {k: dev.dispatch_s(k, distinct) for k in set(kinds)}
    module_s = dev.module_call_s
    entered = [modules_entered(ops[i - 1].module, op.module) if i else int(is_module) + modules_entered("", op.module) for i, op in enumerate(ops)]
    python_s = dev.python_call_s
    inner, entry = inner_ops(ops, pays), dev.call_entry_s(distinct)
    base = [op_dispatch_s(dispatch[k], entry, p, n) + e * module_s + parts_host_s(c, dev, distinct) + op.python_calls * python_s
            for k, p, n, e, c, op in zip(kinds, pays, inner, entered, costs, ops)]
    calibrated = dev.part.measurements.overheads.dispatch_s.median_s
    scale = dev.overheads.dispatch_s.median_s / calibrated if calibrated else 1.0
    extra = [0.0] * len(ops)
    backward = [i for i, op in enumerate(ops) if op.phase == "backward"]
    for i, op in enumerate(ops):
        if op.records_grad:
            extra[i] += training.grad_record_s.median_s * scale
    for i in backward:
        extra[i] += info.autograd_nodes * training.autograd_node_s.median_s * scale / len(backward)
    optimizer = [i for i, op in enumerate(ops) if op.phase == "optimizer"]
    measured = optimizer_host(training, info.optimizer, info.implementation)
    if optimizer and measured is not None:
        total = (measured.call_s + measured.per_parameter_s * info.parameters) * scale
        lead = total * lead_share(info.optimizer, info.implementation)
        weights = sum(base[i] for i in optimizer) or float(len(optimizer))
        for i in optimizer:
            share = (base[i] or (weights / len(optimizer))) / weights
            extra[i] += (total - lead) * share - base[i]
        extra[optimizer[0]] += lead  # before the step's first kernel: the device waits for it
    switch = training.phase_switch  # each phase runs after the others, slower than the hot loops that timed it
    host = [max(b + x, 0.0) * switch.get(op.phase or "", 1.0) for b, x, op in zip(base, extra, ops)]
    by_index = {op.index: h for op, h in zip(ops, host)}
    start = max(graph.module_calls - sum(entered), 0) * module_s
    return (lambda op, cost: by_index[op.index]), start


# The share of a foreach Adam/AdamW step's host time spent before it launches its first kernel (grouping
# its tensors by device and dtype, its step counts, its Python): the device waits through it. Profiled
# (under torch.profiler, which slows every call) on the H100 over four torchvision models' parameter lists
# and as many tiny tensors: 0.25-0.27 of step()'s host time (``python benchmarks/optimizer_lead_probe.py
# --json OUT``, benchmarks/results/h100_optimizer_lead.json). It is taken of the measured step host time,
# zero_grad's included. Other optimizers and implementations were not profiled and keep their host time
# spread over their ops.
OPTIMIZER_LEAD_SHARE = {("adamw", "foreach"): 0.26}


def lead_share(optimizer: str, implementation: str) -> float:
    """``OPTIMIZER_LEAD_SHARE`` of this optimizer, or of the one that runs the same step code (``SAME_HOST_PATH``)."""
    found = OPTIMIZER_LEAD_SHARE.get((optimizer, implementation))
    if found is None and optimizer in SAME_HOST_PATH:
        found = OPTIMIZER_LEAD_SHARE.get((SAME_HOST_PATH[optimizer], implementation))
    return found or 0.0


# torch's Adam and AdamW run the same step code (in torch 2.13 AdamW subclasses Adam; they share the foreach
# and fused kernels), so a profile that measured one prices the other's host time with it
SAME_HOST_PATH = {"adam": "adamw", "adamw": "adam"}


def optimizer_host(training, optimizer: str, implementation: str):
    """The profile's host time of ``optimizer``'s step in ``implementation`` (or of the optimizer
    that runs the same code), None when it has neither."""
    found = training.optimizers.get(f"{optimizer}:{implementation}")
    if found is None and optimizer in SAME_HOST_PATH:
        found = training.optimizers.get(f"{SAME_HOST_PATH[optimizer]}:{implementation}")
    return found


def optimizer_measured(graph: CapturedGraph, dev: DeviceModel) -> bool:
    """Whether the profile measured this step's optimizer and implementation (or its twin's)."""
    training, info = dev.overheads.training, graph.training
    return training is not None and info is not None and optimizer_host(training, info.optimizer, info.implementation) is not None


# checkpointing is advised when it would drop at least this share of what backward keeps
CHECKPOINT_WORTH = 0.1


def host_only(cost: OpCost) -> OpCost:
    """An op on host scalars (an optimizer's step count): no kernel and no device bytes, and the
    host's dispatch of an op that launches nothing (a view's), not a launching op's."""
    return replace(cost, kernels=0, bytes_read=0, bytes_written=0, flops=0, category="view")


def phase_alone_s(timeline: Timeline, idx: Sequence[int]) -> float:
    """The phase's ops run alone from an idle host and device, then a synchronize: what a phase timed
    between synchronizations takes (``--measure --train``). Within a step the host runs ahead and
    issues the next phase while the device still works, so a phase adds less than this to the step."""
    gpu = timeline.device == "cuda"
    run = IDENTITY
    for i in idx:
        run = compose(run, op_step(timeline.ops[i].host_s, timeline.ops[i].kernel_s, gpu))
    host, end = apply_step(run, 0.0, 0.0)
    return max(host, end) + (timeline.sync_s if idx else 0.0)


def phase_times(graph: CapturedGraph, costs: Sequence[OpCost], timeline: Timeline) -> list[PhaseTime]:
    """Each phase's share of the step on its timeline (what its ops add to the end), the phase alone
    between synchronizations, FLOPs and bytes."""
    out = []
    for phase in PHASES:
        idx = [i for i, op in enumerate(graph.ops) if op.phase == phase]
        out.append(PhaseTime(
            phase=phase, ops=len(idx), predicted_s=sum(timeline.ops[i].predicted_s for i in idx), alone_s=phase_alone_s(timeline, idx),
            host_s=sum(timeline.ops[i].host_s for i in idx), kernel_s=sum(timeline.ops[i].kernel_s for i in idx),
            flops=sum(costs[i].flops for i in idx), bytes=sum(costs[i].bytes for i in idx), kernels=sum(costs[i].kernels for i in idx),
        ))
    return out


def block_of(module: str) -> str:
    """The top-level block a module belongs to: ``layers.3`` for ``layers.3.attn.q``, else its first part."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 and parts[1].isdigit() else parts[0]


def checkpointing_estimate(graph: CapturedGraph, costs: Sequence[OpCost], memory: StepMemory, timeline: Timeline) -> tuple[int, float] | None:
    """(bytes saved, seconds added) by checkpointing each top-level block (``block_of``): what
    autograd saved inside the blocks is dropped and their forward runs again in backward; each
    block's output is kept. None when nothing would be saved."""
    ops = graph.ops
    forward = [op for op in ops if op.phase == "forward" and op.module and op.module != "loss"]
    if not forward:
        return None
    values = Values(graph, costs, memory.device)
    last_of_block: dict[str, int] = {}
    for op in forward:
        last_of_block[block_of(op.module)] = op.index
    inside = {op.index for op in forward}
    kept = {values.alias.get((i, 0)) for i in last_of_block.values()}
    saved = sum(size for v, size in values.size.items() if v[0] in inside and v not in kept and values.read_in_backward[v])
    if saved <= 0:
        return None
    recompute_s = sum(timeline.ops[op.index].predicted_s for op in forward)
    return min(saved, memory.saved_activations_bytes), recompute_s


def training_lines(step: TrainingStep, *, checkpointing: tuple[int, float] | None, best_batch: tuple[int, float] | None) -> list[str]:
    """The training advice, in the order a reader needs it."""
    lines = []
    phases = {p.phase: p for p in step.phases}
    total = step.predicted_s or 1.0
    lines.append(
        f"training step ({step.optimizer}, {step.implementation}; loss: {step.loss}): {seconds(step.predicted_s)}"
        + (f", {samples_per_s(step.samples_per_s)} samples/s" if step.samples_per_s else "")
        + " — " + ", ".join(f"{p} {seconds(phases[p].predicted_s)} ({100 * phases[p].predicted_s / total:.0f}%)" for p in PHASES if p in phases)
    )
    mem = step.memory
    parts = ", ".join(f"{k.replace('_', ' ')} {count(v, 'B')}" for k, v in mem.at_peak.items() if v)
    where = "GPU" if mem.device == "cuda" else "CPU"
    fit = "" if mem.capacity_bytes is None else (
        f" of {count(mem.capacity_bytes, 'B')}" + ("" if mem.fits else ": the step does not fit the device")
    )
    lines.append(f"memory over the step ({where}): peak {count(mem.peak_bytes, 'B')}{fit} in the {mem.peak_phase} pass ({parts})")
    alt = step.alternatives
    options = [(k.split("_", 1)[1], v) for k, v in alt.items() if k.startswith("optimizer_")]
    if options:
        best, best_s = min(options, key=lambda kv: kv[1])
        if best != step.implementation and best_s < 0.97 * step.predicted_s:
            lines.append(
                f"optimizer: the {best} implementation ({step.optimizer}(..., {'fused=True' if best == 'fused' else 'foreach=True' if best == 'foreach' else 'foreach=False'})) "
                f"takes the step from {seconds(step.predicted_s)} to {seconds(best_s)}"
            )
    if "autocast_bfloat16" in alt:
        gain = step.predicted_s / alt["autocast_bfloat16"] if alt["autocast_bfloat16"] else 0
        lines.append(f"mixed precision: the forward and loss under torch.autocast(dtype=torch.bfloat16) predict {seconds(alt['autocast_bfloat16'])} per step ({gain:.2f}x)")
    if "torch_compile" in alt:
        lines.append(f"torch.compile on the model: {seconds(alt['torch_compile'])} per step predicted (Inductor's fusion of forward and backward)")
    if checkpointing is not None and checkpointing[0] >= CHECKPOINT_WORTH * mem.saved_activations_bytes:
        saved, added = checkpointing
        lines.append(
            f"activation checkpointing of each top-level block: saves about {count(saved, 'B')} of the {count(mem.saved_activations_bytes, 'B')} "
            f"saved for backward, for about {seconds(added)} more per step (the forward again)"
        )
    if best_batch is not None:
        b, rate = best_batch
        lines.append(f"batch size: {b} gives the most samples/s that fit the device ({samples_per_s(rate)} samples/s)")
    return lines
