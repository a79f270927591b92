"""The cost registry: one pure formula per aten op family.

A formula takes a ``CapturedOp`` (tensors as ``TensorMeta``: shapes, dtypes, strides only) and
returns an ``OpCost``. Register it for every overload packet it prices::

    @register(aten.mm, aten.addmm, category="matmul")
    def matmul_cost(op: CapturedOp) -> OpCost: ...

Conventions (docs/design.md): one multiply-add is 2 FLOPs and, where ``torch.utils.flop_counter``
counts an op, our count equals its count exactly. Bytes are the compulsory traffic of one kernel:
each tensor input read once at its own (un-broadcast) size, each output written once; views move
nothing. An op with no formula is priced by ``fallback_cost`` (its bytes, zero FLOPs) and reported
as unsupported by the caller; it is never silently dropped.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Literal, NamedTuple

import torch

from roofline.graph.ops import CapturedOp, TensorMeta

Category = Literal[
    "matmul",  # GEMM-shaped: priced on the calibrated matmul curve at its (batch, m, n, k)
    "conv",  # convolution: priced on the matmul curve at its implicit-GEMM shape
    "attention",  # fused attention kernels: matmul curve at the equivalent GEMM shape
    "pointwise",  # elementwise arithmetic (incl. activations); fusible
    "transcendental",  # elementwise sin/exp/tanh/gelu...: priced on the calibrated transcendental curve; fusible
    "reduction",  # sum/mean/max/softmax/norms: one pass over the input; fusible at the end of a group
    "norm",  # batch/layer/group/RMS norm
    "data_movement",  # copies, casts, cat, gather/scatter, index, embedding, pooling without arithmetic
    "creation",  # zeros/ones/full/arange/rand: writes only
    "view",  # metadata only: no kernel, no bytes
    "other",
]


class Gemm(NamedTuple):
    """The matrix product an op amounts to: ``batch`` independent (m, k) @ (k, n) products."""

    batch: int
    m: int
    n: int
    k: int


class Recurrence(NamedTuple):
    """A fused recurrent layer stack: per (layer, direction) ``steps`` dependent steps, each a
    (m, k) @ (k, n) gate GEMM (m = batch rows, n = gates x hidden, k = input + hidden), one after
    another: their size, not their sum, sets the speed."""

    cell: str  # "lstm", "gru", "rnn_tanh" or "rnn_relu"
    layers: int  # (layer, direction) groups
    steps: int
    m: int
    n: int
    k: int


@dataclass(frozen=True)
class OpCost:
    """What one op costs, independent of any device."""

    flops: int
    bytes_read: int
    bytes_written: int
    kernels: int = 1  # device kernels launched (0 for views and for ops that never reach the device)
    category: Category = "other"
    # The equivalent GEMM of the categories priced on the matmul curve (matmul, conv, attention).
    gemm: Gemm | None = None
    # A recurrent layer stack, priced as its sequence of small GEMMs (its ``gemm`` is None).
    recurrence: Recurrence | None = None
    # dtype whose compute ceiling applies (the matmul operand dtype, or the output dtype).
    compute_dtype: torch.dtype | None = None
    # Bytes of a separate pass that puts a bias into the result, for a backend whose main kernel
    # leaves the bias out: cuDNN convolves without it and ATen adds it afterwards; ATen's CPU addmm
    # copies it into the result first and the GEMM accumulates onto it. Which backend makes the
    # pass is the device model's knowledge (``roofline.model.kernels.bias_pass_s``).
    bias_pass_bytes: int = 0
    # A convolution that stands for one gradient of a backward (``convolution_backward``'s parts):
    # "input" or "weight"; a device with that gradient's own calibrated family prices it there.
    conv_gradient: str | None = None
    # A fused native op that runs several kernels one after another (a transformer layer's inference
    # fast path): each kernel as an op of its own and its cost, in order. The op's FLOPs, bytes and
    # kernels are their sums, and its kernel time is the sum of theirs.
    parts: tuple = ()
    # Where the op runs other kernels on a CPU (the native attention's fused SDPA path is the GPU's):
    # its parts there, priced on a CPU in place of ``parts`` (``parts_on``); empty: the same parts.
    cpu_parts: tuple = ()

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    def __post_init__(self):
        for name in ("flops", "bytes_read", "bytes_written", "kernels", "bias_pass_bytes"):
            value = getattr(self, name)
            if value < 0:
                raise ValueError(f"OpCost.{name} must be >= 0, got {value}")
        if self.gemm is not None and not isinstance(self.gemm, Gemm):
            object.__setattr__(self, "gemm", Gemm(*self.gemm))


Formula = Callable[[CapturedOp], OpCost]

_FORMULAS: dict[str, Formula] = {}


def _packet_name(target) -> str:
    if isinstance(target, torch._ops.OpOverloadPacket):
        return target._qualified_op_name.replace("::", ".")
    if isinstance(target, torch._ops.OpOverload):
        return target.overloadpacket._qualified_op_name.replace("::", ".")
    if isinstance(target, str):
        return target
    raise TypeError(f"cannot register a formula for {target!r}")


def register(*targets, category: Category | None = None):
    """Register ``fn`` as the formula for each target (OpOverloadPacket, OpOverload or 'aten.name').

    Registration is per overload packet: ``aten.add`` covers ``add.Tensor``, ``add.Scalar``, ``add_``
    is a separate packet and must be named separately. ``category``, when given, is filled into the
    returned cost if the formula left the default.
    """

    def deco(fn: Formula) -> Formula:
        def wrapped(op: CapturedOp) -> OpCost:
            cost = fn(op)
            if category is not None and cost.category == "other" and category != "other":
                cost = OpCost(**{**cost.__dict__, "category": category})
            return cost

        wrapped.__name__ = fn.__name__
        wrapped.__doc__ = fn.__doc__
        wrapped.__wrapped__ = fn
        for t in targets:
            name = _packet_name(t)
            if name in _FORMULAS:
                raise ValueError(f"two formulas registered for {name}")
            _FORMULAS[name] = wrapped
        return fn

    return deco


def formula_for(op: CapturedOp) -> Formula | None:
    """The registered formula for this op's overload packet, or None."""
    if isinstance(op.target, str):  # "aten.mm" or "aten.mm.default"
        return _FORMULAS.get(op.target) or _FORMULAS.get(op.packet)
    if not isinstance(op.target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return None  # a non-aten callable (e.g. a higher-order op): unsupported, priced by fallback
    return _FORMULAS.get(_packet_name(op.target))


def registered_ops() -> list[str]:
    return sorted(_FORMULAS)


def fallback_cost(op: CapturedOp) -> OpCost:
    """Price for an op without a formula: its compulsory bytes, no FLOPs, one kernel."""
    return OpCost(
        flops=0,
        bytes_read=sum(t.nbytes for t in op.tensor_inputs()),
        bytes_written=sum(t.nbytes for t in op.outputs),
        kernels=1,
        category="other",
    )


def cost_of(op: CapturedOp) -> tuple[OpCost, bool]:
    """``(cost, supported)``; unsupported ops get ``fallback_cost`` and ``supported=False``."""
    formula = formula_for(op)
    if formula is None:
        return fallback_cost(op), False
    return formula(op), True


# ---- helpers shared by the family modules -------------------------------------------------------


def existing_ops(*names: str) -> list:
    """The aten overload packets of these names that this torch version has (newer ops are skipped)."""
    return [getattr(torch.ops.aten, n) for n in names if hasattr(torch.ops.aten, n)]


def out_bytes(op: CapturedOp) -> int:
    return sum(t.nbytes for t in op.outputs)


def in_bytes(op: CapturedOp) -> int:
    return sum(t.nbytes for t in op.tensor_inputs())


def tensor_arg(op: CapturedOp, i: int) -> TensorMeta:
    x = op.args[i]
    if not isinstance(x, TensorMeta):
        raise TypeError(f"{op.name}: argument {i} is not a tensor")
    return x


def numel(shape) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def real_flops_factor(dtype: torch.dtype | None) -> int:
    """Real FLOPs per counted FLOP of a product: 4 for complex operands, else 1.

    A multiply-add is counted as 2 FLOPs; a complex one is 4 real multiplies and 4 real adds, 8
    real FLOPs. ``torch.utils.flop_counter`` does not make this distinction (it counts a complex
    matmul as a real one), so complex products are where our count exceeds its count.
    """
    return 4 if dtype is not None and dtype.is_complex else 1


def footprint_bytes(t: TensorMeta | None) -> int:
    """Bytes a kernel must read to see every element of ``t`` once.

    A broadcast (expanded) input has stride 0 along its broadcast dimensions: it is read at its own
    size, not at the broadcast size. Empty tensors and ``None`` move nothing.
    """
    if t is None:
        return 0
    if any(s == 0 for s in t.shape):
        return 0
    n = 1
    for size, stride in zip(t.shape, t.stride):
        if stride != 0:
            n *= size
    return n * t.itemsize


def is_contiguous(t: TensorMeta) -> bool:
    """Row-major contiguity from shape and strides (size-1 dimensions may have any stride)."""
    expected = 1
    for size, stride in zip(reversed(t.shape), reversed(t.stride)):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


def tensors_in(x) -> list[TensorMeta]:
    """Every ``TensorMeta`` in an argument value (a tensor, a list of tensors, or neither)."""
    if isinstance(x, TensorMeta):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for y in x for t in tensors_in(y)]
    return []


