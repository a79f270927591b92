"""The eager timeline: per-op host and kernel times, the two-queue schedule, regimes.

GPU, eager: two queues. The host issues op i at ``h_i = h_(i-1) + o_i``; the device starts it at
``s_i = max(h_i, e_(i-1))`` and ends at ``e_i = s_i + t_i``; the run ends at ``max(h_N, e_N)`` plus
one synchronize. An op whose start was set by the host, and whose wait for the host is longer than
its own kernel, is overhead-bound (so a lone large matmul, which the idle device must also wait to
receive, is still compute-bound); otherwise it is compute- or memory-bound by the larger term of
its kernel time (``roofline.model.kernels``); a kernel at the floor is overhead-bound too: its time
is the fixed cost of a launch, not work.

Time by regime (``Timeline.regime_s``) splits what each op adds to the run: the device idle before
it (waiting for the host to issue it, or for a synchronize) is overhead, the rest goes to its
kernel's own regime (the larger term; overhead for a kernel at the floor). It is the split a
measured run gets (the device-idle share of its time is overhead; a measured kernel at the floor
is booked there by its larger term, which this books as overhead): a host-critical
program whose every op waits a little, less than its kernel, is still largely overhead-bound, as
the device's idle time says.

An op after which the host reads a device value (``.item()``, ``nonzero``, a boolean mask:
``graph.ops.reads_to_host``) makes the host wait: both queues resume at ``max(h_i, e_i)`` plus one
synchronize.

CPU: one queue, ``t_i = max(F / P_cpu, B / W_cpu) + o_cpu``.

Host time per op ``o_i``: the calibrated dispatch cost of its kind (``dispatch_kind``) in a sequence
of as many different kinds as the model interleaves (``roofline.model.host``), plus the nn.Module
calls it enters, plus the kernels it issues from C++ beyond its kind's representative
(``issued_from_cpp_s``), plus the model's own Python before it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from roofline.costs import OpCost
from roofline.costs.registry import parts_on
from roofline.graph.ops import CapturedGraph, CapturedOp, reads_to_host
from roofline.model.device import DeviceModel
from roofline.model.kernels import aten_batch_norm_launches, aten_im2col_launches, cudnn_depthwise_group_launches, kernel_s
from roofline.model.reuse import Reach, reuse_reach
from roofline.schema.report import regime_parts

REGIMES = ("compute", "memory", "overhead", "none")

# (kernel_s, compute_s, memory_s, floor_s) of one op: ``roofline.model.kernels.kernel_s``
KernelTerms = tuple[float, float, float, float]


@dataclass
class OpTiming:
    """Predicted times of one op, seconds. ``predicted_s`` is what the op adds to the run's end."""

    kernel_s: float
    host_s: float
    compute_s: float
    memory_s: float
    issue_s: float  # h_i: when the host has issued it
    start_s: float  # s_i
    end_s: float  # e_i
    predicted_s: float
    regime: str
    bound_by: str  # "compute", "memory", "floor", "host" or "none": which term set the time
    waited_s: float = 0.0  # of predicted_s, the device idle before the op's work: waiting for the host
    work_regime: str = ""  # the kernel's own regime: its larger term, overhead at the floor ("" = regime)

    def regime_parts(self) -> dict[str, float]:
        """What the op adds to the run, by regime: the device's wait is overhead, the rest its kernel's."""
        return regime_parts(self.predicted_s, self.waited_s, self.work_regime or self.regime)


@dataclass
class Timeline:
    ops: list[OpTiming]
    total_s: float  # end of the run, synchronize included
    host_s: float  # h_N: total host issue time
    device_busy_s: float  # sum of kernel times
    sync_s: float
    device: str

    def regime_s(self, every: bool = True) -> dict[str, float]:
        """Predicted time by regime (``OpTiming.regime_parts``): every regime (``every``), or those
        of some op."""
        out = dict.fromkeys(REGIMES, 0.0) if every else {}
        for t in self.ops:
            for regime, s in t.regime_parts().items():
                out[regime] = out.get(regime, 0.0) + s
        return out


