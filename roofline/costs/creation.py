"""Tensor creation: constants, ranges, random numbers, fills. Write-only.

Bytes: the output (or the filled ``self`` of an in-place fill) is written; nothing is read except
a tensor that supplies values (``fill_(self, value_tensor)``, ``bernoulli(p_tensor)``,
``normal(mean_tensor, std_tensor)``, ``multinomial(probs)``). A ``*_like``/``new_*`` template is
not read (only its metadata is used), nor is the old content of an in-place fill.
``empty*`` allocates without writing: no kernel, no bytes.

FLOP rule (per element written):
    constants (zeros, ones, full, fill_, zero_, eye, scalar_tensor)      0  (stores only)
    arange, linspace (start + i*step)                                   2
    logspace (base ** (start + i*step))                                 5  (2 + pow 3)
    uniform draws (rand, uniform_, randint, random_, bernoulli)         1  (scale / compare of the
                  Philox output; the integer generator rounds are not floating-point work)
    normal draws (randn, normal, normal_) 4 (Box-Muller per pair + affine); log_normal_ 5;
    exponential_ 2; cauchy_ 2; geometric_ 3
    randperm: n*ceil(log2 n) (sort of random keys); multinomial: cumsum + a binary search per sample
Category "creation". Kernels (CUDA eager): 1 (empty*: 0; randperm and multinomial 3).
"""

from __future__ import annotations

import math

import torch

from roofline.costs.registry import arguments, existing_ops, OpCost, register, tensors_in
from roofline.graph.ops import CapturedOp

aten = torch.ops.aten

# name -> FLOPs per element written
CREATION = {
    "zeros": 0, "ones": 0, "full": 0, "zeros_like": 0, "ones_like": 0, "full_like": 0,
    "new_zeros": 0, "new_ones": 0, "new_full": 0, "fill_": 0, "fill": 0, "zero_": 0, "zero": 0,
    "scalar_tensor": 0, "eye": 0, "tril_indices": 0, "triu_indices": 0,
    "arange": 2, "linspace": 2, "logspace": 5,
    "rand": 1, "rand_like": 1, "randint": 1, "randint_like": 1, "uniform_": 1, "uniform": 1,
    "random_": 1, "bernoulli": 1, "bernoulli_": 1,
    "randn": 4, "randn_like": 4, "normal": 4, "normal_": 4, "log_normal_": 5,
    "exponential_": 2, "cauchy_": 2, "geometric_": 3, "poisson": 4,
}
EMPTY = ("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
         "empty_permuted", "_efficientzerotensor")

# Tensor arguments that supply values (are read); everything else is a template or destination.
_VALUE_ARGS = ("value", "p", "mean", "std")
_READS_SELF = ("aten.bernoulli.default", "aten.poisson.default", "aten.multinomial.default")


def _written(op: CapturedOp) -> tuple[int, int]:
    """(elements, bytes) written: the output, or the mutated self of an in-place fill."""
    if op.outputs:
        return op.outputs[0].numel, sum(t.nbytes for t in op.outputs)
    ins = op.tensor_inputs()
    return (ins[0].numel, ins[0].nbytes) if ins else (0, 0)


def _read(op: CapturedOp, a: dict) -> int:
    read = sum(t.nbytes for name in _VALUE_ARGS for t in tensors_in(a.get(name)))
    if op.name in _READS_SELF:
        read += sum(t.nbytes for t in tensors_in(a.get("self")))
    return read


@register(*existing_ops(*CREATION), category="creation")
def creation_cost(op: CapturedOp) -> OpCost:
    """Write-only: CREATION[name] FLOPs per element written."""
    a = arguments(op)
    n, written = _written(op)
    per_element = CREATION[op.packet.split(".", 1)[1]]
    return OpCost(flops=per_element * n, bytes_read=_read(op, a), bytes_written=written,
                  kernels=1 if written else 0, category="creation",
                  compute_dtype=op.outputs[0].dtype if op.outputs else None)


@register(*existing_ops(*EMPTY), category="creation")
def empty_cost(op: CapturedOp) -> OpCost:
    """Allocation only: no kernel, nothing written."""
    return OpCost(flops=0, bytes_read=0, bytes_written=0, kernels=0, category="creation")


@register(aten.randperm, category="creation")
def randperm_cost(op: CapturedOp) -> OpCost:
    """Random keys sorted: n*ceil(log2 n) compares + 1 per key; 3 kernels."""
    n, written = _written(op)
    flops = n * max(1, math.ceil(math.log2(max(2, n)))) + n
    return OpCost(flops=flops, bytes_read=0, bytes_written=written, kernels=3, category="creation")


@register(aten.multinomial, category="creation")
def multinomial_cost(op: CapturedOp) -> OpCost:
    """Cumulative sum of the probabilities, then one draw + binary search per sample; 3 kernels."""
    a = arguments(op)
    probs = a["self"]
    n_samples, written = _written(op)
    categories = probs.shape[-1] if probs.ndim else 1
    flops = probs.numel + n_samples * (1 + max(1, math.ceil(math.log2(max(2, categories)))))
    return OpCost(flops=flops, bytes_read=probs.nbytes, bytes_written=written, kernels=3,
                  category="creation", compute_dtype=probs.dtype)
