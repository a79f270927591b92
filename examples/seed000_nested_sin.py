"""Seed 000: four nested ``torch.sin`` on a 1-D float32 tensor (a plain function model).

Stands for the nested-``sin`` experiment of seed 000 ("GPU Performance: Parallel Processing vs
Overhead", A100): ``x = sin(sin(sin(sin(x))))`` timed on the CPU, on the GPU with the copy in
and out, and on the GPU alone; then with CUDA streams and with the four kernels fused into one
(``torch.jit.script`` in the seed, ``torch.compile`` today).

What the advisor should find (regime):

* every ``sin`` is memory-bound on the GPU: 1 FLOP-ish per element against 8 bytes moved
  (fp32 read + write). At the default 2**24 elements (64 MiB) each kernel moves 128 MiB, about
  45 us at ~3 TB/s, far above one host dispatch;
* fusion: the four kernels become one that reads the input once and writes the output once
  (fusible 4 -> 1), cutting the bytes by 4x and the GPU time by about 3x (the seed saw about 2x:
  100 us -> 50 us);
* placement: with the host-to-device and device-to-host copies counted (2 x 64 MiB, pageable:
  tens of milliseconds), the GPU loses to the CPU, at every size of ``sweep()``: the copies cost
  far more than the kernels save. "The problem is still memory bound so CPU will still be faster";
* at the small end of ``sweep()`` (2**10 elements) every op is overhead-bound.

``DTYPE`` follows ``ROOFLINE_EXAMPLE_DTYPE`` (float32 | bfloat16 | float16), default float32.
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
NUMEL = 2**24
SWEEP_NUMELS = tuple(4**i for i in range(5, 15))  # 2**10, 2**12, ..., 2**28


def nested_sin(x: torch.Tensor) -> torch.Tensor:
    x = torch.sin(x)
    x = torch.sin(x)
    x = torch.sin(x)
    x = torch.sin(x)
    return x


def make_inputs(numel: int = NUMEL, dtype: torch.dtype | None = None) -> tuple:
    return (torch.rand(numel, dtype=dtype or DTYPE),)


def get_model():
    return nested_sin


def get_example_inputs() -> tuple:
    return make_inputs(NUMEL)


def sweep():
    """Yield ``(label, model, example_inputs)`` for 2**10 .. 2**28 elements, powers of 4."""
    for numel in SWEEP_NUMELS:
        yield f"numel=2**{numel.bit_length() - 1}", nested_sin, make_inputs(numel)
