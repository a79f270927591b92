"""Recurrent layers: the fused ops an nn.LSTM / nn.GRU / nn.RNN forward can leave in a capture.

What appears depends on the backend. On CPU with float32, nn.LSTM runs one ``mkldnn_rnn_layer``
per (layer, direction); nn.GRU / nn.RNN (and LSTM in float64 or with projections) decompose into
addmm, sigmoid_, tanh_, mul, add_, unsafe_split, stack... which other families already price. On
CUDA, cuDNN runs one ``_cudnn_rnn`` for the whole stack. ``lstm``/``gru``/``rnn_*`` whole ops and the
``*_cell`` ops appear when a capture stops above the backend choice; ``_thnn_fused_*_cell`` are the
CUDA pointwise kernels of a cell.

FLOPs, per (layer, direction), for R = T*B rows (the total of batch_sizes for packed input), G
gates (LSTM 4, GRU 3, RNN 1), hidden H, input I, recurrent input Hr (= H, or proj_size P):
    input projection      2 * R * G*H * I
    recurrent projection  2 * R * G*H * Hr
    projection (LSTM P)   2 * R * H * P
    gate arithmetic       R * H * per-unit FLOPs, by the pointwise rules (sigmoid 3, tanh 1):
        LSTM 19 (4 gate sums, 3 sigmoids, 1 tanh, c' = f*c + i*g: 3, h' = o*tanh(c'): 2)
        GRU  14 (2 sums + 2 sigmoids, n = tanh(x_n + r*h_n): 3, h' = n + z*(h - n): 3)
        RNN   2 (sum, tanh or relu)
        + 2 per gate when biases are present (b_ih and b_hh)
Biases are counted here (unlike addmm) because these ops are not counted by flop_counter and there
is no decomposition to stay consistent with.

Recurrence (``OpCost.recurrence``): per (layer, direction) T sequential steps of a B-row GEMM
(B, G*H, I + Hr), the honest picture of why small-batch RNNs run far below matmul peak. Category
"matmul".

Bytes: input, weights, biases and initial states read once; outputs (sequence, final states,
workspace) written once.

Kernels (CUDA eager, cuDNN without persistent kernels): per (layer, direction) 1 input GEMM +
T x (recurrent GEMM + fused gate kernel) = 1 + 2T. Cells: lstm_cell/gru_cell 3 (two GEMMs, one
fused gate kernel), rnn_*_cell 4 (two addmm, add, activation); _thnn_fused_*_cell 1.
"""

from __future__ import annotations

import math

import torch

from roofline.costs.registry import OpCost, Recurrence, arguments, register, rw_bytes
from roofline.graph.ops import CapturedOp, TensorMeta

aten = torch.ops.aten

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
UNIT_FLOPS = {"lstm": 19, "gru": 14, "rnn_tanh": 2, "rnn_relu": 2}
_CUDNN_MODES = {0: "rnn_relu", 1: "rnn_tanh", 2: "lstm", 3: "gru"}


def cell_flops(kind: str, rows: int, input_size: int, hidden: int, rec_input: int,
               has_biases: bool, proj: int = 0) -> int:
    """FLOPs of one (layer, direction) over ``rows`` = T*B rows; see the module docstring."""
    g = GATES[kind]
    flops = 2 * rows * g * hidden * input_size + 2 * rows * g * hidden * rec_input
    flops += rows * hidden * (UNIT_FLOPS[kind] + (2 * g if has_biases else 0))
    if proj:
        flops += 2 * rows * hidden * proj
    return flops


def _stack_cost(op: CapturedOp, kind: str, weights: list[TensorMeta], n_groups: int,
                has_biases: bool, rows_steps_batch: tuple[int, int, int], x: TensorMeta) -> OpCost:
    """Sum ``cell_flops`` over the (layer, direction) groups of a flat weight list."""
    per_group = len(weights) // max(1, n_groups)
    g = GATES[kind]
    flops, recurrence = 0, None
    rows, steps, batch = rows_steps_batch
    for i in range(n_groups):
        group = weights[i * per_group:(i + 1) * per_group]
        w_ih, w_hh = group[0], group[1]
        hidden = w_ih.shape[0] // g
        proj_w = group[-1] if per_group in (3, 5) else None  # w_hr: (P, H)
        proj = proj_w.shape[0] if proj_w is not None else 0
        flops += cell_flops(kind, rows, w_ih.shape[1], hidden, w_hh.shape[1], has_biases, proj)
        if recurrence is None:
            recurrence = Recurrence(kind, n_groups, steps, batch, g * hidden, w_ih.shape[1] + w_hh.shape[1])
    read, written = rw_bytes(op)
    return OpCost(flops=flops, bytes_read=read, bytes_written=written,
                  kernels=n_groups * (1 + 2 * steps), category="matmul", recurrence=recurrence,
                  compute_dtype=x.dtype)


