"""A GPT-style transformer block: pre-LayerNorm, causal self-attention through
``F.scaled_dot_product_attention``, and a 4x MLP with GELU (tanh approximation, as GPT-2).

Architecture: GPT-2 small's block (d_model 768, 12 heads of 64), without dropout (inference)::

    x = x + proj(sdpa(q, k, v, is_causal=True))   with q, k, v = split(qkv(ln_1(x)))
    x = x + fc_2(gelu(fc_1(ln_2(x))))

Default: batch 8, seq 512 (4096 tokens), ``DTYPE`` bfloat16; ``ROOFLINE_EXAMPLE_DTYPE``
(float32 | bfloat16 | float16) overrides it. The input is the block's hidden states
(batch, seq, d_model).

What the advisor should find (regime), H100-class GPU:

* the four GEMMs (qkv 14.5, proj 4.8, fc_1 19.3, fc_2 19.3 GFLOP; 58 GFLOP in all) are
  compute-bound kernels, tens of microseconds each in bf16;
* attention (about 6.4 GFLOP counted dense, half of it masked out by causality) runs as one
  fused flash kernel: compute-bound;
* the LayerNorms, GELU and residual adds are memory-bound kernels of a few MB each, a few
  microseconds, below one host dispatch. At batch 8 about half of the eager time is host
  overhead (the H100 measured overhead as the dominant regime,
  ``benchmarks/results/h100_accuracy.txt``), so a CUDA graph, or torch.compile with
  ``mode="reduce-overhead"`` (the recommended plan), is worth a large fraction of the block;
* fusion: GELU folds into fc_1's epilogue and each residual add into its projection's, but the
  advisor does not find these groups today (the view after each GEMM stops it;
  ``tests/test_example_findings.py`` marks it). A LayerNorm fuses with nothing by the advisor's
  rule (intermediates no other op reads): the residual stream it reads is read again by the next
  residual add;
* ``sweep()`` over batch shows the block going from overhead-bound (batch 1) to compute-bound
  (batch 64).
"""

import os

import torch
import torch.nn.functional as F
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
D_MODEL = 768
N_HEADS = 12
BATCH = 8
SEQ = 512
SWEEP_BATCH = (1, 2, 4, 8, 16, 32, 64)


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dtype: torch.dtype):
        super().__init__()
        assert d_model % n_heads == 0
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, dtype=dtype)
        self.proj = nn.Linear(d_model, d_model, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        k = k.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        v = v.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)


class MLP(nn.Module):
    def __init__(self, d_model: int, dtype: torch.dtype):
        super().__init__()
        self.fc_1 = nn.Linear(d_model, 4 * d_model, dtype=dtype)
        self.gelu = nn.GELU(approximate="tanh")
        self.fc_2 = nn.Linear(4 * d_model, d_model, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc_2(self.gelu(self.fc_1(x)))


class Block(nn.Module):
    def __init__(self, d_model: int = D_MODEL, n_heads: int = N_HEADS,
                 dtype: torch.dtype | None = None):
        super().__init__()
        dtype = dtype or DTYPE
        self.ln_1 = nn.LayerNorm(d_model, dtype=dtype)
        self.attn = CausalSelfAttention(d_model, n_heads, dtype)
        self.ln_2 = nn.LayerNorm(d_model, dtype=dtype)
        self.mlp = MLP(d_model, dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


def make_model(d_model: int = D_MODEL, n_heads: int = N_HEADS) -> nn.Module:
    return Block(d_model, n_heads).eval()


def make_inputs(batch: int = BATCH, seq: int = SEQ, d_model: int = D_MODEL) -> tuple:
    return (torch.randn(batch, seq, d_model, dtype=DTYPE),)


def get_model() -> nn.Module:
    return make_model()


def get_example_inputs() -> tuple:
    return make_inputs()


def sweep():
    """Yield ``(label, model, example_inputs)`` over batch at seq 512 (built lazily)."""
    for batch in SWEEP_BATCH:
        yield f"batch={batch},seq={SEQ}", make_model(), make_inputs(batch, SEQ)
