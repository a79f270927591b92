"""RNN family: fused recurrent ops priced as projections + gate arithmetic."""

import pytest
import torch
import torch.nn as nn

from roofline.costs import cost_of
from tests.opcapture import capture_ops, meta, op_of

aten = torch.ops.aten


def _lstm_layer_flops(rows, i, h, biases=True):
    # 2*R*4H*I + 2*R*4H*H + R*H*(19 + 8 bias)
    return 2 * rows * 4 * h * i + 2 * rows * 4 * h * h + rows * h * (19 + (8 if biases else 0))


def test_cpu_lstm_is_mkldnn_rnn_layer_per_layer_and_direction():
    # LSTM(8, 16, 2 layers, bidirectional), T=5, B=3: 4 mkldnn_rnn_layer ops
    # layer 0: I = 8; layer 1: I = 2*16 = 32 (concatenated directions)
    ops = capture_ops(nn.LSTM(8, 16, num_layers=2, bidirectional=True), torch.randn(5, 3, 8))
    layers = [cost_of(o) for o in ops if o.packet == "aten.mkldnn_rnn_layer"]
    assert len(layers) == 4 and all(ok for _, ok in layers)
    total = sum(c.flops for c, _ in layers)
    assert total == 2 * _lstm_layer_flops(15, 8, 16) + 2 * _lstm_layer_flops(15, 32, 16)
    c = layers[0][0]
    # the recurrence: one (layer, direction), T steps of a B-row GEMM, N = 4H, K = I + H; kernels 1 + 2T = 11
    assert c.recurrence == ("lstm", 1, 5, 3, 64, 24) and c.gemm is None and c.kernels == 11 and c.category == "matmul"


@pytest.mark.filterwarnings("ignore:LSTM with projections")
def test_every_op_of_gru_and_rnn_is_priced():
    # GRU / RNN decompose on CPU into addmm, sigmoid_, tanh_, mul_, add_, unsafe_split, stack ...
    for m in (nn.GRU(8, 16), nn.RNN(8, 16), nn.LSTMCell(8, 16), nn.GRUCell(8, 16), nn.LSTM(8, 16, proj_size=4)):
        ops = capture_ops(m, torch.randn(5, 3, 8) if not isinstance(m, nn.RNNCellBase) else torch.randn(3, 8))
        missing = [o.name for o in ops if not cost_of(o)[1]]
        assert missing == [], (type(m).__name__, missing)


def test_whole_lstm_op_by_hand():
    # aten.lstm.input, 1 layer, unidirectional, T=5, B=3, I=8, H=16, with biases
    x = meta(5, 3, 8)
    params = [meta(64, 8), meta(64, 16), meta(64), meta(64)]
    op = op_of(aten.lstm.input, x, [meta(1, 3, 16), meta(1, 3, 16)], params, True, 1, 0.0, False, False, False,
               outputs=[meta(5, 3, 16), meta(1, 3, 16), meta(1, 3, 16)])
    c, ok = cost_of(op)
    assert ok and c.flops == _lstm_layer_flops(15, 8, 16) and c.kernels == 11


def test_cudnn_rnn_gru_by_hand():
    # _cudnn_rnn mode 3 (GRU), 1 layer, weight_stride0 4: 2*R*3H*I + 2*R*3H*H + R*H*(14 + 6)
    x = meta(5, 3, 8)
    w = [meta(48, 8), meta(48, 16), meta(48), meta(48)]
    op = op_of(aten._cudnn_rnn.default, x, w, 4, None, meta(1, 3, 16), None, 3, 16, 0, 1, False, 0.0,
               False, False, [], None, outputs=[meta(5, 3, 16), meta(1, 3, 16)])
    rows = 15
    assert cost_of(op)[0].flops == 2 * rows * 48 * 8 + 2 * rows * 48 * 16 + rows * 16 * 20


def test_cells_by_hand():
    # lstm_cell B=3, I=8, H=16 with biases: 2*3*64*8 + 2*3*64*16 + 3*16*27 = 3072 + 6144 + 1296
    op = op_of(aten.lstm_cell.default, meta(3, 8), [meta(3, 16), meta(3, 16)], meta(64, 8), meta(64, 16),
               meta(64), meta(64), outputs=[meta(3, 16), meta(3, 16)])
    assert cost_of(op)[0].flops == 3072 + 6144 + 1296
    # _thnn_fused_lstm_cell: gates (3, 64) -> 3*16 units * (19 + 8)
    op = op_of(aten._thnn_fused_lstm_cell.default, meta(3, 64), meta(3, 64), meta(3, 16), meta(64), meta(64),
               outputs=[meta(3, 16), meta(3, 16), meta(3, 64)])
    c, _ = cost_of(op)
    assert c.flops == 48 * 27 and c.kernels == 1 and c.category == "transcendental"


