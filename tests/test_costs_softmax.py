"""Softmax family: 5 FLOPs per element (+1 log per row for log_softmax), one pass of bytes."""

import torch
import torch.nn.functional as F

from tests.opcapture import priced


def test_softmax():
    # (4, 16): 5 * 64 = 320 FLOPs; read 256, write 256; 1 kernel; category reduction
    _, c = priced("aten._softmax", F.softmax, torch.randn(4, 16), -1)
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (320, 256, 256, 1)
    assert c.category == "reduction"


def test_log_softmax_adds_one_log_per_row():
    # (4, 16) along dim -1: 5 * 64 + 4 rows = 324; along dim 0: 5*64 + 16 rows = 336
    assert priced("aten._log_softmax", F.log_softmax, torch.randn(4, 16), -1)[1].flops == 324
    assert priced("aten._log_softmax", F.log_softmax, torch.randn(4, 16), 0)[1].flops == 336


def test_half_to_float_softmax_whole_op():
    # _softmax(fp16 (4, 16), half_to_float=True) as CUDA emits it: read 64*2 = 128, write 64*4 = 256
    # (on CPU, F.softmax(dtype=float32) is _to_copy then an fp32 _softmax instead)
    from roofline.costs import cost_of
    from tests.opcapture import meta, op_of
    op = op_of(torch.ops.aten._softmax.default, meta(4, 16, dtype=torch.float16), -1, True,
               outputs=[meta(4, 16)])
    c, _ = cost_of(op)
    assert (c.flops, c.bytes_read, c.bytes_written, c.compute_dtype) == (320, 128, 256, torch.float32)


def test_safe_softmax():
    # math attention path: _safe_softmax on (8, 16, 16) scores: 8 * 2048 = 16384 FLOPs, 6 kernels
    q = torch.randn(2, 4, 16, 8)
    _, c = priced("aten._safe_softmax", lambda a: F.scaled_dot_product_attention(a, a, a, dropout_p=0.5), q)
    assert c.flops == 8 * 2 * 4 * 16 * 16 and c.kernels == 6


def test_log_softmax_rows_from_a_keyword_dim_a_size_one_dim_and_a_scalar():
    from roofline.costs import cost_of
    from tests.opcapture import meta, op_of

    # dim given by keyword, 0: (4, 16) has 16 rows along it: 5 * 64 + 16 = 336
    op = op_of(torch.ops.aten._log_softmax.default, meta(4, 16), dim=0, half_to_float=False, outputs=[meta(4, 16)])
    assert cost_of(op)[0].flops == 336
    # (4, 1) along its size-1 last dim: 4 rows of one element: 5 * 4 + 4 = 24
    assert priced("aten._log_softmax", F.log_softmax, torch.randn(4, 1), -1)[1].flops == 24
    # a 0-d tensor is one row of one element: 5 + 1 = 6
    op = op_of(torch.ops.aten._log_softmax.default, meta(), 0, False, outputs=[meta()])
    assert cost_of(op)[0].flops == 6
