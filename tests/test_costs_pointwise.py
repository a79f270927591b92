"""Pointwise family: FLOPs per output element, broadcasting and in-place bytes, categories."""

import pytest
import torch
import torch.nn.functional as F

from roofline.costs import cost_of
from tests.opcapture import capture_ops, priced


def test_binary_add_same_shape():
    # (4, 8) + (4, 8): 32 FLOPs; read 2*128 = 256; write 128; 1 kernel
    _, c = priced("aten.add", torch.add, torch.randn(4, 8), torch.randn(4, 8))
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (32, 256, 128, 1)
    assert c.bytes == 256 + 128
    assert c.category == "pointwise"


def test_broadcast_input_read_at_own_size():
    # (4, 8) * (8,): 32 FLOPs (per OUTPUT element); read 128 + 32 = 160 (the (8,) read once); write 128
    _, c = priced("aten.mul", torch.mul, torch.randn(4, 8), torch.randn(8))
    assert (c.flops, c.bytes_read, c.bytes_written) == (32, 160, 128)


def test_expanded_input_read_at_own_size():
    # b.expand(4, 8) has stride 0 along dim 0: its footprint is 8 elements = 32 bytes
    ops = capture_ops(lambda a, b: a * b.expand(4, 8), torch.randn(4, 8), torch.randn(1, 8))
    mul = [cost_of(o)[0] for o in ops if o.packet == "aten.mul"][0]
    assert mul.bytes_read == 128 + 32
    expand = [cost_of(o)[0] for o in ops if o.packet == "aten.expand"][0]
    assert (expand.bytes, expand.kernels, expand.category) == (0, 0, "view")


def test_inplace_writes_self_no_extra_output():
    # a.add_(b) with a (4, 8), b (8,): read a 128 + b 32 = 160; write a 128 (no new output)
    _, c = priced("aten.add_", lambda a, b: a.add_(b), torch.randn(4, 8), torch.randn(8))
    assert (c.flops, c.bytes_read, c.bytes_written) == (32, 160, 128)


def test_inplace_unary():
    # relu_ on (4, 8): 32 FLOPs, read 128, write 128
    _, c = priced("aten.relu_", F.relu_, torch.randn(4, 8))
    assert (c.flops, c.bytes_read, c.bytes_written) == (32, 128, 128)


def test_scalar_operand_moves_nothing():
    # x * 2.0: read 128 only, write 128
    _, c = priced("aten.mul", lambda t: t * 2.0, torch.randn(4, 8))
    assert (c.bytes_read, c.bytes_written) == (128, 128)


def test_add_with_alpha_counts_the_multiply():
    # a + 2*b: 2 FLOPs per element -> 64
    _, c = priced("aten.add", lambda a, b: torch.add(a, b, alpha=2), torch.randn(4, 8), torch.randn(4, 8))
    assert c.flops == 64


def test_comparison_writes_bool():
    # (4, 8) > (4, 8): 32 FLOPs; write 32 bools = 32 bytes; compute dtype is the input's
    _, c = priced("aten.gt", torch.gt, torch.randn(4, 8), torch.randn(4, 8))
    assert (c.flops, c.bytes_written, c.compute_dtype) == (32, 32, torch.float32)


@pytest.mark.parametrize("fn, packet, per_elem, category", [
    (torch.exp, "aten.exp", 1, "transcendental"),
    (torch.tanh, "aten.tanh", 1, "transcendental"),
    (torch.sqrt, "aten.sqrt", 1, "transcendental"),
    (torch.sigmoid, "aten.sigmoid", 3, "transcendental"),   # exp, add, div
    (F.silu, "aten.silu", 4, "transcendental"),             # x * sigmoid(x)
    (F.gelu, "aten.gelu", 5, "transcendental"),             # 0.5*x*(1+erf(x/sqrt2))
    (lambda t: F.gelu(t, approximate="tanh"), "aten.gelu", 9, "transcendental"),
    (F.softplus, "aten.softplus", 5, "transcendental"),
    (F.mish, "aten.mish", 5, "transcendental"),
    (F.elu, "aten.elu", 4, "transcendental"),
    (torch.relu, "aten.relu", 1, "pointwise"),
    (torch.neg, "aten.neg", 1, "pointwise"),
    (F.hardtanh, "aten.hardtanh", 2, "pointwise"),
    (F.leaky_relu, "aten.leaky_relu", 2, "pointwise"),
    (F.hardswish, "aten.hardswish", 5, "pointwise"),
    (lambda t: torch.clamp(t, 0, 1), "aten.clamp", 2, "pointwise"),
    (lambda t: torch.clamp(t, min=0), "aten.clamp", 1, "pointwise"),
    (torch.reciprocal, "aten.reciprocal", 1, "pointwise"),
])
def test_unary_rules(fn, packet, per_elem, category):
    # (4, 8) = 32 elements: per_elem * 32 FLOPs; read 128, write 128
    _, c = priced(packet, fn, torch.randn(4, 8))
    assert (c.flops, c.bytes_read, c.bytes_written, c.category) == (per_elem * 32, 128, 128, category)


@pytest.mark.parametrize("exponent, per_elem, category", [
    (2, 1, "pointwise"),        # x*x
    (3, 2, "pointwise"),        # x*x*x
    (4, 2, "pointwise"),        # (x*x)^2
    (-1, 1, "pointwise"),       # 1/x: one reciprocal
    (-2, 2, "pointwise"),       # 1/(x*x)
    (1, 1, "pointwise"),        # a copy, still >= 1
    (0.5, 1, "transcendental"), # sqrt
    (1.7, 3, "transcendental"), # exp(1.7*log x)
])
def test_pow_rules(exponent, per_elem, category):
    _, c = priced("aten.pow", torch.pow, torch.randn(4, 8).abs(), exponent)
    assert (c.flops, c.category) == (per_elem * 32, category)


