"""A Llama-style decoder written out by hand: RMSNorm, rotary position embeddings, grouped-query
attention (fewer key/value heads than query heads) through SDPA, and a SwiGLU MLP.

``ROOFLINE_LLAMA_SIZE`` picks the shape: ``1b`` (default; 16 layers, d 2048, 32 query / 8 key-value
heads, MLP 8192, vocabulary 128256), ``8b`` (32 layers, d 4096, 32 / 8 heads, MLP 14336) or ``70b``
(80 layers, d 8192, 64 / 8 heads, MLP 28672). bf16, batch 1, a 512-token prompt. Built on the meta
device, even the 70B shape (about 141 GB of bf16 weights) is analyzed in a few hundred MB.

What the advisor should find: a prefill's GEMMs are compute-bound kernels, and the vocabulary head
is the largest single op. At 1B and 512 tokens the ~1160 eager ops take longer to issue than the
kernels run: most of the time is host overhead, and a CUDA graph would be about 3x faster; at 70B
the prefill is compute-bound. Grouped-query attention reads K and V once per key/value head. The
weights must be resident; at 70B they do not fit one 80 GB GPU, so no GPU plan applies (nor does
the CPU with the shipped profile's 135 GB host). ``sweep()`` runs a 2-layer model of the same
design over prompt length.
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F
from torch import nn

SIZES = {
    "1b": dict(layers=16, d=2048, heads=32, kv_heads=8, ffn=8192),
    "8b": dict(layers=32, d=4096, heads=32, kv_heads=8, ffn=14336),
    "70b": dict(layers=80, d=8192, heads=64, kv_heads=8, ffn=28672),
}
VOCAB, SEQ, DTYPE = 128256, 512, torch.bfloat16


def size() -> dict:
    name = os.environ.get("ROOFLINE_LLAMA_SIZE", "1b").strip().lower()
    if name not in SIZES:
        raise ValueError(f"ROOFLINE_LLAMA_SIZE={name!r}: expected one of {', '.join(SIZES)}")
    return SIZES[name]


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d, dtype=DTYPE))
        self.eps = eps

    def forward(self, x):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(variance + self.eps)).to(x.dtype) * self.weight


def rotate(x, cos, sin):
    """Rotary position embedding on the last dimension (its two halves rotated)."""
    a, b = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-b, a], dim=-1) * sin


class Attention(nn.Module):
    def __init__(self, d: int, heads: int, kv_heads: int):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, d // heads
        self.q = nn.Linear(d, d, bias=False, dtype=DTYPE)
        self.k = nn.Linear(d, kv_heads * self.head_dim, bias=False, dtype=DTYPE)
        self.v = nn.Linear(d, kv_heads * self.head_dim, bias=False, dtype=DTYPE)
        self.o = nn.Linear(d, d, bias=False, dtype=DTYPE)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.o(y.transpose(1, 2).reshape(b, t, -1))


class Block(nn.Module):
    def __init__(self, d: int, heads: int, kv_heads: int, ffn: int):
        super().__init__()
        self.attn_norm, self.attn = RMSNorm(d), Attention(d, heads, kv_heads)
        self.mlp_norm = RMSNorm(d)
        self.gate = nn.Linear(d, ffn, bias=False, dtype=DTYPE)
        self.up = nn.Linear(d, ffn, bias=False, dtype=DTYPE)
        self.down = nn.Linear(ffn, d, bias=False, dtype=DTYPE)

    def forward(self, x, cos, sin):
        x = x + self.attn(self.attn_norm(x), cos, sin)
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Llama(nn.Module):
    def __init__(self, layers: int, d: int, heads: int, kv_heads: int, ffn: int):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d, dtype=DTYPE)
        self.blocks = nn.ModuleList(Block(d, heads, kv_heads, ffn) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, VOCAB, bias=False, dtype=DTYPE)
        half = d // heads // 2
        self.register_buffer("inv_freq", 1.0 / (500000.0 ** (torch.arange(half, dtype=torch.float32) / half)), persistent=False)

    def forward(self, ids):
        t = ids.shape[1]
        freqs = torch.outer(torch.arange(t, device=ids.device, dtype=torch.float32), self.inv_freq)
        angles = torch.cat([freqs, freqs], dim=-1)
        cos, sin = angles.cos().to(DTYPE), angles.sin().to(DTYPE)
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x, cos, sin)
        return self.head(self.norm(x))


def get_model():
    return Llama(**size())


def get_example_inputs():
    return (torch.randint(0, VOCAB, (1, SEQ)),)


TINY = dict(layers=2, d=256, heads=4, kv_heads=2, ffn=512)


def sweep():
    """A 2-layer model of the same design over prompt length: CPU against GPU as the prompt grows."""
    for t in (16, 128, 512, 2048):
        yield f"seq={t}", Llama(**TINY), (torch.randint(0, VOCAB, (1, t)),)
