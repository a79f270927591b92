"""Seed 003: the dense ``Linear(h, h) + ReLU(inplace=True)`` stack of "GPU Overheads and
Fused Strassen" (8 layers).

The seed builds, for ``num_layers`` in (1, 8)::

    model = []
    for _ in range(num_layers):
        model.append(Linear(hidden_size, hidden_size))
        model.append(ReLU(inplace=True))
    model = Sequential(*model)

and runs GPU inference under ``torch.no_grad()`` (fp32, GTX 1070), 5000 runs, median. Each
layer is a fresh ``Linear`` (distinct weights), as in the seed; the ReLU is in place, so the
capture sees ``aten.relu_``. Default: hidden 128, batch 1, 8 layers.

What the advisor should find (regime):

* hidden < 1024 (and small batch): overhead-bound. Each layer is an ``addmm`` and a ``relu_``
  whose kernels are shorter than one host dispatch plus the ``nn.Module`` call. The seed (a GTX
  1070) found removing the overhead with hand-written PyCUDA worth ~1.8x (1.73x on average below
  hidden 1024) and fusing bias + ReLU a further ~1.22x. On an H100 the host weighs more: a CUDA
  graph is worth several x (hidden 128, batch 1: the H100 measured 5.5x,
  ``benchmarks/results/h100_advice.txt``) and is the recommended plan; every bias + ReLU pair
  fused is worth ~1.2x;
* large hidden and batch: the GEMMs turn compute-bound (from hidden 1024 at batch 64 by the
  advisor, although the H100 measured that point still overhead-bound) and removing the overhead
  stops mattering: ~1.06x at hidden 2048, batch 64, ~1.01x at hidden 4096, batch 512. The seed's
  divide at hidden 1024 lies higher on an H100;
* the batch-doubling test: while overhead-bound, doubling the batch barely changes the time.

``sweep()`` covers hidden in (128, ..., 4096) x batch in (1, 8, 64, 512). ``DTYPE`` follows
``ROOFLINE_EXAMPLE_DTYPE`` (float32 | bfloat16 | float16), default float32 as in the seed.
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
NUM_LAYERS = 8
HIDDEN = 128
BATCH = 1
SWEEP_HIDDEN = (128, 256, 512, 1024, 2048, 4096)
SWEEP_BATCH = (1, 8, 64, 512)


def make_model(hidden: int = HIDDEN, num_layers: int = NUM_LAYERS) -> nn.Module:
    layers = []
    for _ in range(num_layers):
        layers.append(nn.Linear(hidden, hidden, dtype=DTYPE))
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers).eval()


def make_inputs(batch: int = BATCH, hidden: int = HIDDEN) -> tuple:
    return (torch.randn(batch, hidden, dtype=DTYPE),)


def get_model() -> nn.Module:
    return make_model(HIDDEN, NUM_LAYERS)


def get_example_inputs() -> tuple:
    return make_inputs(BATCH, HIDDEN)


def sweep():
    """Yield ``(label, model, example_inputs)`` over hidden x batch, 8 layers (built lazily)."""
    for hidden in SWEEP_HIDDEN:
        for batch in SWEEP_BATCH:
            yield (
                f"hidden={hidden},batch={batch}",
                make_model(hidden, NUM_LAYERS),
                make_inputs(batch, hidden),
            )