def test_pow_tensor_exponent():
    _, c = priced("aten.pow", torch.pow, torch.rand(4, 8), torch.rand(4, 8))
    assert c.flops == 3 * 32 and c.bytes_read == 256


def test_ternary_addcmul_broadcast():
    # addcmul(x (4,8), t1 (4,8), t2 (8,)): 3 FLOPs per element = 96; read 128+128+32 = 288
    _, c = priced("aten.addcmul", torch.addcmul, torch.randn(4, 8), torch.randn(4, 8), torch.randn(8))
    assert (c.flops, c.bytes_read, c.bytes_written) == (96, 288, 128)


def test_where_select():
    # where(cond (4,8) bool, x (4,8), y (4,8)): 32 FLOPs; read 32 + 128 + 128 = 288
    _, c = priced("aten.where", torch.where, torch.randn(4, 8) > 0, torch.randn(4, 8), torch.randn(4, 8))
    assert (c.flops, c.bytes_read, c.bytes_written) == (32, 288, 128)


def test_lerp_and_addcdiv():
    _, c = priced("aten.lerp", torch.lerp, torch.randn(4, 8), torch.randn(4, 8), 0.5)
    assert c.flops == 3 * 32
    _, c = priced("aten.addcdiv_", lambda a, b, d: a.addcdiv_(b, d), torch.randn(4, 8),
                  torch.randn(4, 8), torch.rand(4, 8) + 1)
    assert c.flops == 3 * 32 and c.bytes_written == 128 and c.bytes_read == 3 * 128


def test_div_rounding_mode():
    assert priced("aten.div", torch.div, torch.randn(4, 8), torch.randn(4, 8))[1].flops == 32
    _, c = priced("aten.div", lambda a, b: torch.div(a, b, rounding_mode="floor"),
                  torch.randn(4, 8), torch.randn(4, 8))
    assert c.flops == 64


def test_mixed_dtype_promotion():
    # fp16 (4, 8) + fp32 (4, 8) -> fp32: read 64 + 128 = 192, write 128
    _, c = priced("aten.add", torch.add, torch.randn(4, 8, dtype=torch.float16), torch.randn(4, 8))
    assert (c.bytes_read, c.bytes_written, c.compute_dtype) == (192, 128, torch.float32)


def test_polar_and_python_scalar_overloads():
    # polar(abs, angle) (4, 8): 4 FLOPs per element, writes complex64 (8 B each)
    _, c = priced("aten.polar", torch.polar, torch.rand(4, 8), torch.rand(4, 8))
    assert (c.flops, c.bytes_written, c.category) == (128, 256, "transcendental")
    from roofline.costs import cost_of as _cost_of
    from tests.opcapture import op_of
    c, ok = _cost_of(op_of(torch.ops.aten.angle.float, 1.0))
    # angle of a Python float is computed on the host: no FLOPs, no bytes, no kernel; it keeps the
    # category its family registered (transcendental), not the formula's "other"
    assert ok and (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (0, 0, 0, 0)
    assert c.category == "transcendental"


def test_inplace_op_recorded_without_outputs_prices_its_self():
    # an in-place op captured with no outputs: its mutated tensor (4, 8) sets the elements, 32 FLOPs;
    # relu_ reads 128 and writes 128 bytes in place; add_(a, r) reads 128 + 32 = 160
    from tests.opcapture import meta, op_of

    c, ok = cost_of(op_of(torch.ops.aten.relu_.default, meta(4, 8)))
    assert ok and (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (32, 128, 128, 1)
    c, ok = cost_of(op_of(torch.ops.aten.add_.Tensor, meta(4, 8), meta(8)))
    assert ok and (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (32, 160, 128, 1)


def test_pow_complex_scalar_exponent():
    # complex64 (4, 8) ** (2+1j): exp((2+1j)*log x), 3 FLOPs per element = 96, transcendental;
    # read 32 * 8 = 256 bytes, write 256
    _, c = priced("aten.pow", torch.pow, torch.rand(4, 8, dtype=torch.complex64) + 0.5, 2 + 1j)
    assert (c.flops, c.category, c.bytes_read, c.bytes_written) == (96, "transcendental", 256, 256)


def _bytes_of(packet, fn, *inputs):
    """(bytes read, bytes written) of the one ``packet`` op ``fn`` runs on ``inputs``."""
    from roofline.graph.capture import capture

    graph = capture(fn, inputs)
    (op,) = [o for o in graph.ops if o.packet == packet]
    c, _ = cost_of(op)
    return c.bytes_read, c.bytes_written


def test_a_value_passed_twice_is_read_once():
    # y * y: both loads hit the same cache lines, so 128 bytes in, 128 out; y * z reads both
    y, z = torch.randn(4, 8), torch.randn(4, 8)
    assert _bytes_of("aten.mul", lambda a: a * a, y) == (128, 128)
    assert _bytes_of("aten.mul", lambda a, b: a * b, y, z) == (256, 128)


def test_a_value_passed_three_times_is_read_once():
    # addcmul(y, y, y): one (4, 8) input in all three places, 128 bytes read once; addcmul(y, y, z) 256
    bytes_of = lambda fn, *inputs: _bytes_of("aten.addcmul", fn, *inputs)  # noqa: E731
    y, z = torch.randn(4, 8), torch.randn(4, 8)
    assert bytes_of(lambda a: torch.addcmul(a, a, a), y) == (128, 128)
    assert bytes_of(lambda a, b: torch.addcmul(a, a, b), y, z) == (256, 128)
