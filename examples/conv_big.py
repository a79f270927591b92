"""A compute-bound stack of four 3x3 convolutions (256 -> 256 channels, stride 1, padding 1)
with ReLU, on a (batch 64, 256, 56, 56) activation, inference.

Stands for the wide early-middle stages of a large CNN at training-size batches: each conv is
2 x 64 x 56 x 56 x 256 x 256 x 9 = 237 GFLOP (947 GFLOP for the stack) against about 100 MB of
activations in and out (bfloat16), an arithmetic intensity in the thousands of FLOP per byte.

What the advisor should find (regime): compute-bound convolutions (roughly half a millisecond
each in bf16 on an H100 at cuDNN's achievable rate, below the matmul peak); the ReLUs are
memory-bound and fusible into the conv epilogue; host overhead is negligible. The GPU computes
the stack two orders of magnitude faster than the host CPU; per call with the input and output
copied (pageable, 103 MB each way) the copies take longer than the convolutions and the margin
drops to about 2x. ``DTYPE`` is bfloat16 (tensor cores); set
``ROOFLINE_EXAMPLE_DTYPE=float32`` to see fp32, for which PyTorch lets cuDNN use TF32 by default
(``torch.backends.cudnn.allow_tf32`` is True, unlike matmul's), so "fp32" convs run at TF32
rates. Too big to run on a CPU in a test: build and trace it under ``torch.device("meta")``.
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


DTYPE = _dtype_from_env(torch.bfloat16)
BATCH = 64
CHANNELS = 256
SIZE = 56
N_CONVS = 4
SWEEP_BATCH = (1, 8, 64)


def make_model(channels: int = CHANNELS, n_convs: int = N_CONVS) -> nn.Module:
    layers = []
    for _ in range(n_convs):
        layers += [nn.Conv2d(channels, channels, 3, padding=1, dtype=DTYPE), nn.ReLU(inplace=True)]
    return nn.Sequential(*layers).eval()


def make_inputs(batch: int = BATCH, channels: int = CHANNELS, size: int = SIZE) -> tuple:
    return (torch.randn(batch, channels, size, size, dtype=DTYPE),)


def get_model() -> nn.Module:
    return make_model()


def get_example_inputs() -> tuple:
    return make_inputs()


def sweep():
    """Yield ``(label, model, example_inputs)`` over batch (built lazily)."""
    for batch in SWEEP_BATCH:
        yield f"batch={batch}", make_model(), make_inputs(batch)
