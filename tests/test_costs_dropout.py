"""Dropout family: what each emitted form costs; eval nn.Dropout emits nothing."""

import torch
import torch.nn as nn

from roofline.costs import cost_of
from tests.opcapture import capture_ops, meta, op_of

aten = torch.ops.aten


def test_eval_dropout_emits_nothing():
    assert capture_ops(nn.Dropout(0.1).eval(), torch.randn(4, 8)) == []


def test_train_dropout_decomposition_is_priced():
    # on CPU: empty_like (free), bernoulli_ (write 128), div_ (32 FLOPs), mul (32 FLOPs)
    ops = capture_ops(nn.Dropout(0.5), torch.randn(4, 8))
    costs = [cost_of(o) for o in ops]
    assert all(ok for _, ok in costs)
    assert sum(c.flops for c, _ in costs) == 32 + 32 + 32


def test_native_dropout_train():
    # fused: 3 FLOPs per element = 96; read 128; write out 128 + bool mask 32 = 160; 1 kernel
    x = meta(4, 8)
    op = op_of(aten.native_dropout.default, x, 0.5, True, outputs=[x, meta(4, 8, dtype=torch.bool)])
    c, ok = cost_of(op)
    assert ok and (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (96, 128, 160, 1)


def test_native_dropout_eval_is_a_copy():
    # train=False: clone + ones mask: 0 FLOPs, read 128, write 160, 2 kernels
    x = meta(4, 8)
    op = op_of(aten.native_dropout.default, x, 0.5, False, outputs=[x, meta(4, 8, dtype=torch.bool)])
    c, _ = cost_of(op)
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels, c.category) == (0, 128, 160, 2, "data_movement")


def test_composite_dropout_inactive_is_a_view():
    x = meta(4, 8)
    for target in (aten.dropout.default, aten.feature_dropout.default, aten.alpha_dropout.default):
        c, ok = cost_of(op_of(target, x, 0.5, False, outputs=[x]))
        assert ok and c.kernels == 0 and c.bytes == 0
    c, _ = cost_of(op_of(aten.dropout.default, x, 0.0, True, outputs=[x]))
    assert c.kernels == 0


def test_composite_dropout_train():
    x = meta(2, 3, 4, 4)  # 96 elements
    c, _ = cost_of(op_of(aten.dropout.default, x, 0.5, True, outputs=[x]))
    assert c.flops == 3 * 96 and c.bytes_written == 96 * 4 + 96
    # feature dropout: mask over N*C = 6: 96 + 2*6 = 108 FLOPs, 3 kernels
    c, _ = cost_of(op_of(aten.feature_dropout.default, x, 0.5, True, outputs=[x]))
    assert (c.flops, c.kernels) == (108, 3)