def schema_of(op: CapturedOp):
    """The ``FunctionSchema`` of the op's overload, or None (e.g. a string target we cannot resolve)."""
    target = op.target
    if isinstance(target, str):
        parts = target.split(".")
        try:
            packet = getattr(getattr(torch.ops, parts[0]), parts[1])
            target = getattr(packet, parts[2] if len(parts) > 2 else "default")
        except (AttributeError, IndexError, RuntimeError):
            return None
    if isinstance(target, torch._ops.OpOverload):
        return target._schema
    return None


def arguments(op: CapturedOp) -> dict:
    """The call's arguments by schema name, defaults filled in (``{'self': TensorMeta, 'dim': 1, ...}``).

    Without a schema, positional arguments are returned under ``'0'``, ``'1'``, ... and kwargs as is.
    """
    schema = schema_of(op)
    if schema is None:
        out = {str(i): a for i, a in enumerate(op.args)}
        out.update(op.kwargs)
        return out
    out = {}
    for i, a in enumerate(schema.arguments):
        if i < len(op.args) and not a.kwarg_only:
            out[a.name] = op.args[i]
        elif a.name in op.kwargs:
            out[a.name] = op.kwargs[a.name]
        elif a.has_default_value():
            out[a.name] = a.default_value
        else:
            out[a.name] = None
    return out


