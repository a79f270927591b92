"""A large ``nn.Embedding`` lookup (vocabulary 100,000 x dim 512, float32: 205 MB of table)
gathered at 8,192 random indices and summed over the lookups (a bag of tokens -> one vector).

Stands for recommendation-model / token-embedding lookups: a gather whose traffic is set by the
rows touched, not by the table.

What the advisor should find (regime): memory-bound, and small. The compulsory traffic of
``aten.embedding`` is the 8,192 indices (64 KiB) plus the gathered rows (8,192 x 2 KiB = 16 MiB)
read and 16 MiB written; the 205 MB table is **not** read in full, so a cost rule that charges
"each input read once" at full size overcounts by ~12x here. The ``sum`` is a memory-bound
reduction of 16 MiB. Both kernels are about ten microseconds on an H100, near the host-overhead
floor: the gather is shorter than its dispatch. Placement: if the table is not resident on the
GPU, copying 205 MB (~4 ms pinned, ~38 ms pageable on the shipped profile) dwarfs everything;
with it resident the GPU wins (as a CUDA graph, the recommended plan). ``DTYPE`` follows
``ROOFLINE_EXAMPLE_DTYPE`` (float32 | bfloat16 | float16), default float32.
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
VOCAB = 100_000
DIM = 512
N_INDICES = 8192
SWEEP_N_INDICES = (64, 512, 8192, 65536, 524288)


class EmbeddingSum(nn.Module):
    def __init__(self, vocab: int = VOCAB, dim: int = DIM):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, dtype=DTYPE)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.emb(idx).sum(dim=0)  # (n_indices, dim) -> (dim,)


def make_model() -> nn.Module:
    return EmbeddingSum().eval()


def make_inputs(n_indices: int = N_INDICES) -> tuple:
    return (torch.randint(0, VOCAB, (n_indices,)),)


def get_model() -> nn.Module:
    return make_model()


def get_example_inputs() -> tuple:
    return make_inputs()


def sweep():
    """Yield ``(label, model, example_inputs)`` over the number of indices (built lazily)."""
    for n in SWEEP_N_INDICES:
        yield f"indices={n}", make_model(), make_inputs(n)
