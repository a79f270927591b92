"""Seed 002: one step of a small recurrent loop, 1 matmul + 5 pointwise ops.

Stands for the arithmetic of seed 002 ("Sequential throughput of GPU execution"): a loop of
``STEPS = 10_000`` iterations, each "one matrix multiplication and five pointwise operations
(adds, negates, sigmoids, etc)". The seed's numbers: on the CPU 1 x 100 us + 5 x 1 us = 105 us
per step; on a GPU with 100x the FLOPs and 10x the bandwidth but 50 us of dispatch overhead per
op, 1 x (50 + 1) + 5 x (50 + 0.1) = 301.5 us per step, so the GPU is ~3x slower.

The model is one step (the loop body); ``STEPS`` documents the loop the seed runs, so a loop
prediction is ``STEPS x`` the per-step time (the state stays on the device between steps, so
only the first input and last output cross the bus). The step is::

    z = h @ W          # aten.mm          (1 matmul; deliberately not F.linear, which is addmm)
    z = z + b          # aten.add         (pointwise 1)
    z = -z             # aten.neg         (pointwise 2)
    g = sigmoid(z)     # aten.sigmoid     (pointwise 3)
    y = g * h          # aten.mul         (pointwise 4)
    h_next = y + x     # aten.add         (pointwise 5)

What the advisor should find (regime): at batch 1, hidden 256 every op is overhead-bound on the
GPU (a 256x256 GEMV is ~0.13 MFLOP; each kernel is a few microseconds against 14-30 us of host
time per op on the shipped H100 profile), and the CPU is faster per step, copies in and out
included. The five pointwise ops fuse with the matmul into one group. Over the seed's loop, with
the state kept on the device (``--calls 10000 --copies once``), a CUDA graph is what rescues the
GPU: it becomes the recommended plan, while eager the GPU still loses. ``sweep()`` grows hidden to
show where the matmul takes over: at hidden 4096 the GEMV, memory-bound on its 64 MiB weight,
outlasts the host's dispatches and the GPU wins, copies included. ``DTYPE`` follows
``ROOFLINE_EXAMPLE_DTYPE`` (float32 | bfloat16 | float16), default float32.
"""

import os

import torch
from torch import nn

_DTYPES = {
    "float32": torch.float32, "fp32": torch.float32,
    "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
    "float16": torch.float16, "fp16": torch.float16, "half": torch.float16,
}


def _dtype_from_env(default: torch.dtype) -> torch.dtype:
    name = os.environ.get("ROOFLINE_EXAMPLE_DTYPE", "").strip().lower()
    if not name:
        return default
    if name not in _DTYPES:
        raise ValueError(
            f"ROOFLINE_EXAMPLE_DTYPE={name!r}: expected one of float32, bfloat16, float16"
        )
    return _DTYPES[name]


DTYPE = _dtype_from_env(torch.float32)
STEPS = 10_000  # iterations of the seed's loop; the model below is one of them
BATCH = 1
HIDDEN = 256
SWEEP_HIDDEN = (64, 128, 256, 512, 1024, 2048, 4096)


class RNNStep(nn.Module):
    """One step: 1 matmul (h @ W) and 5 pointwise ops (add, neg, sigmoid, mul, add)."""

    def __init__(self, hidden: int = HIDDEN, dtype: torch.dtype | None = None):
        super().__init__()
        dtype = dtype or DTYPE
        self.weight = nn.Parameter(torch.randn(hidden, hidden, dtype=dtype) / hidden**0.5)
        self.bias = nn.Parameter(torch.zeros(hidden, dtype=dtype))

    def forward(self, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        z = h @ self.weight
        z = z + self.bias
        z = torch.neg(z)
        g = torch.sigmoid(z)
        y = g * h
        return y + x


def make_model(hidden: int = HIDDEN) -> nn.Module:
    return RNNStep(hidden).eval()


def make_inputs(batch: int = BATCH, hidden: int = HIDDEN) -> tuple:
    """(h, x): the recurrent state and this step's input, both (batch, hidden)."""
    return (torch.randn(batch, hidden, dtype=DTYPE), torch.randn(batch, hidden, dtype=DTYPE))


def get_model() -> nn.Module:
    return make_model(HIDDEN)


def get_example_inputs() -> tuple:
    return make_inputs(BATCH, HIDDEN)


def sweep():
    """Yield ``(label, model, example_inputs)`` over hidden sizes at batch 1 (built lazily). The label names
    the one size that varies: ``--placement-sweep`` reads the first number of a label as the size."""
    for hidden in SWEEP_HIDDEN:
        yield f"hidden={hidden}", make_model(hidden), make_inputs(BATCH, hidden)
