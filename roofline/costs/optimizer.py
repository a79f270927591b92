"""Optimizer steps: the ``_foreach_*`` ops (torch's default on a GPU) and the fused optimizers.

The single-tensor ("for-loop") implementation runs ordinary elementwise ops per parameter, priced by
``roofline.costs.pointwise``. The ops here take lists of tensors.

FLOPs (flop_counter counts none of these), per element of each tensor of the first list:
  * ``_foreach_<op>``: the elementwise rule of ``<op>`` (``roofline.costs.pointwise``: add, mul,
    div 1; addcmul, addcdiv, lerp 3; sqrt 1; zero and copy 0), table ``FOREACH``;
  * ``_fused_adam_``/``_fused_adamw_``: first moment 3 (``b1 m + (1 - b1) g``), second moment 4
    (``b2 v + (1 - b2) g g``), denominator 3 (``sqrt(v) / sqrt(bc2) + eps``), update 3 (``p -= s m / d``):
    13, plus weight decay 2 (Adam: ``g + wd p``) or 1 (AdamW: ``p (1 - lr wd)``) when it is not 0, and
    1 for amsgrad's running maximum;
  * ``_fused_sgd_``: update 2 (``p -= lr d``), momentum 3 (``mu b + (1 - damp) g``) when not 0,
    nesterov 2 more, weight decay 2;
  * ``_fused_adagrad_``: ``s += g g`` 2, update 4 (``p -= lr g / (sqrt(s) + eps)``), weight decay 2.

Bytes: every tensor of every list read once and the lists the op writes written once (``rw_bytes``:
the schema says which lists are mutated), except that ``_foreach_zero_``/``_foreach_copy_`` do not
read their destination and a fused optimizer writes its gradients back only when it unscales them
(``grad_scale``).

Kernels (CUDA eager): ``multi_tensor_apply`` (``ATen/native/cuda/MultiTensorApply.cuh``) cuts
tensors into chunks of 65536 elements and launches one kernel per at most 320 chunks or per as many
tensors as its argument space holds at this depth (lists touched: 110, 64, 48, 36, 30 for 1 to 5
lists), whichever fills first.
"""

from __future__ import annotations

import math

import torch

from roofline.costs.pointwise import ARITHMETIC, TRANSCENDENTAL
from roofline.costs.registry import OpCost, arguments, existing_ops, register, rw_bytes, tensors_in
from roofline.graph.ops import CapturedOp, TensorMeta

aten = torch.ops.aten

CHUNK_ELEMENTS = 65536
MAX_BLOCKS = 320
MAX_TENSORS = {1: 110, 2: 64, 3: 48, 4: 36, 5: 30}

# foreach op -> (FLOPs per element, category); the elementwise rules of roofline.costs.pointwise
FOREACH = {
    **{n: (ARITHMETIC[n], "pointwise") for n in ("neg", "abs", "reciprocal", "sign", "ceil", "floor", "trunc", "frac",
                                                  "mul", "maximum", "minimum", "addcmul", "addcdiv", "lerp")},
    "add": (1, "pointwise"), "sub": (1, "pointwise"), "div": (1, "pointwise"),
    "clamp_min": (1, "pointwise"), "clamp_max": (1, "pointwise"), "pow": (3, "transcendental"),
    **{n: (TRANSCENDENTAL[n], "transcendental") for n in ("sqrt", "rsqrt", "exp", "expm1", "log", "log1p", "log2", "log10",
                                                           "sin", "cos", "tan", "tanh", "sigmoid", "erf", "erfc")},
    "zero": (0, "creation"), "copy": (0, "data_movement"),
    "norm": (2, "reduction"),  # square and accumulate (the p-norm's root is per tensor)
}


def kernel_chunks(sizes: list[int], lists: int) -> list[list[int]]:
    """The kernels ``multi_tensor_apply`` launches for tensors of ``sizes`` elements over ``lists``
    lists, each as the elements of its blocks' chunks: a launch when its tensors or its chunks are
    full, or at the last chunk of the last tensor; a tensor cut by a launch carries on into the next."""
    max_tensors = MAX_TENSORS.get(max(1, min(lists, 5)), 30)
    sizes = [n for n in sizes if n > 0]
    kernels: list[list[int]] = []
    blocks: list[int] = []
    tensors = 0
    for i, n in enumerate(sizes):
        tensors += 1
        chunks = math.ceil(n / CHUNK_ELEMENTS)
        for c in range(chunks):
            blocks.append(min(CHUNK_ELEMENTS, n - c * CHUNK_ELEMENTS))
            last_of_tensor = c == chunks - 1
            if (tensors == max_tensors and last_of_tensor) or len(blocks) == MAX_BLOCKS or (last_of_tensor and i == len(sizes) - 1):
                kernels.append(blocks)
                blocks = []
                tensors = 0 if last_of_tensor else 1
    return kernels


def launches(sizes: list[int], lists: int) -> int:
    """Kernels ``multi_tensor_apply`` launches (``kernel_chunks``)."""
    return len(kernel_chunks(sizes, lists))


def _foreach_sizes(op: CapturedOp) -> tuple[list[int], int]:
    """A foreach op's first list's sizes and the lists its kernels touch (its outputs one more)."""
    lists = _lists(op)
    return ([t.numel for t in lists[0]] if lists else []), len(lists) + (1 if op.outputs else 0)