def _repeated_reads(op: CapturedOp) -> Counter:
    """How many times to skip each tensor argument (by ``id()``) because it is a value already
    passed earlier in the same call (``mul(y, y)``), from the capture's per-argument sources."""
    tensors = op.tensor_inputs()
    repeat: Counter = Counter()
    if len(op.input_sources) != len(tensors):
        return repeat
    seen: set[str] = set()
    for t, (value, _producer) in zip(tensors, op.input_sources):
        if value in seen:
            repeat[id(t)] += 1
        seen.add(value)
    return repeat


def _read_once(ts, repeat: Counter) -> int:
    """Footprint bytes of ``ts``, leaving out the repeats ``_repeated_reads`` found."""
    total = 0
    for t in ts:
        if repeat[id(t)] > 0:
            repeat[id(t)] -= 1
            continue
        total += footprint_bytes(t)
    return total


def rw_bytes(op: CapturedOp, skip_read: tuple[str, ...] = ()) -> tuple[int, int]:
    """``(bytes_read, bytes_written)`` of a one-pass kernel, from the schema's aliasing.

    Every tensor argument is read once at its footprint (broadcast inputs at their own size), except
    ``out=`` arguments and the names in ``skip_read``; one value passed twice (``y * y``) is read
    once, since both loads hit the same cache lines. An in-place op writes its mutated ``self``
    (read and written); an ``out=`` op writes its ``out`` tensors; outputs that alias an input are not
    written again. Without a schema: all tensor args read, all outputs written.
    """
    schema = schema_of(op)
    repeat = _repeated_reads(op)
    if schema is None:
        return (
            _read_once(op.tensor_inputs(), repeat),
            sum(t.nbytes for t in op.outputs),
        )
    args = arguments(op)
    read = written = 0
    for a in schema.arguments:
        ts = tensors_in(args.get(a.name))
        if not ts:
            continue
        mutated = a.alias_info is not None and a.alias_info.is_write
        if mutated:
            written += sum(t.nbytes for t in ts)
            if not a.kwarg_only and a.name not in skip_read:  # in-place self: read-modify-write
                read += _read_once(ts, repeat)
        elif a.name not in skip_read:
            read += _read_once(ts, repeat)
    # Fresh outputs: those whose return has no alias annotation.
    returns = schema.returns
    if all(r.alias_info is None for r in returns):
        written += sum(t.nbytes for t in op.outputs)
    elif len(returns) == len(op.outputs):
        written += sum(t.nbytes for t, r in zip(op.outputs, returns) if r.alias_info is None)
    return read, written