def dispatch_kind(op: CapturedOp, cost: OpCost) -> str:
    """Which calibrated representative op (``roofline.hostmix``) stands for this op's host dispatch cost."""
    packet = op.packet
    if cost.category == "view":
        return "view"
    if cost.category == "conv":
        return "conv2d"
    if cost.category == "attention" and "scaled_dot_product" in packet:
        return "sdpa"
    if cost.category in ("matmul", "attention"):
        return "addmm"
    if cost.category == "norm" and "batch_norm" in packet:
        return "batch_norm"
    if cost.category == "norm" and "group_norm" in packet:
        return "group_norm"
    if "softmax" in packet:
        return "softmax"
    if cost.category == "norm":
        return "layer_norm"
    if cost.category == "reduction":
        return "sum"
    if packet.endswith(("cat", "stack")):
        return "cat"
    if cost.category in ("pointwise", "transcendental") and _has_python_scalar(op):
        return "mul_scalar"
    return "add"


def dispatch_kinds(ops: Sequence[CapturedOp], costs: Sequence[OpCost]) -> list[str]:
    """Each op's ``dispatch_kind``, but an allocation that launches nothing made inside a native call
    with other ops (a CPU capture's batch norm allocates its output, then runs) is a view's: the call's
    C++ allocates, where a Python ``torch.empty`` is a call of its own."""
    kinds = [dispatch_kind(op, cost) for op, cost in zip(ops, costs)]
    calls: dict[int, int] = {}
    for op in ops:
        if op.torch_call is not None:
            calls[op.torch_call] = calls.get(op.torch_call, 0) + 1
    for i, (op, cost) in enumerate(zip(ops, costs)):
        if cost.category == "creation" and not cost.kernels and calls.get(op.torch_call, 0) > 1:
            kinds[i] = "view"
    return kinds


def _has_python_scalar(op: CapturedOp) -> bool:
    """A Tensor overload called with a Python number (``x * 0.5``): the number is wrapped into a
    tensor on every call, which costs the host about as much again as the op."""
    overload = getattr(op.target, "_overloadname", "")
    return overload == "Tensor" and any(isinstance(a, (int, float)) and not isinstance(a, bool) for a in op.args[1:2])


def dispatch_payers(ops: Sequence[CapturedOp], kinds: Sequence[str]) -> list[bool]:
    """Which ops pay a host dispatch of their own: all but ``F.linear``'s weight transpose.

    The addmm representative is timed as a whole ``F.linear`` call, which runs ``t`` and ``addmm``
    in C++, so a ``t`` made inside the same native torch call (``CapturedOp.torch_call``) as the
    matmul it feeds is already in that figure. The other ops a native call runs inside it still pay,
    less the call's Python entry after its first op (``inner_ops``). Ops without a call number (ops
    run inside Python code) each pay."""
    matmuls_by_call: dict[int, set[int]] = {}
    for op, kind in zip(ops, kinds):
        if op.torch_call is not None and kind == "addmm":
            # by the op's own index, which ``users`` hold: a changed program (fused) keeps them
            matmuls_by_call.setdefault(op.torch_call, set()).add(op.index)

    def in_linear(op: CapturedOp) -> bool:
        feeds = matmuls_by_call.get(op.torch_call, set())
        return op.name == "aten.t.default" and bool(op.users) and set(op.users) <= feeds

    return [not in_linear(op) for op in ops]


def inner_ops(ops: Sequence[CapturedOp], pays: Sequence[bool]) -> list[bool]:
    """Which ops a native torch call (``CapturedOp.torch_call``) runs after its first paying op: the
    call's Python entry was paid by that op, so they pay their kind's dispatch less the entry
    (``DeviceModel.call_entry_s``)."""
    entered: set[int] = set()
    out = []
    for op, paid in zip(ops, pays):
        call = op.torch_call
        out.append(paid and call is not None and call in entered)
        if paid and call is not None:
            entered.add(call)
    return out


