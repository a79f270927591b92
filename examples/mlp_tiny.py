"""A tiny MLP: 8 x (Linear(128, 128) + ReLU) at batch 1, float32, inference.

A reference figure measured on an H100 host: this runs in 202 us eager against 31 us as a CUDA
graph. It is the small end of seed 003's Linear + ReLU stack (``seed003_linear_relu.py``
is the same network with in-place ReLUs and its sweep); here the ReLU is not in place, so the
capture sees ``aten.relu``.

What the advisor should find (regime): overhead-bound. 16 aten ops (8 ``addmm`` of 1 x 128 x
128, 8 ``relu``) whose kernels take 1-3 us each, issued by a host that needs 7-10 us per op plus
the ``nn.Module`` call, so the GPU idles most of the time. CUDA graphs collapse the host cost to
about 1 us per kernel (~6.5x here); bias + ReLU fusion and a larger batch come almost free;
the CPU is competitive or faster (0.26 MFLOP in all). ``DTYPE`` follows
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
