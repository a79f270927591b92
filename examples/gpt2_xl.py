"""A full GPT-2 XL sized decoder (about 1.56 billion parameters), forward over a whole prompt.

Architecture (GPT-2 XL): 48 pre-LN blocks, d_model 1600, 25 heads of 64, MLP 4x with GELU
(tanh), context 1024, vocabulary 50257; token and learned position embeddings, a final
LayerNorm and an LM head **tied** to the token embedding (as in GPT-2: the head reuses
``wte.weight``, so it adds no parameters; 1,557,611,200 in all). No dropout, no KV cache: this
is one prefill pass over ``SEQ`` tokens, batch 1, returning (1, SEQ, vocab) logits.

Build it under ``with torch.device("meta"):`` to analyse it without memory: nothing here
touches parameter data beyond PyTorch's default init (a no-op on meta); in ``DTYPE`` bfloat16
the weights are 3.1 GB. ``ROOFLINE_EXAMPLE_DTYPE`` (float32 | bfloat16 | float16) overrides the
dtype.

What the advisor should find (regime), H100-class GPU: about 3.2 TFLOP of GEMMs (2 x 1.5e9
x 1024 tokens, plus 165 GFLOP for the LM head) against 3.1 GB of weights read once: the GEMMs
are compute-bound kernels and the pass takes milliseconds; LayerNorm, GELU and residual adds
are memory-bound kernels (GELU would fold into its GEMM's epilogue: see ``gpt_block.py``). Host
overhead is not small at batch 1: some 31 aten ops per block (about 1500 in all) take longer to
issue than the kernels run, so about half of the eager time is host overhead and a CUDA graph
would roughly halve it. The LM head is the largest op, and its vocabulary of 50257 is worth
padding to 50304. Placement: the GPU by far if the weights are resident; moving the weights each
call (3.1 GB over ~55 GB/s pinned) would cost more than the forward itself.
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
N_LAYERS = 48
D_MODEL = 1600
N_HEADS = 25
SEQ = 1024  # also the context length (number of learned positions)
VOCAB = 50257
BATCH = 1
TIED_LM_HEAD = True


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dtype: torch.dtype):
        super().__init__()
        assert d_model % n_heads == 0
        self.n_heads = n_heads
        self.c_attn = nn.Linear(d_model, 3 * d_model, dtype=dtype)
        self.c_proj = nn.Linear(d_model, d_model, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        k = k.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        v = v.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, d_model: int, dtype: torch.dtype):
        super().__init__()
        self.c_fc = nn.Linear(d_model, 4 * d_model, dtype=dtype)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * d_model, d_model, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dtype: torch.dtype):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model, dtype=dtype)
        self.attn = CausalSelfAttention(d_model, n_heads, dtype)
        self.ln_2 = nn.LayerNorm(d_model, dtype=dtype)
        self.mlp = MLP(d_model, dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, n_layers: int = N_LAYERS, d_model: int = D_MODEL,
                 n_heads: int = N_HEADS, vocab: int = VOCAB, context: int = SEQ,
                 dtype: torch.dtype | None = None, tied: bool = TIED_LM_HEAD):
        super().__init__()
        dtype = dtype or DTYPE
        self.wte = nn.Embedding(vocab, d_model, dtype=dtype)
        self.wpe = nn.Embedding(context, d_model, dtype=dtype)
        self.h = nn.ModuleList(Block(d_model, n_heads, dtype) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model, dtype=dtype)
        self.lm_head = nn.Linear(d_model, vocab, bias=False, dtype=dtype)
        if tied:
            self.lm_head.weight = self.wte.weight

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def make_model(n_layers: int = N_LAYERS) -> nn.Module:
    return GPT(n_layers=n_layers).eval()


def make_inputs(batch: int = BATCH, seq: int = SEQ) -> tuple:
    return (torch.randint(0, VOCAB, (batch, seq)),)


def get_model() -> nn.Module:
    return make_model()


def get_example_inputs() -> tuple:
    return make_inputs()