def mutates_input(op: CapturedOp) -> bool:
    """True for in-place and ``out=`` overloads."""
    schema = schema_of(op)
    return schema is not None and any(
        a.alias_info is not None and a.alias_info.is_write for a in schema.arguments
    )


def compute_dtype_of(op: CapturedOp) -> torch.dtype | None:
    """The dtype the arithmetic runs in: the output's, unless it is bool (comparisons), then the
    first floating (else first) tensor input's."""
    for t in op.outputs:
        if t.dtype != torch.bool:
            return t.dtype
    ins = op.tensor_inputs()
    for t in ins:
        if t.dtype.is_floating_point:
            return t.dtype
    return ins[0].dtype if ins else (op.outputs[0].dtype if op.outputs else None)


def first_tensor(op: CapturedOp) -> TensorMeta | None:
    ins = op.tensor_inputs()
    return ins[0] if ins else None


def output_numel(op: CapturedOp) -> int:
    """Elements of the op's first output (or of its mutated self for in-place ops)."""
    if op.outputs:
        return op.outputs[0].numel
    t = first_tensor(op)
    return t.numel if t is not None else 0


VIEW_COST = OpCost(flops=0, bytes_read=0, bytes_written=0, kernels=0, category="view")


def part(target, args: tuple, outputs: tuple[TensorMeta, ...], kwargs: dict | None = None) -> tuple[CapturedOp, OpCost]:
    """One kernel of a fused native op, as the op that runs it alone and its registered cost."""
    op = CapturedOp(index=-1, target=target, args=args, kwargs=kwargs or {}, outputs=outputs)
    formula = formula_for(op)
    return op, (formula(op) if formula is not None else fallback_cost(op))


def cpp_work(target) -> tuple[CapturedOp, OpCost]:
    """A part of a fused native op that launches nothing: C++ work of the op between its launches
    (views, a backend's choice), named by the op ``target`` that does it. The timeline charges its host
    an elementwise op's dispatch less the Python entry (``model.timeline._part_hosts_s``)."""
    return CapturedOp(index=-1, target=target, args=(), kwargs={}, outputs=()), OpCost(flops=0, bytes_read=0, bytes_written=0, kernels=0)


def composite(parts: list[tuple[CapturedOp, OpCost]], category: Category, compute_dtype: torch.dtype,
              cpu_parts: list[tuple[CapturedOp, OpCost]] = ()) -> OpCost:
    """The cost of an op that runs ``parts`` one after another (``OpCost.parts``; its FLOPs, bytes
    and kernels are theirs), and ``cpu_parts`` on a CPU where those differ."""
    return OpCost(
        flops=sum(c.flops for _, c in parts), bytes_read=sum(c.bytes_read for _, c in parts),
        bytes_written=sum(c.bytes_written for _, c in parts), kernels=sum(c.kernels for _, c in parts),
        category=category, compute_dtype=compute_dtype, parts=tuple(parts), cpu_parts=tuple(cpu_parts),
    )


def parts_on(cost: OpCost, kind: str) -> tuple:
    """The parts a fused native op runs on a device of ``kind`` ('cuda' or 'cpu')."""
    return cost.cpu_parts if kind == "cpu" and cost.cpu_parts else cost.parts
