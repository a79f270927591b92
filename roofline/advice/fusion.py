"""Fusion: chains of pointwise ops (ending at most in one reduction or norm) whose intermediates no
one else reads run as one kernel that moves only the chain's external inputs and outputs and pays
one launch; a matmul or convolution's epilogue (bias, activation) folds into it the same way."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from roofline.costs import OpCost
from roofline.graph.ops import CapturedGraph, CapturedOp
from roofline.model.device import DeviceModel
from roofline.model.kernels import kernel_s
from roofline.model.timeline import KernelTerms, Schedule, Timeline, group_reach, op_reaches, predict_timeline
from roofline.schema.report import FusionGroup

FUSIBLE = {"pointwise", "transcendental"}
FUSIBLE_TAIL = {"reduction", "norm"}  # may end a group: the reduction reads the fused values once
EPILOGUE_HEADS = {"matmul", "conv"}


@dataclass
class Group:
    ops: list[int]
    kind: str


def fusion_groups(graph: CapturedGraph, costs: Sequence[OpCost]) -> list[Group]:
    """Chains of pointwise ops (ending at most in one reduction or norm) whose intermediates have no
    other consumer, and matmul/conv epilogues (bias, activation) that fold into the GEMM.

    Views inside a chain are free and ride along. A value that leaves the graph, or is read by an op
    outside the group, must be written out: the group stops before it.
    """
    group_of: dict[int, Group] = {}
    groups: list[Group] = []
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
                host = Group([j], "matmul epilogue" if costs[j].category == "matmul" else "conv epilogue")
                groups.append(host)
                group_of[j] = host
                break
        if host is None:
            if cat == "view":
                continue
            host = Group([], "pointwise chain")
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


def fused_cost(graph: CapturedGraph, costs: Sequence[OpCost], members: list[int]) -> OpCost:
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


@dataclass
class Program:
    """A changed program: its graph and costs, and for each of its ops the index of the original op
    it is (None for an op the change made), so that unchanged ops keep their computed prices."""

    graph: CapturedGraph
    costs: list[OpCost]
    origin: list[int | None]
    # the op a new op's kernel is priced as: a GEMM or convolution with an epilogue runs the head's
    # kernel (its shapes pick the curve and the mechanism), whatever op ends the group
    priced_as: list[CapturedOp | None] = field(default_factory=list)
    # a new op's members in the original program (their inputs' reuse distances are the fused kernel's)
    members: list[tuple[int, ...] | None] = field(default_factory=list)
    original: CapturedGraph | None = None

    def kernels(self, base: Sequence[KernelTerms], dev: DeviceModel) -> list[KernelTerms]:
        """Kernel terms on ``dev``: the original op's from ``base``, a new op's computed (on the CPU at
        its members' reuse distances, as ``base`` was)."""
        n = len(self.costs)
        anchors, members = self.priced_as or [None] * n, self.members or [None] * n
        reaches = op_reaches(self.original.ops, dev) if self.original is not None and any(members) else None
        return [base[i] if i is not None else kernel_s(anchor or op, cost, dev, group_reach(reaches, group or ()))
                for op, cost, i, anchor, group in zip(self.graph.ops, self.costs, self.origin, anchors, members)]


def fuse_program(graph: CapturedGraph, costs: Sequence[OpCost], groups: list[Group]) -> Program:
    """The program with each group replaced by one op at the group's last position."""
    member_of = {i: g for g in groups for i in g.ops}
    ops, new_costs, origin, priced_as, members = [], [], [], [], []
    for i, op in enumerate(graph.ops):
        g = member_of.get(i)
        if g is None:
            ops.append(op)
            new_costs.append(costs[i])
            origin.append(i)
            priced_as.append(None)
            members.append(None)
        elif i == g.ops[-1]:
            ops.append(op)
            fused = fused_cost(graph, costs, g.ops)
            new_costs.append(fused)
            origin.append(None)
            priced_as.append(priced_op(graph, g.ops, fused))
            members.append(tuple(g.ops))
    return Program(graph.with_ops(ops), new_costs, origin, priced_as, members, graph)


def priced_op(graph: CapturedGraph, members: Sequence[int], fused: OpCost) -> CapturedOp:
    """The op whose kernel a fused group runs: the GEMM or convolution heading an epilogue group,
    else the group's last op."""
    return graph.ops[members[0]] if fused.gemm is not None else graph.ops[members[-1]]


def fusion_report(
    graph: CapturedGraph, costs: Sequence[OpCost], dev: DeviceModel, timeline: Timeline, kernels: Sequence[KernelTerms], *, is_module: bool = True,
) -> tuple[list[FusionGroup], float]:
    """Fusion groups with their predicted gains, and the predicted total with every group fused.
    ``kernels``: the original ops' kernel terms on ``dev`` (``price_kernels``)."""
    groups = fusion_groups(graph, costs)
    schedule = Schedule(graph, costs, dev, kernels, is_module=is_module) if groups else None
    out = []
    for g in groups:
        after = fused_cost(graph, costs, g.ops)
        total = schedule.total_with(g.ops, after)
        if total is None:  # the fusion changes how many kinds of op the host interleaves: every host cost moves
            alone = fuse_program(graph, costs, [g])
            total = predict_timeline(alone.graph, alone.costs, dev, is_module=is_module, kernels=alone.kernels(kernels, dev)).total_s
        gain = max(timeline.total_s - total, 0.0)
        before_bytes = sum(costs[i].bytes for i in g.ops)
        out.append(
            FusionGroup(
                ops=list(g.ops), kind=g.kind, module=graph.ops[g.ops[0]].module, predicted_gain_s=gain,
                bytes_saved=max(before_bytes - after.bytes, 0),
                kernels_saved=max(sum(costs[i].kernels for i in g.ops) - 1, 0),
            )
        )
    if groups:
        every = fuse_program(graph, costs, groups)
        fused_total = predict_timeline(every.graph, every.costs, dev, is_module=is_module, kernels=every.kernels(kernels, dev)).total_s
    else:
        fused_total = timeline.total_s
    # largest gain first; gains within a picosecond of each other (the same group repeated, as
    # every layer's) in program order
    out.sort(key=lambda f: (-round(f.predicted_gain_s, 12), f.ops[0]))
    return out, fused_total