def _rows_steps_batch(x: TensorMeta, batch_first: bool, batch_sizes) -> tuple[int, int, int]:
    """(R, T, B) of an RNN input: (T, B, I), (B, T, I), unbatched (T, I), or packed (R, I) whose
    rows are the sum of ``batch_sizes`` (B is then the mean batch, rounded up)."""
    if isinstance(batch_sizes, TensorMeta) or (isinstance(batch_sizes, (list, tuple)) and batch_sizes):
        steps = batch_sizes.shape[0] if isinstance(batch_sizes, TensorMeta) else len(batch_sizes)
        return x.shape[0], steps, math.ceil(x.shape[0] / max(1, steps))
    if x.ndim == 2:
        return x.shape[0], x.shape[0], 1
    steps, batch = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
    return steps * batch, steps, batch


def rnn_kind(op: CapturedOp) -> str | None:
    """The cell type ("lstm", "gru", "rnn_tanh", "rnn_relu") of a fused RNN op, else None."""
    base = op.packet.split(".", 1)[1] if "." in op.packet else op.packet
    if base in GATES:
        return base
    if base in ("_cudnn_rnn", "miopen_rnn", "mkldnn_rnn_layer"):
        try:
            return _CUDNN_MODES.get(int(arguments(op)["mode"]))
        except (KeyError, TypeError, ValueError):
            return None
    return None


@register(aten.lstm, aten.gru, aten.rnn_tanh, aten.rnn_relu, category="matmul")
def rnn_stack_cost(op: CapturedOp) -> OpCost:
    """A whole multi-layer (bi)directional RNN: sum over layers and directions."""
    a = arguments(op)
    kind = op.packet.split(".", 1)[1]
    x = a.get("input", a.get("data"))
    layers, dirs = int(a["num_layers"]), 2 if a["bidirectional"] else 1
    rsb = _rows_steps_batch(x, bool(a.get("batch_first")), a.get("batch_sizes"))
    return _stack_cost(op, kind, list(a["params"]), layers * dirs, bool(a["has_biases"]), rsb, x)


@register(aten._cudnn_rnn, aten.miopen_rnn, category="matmul")
def cudnn_rnn_cost(op: CapturedOp) -> OpCost:
    """cuDNN / MIOpen RNN over the whole stack; ``mode`` picks the cell."""
    a = arguments(op)
    kind = _CUDNN_MODES[int(a["mode"])]
    x = a["input"]
    layers, dirs = int(a["num_layers"]), 2 if a["bidirectional"] else 1
    weights = list(a["weight"])
    per_group = int(a["weight_stride0"])
    has_biases = per_group in (4, 5)
    rsb = _rows_steps_batch(x, bool(a["batch_first"]), a.get("batch_sizes"))
    return _stack_cost(op, kind, weights[: per_group * layers * dirs], layers * dirs, has_biases,
                       rsb, x)


@register(aten.mkldnn_rnn_layer, category="matmul")
def mkldnn_rnn_layer_cost(op: CapturedOp) -> OpCost:
    """One (layer, direction) of the oneDNN CPU RNN; the input arrives time-major (T, B, I)."""
    a = arguments(op)
    kind = _CUDNN_MODES[int(a["mode"])]
    x = a["input"]
    rsb = _rows_steps_batch(x, False, a.get("batch_sizes"))
    weights = [a["weight0"], a["weight1"]]
    return _stack_cost(op, kind, weights, 1, bool(a["has_biases"]), rsb, x)


@register(aten.lstm_cell, aten.gru_cell, aten.rnn_tanh_cell, aten.rnn_relu_cell,
          category="matmul")
def rnn_cell_cost(op: CapturedOp) -> OpCost:
    """One step of one cell for a (B, I) or unbatched (I,) input."""
    a = arguments(op)
    kind = op.packet.split(".", 1)[1].removesuffix("_cell")
    x, w_ih, w_hh = a["input"], a["w_ih"], a["w_hh"]
    rows = x.shape[0] if x.ndim == 2 else 1
    g = GATES[kind]
    hidden = w_ih.shape[0] // g
    has_biases = a.get("b_ih") is not None
    read, written = rw_bytes(op)
    return OpCost(
        flops=cell_flops(kind, rows, w_ih.shape[1], hidden, w_hh.shape[1], has_biases),
        bytes_read=read, bytes_written=written, kernels=3 if kind in ("lstm", "gru") else 4,
        category="matmul", gemm=(1, rows, g * hidden, w_ih.shape[1] + w_hh.shape[1]),
        compute_dtype=x.dtype,
    )


@register(aten._thnn_fused_lstm_cell, aten._thnn_fused_gru_cell, category="transcendental")
def fused_cell_pointwise_cost(op: CapturedOp) -> OpCost:
    """The gate arithmetic of one cell step given precomputed gate GEMMs (B, G*H) (CUDA)."""
    a = arguments(op)
    kind = "lstm" if "lstm" in op.packet else "gru"
    gates = a["input_gates"]
    rows_x_hidden = gates.numel // GATES[kind]
    has_biases = a.get("input_bias") is not None
    per_unit = UNIT_FLOPS[kind] + (2 * GATES[kind] if has_biases else 0)
    read, written = rw_bytes(op)
    return OpCost(flops=rows_x_hidden * per_unit, bytes_read=read, bytes_written=written,
                  kernels=1, category="transcendental", compute_dtype=gates.dtype)
