"""A hand-written Elman RNN cell applied in a Python ``for`` loop over 50 time steps
(batch 1, input 128, hidden 128), then a Linear read-out of the last state.

Each step is ``h = tanh(x_t @ W_ih^T + b_ih + h @ W_hh^T + b_hh)``: two ``addmm`` of 1 x 128 x
128, an ``add`` and a ``tanh``; 50 steps give about 200 aten ops with a kernel, of a few KB each
(about 350 with the weight transposes and the slices).

What the advisor should find (regime): overhead-bound from end to end. Every kernel is a few
microseconds on a GPU against 10-30 us of host time per op on the shipped H100 profile (the
``nn.Module`` calls included), so the GPU spends most of the run idle and the CPU is faster
eager; CUDA graphs (or ``torch.compile`` with ``mode="reduce-overhead"`` of the unrolled loop)
are the fix and the recommended plan, a larger batch is nearly free (the batch-doubling test,
over ``sweep()``: the advisor's own batch sweep scales the leading dimension, here the 50 steps),
and each step's add + tanh fuses into the epilogue of its ``addmm``.

Tracing: the loop runs ``x.shape[0]`` times, so plain ``torch.fx.symbolic_trace`` cannot follow
it (the length is a Proxy, not an int). Capture must trace by running the code (make_fx /
fake tensors, or dynamo), which unrolls the 50 steps. ``DTYPE`` follows
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
STEPS = 50
BATCH = 1
INPUT_SIZE = 128
HIDDEN = 128
SWEEP_BATCH = (1, 2, 4, 8, 16, 32, 64)


class RNNCell(nn.Module):
    def __init__(self, input_size: int, hidden: int):
        super().__init__()
        self.ih = nn.Linear(input_size, hidden, dtype=DTYPE)
        self.hh = nn.Linear(hidden, hidden, dtype=DTYPE)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.ih(x) + self.hh(h))


class LoopRNN(nn.Module):
    def __init__(self, input_size: int = INPUT_SIZE, hidden: int = HIDDEN):
        super().__init__()
        self.hidden = hidden
        self.cell = RNNCell(input_size, hidden)
        self.out = nn.Linear(hidden, hidden, dtype=DTYPE)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (steps, batch, input_size), time-major."""
        h = x.new_zeros(x.shape[1], self.hidden)
        for t in range(x.shape[0]):  # data-dependent trip count: symbolic tracing fails here
            h = self.cell(x[t], h)
        return self.out(h)


def make_model() -> nn.Module:
    return LoopRNN().eval()


def make_inputs(batch: int = BATCH, steps: int = STEPS) -> tuple:
    return (torch.randn(steps, batch, INPUT_SIZE, dtype=DTYPE),)


def get_model() -> nn.Module:
    return make_model()


def get_example_inputs() -> tuple:
    return make_inputs()


def sweep():
    """Yield ``(label, model, example_inputs)`` over batch at 50 steps (the batch-doubling test)."""
    for batch in SWEEP_BATCH:
        yield f"batch={batch},steps={STEPS}", make_model(), make_inputs(batch, STEPS)
