"""A chain of 16 pointwise ops on one 2**22-element float32 tensor (16 MiB).

Stands for seed 001's "bandwidth" regime and its unary-op fusion (and seed 000's nested ``sin``,
longer): every op reads its input and writes its output, one element at a time, with a few FLOPs
per element and no intermediate used twice (except the input ``x``, read again at the end).

What the advisor should find (regime): memory-bound. Each op moves 32 MiB (read + write), about
10 us at ~3 TB/s on an H100, a little under one host dispatch, so the device barely waits; the
whole chain is one fusion group that reads 16 MiB once and writes 16 MiB once, about 16x fewer
bytes and 15 fewer launches. ``sweep()`` goes from 2**14 elements (every op overhead-bound) to
2**26 (clearly memory-bound). On the CPU the chain is memory-bound too, and placement depends on
whether the copies in and out are counted: with pageable copies per call the GPU wins from about
2**22 elements. ``DTYPE`` follows ``ROOFLINE_EXAMPLE_DTYPE`` (float32 | bfloat16
| float16), default float32.
"""

import os

import torch

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
NUMEL = 2**22
SWEEP_NUMELS = tuple(2**i for i in range(14, 27, 2))  # 2**14 .. 2**26
N_OPS = 16


def pointwise_chain(x: torch.Tensor) -> torch.Tensor:
    y = x * 0.5                 # 1  mul
    y = y + 1.0                 # 2  add
    y = torch.sin(y)            # 3  sin
    y = torch.cos(y)            # 4  cos
    y = torch.exp(y)            # 5  exp
    y = torch.log1p(y)          # 6  log1p
    y = torch.tanh(y)           # 7  tanh
    y = torch.sigmoid(y)        # 8  sigmoid
    y = torch.neg(y)            # 9  neg
    y = torch.abs(y)            # 10 abs
    y = torch.sqrt(y)           # 11 sqrt
    y = y * y                   # 12 mul (square)
    y = torch.relu(y - 0.25)    # 13 sub, 14 relu
    y = torch.clamp(y, max=1.0)  # 15 clamp
    return y + x                # 16 add (second use of x)


def make_inputs(numel: int = NUMEL) -> tuple:
    return (torch.randn(numel, dtype=DTYPE),)


def get_model():
    return pointwise_chain


def get_example_inputs() -> tuple:
    return make_inputs()


def sweep():
    """Yield ``(label, model, example_inputs)`` over 2**14 .. 2**26 elements (built lazily)."""
    for numel in SWEEP_NUMELS:
        yield f"numel=2**{numel.bit_length() - 1}", pointwise_chain, make_inputs(numel)