def op_dispatch_s(dispatch: float, entry: float, paid: bool, inner: bool) -> float:
    """One op's dispatch: its kind's (``dispatch``), less the call's Python entry for an op a native
    call runs after its first (``inner_ops``), nothing for one that does not pay (``dispatch_payers``)."""
    if not paid:
        return 0.0
    return max(dispatch - entry, 0.0) if inner else dispatch


def _part_hosts_s(cost: OpCost, dev: DeviceModel, distinct_kinds: int) -> list[float]:
    """Host time of issuing each part of a fused native op that launches a kernel: the part's kind's
    dispatch less the call's Python entry (the op itself paid it), with that of the parts before it
    that launch nothing (the op's own C++ work between launches, ``costs.registry.cpp_work``: an
    elementwise op's dispatch less the entry, not calibrated); such parts after the last launch go to it."""
    entry = dev.call_entry_s(distinct_kinds)
    hosts, pending = [], 0.0
    for p_op, p_cost in parts_on(cost, dev.kind):
        kind = dispatch_kind(p_op, p_cost) if p_cost.kernels else "add"
        pending += op_dispatch_s(dev.dispatch_s(kind, distinct_kinds), entry, True, True)
        if p_cost.kernels:
            hosts.append(pending)
            pending = 0.0
    if hosts:
        hosts[-1] += pending
    return hosts


def parts_host_s(cost: OpCost, dev: DeviceModel, distinct_kinds: int) -> float:
    """Host time a fused native op (the transformer fast path: one call, a dozen kernels) spends
    issuing its parts from C++ (``_part_hosts_s``)."""
    return sum(_part_hosts_s(cost, dev, distinct_kinds)) if cost.parts else 0.0


def native_launches(op: CapturedOp, dev: DeviceModel) -> int:
    """Kernels an op launches from C++ beyond those of its dispatch kind's representative (whose
    calibrated dispatch already holds their launches): on a GPU, an eval batch norm that ATen runs
    itself where the representative runs cuDNN's one kernel (``kernels.aten_batch_norm_launches``)."""
    return aten_batch_norm_launches(op) if dev.kind == "cuda" else 0


def issued_from_cpp_s(op: CapturedOp, cost: OpCost, dev: DeviceModel, distinct_kinds: int) -> float:
    """Host time an op spends issuing kernels from C++ beyond its own dispatch: a fused native op's
    parts (``parts_host_s``) and its ``native_launches``, each of these an elementwise op's dispatch
    less the Python entry, and the kernels a library launches in a loop past the first (cuDNN's over
    groups, ATen's ``im2col`` over images: ``group_loop_host_s``), each a library's launch from C++
    (``DeviceModel.library_launch_s``), whether or not the profile's family curves price the
    loop's device time (a profile without them leaves it to the dense curve)."""
    launches = native_launches(op, dev)
    own = launches * op_dispatch_s(dev.dispatch_s("add", distinct_kinds), dev.call_entry_s(distinct_kinds), True, True) if launches else 0.0
    return parts_host_s(cost, dev, distinct_kinds) + own + group_loop_host_s(op, cost, dev)


