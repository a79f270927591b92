"""The registry contract: fallback for unknown ops, helpers, no silent zeros."""

import torch

from roofline.costs import cost_of, fallback_cost, registered_ops
from roofline.costs.registry import footprint_bytes, is_contiguous
from roofline.graph.ops import TensorMeta
from tests.opcapture import capture_ops, meta, op_of

aten = torch.ops.aten


def test_op_without_formula_gets_fallback_and_unsupported():
    # aten.cholesky has no formula: bytes in (64) + out (64), zero FLOPs, one kernel, supported=False
    a = torch.eye(4) * 2
    ops = [o for o in capture_ops(torch.linalg.cholesky, a) if o.packet.startswith("aten.linalg_cholesky")]
    assert ops
    c, supported = cost_of(ops[0])
    assert not supported
    assert c == fallback_cost(ops[0])
    assert c.flops == 0 and c.bytes_read >= 64 and c.bytes_written >= 64 and c.kernels == 1


def test_string_targets_and_non_aten_callables():
    c, ok = cost_of(op_of("aten.mm.default", meta(4, 8), meta(8, 2), outputs=[meta(4, 2)]))
    assert ok and c.flops == 2 * 4 * 2 * 8
    c, ok = cost_of(op_of(len, meta(4), outputs=[meta(4)]))
    assert not ok and c.flops == 0


def test_footprint_and_contiguity():
    t = TensorMeta(shape=(4, 8), dtype=torch.float32, stride=(0, 1))  # expanded from (8,)
    assert footprint_bytes(t) == 32 and not is_contiguous(t)
    assert footprint_bytes(meta(4, 8)) == 128 and is_contiguous(meta(4, 8))
    assert footprint_bytes(meta(0, 8)) == 0


def test_registry_size_and_names():
    ops = registered_ops()
    assert len(ops) > 500
    for name in ("aten.mm", "aten.convolution", "aten.add_", "aten.native_layer_norm", "aten.embedding",
                 "aten.view", "aten._to_copy", "aten.zeros", "aten.native_dropout", "aten.mkldnn_rnn_layer"):
        assert name in ops


def test_no_silent_zero_flops_for_arithmetic_categories():
    # every formula in an arithmetic category returns FLOPs > 0 on a real op
    x = torch.randn(4, 8)
    ops = capture_ops(lambda t: (t + t, t.exp(), t.sum(), torch.softmax(t, -1), t @ t.T,
                                 torch.nn.functional.layer_norm(t, (8,)), t.clamp(0), t.pow(1)), x)
    for o in ops:
        c, ok = cost_of(o)
        if c.category in ("matmul", "conv", "attention", "pointwise", "transcendental", "reduction", "norm"):
            assert c.flops > 0, o.name
