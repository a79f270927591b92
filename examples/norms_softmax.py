"""Normalisation and softmax on a (batch 32, seq 512, 1024) float32 activation (64 MiB):
LayerNorm, then softmax over the last dimension, then an RMSNorm written out by hand
(``x * rsqrt(mean(x**2) + eps) * weight``, as in LLaMA-style models).

Stands for the memory-bound non-GEMM work of a transformer (seed 001's bandwidth regime, with
reductions): a few FLOPs per element against every byte read and written.

What the advisor should find (regime): memory-bound throughout. ``aten.native_layer_norm`` and
``aten._softmax`` are one kernel each that read 64 MiB and write 64 MiB (45-60 us each on an
H100); the hand-written RMSNorm is six kernels (pow, mean, add, rsqrt, mul, mul) with 64 MiB
intermediates (the add and rsqrt act on the per-row statistics). The advisor fuses them into two
groups, pow + mean and add + rsqrt + mul + mul (its groups end at a reduction; a compiler such as
Inductor makes one kernel of all six): six kernels become two, and that part moves about 2.3x
fewer bytes (one kernel would be about 3.7x). Reductions (mean, the softmax and LayerNorm
statistics) must be costed, not silently zero. Per call with the copies in and out (pageable) the
CPU is the better place. ``DTYPE`` follows ``ROOFLINE_EXAMPLE_DTYPE`` (float32 |
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
BATCH = 32
SEQ = 512
HIDDEN = 1024
SWEEP_BATCH = (1, 4, 32, 128)


class HandRMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim, dtype=DTYPE))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * rms * self.weight


class NormsSoftmax(nn.Module):
    def __init__(self, hidden: int = HIDDEN):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, dtype=DTYPE)
        self.rms = HandRMSNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.ln(x)
        y = torch.softmax(y, dim=-1)
        return self.rms(y)


def make_model() -> nn.Module:
    return NormsSoftmax().eval()


def make_inputs(batch: int = BATCH, seq: int = SEQ, hidden: int = HIDDEN) -> tuple:
    return (torch.randn(batch, seq, hidden, dtype=DTYPE),)


def get_model() -> nn.Module:
    return make_model()


def get_example_inputs() -> tuple:
    return make_inputs()


def sweep():
    """Yield ``(label, model, example_inputs)`` over batch at seq 512, hidden 1024 (lazily)."""
    for batch in SWEEP_BATCH:
        yield f"batch={batch}", make_model(), make_inputs(batch)
