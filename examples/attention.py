"""Scaled-dot-product attention alone: ``F.scaled_dot_product_attention(q, k, v,
is_causal=True)`` with q, k, v of shape (batch 8, heads 16, seq 2048, head_dim 64), bfloat16.

Stands for the attention core of a transformer at long context (a plain function model).
FLOPs: QK^T and PV are 2 x 2 x 8 x 16 x 2048**2 x 64 = 137 GFLOP counted dense (what
``torch.utils.flop_counter`` reports); a causal flash kernel skips the masked half, about
69 GFLOP of work. Bytes: q, k, v and the output, 4 x 32 MiB; the 2048 x 2048 score matrix is
never written by a fused kernel (8 x 16 x 2048**2 x 2 B = 1 GiB if it were).

What the advisor should find (regime): compute-bound when run as one fused (flash / cuDNN)
kernel on an H100, roughly 0.2-0.4 ms; the unfused math path (matmul, softmax, matmul) would be
memory-bound on the 1 GiB score matrix and several times slower. ``sweep()`` over seq goes from
overhead/memory-bound (seq 128) to compute-bound. ``DTYPE`` follows ``ROOFLINE_EXAMPLE_DTYPE``
(float32 | bfloat16 | float16), default bfloat16.
"""

import os

import torch
import torch.nn.functional as F

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
BATCH = 8
HEADS = 16
SEQ = 2048
HEAD_DIM = 64
SWEEP_SEQ = (128, 256, 512, 1024, 2048, 4096, 8192)


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def make_inputs(batch: int = BATCH, heads: int = HEADS, seq: int = SEQ,
                head_dim: int = HEAD_DIM) -> tuple:
    shape = (batch, heads, seq, head_dim)
    return tuple(torch.randn(shape, dtype=DTYPE) for _ in range(3))


def get_model():
    return causal_attention


def get_example_inputs() -> tuple:
    return make_inputs()


def sweep():
    """Yield ``(label, model, example_inputs)`` over seq at batch 8, 16 heads (built lazily)."""
    for seq in SWEEP_SEQ:
        yield f"seq={seq}", causal_attention, make_inputs(seq=seq)
