"""Seed 004: the per-batch work of a copy / compute / copy pipeline, ``A @ A`` on a
1024 x 1024 float32 batch.

Stands for "CPU-GPU Interactions in PyTorch: Program Flow, Memory, and Asynchronicity". The
seed processes many independent batches, each on its own journey::

    for i in range(ITERS):
        with torch.cuda.stream(streams[i]):               # streamed version
            A_gpu = input[i].to("cuda", non_blocking=True)   # H2D copy (pinned host memory)
            C_gpu = torch.matmul(A_gpu, A_gpu)                # kernel
            input[i].copy_(C_gpu, non_blocking=True)          # D2H copy

The model in this file is one batch's kernel, ``matmul(A, A)``; the copies are what the
advisor adds around it (inputs in, output out). One stream runs H2D -> matmul -> D2H strictly
in order; with one stream per batch the H2D copy of batch i+1, the matmul of batch i and the D2H
copy of batch i-1 overlap (copies in opposite directions use separate copy engines; the seed saw
no overlap of two copies in the same direction). The seed measured 292 ms sequential against
122 ms streamed (2.4x), with the copies more than half of the time even pinned; pageable
memory adds a staging copy through a pinned buffer and is slower still.

What the advisor should find (regime): at n = 1024 fp32 the kernel (2.1 GFLOP, 40-60 us at
~52 TFLOP/s fp32 on an H100) is compute-bound but shorter than either 4 MiB copy (about 90 us
each pinned, 450-550 us pageable), so the pipeline is copy-bound: sequential time per batch
~ H2D + kernel + D2H, streamed ~ max of the three, about a 2.5x gain that matches the seed's
2.4x (the H100 measured 2.6x: 4.26 ms against 1.63 ms). Copies grow as n**2 and the kernel as
n**3, so ``sweep()`` crosses over to a compute-bound pipeline near n = 2 x P / W (about 1900 for
fp32: the kernel outlasts each pinned copy from n = 2048). ``BATCHES`` is a
representative loop length (the seed does not print its ``ITERS``). ``DTYPE`` follows
``ROOFLINE_EXAMPLE_DTYPE`` (float32 | bfloat16 | float16), default float32 as in the seed.
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
N = 1024
BATCHES = 64  # independent batches in the loop; the per-batch model is below
PINNED = True  # the seed allocates its host batches with pin_memory=True
SWEEP_N = (256, 512, 1024, 2048, 4096, 8192)


def batch_matmul(a: torch.Tensor) -> torch.Tensor:
    """One batch's kernel: ``torch.matmul(A, A)``."""
    return torch.matmul(a, a)


def make_inputs(n: int = N) -> tuple:
    return (torch.randn(n, n, dtype=DTYPE),)


def get_model():
    return batch_matmul


def get_example_inputs() -> tuple:
    return make_inputs(N)


def sweep():
    """Yield ``(label, model, example_inputs)`` over the batch's side n (built lazily)."""
    for n in SWEEP_N:
        yield f"n={n}", batch_matmul, make_inputs(n)
