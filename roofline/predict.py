"""The model of time (DESIGN.md): per-op kernel and host times, the eager timeline, regimes.

GPU, eager: two queues. The host issues op i at ``h_i = h_(i-1) + o_i``; the device starts it at
``s_i = max(h_i, e_(i-1))`` and ends at ``e_i = s_i + t_i``; the run ends at ``max(h_N, e_N)`` plus
one synchronize. An op whose start was set by the host, and whose wait for the host is longer than
its own kernel, is overhead-bound (so a lone large matmul, which the idle device must also wait to
receive, is still compute-bound); otherwise it is compute- or memory-bound by the larger term of
``t_i = max(F / P, B / W, floor)`` (a kernel at the floor is overhead-bound too: its time is the
fixed cost of a launch, not work).

CPU: one queue, ``t_i = max(F / P_cpu, B / W_cpu) + o_cpu``.

P and W are read from the calibrated curves at each op's own size (``roofline.curves``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from roofline.costs import OpCost
from roofline.curves import DeviceModel
from roofline.ops import CapturedGraph, CapturedOp

REGIMES = ("compute", "memory", "overhead", "none")


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


@dataclass
class Timeline:
    ops: list[OpTiming]
    total_s: float  # end of the run, synchronize included
    host_s: float  # h_N: total host issue time
    device_busy_s: float  # sum of kernel times
    sync_s: float
    device: str


_DTYPE_NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}


def matmul_dtype_name(dtype: torch.dtype | None, allow_tf32: bool) -> str:
    name = _DTYPE_NAMES.get(dtype, "float32")
    return "tf32" if name == "float32" and allow_tf32 else name


def dispatch_kind(op: CapturedOp, cost: OpCost) -> str:
    """Which calibrated representative op stands for this op's host dispatch cost."""
    packet = op.packet
    if cost.category == "view":
        return "view"
    if cost.category == "conv":
        return "conv2d"
    if cost.category in ("matmul", "attention"):
        return "addmm"
    if cost.category == "norm" and "batch_norm" in packet:
        return "batch_norm"
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


def _has_python_scalar(op: CapturedOp) -> bool:
    """A Tensor overload called with a Python number (``x * 0.5``): the number is wrapped into a
    tensor on every call, which costs the host about as much again as the op."""
    overload = getattr(op.target, "_overloadname", "")
    return overload == "Tensor" and any(isinstance(a, (int, float)) and not isinstance(a, bool) for a in op.args[1:2])


def _bandwidth_kind(cost: OpCost) -> str:
    if cost.bytes_read == 0:
        return "write"
    if cost.bytes_written * 8 < cost.bytes_read:
        return "read"
    return "copy"