@pytest.mark.parametrize("cls, name", [(torch.nn.GRU, "aten.gru.input"), (torch.nn.RNN, "aten.rnn_tanh.input")])
def test_a_recurrent_stack_is_captured_as_the_one_op_the_model_called(cls, name):
    # CPU ATen decomposes a GRU into a gru_cell per step below Python; the capture records the
    # stack the model called, which a GPU runs as one cuDNN call and the registry prices whole
    from roofline.costs import cost_of
    from roofline.graph.capture import capture

    rnn = cls(8, 16, 2, batch_first=True, bidirectional=True)
    for real in (True, False):
        graph = capture(rnn, (torch.randn(3, 50, 8),), real=real)
        stacks = [op for op in graph.ops if op.name == name]
        assert len(stacks) == 1 and len(graph.ops) <= 3, [op.name for op in graph.ops]
        cost, ok = cost_of(stacks[0])
        assert ok and cost.recurrence.layers == 4 and cost.recurrence.steps == 50


def test_lstm_with_projection_two_layers():
    # aten.lstm, LSTM(4, 5, num_layers=2, proj_size=3), T=3, B=2 (R = 6 rows), biases: per layer w_ih, w_hh,
    # b_ih, b_hh, w_hr (3, 5); the recurrent input (and layer 1's input) is the projection, 3 wide
    #   layer 0: 2*6*20*4 + 2*6*20*3 + 6*5*(19 + 8) + the projection 2*6*5*3 = 960 + 720 + 810 + 180 = 2670
    #   layer 1: 2*6*20*3 + 2*6*20*3 + 810 + 180 = 720 + 720 + 810 + 180 = 2430
    # kernels 2 groups x (1 + 2*3 steps) = 14; recurrence (lstm, 2 groups, 3 steps, B=2, 4H=20, I+P=4+3=7)
    layer0 = [meta(20, 4), meta(20, 3), meta(20), meta(20), meta(3, 5)]
    layer1 = [meta(20, 3), meta(20, 3), meta(20), meta(20), meta(3, 5)]
    op = op_of(aten.lstm.input, meta(3, 2, 4), [meta(2, 2, 3), meta(2, 2, 5)], layer0 + layer1, True, 2, 0.0, False, False, False,
               outputs=[meta(3, 2, 3), meta(2, 2, 3), meta(2, 2, 5)])
    c, ok = cost_of(op)
    assert ok and (c.flops, c.kernels) == (2670 + 2430, 14)
    assert c.recurrence == ("lstm", 2, 3, 2, 20, 7)


def test_lstm_packed_and_unbatched_inputs():
    # packed: data (5, 4) with batch_sizes [2, 2, 1] (3 steps): R = 5 rows, B = ceil(5 / 3) = 2
    #   LSTM(4, 5) one layer with biases: 2*5*20*4 + 2*5*20*5 + 5*5*27 = 800 + 1000 + 675 = 2475
    params = [meta(20, 4), meta(20, 5), meta(20), meta(20)]
    op = op_of(aten.lstm.data, meta(5, 4), meta(3, dtype=torch.int64), [meta(1, 2, 5), meta(1, 2, 5)], params, True, 1, 0.0,
               False, False, outputs=[meta(5, 5), meta(1, 2, 5), meta(1, 2, 5)])
    c, ok = cost_of(op)
    assert ok and c.flops == 2475 and c.recurrence == ("lstm", 1, 3, 2, 20, 9) and c.kernels == 1 + 2 * 3
    # unbatched (T=3, I=4): R = 3 rows, 3 steps of one row: 2*3*20*4 + 2*3*20*5 + 3*5*27 = 480 + 600 + 405 = 1485
    op = op_of(aten.lstm.input, meta(3, 4), [meta(1, 5), meta(1, 5)], params, True, 1, 0.0, False, False, False,
               outputs=[meta(3, 5), meta(1, 5), meta(1, 5)])
    c, ok = cost_of(op)
    assert ok and c.flops == 1485 and c.recurrence == ("lstm", 1, 3, 1, 20, 9)


def test_cell_gemm_shape():
    # gru_cell, input (2, 4), hidden 5: one step's GEMM (1, B=2, 3H=15, I+H=9)
    #   2*2*15*4 + 2*2*15*5 + 2*5*(14 + 6) = 240 + 300 + 200 = 740
    op = op_of(aten.gru_cell.default, meta(2, 4), meta(2, 5), meta(15, 4), meta(15, 5), meta(15), meta(15), outputs=[meta(2, 5)])
    c, ok = cost_of(op)
    assert ok and (c.flops, c.gemm) == (740, (1, 2, 15, 9))
