"""A tiny MLP: 8 x (Linear(128, 128) + ReLU) at batch 1, float32, inference.

Measured on an H100 host (``benchmarks/results/h100_advice.txt``): 216 us eager against 35.5 us
as a CUDA graph. It is the small end of seed 003's Linear + ReLU stack
(``seed003_linear_relu.py`` is the same network with in-place ReLUs and its sweep); here the
ReLU is not in place, so the capture sees ``aten.relu``.

What the advisor should find (regime): overhead-bound. 16 kernels (8 ``addmm`` of 1 x 128 x
128, 8 ``relu``; 24 aten ops with the weight transposes), each a few microseconds, issued by a
host that needs 10-30 us per op with the ``nn.Module`` call, so the GPU idles most of the time.
A CUDA graph collapses the host cost to about 1 us per kernel, several x faster, and is the
recommended plan, copies in and out included; the eight bias + ReLU pairs fuse (matmul
epilogues) but save less than the graph; a larger batch is nearly free; eager, the CPU is faster
than the GPU (0.26 MFLOP in all). ``DTYPE`` follows ``ROOFLINE_EXAMPLE_DTYPE`` (float32 |
bfloat16 | float16), default float32.
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
NUM_LAYERS = 8
HIDDEN = 128
BATCH = 1


def make_model(hidden: int = HIDDEN, num_layers: int = NUM_LAYERS) -> nn.Module:
    layers = []
    for _ in range(num_layers):
        layers += [nn.Linear(hidden, hidden, dtype=DTYPE), nn.ReLU()]
    return nn.Sequential(*layers).eval()


def get_model() -> nn.Module:
    return make_model()


def get_example_inputs() -> tuple:
    return (torch.randn(BATCH, HIDDEN, dtype=DTYPE),)