def multi_tensor_kernels(op: CapturedOp) -> list[list[int]] | None:
    """A foreach op's kernels as their blocks' chunk elements (``kernel_chunks``); None for any other op."""
    if op.packet not in MULTI_TENSOR_PACKETS:
        return None
    return kernel_chunks(*_foreach_sizes(op))


def _lists(op: CapturedOp) -> list[list[TensorMeta]]:
    """The op's tensor-list arguments, in order (a single tensor argument is not a list)."""
    return [tensors_in(x) for x in (*op.args, *op.kwargs.values()) if isinstance(x, (list, tuple)) and tensors_in(x)]


def _foreach_base(op: CapturedOp) -> str:
    name = op.packet.split(".", 1)[1][len("_foreach_"):]
    return name[:-1] if name.endswith("_") else name


_WRITE_ONLY = ("zero", "copy")
_FOREACH_NAMES = [f"_foreach_{n}{s}" for n in FOREACH for s in ("", "_")]
_FOREACH_PACKETS = existing_ops(*_FOREACH_NAMES)
# the foreach ops' packets (``CapturedOp.packet``): multi_tensor_apply's kernels, priced on a GPU at the
# profile's multi-tensor rates (the fused optimizers run it too, with no recorded check yet: they stay
# on the bandwidth curve)
MULTI_TENSOR_PACKETS = {f"aten.{n}" for n in _FOREACH_NAMES}
# the calibrated chunk (``ForeachKernels.chunk``): _foreach_add_ over float32, two lists read and one written
FOREACH_CHUNK_BYTES = CHUNK_ELEMENTS * 3 * 4


@register(*_FOREACH_PACKETS)
def foreach_cost(op: CapturedOp) -> OpCost:
    """One elementwise op over lists of tensors: its per-element rule over the first list's
    elements; bytes of every list; ``launches`` kernels."""
    flops, category = FOREACH[_foreach_base(op)]
    lists = _lists(op)
    first = lists[0] if lists else []
    elements = sum(t.numel for t in first)
    _, depth = _foreach_sizes(op)
    # zero and copy overwrite their destination without reading it
    read, written = rw_bytes(op, skip_read=("self",) if _foreach_base(op) in _WRITE_ONLY else ())
    return OpCost(
        flops=flops * elements, bytes_read=read, bytes_written=written, kernels=launches([t.numel for t in first], depth),
        category=category, compute_dtype=first[0].dtype if first else None,
    )


ADAM_FLOPS = 13
ADAM_DECAY_FLOPS = 2
ADAMW_DECAY_FLOPS = 1
AMSGRAD_FLOPS = 1
SGD_UPDATE_FLOPS = 2
SGD_MOMENTUM_FLOPS = 3
SGD_NESTEROV_FLOPS = 2
SGD_DECAY_FLOPS = 2
ADAGRAD_FLOPS = 6
ADAGRAD_DECAY_FLOPS = 2


# the lists a fused optimizer's kernel walks together (its step counts are read on the side)
_FUSED_LISTS = ("self", "grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs", "momentum_buffer_list", "state_sums")


def _fused(op: CapturedOp, per_element: int) -> OpCost:
    a = arguments(op)
    params = tensors_in(a["self"])
    depth = sum(1 for name in _FUSED_LISTS if tensors_in(a.get(name)))
    read, written = rw_bytes(op)
    if op.packet.endswith("_") and a.get("grad_scale") is None:  # the schema marks grads written; the kernel stores them only to unscale
        written -= sum(t.nbytes for t in tensors_in(a.get("grads")))
    return OpCost(
        flops=per_element * sum(t.numel for t in params), bytes_read=read, bytes_written=written,
        kernels=launches([t.numel for t in params], depth), category="pointwise",
        compute_dtype=params[0].dtype if params else None,
    )


@register(*existing_ops("_fused_adam_", "_fused_adamw_", "_fused_adam", "_fused_adamw"))
def fused_adam_cost(op: CapturedOp) -> OpCost:
    """Fused Adam/AdamW: 13 FLOPs per parameter element, plus weight decay and amsgrad (module docstring)."""
    a = arguments(op)
    flops = ADAM_FLOPS + AMSGRAD_FLOPS * bool(a.get("amsgrad"))
    if a.get("weight_decay"):
        flops += ADAMW_DECAY_FLOPS if "adamw" in op.packet else ADAM_DECAY_FLOPS
    return _fused(op, flops)


@register(*existing_ops("_fused_sgd_", "_fused_sgd"))
def fused_sgd_cost(op: CapturedOp) -> OpCost:
    """Fused SGD: 2 FLOPs per parameter element, plus momentum, nesterov and weight decay."""
    a = arguments(op)
    flops = SGD_UPDATE_FLOPS
    if a.get("momentum"):
        flops += SGD_MOMENTUM_FLOPS + SGD_NESTEROV_FLOPS * bool(a.get("nesterov"))
    if a.get("weight_decay"):
        flops += SGD_DECAY_FLOPS
    return _fused(op, flops)


@register(*existing_ops("_fused_adagrad_", "_fused_adagrad"))
def fused_adagrad_cost(op: CapturedOp) -> OpCost:
    """Fused Adagrad: 6 FLOPs per parameter element, plus weight decay."""
    a = arguments(op)
    return _fused(op, ADAGRAD_FLOPS + ADAGRAD_DECAY_FLOPS * bool(a.get("weight_decay")))