def group_loop_host_s(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> float:
    """Host time of the kernels a library launches in a loop from C++ past the first, a library's
    launch each (``DeviceModel.library_launch_s``): cuDNN's over groups
    (``kernels.cudnn_depthwise_group_launches``) and ATen's ``im2col`` over images
    (``kernels.aten_im2col_launches``)."""
    if dev.kind != "cuda":
        return 0.0
    looped = max(cudnn_depthwise_group_launches(op) if cost.conv_gradient is None else 0, aten_im2col_launches(op))
    return (looped - 1) * dev.library_launch_s if looped > 1 else 0.0


def part_pieces(cost: OpCost, kernel: float, dev: DeviceModel, distinct_kinds: int) -> list[tuple[float, float]]:
    """(host, kernel) of each part of a fused native op that launches a kernel, in order. The op
    issues its parts one after another from C++ and the device starts each as soon as it is issued,
    so a part's kernel runs while the host issues the parts after it: the op is its parts on the two
    queues, not all of its host time followed by all of its kernels. The parts' kernels are scaled
    to sum to ``kernel`` (the op's, which a kernel table may have timed whole)."""
    kernels = [kernel_s(p_op, p_cost, dev)[0] for p_op, p_cost in parts_on(cost, dev.kind) if p_cost.kernels]
    total = sum(kernels)
    scale = kernel / total if total > 0 else 0.0
    return [(h, k * scale) for h, k in zip(_part_hosts_s(cost, dev, distinct_kinds), kernels)]


def op_map(host: float, kernel: float, pieces: Sequence[tuple[float, float]] | None, gpu: bool) -> Step:
    """One op's map (``op_step``); a GPU op with ``pieces`` (``part_pieces``) first pays the host time
    that is its own (its dispatch, modules, Python: all but its parts'), then runs each part as an op
    of its own."""
    if not (gpu and pieces):
        return op_step(host, kernel, gpu)
    step: Step = (host - sum(h for h, _ in pieces), -math.inf, 0.0)
    for h, k in pieces:
        step = compose(step, op_step(h, k, gpu))
    return step


def modules_entered(prev: str, cur: str) -> int:
    """nn.Module calls begun between two consecutive ops: path components of ``cur`` not shared with ``prev``."""
    if cur == prev:
        return 0
    a, b = prev.split(".") if prev else [], cur.split(".") if cur else []
    common = 0
    for x, y in zip(a, b):
        if x != y:
            break
        common += 1
    return len(b) - common


# whether a CPU's ops are priced at their inputs' reuse distances (``roofline.model.reuse``)
CPU_REUSE = True


def op_reaches(ops: Sequence[CapturedOp], dev: DeviceModel) -> list[Reach] | None:
    """Each op's inputs' reuse distances where ``dev`` prices them (the CPU), else None."""
    return reuse_reach(ops) if dev.kind == "cpu" and CPU_REUSE else None


def group_reach(reaches: Sequence[Reach] | None, members: Sequence[int]) -> Reach:
    """The reach of a fused group's one kernel: its members' (an intermediate one member made for
    the next is as near as the op's own bytes, so it adds nothing), so that the fused kernel reads
    a far input from as far as its members did."""
    return tuple(entry for j in members for entry in reaches[j]) if reaches else ()


def price_kernels(ops: Sequence[CapturedOp], costs: Sequence[OpCost], dev: DeviceModel) -> list[KernelTerms]:
    """Every op's kernel time and terms on ``dev``: the device side of the timeline, which host
    costs do not change (a prediction at another host speed reuses it). On the CPU each op's memory
    term is read at its inputs' reuse distances: its curve was timed with every input hot, and in a
    program an input last touched long before comes from farther out (``roofline.model.reuse``)."""
    reaches = op_reaches(ops, dev)
    if reaches is not None:
        return [kernel_s(op, cost, dev, reach) for op, cost, reach in zip(ops, costs, reaches)]
    return [kernel_s(op, cost, dev) for op, cost in zip(ops, costs)]


def predict_timeline(
    graph: CapturedGraph,
    costs: Sequence[OpCost],
    dev: DeviceModel,
    *,
    is_module: bool = True,
    host_cost: Callable[[CapturedOp, OpCost], float] | None = None,
    start_host_s: float = 0.0,
    kernels: Sequence[KernelTerms] | None = None,
) -> Timeline:
    """Run the model of time over the captured ops, on ``dev`` (a GPU or the CPU).

    ``host_cost(op, cost)``, when given, replaces eager dispatch and module-call costs (compiled
    code launches kernels from generated Python, not through nn.Module and the dispatcher);
    ``start_host_s`` is host time spent before the first op (e.g. a compiled function's guards);
    ``kernels``, when given, are the ops' ``price_kernels`` on ``dev``, already computed.
    """
    ov = dev.overheads
    module_s = 0.0 if host_cost is not None else dev.module_call_s
    python_s = dev.python_call_s  # the model's own Python between ops (eager only: host_cost replaces it)
    gpu = dev.kind == "cuda"
    if kernels is None:
        kernels = price_kernels(graph.ops, costs, dev)
    # The root module's call is billed to the first op; after that, each op pays for the modules it enters.
    entered = [
        modules_entered(graph.ops[i - 1].module, op.module) if i else int(is_module) + modules_entered("", op.module)
        for i, op in enumerate(graph.ops)
    ]
    kinds = dispatch_kinds(graph.ops, costs)
    pays = dispatch_payers(graph.ops, kinds)
    # How many different dispatch kinds the host interleaves: the interleaving factor grows with it.
    distinct_kinds = len({kind for kind, paid in zip(kinds, pays) if paid})
    dispatch = {kind: dev.dispatch_s(kind, distinct_kinds) for kind in set(kinds)}
    inner = inner_ops(graph.ops, pays)
    entry = dev.call_entry_s(distinct_kinds)
    # Module calls that launched no op of their own (Dropout in eval, Identity) still cost host time.
    unattributed = max(graph.module_calls - sum(entered), 0)

    sync_s = ov.synchronize_s.median_s if (gpu and ov.synchronize_s) else 0.0
    h = unattributed * module_s + start_host_s
    e = 0.0
    out: list[OpTiming] = []
    busy = 0.0
    for op, cost, n_mod, kind, paid, in_call, (kernel, compute, memory, floor) in zip(graph.ops, costs, entered, kinds, pays, inner, kernels):
        if host_cost is not None:
            host = host_cost(op, cost)
        else:
            host = (op_dispatch_s(dispatch[kind], entry, paid, in_call) + n_mod * module_s + issued_from_cpp_s(op, cost, dev, distinct_kinds)
                    + op.python_calls * python_s)
        if kernel == 0.0:
            term = "none"
        elif floor >= max(compute, memory):
            term = "floor"
        else:
            term = "compute" if compute >= memory else "memory"
        if gpu:
            pieces = part_pieces(cost, kernel, dev, distinct_kinds) if cost.parts and host_cost is None else None
            if pieces:  # a fused native op: its parts on the two queues (``part_pieces``)
                issue, end, start, idle = h + host - sum(ph for ph, _ in pieces), e, None, 0.0
                for ph, pk in pieces:
                    issue += ph
                    part_start = max(issue, end)
                    idle += part_start - end  # the device waits for the host to issue this part
                    start = part_start if start is None else start
                    end = part_start + pk
            else:
                issue = h + host
                start = max(issue, e)
                end = start + kernel
                idle = start - e
            gap = start - e  # device idle, waiting for the host to issue this op
            predicted = end - e if end > e else 0.0
            waited = max(idle, 0.0)
            h, e = issue, max(end, e)
            if reads_to_host(op):  # the host waits for the device to drain, then for the copy back
                resume = max(h, e) + sync_s
                predicted += resume - e
                waited += resume - e
                h = e = resume
            if kernel == 0.0:
                regime, bound = ("overhead", "host") if gap > 0 else ("none", "none")
            elif gap > kernel:
                # More of what this op adds to the run is waiting for the host than device work.
                regime, bound = "overhead", "host"
            else:
                regime, bound = ({"floor": "overhead"}.get(term, term)), term
        else:
            issue = h + host
            start = issue
            end = start + kernel
            predicted = host + kernel
            waited = 0.0  # one queue: the host's time is the op's own (its regime says which dominates)
            h = e = end
            if kernel == 0.0:
                regime, bound = ("overhead", "host") if host > 0 else ("none", "none")
            elif host >= kernel:
                regime, bound = "overhead", "host"
            else:
                regime, bound = term, term
        busy += kernel
        work = "none" if kernel == 0.0 else {"floor": "overhead"}.get(term, term)
        out.append(OpTiming(kernel, host, compute, memory, issue, start, end, predicted, regime, bound, waited, work if gpu else regime))
    sync = ov.synchronize_s.median_s if (gpu and ov.synchronize_s) else 0.0
    end_of_run = max(h, e) + sync
    # The tail where the host is still issuing after the device finished is overhead of the last op.
    if gpu and out and h > e:
        out[-1].predicted_s += h - e
        out[-1].waited_s += h - e
    return Timeline(ops=out, total_s=end_of_run, host_s=h, device_busy_s=busy, sync_s=sync, device=dev.kind)


# A stretch of the eager timeline as one map of the (host issue, device end) state:
# (h, e) -> (h + a, max(h + b, e + c)). One op with host cost o and kernel k is (o, o + k, k) on a
# GPU (two queues) and (o + k, o + k, -inf) on the CPU (one queue); maps compose, so the timeline
# of a program changed in one place is the unchanged prefix's map, the changed ops, and the
# unchanged suffix's map.
Step = tuple[float, float, float]
IDENTITY: Step = (0.0, -math.inf, 0.0)


def op_step(host: float, kernel: float, gpu: bool) -> Step:
    """One op's map: the host issues it after ``host``, the device runs its ``kernel`` (on a GPU the
    two queues overlap; on the CPU they are one)."""
    return (host, host + kernel, kernel) if gpu else (host + kernel, host + kernel, -math.inf)


def compose(p: Step, q: Step) -> Step:
    """``p`` followed by ``q``."""
    return (p[0] + q[0], max(p[0] + q[1], p[1] + q[2]), p[2] + q[2])


def apply_step(m: Step, h: float, e: float) -> tuple[float, float]:
    return h + m[0], max(h + m[1], e + m[2])


class Schedule:
    """A program's eager timeline kept as composable pieces, so that the same program with a group
    of ops replaced by one (a fused kernel) is predicted by recomputing only that stretch: what
    fusion advice needs for every group of a model of thousands of ops.

    ``total_with(members, cost)`` is the run's end with ``members`` (op indices, in order) replaced
    by one op at the last member's place that costs ``cost``, exactly as ``predict_timeline`` would
    predict that program; None when the change alters the number of different dispatch kinds the
    program interleaves (every host cost then changes: predict it whole)."""

    def __init__(self, graph: CapturedGraph, costs: Sequence[OpCost], dev: DeviceModel, kernels: Sequence[KernelTerms], *, is_module: bool = True):
        self.graph, self.costs, self.dev, self.kernels, self.is_module = graph, costs, dev, kernels, is_module
        ops = graph.ops
        self.reaches = op_reaches(ops, dev)  # the fused kernel's, as its members' were priced
        self.gpu = dev.kind == "cuda"
        self.module_s = dev.module_call_s
        self.python_s = dev.python_call_s
        self.sync_s = dev.overheads.synchronize_s.median_s if (self.gpu and dev.overheads.synchronize_s) else 0.0
        self.kinds = dispatch_kinds(ops, costs)
        self.pays = dispatch_payers(ops, self.kinds)
        self.entered = [modules_entered(ops[i - 1].module, op.module) if i else int(is_module) + modules_entered("", op.module) for i, op in enumerate(ops)]
        self.paid_kinds: dict[str, int] = {}
        for kind, paid in zip(self.kinds, self.pays):
            if paid:
                self.paid_kinds[kind] = self.paid_kinds.get(kind, 0) + 1
        self.dispatch = {kind: dev.dispatch_s(kind, len(self.paid_kinds)) for kind in set(self.kinds)}
        self.inner = inner_ops(ops, self.pays)
        self.entry = dev.call_entry_s(len(self.paid_kinds))
        steps = [self._step(i, self._host(i, self.kinds[i], self.pays[i], self.entered[i]), kernels[i][0]) for i in range(len(ops))]
        self.prefix = [IDENTITY]
        for step in steps:
            self.prefix.append(compose(self.prefix[-1], step))
        self.suffix = [IDENTITY] * (len(ops) + 1)
        for i in range(len(ops) - 1, -1, -1):
            self.suffix[i] = compose(steps[i], self.suffix[i + 1])
        self.matmuls_by_call: dict[int, set[int]] = {}
        for op, kind in zip(ops, self.kinds):
            if op.torch_call is not None and kind == "addmm":
                self.matmuls_by_call.setdefault(op.torch_call, set()).add(op.index)
        # the weight transposes that feed each op: their dispatch depends on that op staying
        self.transposes_of: dict[int, list[int]] = {}
        for j, op in enumerate(ops):
            if op.name == "aten.t.default":
                for u in op.users:
                    self.transposes_of.setdefault(u, []).append(j)

    def _step(self, i: int, host: float, kernel: float) -> Step:
        """Op ``i``'s map as the program has it (a fused native op by its parts)."""
        cost = self.costs[i]
        pieces = part_pieces(cost, kernel, self.dev, len(self.paid_kinds)) if cost.parts else None
        return op_map(host, kernel, pieces, self.gpu)

    def _host(self, i: int, kind: str, paid: bool, entered: int) -> float:
        op = self.graph.ops[i]
        return (op_dispatch_s(self.dispatch[kind], self.entry, paid, self.inner[i]) + entered * self.module_s
                + issued_from_cpp_s(op, self.costs[i], self.dev, len(self.paid_kinds)) + op.python_calls * self.python_s)

    def _h0(self, entered_sum: int) -> float:
        return max(self.graph.module_calls - entered_sum, 0) * self.module_s

    def run_step(self) -> Step:
        """The whole program as one map of the (host issue, device end) state, module calls that
        launch nothing included: programs run back to back without a sync compose by ``compose``."""
        return compose((self._h0(sum(self.entered)), -math.inf, 0.0), self.prefix[-1])

    def total_s(self) -> float:
        h, e = apply_step(self.prefix[-1], self._h0(sum(self.entered)), 0.0)
        return max(h, e) + self.sync_s

    def total_with(self, members: Sequence[int], cost: OpCost) -> float | None:
        ops, last = self.graph.ops, members[-1]
        removed = set(members[:-1])
        # a weight transpose whose matmul the change removes (or replaces) starts paying its dispatch
        fused_kind = dispatch_kind(ops[last], cost)
        calls = {c: s - set(members) for c, s in self.matmuls_by_call.items()}
        if ops[last].torch_call is not None and fused_kind == "addmm":
            calls.setdefault(ops[last].torch_call, set()).add(ops[last].index)
        start = min([members[0], *(j for m in members for j in self.transposes_of.get(m, ()))])
        window = [j for j in range(start, last + 1) if j not in removed]
        kinds = {j: (fused_kind if j == last else self.kinds[j]) for j in window}
        pays = {}
        for j in window:
            op = ops[j]
            in_linear = op.name == "aten.t.default" and bool(op.users) and set(op.users) <= calls.get(op.torch_call, set())
            pays[j] = not in_linear
        paid = dict(self.paid_kinds)
        for j in range(start, last + 1):
            if self.pays[j]:
                paid[self.kinds[j]] -= 1
        for j in window:
            if pays[j]:
                paid[kinds[j]] = paid.get(kinds[j], 0) + 1
        if sum(1 for n in paid.values() if n > 0) != len(self.paid_kinds) or any(k not in self.dispatch for k in kinds.values()):
            return None
        # a GEMM or convolution with an epilogue runs the head's kernel, whatever op ends the group
        priced = ops[members[0]] if cost.gemm is not None else ops[last]
        prev = ops[start - 1].module if start else None
        entered_sum = sum(self.entered) - sum(self.entered[start:last + 1])
        state = None
        for j in window:
            entered = modules_entered(prev, ops[j].module) if prev is not None else int(self.is_module) + modules_entered("", ops[j].module)
            entered_sum += entered
            prev = ops[j].module
            kernel = kernel_s(priced, cost, self.dev, group_reach(self.reaches, members))[0] if j == last else self.kernels[j][0]
            host = self._host(j, kinds[j], pays[j], entered)
            step = op_step(host, kernel, self.gpu) if j == last else self._step(j, host, kernel)
            state = step if state is None else compose(state, step)
        whole = compose(compose(self.prefix[start], state), self.suffix[last + 1])
        h, e = apply_step(whole, self._h0(entered_sum), 0.0)
        return max(h, e) + self.sync_s
