"""The captured program: an ordered list of aten ops with tensor metadata.

Capture (``roofline.graph.capture``) produces a ``CapturedGraph``; the cost registry
(``roofline.costs``) prices each ``CapturedOp``; prediction and advice read both. Tensors are
represented by ``TensorMeta`` only, so nothing here holds device memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import torch


@dataclass(frozen=True)
class TensorMeta:
    """Shape, dtype, strides and device of one tensor; no data."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    stride: tuple[int, ...]
    device: str = "cpu"
    storage_offset: int = 0

    @classmethod
    def of(cls, t: torch.Tensor) -> "TensorMeta":
        return cls(
            shape=tuple(int(s) for s in t.shape),
            dtype=t.dtype,
            stride=tuple(int(s) for s in t.stride()),
            device=str(t.device.type),
            storage_offset=int(t.storage_offset()) if t.layout == torch.strided else 0,
        )

    @classmethod
    def contiguous(cls, shape, dtype=torch.float32, device: str = "cpu") -> "TensorMeta":
        """A dense row-major tensor; handy in tests and in formulas that build outputs."""
        shape = tuple(int(s) for s in shape)
        stride, acc = [], 1
        for s in reversed(shape):
            stride.append(acc)
            acc *= max(s, 1)
        return cls(shape=shape, dtype=dtype, stride=tuple(reversed(stride)), device=device)

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the logical tensor (numel x itemsize)."""
        return self.numel * self.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)


@dataclass
class CapturedOp:
    """One aten op call, in execution order.

    ``args``/``kwargs`` are the call's arguments with every tensor replaced by its ``TensorMeta``
    (lists of tensors become lists of ``TensorMeta``); scalars, shapes and dtypes stay as they were.
    ``outputs`` are the op's tensor outputs, flattened. ``input_ops`` are the indices of the ops
    whose outputs this op reads (graph inputs and parameters are not ops), and ``users`` are the
    indices of ops that read this op's outputs; ``is_output`` marks ops whose result leaves the graph.
    """

    index: int
    target: Any  # torch._ops.OpOverload (or a callable for non-aten nodes)
    args: tuple
    kwargs: dict
    outputs: tuple[TensorMeta, ...]
    module: str = ""  # dotted path of the innermost nn.Module, "" for top level
    module_type: str = ""  # class name of that module
    source: str | None = None  # "file.py:123" of the user's line, when known
    input_ops: tuple[int, ...] = ()
    users: tuple[int, ...] = ()
    is_output: bool = False
    # For each entry of tensor_inputs(): (the value it reads, the op that produced it or -1 for a
    # graph input, parameter or constant). Lets fusion count a tensor read twice by a group once,
    # and replay find each argument.
    input_sources: tuple[tuple[str, int], ...] = ()
    # The native (C++) torch call (``F.linear``, ``torch.matmul``) this op ran inside, shared by every
    # op of that call; None for a call into Python code, or when unknown. See capture._TorchCalls.
    torch_call: int | None = None
    # Of a training step (roofline.graph.training): "forward" (the loss included), "backward" or
    # "optimizer". A backward op runs in no module (``module`` is ""); ``grad_of`` is the module of
    # the forward op it differentiates, and ``source`` that op's line.
    phase: str = "forward"
    grad_of: str = ""
    # An op on CPU scalars that stay on the host whatever the model's device (an optimizer's step
    # count, and ``.item()`` of it): no kernel on a GPU, and no wait for the device.
    host_scalar: bool = False
    # A forward op of a training step that autograd records (an input requires grad): the host also
    # makes its autograd node and saves what its backward needs.
    records_grad: bool = False
    # Python function calls of the model's own code since the op before (roofline.graph.pycalls)
    python_calls: int = 0

    @property
    def name(self) -> str:
        """Canonical op name, e.g. ``aten.mm.default``."""
        return op_name(self.target)

    @property
    def packet(self) -> str:
        """Overload packet name, e.g. ``aten.mm``."""
        name = self.name
        return name.rsplit(".", 1)[0] if name.count(".") >= 2 else name

    def tensor_inputs(self) -> list[TensorMeta]:
        """Every tensor argument, flattened, in argument order (positional then keyword)."""
        found: list[TensorMeta] = []

        def walk(x):
            if isinstance(x, TensorMeta):
                found.append(x)
            elif isinstance(x, (list, tuple)):
                for y in x:
                    walk(y)
            elif isinstance(x, dict):
                for y in x.values():
                    walk(y)

        walk(self.args)
        walk(self.kwargs)
        return found


# aten ops after which the host holds a value the device computed: ``.item()``'s op, and ops whose
# output size depends on tensor values. On a GPU the host waits there for the device to finish
# everything queued before it (a sync); CUDA graph capture cannot record that.
HOST_READ_OPS = {
    "aten._local_scalar_dense": ".item()",
    "aten.nonzero": "nonzero (output size depends on values)",
    "aten.argwhere": "argwhere (output size depends on values)",
    "aten.masked_select": "masked_select (output size depends on values)",
    "aten._unique2": "unique (output size depends on values)",
    "aten._unique": "unique (output size depends on values)",
    "aten.unique_dim": "unique (output size depends on values)",
    "aten.unique_consecutive": "unique_consecutive (output size depends on values)",
}


def reads_to_host(op: "CapturedOp") -> str | None:
    """What makes the host wait for the device at this op, in words; None if nothing does. A
    boolean mask used as an index (``x[x > 0]``) runs a nonzero inside ``index``/``index_put``."""
    if op.host_scalar:
        return None
    what = HOST_READ_OPS.get(op.packet)
    if what is None and op.packet in ("aten.index", "aten.index_put", "aten.index_put_", "aten._index_put_impl_"):
        if any(t.dtype == torch.bool for t in op.tensor_inputs()[1:]):
            what = "boolean-mask indexing (output size depends on values)"
    return what


def op_name(target: Any) -> str:
    """``aten.mm.default`` for an OpOverload, the qualified name for anything else."""
    if isinstance(target, torch._ops.OpOverload):
        ns = target.namespace
        return f"{ns}.{target._opname}.{target._overloadname}"
    if isinstance(target, torch._ops.OpOverloadPacket):
        return f"{target._qualified_op_name.replace('::', '.')}"
    return getattr(target, "__qualname__", None) or str(target)


@dataclass
class CapturedGraph:
    """The whole captured forward pass."""

    ops: list[CapturedOp]
    inputs: list[TensorMeta] = field(default_factory=list)  # user inputs, flattened
    parameters_bytes: int = 0  # bytes of parameters and buffers (resident weights)
    outputs: list[TensorMeta] = field(default_factory=list)
    module_calls: int = 0  # nn.Module __call__s during one forward (each costs host time)
    state_tensors: int = 0  # parameter, buffer and tensor-attribute tensors: graph inputs under torch.compile
    host_reads: list[str] = field(default_factory=list)  # "`.item()` at model.py:12": values read into Python
    # "bool(tensor) at modeling_llama.py:382": a library's reads of known values that it skips under
    # torch.compile and CUDA-graph capture (roofline.graph.guards): host syncs of eager runs only; and
    # the indices of the ops that read them
    library_checks: list[str] = field(default_factory=list)
    library_check_ops: list[int] = field(default_factory=list)
    capture_mode: str = "fake"  # "fake" (no memory) or "real" (fallback that ran the model)
    warnings: list[str] = field(default_factory=list)
    replay: Any = None  # what roofline.graph.replay needs to run the ops again on real tensors
    segments: list[int] = field(default_factory=lambda: [0])  # first op of each model call (several: a decode loop)
    segment_module_calls: list[int] = field(default_factory=lambda: [0])  # module calls made before each model call
    training: Any = None  # a training step's roofline.graph.training.StepInfo; None for a forward

    def with_ops(self, ops: list[CapturedOp]) -> "CapturedGraph":
        """The same program with other ops (fused, or changed for an alternative)."""
        return replace(self, ops=ops, warnings=list(self.warnings))
