"""A 2-layer ``nn.LSTM`` (input 256, hidden 512) over 100 time steps, batch 32, followed by a
Linear head on the last step's output (10 classes), inference.

Stands for the recurrent networks seed 002 says are often run on the CPU. FLOPs: per step and
layer, the gates are a (32 x (in + 512)) @ ((in + 512) x 2048) GEMM: 2 x 32 x 768 x 2048 =
101 MFLOP for layer 1 and 134 MFLOP for layer 2, so about 23.5 GFLOP over 100 steps.

What the advisor should find (regime): the recurrence is sequential, 200 dependent small GEMMs
(M = 32) that run far below the GPU's peak (under a tenth of the fp32 matmul peak achieved over
the forward), plus the gate nonlinearities. How it appears
depends on the backend the capture dispatches to: on CUDA the whole LSTM is one fused cuDNN call
(``aten._cudnn_rnn``), latency-bound inside its kernel sequence; with CPU (fake) tensors in
torch 2.13 it is one ``aten.mkldnn_rnn_layer`` per layer (oneDNN); where ``aten.lstm`` is
decomposed it shows as per-step ``addmm``/``mm`` + sigmoid/tanh/mul/add ops, whose small
pointwise ops are overhead-bound on a GPU and fusible per step. The cost of these fused RNN
ops must come from their shapes (layers x steps x gate GEMMs), not be left at zero. The input projections of layer 1 could be batched over all 100
steps at once (one large, compute-bound GEMM). ``DTYPE`` follows ``ROOFLINE_EXAMPLE_DTYPE``
(float32 | bfloat16 | float16), default float32.
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
INPUT_SIZE = 256
HIDDEN = 512
NUM_LAYERS = 2
BATCH = 32
SEQ = 100
NUM_CLASSES = 10
SWEEP_BATCH = (1, 8, 32, 128)


class LSTMClassifier(nn.Module):
    def __init__(self, input_size: int = INPUT_SIZE, hidden: int = HIDDEN,
                 num_layers: int = NUM_LAYERS, num_classes: int = NUM_CLASSES):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden, num_layers=num_layers, batch_first=True,
                            dtype=DTYPE)
        self.head = nn.Linear(hidden, num_classes, dtype=DTYPE)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)  # (batch, seq, hidden); zero initial state
        return self.head(out[:, -1])


def make_model() -> nn.Module:
    return LSTMClassifier().eval()


def make_inputs(batch: int = BATCH, seq: int = SEQ) -> tuple:
    return (torch.randn(batch, seq, INPUT_SIZE, dtype=DTYPE),)


def get_model() -> nn.Module:
    return make_model()


def get_example_inputs() -> tuple:
    return make_inputs()


def sweep():
    """Yield ``(label, model, example_inputs)`` over batch at seq 100 (built lazily)."""
    for batch in SWEEP_BATCH:
        yield f"batch={batch},seq={SEQ}", make_model(), make_inputs(batch, SEQ)
