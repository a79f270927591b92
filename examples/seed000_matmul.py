"""Seed 000: one square matmul ``x @ y`` of two ``dim x dim`` float32 matrices.

Stands for the matmul experiment of seed 000 ("GPU Performance: Parallel Processing vs
Overhead", run on an A100): the same ``x @ y`` timed on the CPU, on the GPU with the copies
(``x.cuda(), y.cuda()`` in, ``.cpu()`` out) and on the GPU with inputs already resident, for
``dim = 2**i``. The model is a plain function, not an ``nn.Module``.

What the advisor should find (regime):

* small ``dim`` (up to a few hundred): the GPU kernel is shorter than one host dispatch, so the
  op is overhead-bound and the CPU wins the placement;
* large ``dim`` (the default, 4096: 137 GFLOP, 3 x 64 MiB of operands and result):
  compute-bound on both devices. On the GPU the kernel (about 2.7 ms at fp32 without TF32 on an
  H100; measured 2.75 ms) is far shorter than the copies in and out (201 MB: about 4 ms pinned;
  pageable, about 86 ms on the shipped profile, whose host copies a result back into fresh pages
  at about 1 GB/s), so the copies dominate the GPU alternative (the seed's "the other 50% is the
  IO"), yet the GPU still beats the host CPU, which needs over 100 ms for 137 GFLOP;
* the size where the GPU starts to win once copies are counted lies between the two: ``sweep()``
  puts it at dim 1024, where the H100 measured it too (``benchmarks/results/h100_advice.txt``).

The seed's warm-up and synchronize lessons are about measurement (``--measure``), not about
this file. ``DTYPE`` follows ``ROOFLINE_EXAMPLE_DTYPE`` (float32 | bfloat16 | float16), default
float32 as in the seed. Tensors are created on the ambient device, so the file can be loaded
under ``with torch.device("meta"):``.
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
DIM = 4096
SWEEP_DIMS = tuple(2**i for i in range(15))  # 1 .. 16384 (the seed went on to 2**15)


def matmul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x @ y


def make_inputs(dim: int = DIM, dtype: torch.dtype | None = None) -> tuple:
    dtype = dtype or DTYPE
    return (torch.rand(dim, dim, dtype=dtype), torch.rand(dim, dim, dtype=dtype))


def get_model():
    return matmul


def get_example_inputs() -> tuple:
    return make_inputs(DIM)


def sweep():
    """Yield ``(label, model, example_inputs)`` for dim = 2**0 .. 2**14 (inputs built lazily)."""
    for dim in SWEEP_DIMS:
        yield f"dim={dim}", matmul, make_inputs(dim)