def kernel_terms(op: CapturedOp, cost: OpCost, dev: DeviceModel, allow_tf32: bool = False) -> tuple[float, float, float]:
    """(compute_s, memory_s, floor_s) of one op on one device; zeros for ops that launch no kernel."""
    if cost.kernels == 0:
        return 0.0, 0.0, 0.0
    attention = _attention_time(op, cost, dev) if cost.category == "attention" else None
    if attention is not None:
        compute = attention
    elif cost.gemm is not None and cost.category in ("matmul", "conv", "attention"):
        batch, m, n, k = cost.gemm
        # cuDNN runs float32 convolutions on TF32 tensor cores by default (torch.backends.cudnn.allow_tf32).
        tf32 = allow_tf32 or (cost.category == "conv" and dev.kind == "cuda" and torch.backends.cudnn.allow_tf32)
        curve = dev.matmul_model(matmul_dtype_name(cost.compute_dtype, tf32))
        if cost.sequential:
            # a recurrence: per (layer, direction), one small GEMM per time step, one after another
            groups = max(cost.kernels // (1 + 2 * max(batch, 1)), 1)
            layer = _rnn_layer_s(op, cost, dev)
            if layer is not None:
                return groups * layer, 0.0, 0.0  # calibrated whole layers: their bytes and launches are in it
            compute = groups * max(batch, 1) * curve.time_s(m, n, k) if m and n and k else 0.0
        else:
            compute = curve.time_s(max(batch, 1) * m, n, k) if m and n and k else 0.0
            if cost.category == "conv" and compute:
                compute *= _conv_ratio(op, cost, dev, tf32)
        # FLOPs beyond the GEMM's own (bias, scaling) at the vector rate.
        extra = max(cost.flops - 2 * max(batch, 1) * m * n * k, 0)
        compute += extra / dev.vector_flop_per_s
    else:
        compute = cost.flops / dev.vector_flop_per_s
    nbytes = cost.bytes_read + cost.bytes_written
    memory = 0.0
    if nbytes:
        # An op family's own calibrated kernel (sin, add, layer_norm, softmax) says what bandwidth
        # such kernels reach at this size; other ops get the plain copy/read/write curves.
        rate = dev.family_bytes_per_s(_family(op, cost, dev), nbytes, _DTYPE_NAMES.get(_out_dtype(op, cost), "float32"))
        memory = nbytes / (rate or dev.bandwidth.bytes_per_s(max(nbytes, 1), _bandwidth_kind(cost)))
    floor = dev.kernel_floor_s * cost.kernels
    return compute, memory, floor


def _rnn_layer_s(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> float | None:
    """One (layer, direction) of a fused LSTM/GRU from the calibrated RNN layers; None when the
    profile has none for this dtype or the op is another cell type."""
    from roofline.costs.rnn import rnn_kind

    kind = rnn_kind(op)
    model = dev.rnn_model(_DTYPE_NAMES.get(cost.compute_dtype, "float32"))
    steps, m, n, k = cost.gemm
    if model is None or kind not in ("lstm", "gru") or not (m and n and k):
        return None
    return model.time_s(kind, max(steps, 1), m, n, k)


def extra_pass_s(cost: OpCost, dev: DeviceModel) -> float:
    """Time of a pass an op makes besides its main kernel on this device: a cuDNN conv's bias add
    after it on the GPU (``gpu_epilogue_bytes``), the bias copied into a CPU addmm's result before
    it (``cpu_prologue_bytes``). Priced on the binary add's curve, as a copy where there is none."""
    nbytes = cost.gpu_epilogue_bytes if dev.kind == "cuda" else cost.cpu_prologue_bytes
    if not nbytes:
        return 0.0
    rate = dev.family_bytes_per_s("add", nbytes) or dev.bandwidth.bytes_per_s(nbytes, "copy")
    return nbytes / rate


def _conv_ratio(op: CapturedOp, cost: OpCost, dev: DeviceModel, tf32: bool) -> float:
    """Calibrated conv-to-GEMM time ratio for an ungrouped 2-D convolution (1.0 otherwise: grouped,
    depthwise, transposed, 1-D and 3-D convolutions stay on the GEMM curve)."""
    batch, m, n, k = cost.gemm
    inputs = op.tensor_inputs()
    if batch != 1 or len(inputs) < 2 or inputs[0].ndim != 4 or inputs[1].ndim != 4:
        return 1.0
    from roofline.costs.conv import is_transposed

    if is_transposed(op):
        return 1.0
    model = dev.conv_model(_DTYPE_NAMES.get(cost.compute_dtype, "float32"), tf32)
    if model is None:
        return 1.0
    w = inputs[1]
    return model.ratio(m, n, k, w.shape[2] * w.shape[3])


def _out_dtype(op: CapturedOp, cost: OpCost) -> torch.dtype | None:
    """The dtype an op's kernel streams: its first output's, else its compute dtype."""
    return op.outputs[0].dtype if op.outputs else cost.compute_dtype


def _broadcasts(op: CapturedOp) -> bool:
    """A binary op with an operand broadcast up to the output (neither a scalar nor full size)."""
    if not op.outputs:
        return False
    n = op.outputs[0].numel
    return any(1 < t.numel < n for t in op.tensor_inputs())


def _family(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> str | None:
    """Which calibrated op-family curve prices this op's memory traffic, if any."""
    if cost.category == "transcendental":
        return "sin"
    if cost.category == "pointwise":
        if _broadcasts(op):
            return "mul_broadcast"
        # One operand in, one result out (neg, relu, x * 0.5, y * y): the unary curve where the
        # profile has one. The binary add's curve moves 1.5x the bytes per element, and so leaves
        # the cache at a smaller tensor (run 30: unary ops on 16 MiB priced 11.8 us, measured 7.5-8.5).
        if cost.bytes_read * 2 < cost.bytes_written * 3 and dev.has_family("unary"):
            return "unary"
        return "add"
    if cost.category == "norm":
        return "layer_norm"
    if cost.category == "reduction" and "softmax" in op.packet:
        return "softmax"
    return None


def _attention_time(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> float | None:
    """Fused attention priced on the calibrated SDPA curve: dense FLOPs over the rate measured at
    this sequence length and number of tokens in flight; None when the profile has no curve."""
    if not dev.attention or not op.tensor_inputs():
        return None
    q = op.tensor_inputs()[0]
    if q.ndim < 2:
        return None
    from roofline.costs.registry import arguments

    try:
        causal = bool(arguments(op).get("is_causal", False))
    except Exception:
        causal = False
    seq, head_dim = q.shape[-2], q.shape[-1]
    tokens = q.numel // max(head_dim, 1)
    model = dev.attention_model(_DTYPE_NAMES.get(q.dtype, "float32"), head_dim, causal)
    if model is None:
        return None
    return cost.flops / model.flop_per_s(seq, tokens)


def dispatch_payers(ops: list[CapturedOp], kinds: list[str]) -> list[bool]:
    """Which ops pay a host dispatch of their own: all but ``F.linear``'s weight transpose.

    The addmm representative is timed as a whole ``F.linear`` call, which runs ``t`` and ``addmm``
    in C++, so a ``t`` made inside the same native torch call (``CapturedOp.torch_call``) as the
    matmul it feeds is already in that figure; pricing it again as a view put 3 µs on every Linear
    on the H100 (benchmarks/RESULTS.md, run 38). The other ops a native call runs inside it still
    pay: a Linear on a 3-d input (view, t, addmm, view) cost the H100's host 1.6-1.7x a 2-d
    ``F.linear`` (benchmarks/gpu_runs/run21/attention_host_probe.txt), more than its views add, so
    they keep their price.
    Ops without a call number (an older capture, or ops run inside Python code) each pay."""
    matmuls_by_call: dict[int, set[int]] = {}
    for i, (op, kind) in enumerate(zip(ops, kinds)):
        if op.torch_call is not None and kind == "addmm":
            matmuls_by_call.setdefault(op.torch_call, set()).add(i)

    def in_linear(op: CapturedOp) -> bool:
        feeds = matmuls_by_call.get(op.torch_call, set())
        return op.name == "aten.t.default" and bool(op.users) and set(op.users) <= feeds

    return [not in_linear(op) for op in ops]


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


def predict_timeline(
    graph: CapturedGraph,
    costs: list[OpCost],
    dev: DeviceModel,
    *,
    allow_tf32: bool = False,
    is_module: bool = True,
    host_cost=None,
    start_host_s: float = 0.0,
) -> Timeline:
    """Run the model of time over the captured ops, on ``dev`` (a GPU or the CPU).

    ``host_cost(op, cost)``, when given, replaces eager dispatch and module-call costs (compiled
    code launches kernels from generated Python, not through nn.Module and the dispatcher);
    ``start_host_s`` is host time spent before the first op (e.g. a compiled function's guards).
    """
    ov = dev.overheads
    module_s = 0.0 if host_cost is not None else ov.module_call_s.median_s
    gpu = dev.kind == "cuda"
    # The root module's call is billed to the first op; after that, each op pays for the modules it enters.
    entered = [
        modules_entered(graph.ops[i - 1].module, op.module) if i else int(is_module) + modules_entered("", op.module)
        for i, op in enumerate(graph.ops)
    ]
    kinds = [dispatch_kind(op, cost) for op, cost in zip(graph.ops, costs)]
    pays = dispatch_payers(graph.ops, kinds)
    # How many different dispatch kinds the host interleaves: the interleaving factor grows with it.
    distinct_kinds = len({kind for kind, paid in zip(kinds, pays) if paid})
    # Module calls that launched no op of their own (Dropout in eval, Identity) still cost host time.
    unattributed = max(graph.module_calls - sum(entered), 0)

    h = unattributed * module_s + start_host_s
    e = 0.0
    out: list[OpTiming] = []
    busy = 0.0
    for op, cost, n_mod, kind, paid in zip(graph.ops, costs, entered, kinds, pays):
        compute, memory, floor = kernel_terms(op, cost, dev, allow_tf32)
        kernel = max(compute, memory, floor) + extra_pass_s(cost, dev) if cost.kernels else 0.0
        if host_cost is not None:
            host = host_cost(op, cost)
        else:
            host = (dev.dispatch_s(kind, distinct_kinds) if paid else 0.0) + n_mod * module_s
        if kernel == 0.0:
            term = "none"
        elif floor >= max(compute, memory):
            term = "floor"
        else:
            term = "compute" if compute >= memory else "memory"
        if gpu:
            issue = h + host
            start = max(issue, e)
            end = start + kernel
            gap = start - e  # device idle, waiting for the host to issue this op
            predicted = end - e if end > e else 0.0
            h, e = issue, max(end, e)
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
            h = e = end
            if kernel == 0.0:
                regime, bound = ("overhead", "host") if host > 0 else ("none", "none")
            elif host >= kernel:
                regime, bound = "overhead", "host"
            else:
                regime, bound = term, term
        busy += kernel
        out.append(OpTiming(kernel, host, compute, memory, issue, start, end, predicted, regime, bound))
    sync = ov.synchronize_s.median_s if (gpu and ov.synchronize_s) else 0.0
    end_of_run = max(h, e) + sync
    # The tail where the host is still issuing after the device finished is overhead of the last op.
    if gpu and out and h > e:
        out[-1].predicted_s += h - e
    return Timeline(ops=out, total_s=end_of_run, host_s=h, device_busy_s=busy, sync_s=sync, device=dev.kind)
