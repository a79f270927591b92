"""Every registered op priced on a worked example: FLOPs, bytes read, bytes written and kernels.

Each entry of ``CASES`` is one aten overload packet of the registry, a small example call and what
it costs, worked out by hand here from the rules in each family's docstring (one multiply-add is
2 FLOPs; each input read once at its own size, each output written once; float32 is 4 bytes). The
figures are written as arithmetic, never computed by the formula under test. Most examples are
real calls on small CPU tensors (torch checks the arguments and makes the outputs); ops that have
no CPU kernel are built by hand from ``TensorMeta``s. Where ``torch.utils.flop_counter`` counts the
op, the example's FLOPs must equal its count too.

``test_every_registered_op_has_a_case`` fails when an op is registered without a case here, so
that no op is added untested.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import pytest
import torch
from torch.utils._pytree import tree_flatten, tree_map
from torch.utils.flop_counter import FlopCounterMode, flop_registry

from roofline.costs import cost_of, registered_ops
from roofline.graph.ops import CapturedOp, TensorMeta

aten = torch.ops.aten
F32 = 4  # bytes of a float32
I64 = 8
B1 = 1  # a bool
C64 = 8  # a complex64

# The standard operand: x is (4, 8) float32, 32 elements, 128 bytes; r is a (8,) row, broadcast.
N = 4 * 8
XB = N * F32
RB = 8 * F32


def x(*shape, dtype=torch.float32):
    shape = shape or (4, 8)
    if dtype.is_floating_point or dtype.is_complex:
        return torch.rand(shape, dtype=dtype) + 0.5  # in (0.5, 1.5): valid for log, acosh-free ops
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    return torch.randint(1, 4, shape, dtype=dtype)


def r(dtype=torch.float32):
    return x(8, dtype=dtype)


class Example(NamedTuple):
    op: CapturedOp
    counted_flops: int | None  # flop_counter's count of the call; None for a hand-built op


def _meta(v):
    return TensorMeta.of(v) if isinstance(v, torch.Tensor) else v


def run(overload, *args, **kwargs) -> Example:
    """Call ``overload`` and record it as one captured op (arguments as they were before the call)."""
    margs, mkwargs = tree_map(_meta, (tuple(args), dict(kwargs)))
    try:
        with FlopCounterMode(display=False) as counter:
            out = overload(*args, **kwargs)
        counted = counter.get_total_flops()
    except TypeError:  # flop_counter's own formula fails on a few entry points (_slow_conv2d_forward)
        out, counted = overload(*args, **kwargs), None
    flat, _ = tree_flatten(out)
    outputs = tuple(TensorMeta.of(t) for t in flat if isinstance(t, torch.Tensor))
    op = CapturedOp(index=0, target=overload, args=margs, kwargs=mkwargs, outputs=outputs)
    return Example(op, counted)


def built(overload, *args, outputs=(), **kwargs) -> Example:
    """An op built by hand (no CPU kernel to run it): arguments are ``TensorMeta``s."""
    return Example(CapturedOp(index=0, target=overload, args=tuple(args), kwargs=kwargs, outputs=tuple(outputs)), None)


def m(*shape, dtype=torch.float32, device="cpu") -> TensorMeta:
    return TensorMeta.contiguous(shape, dtype=dtype, device=device)


def ov(name: str, *preferred: str):
    """The first overload of ``aten.<name>`` among ``preferred`` (default: default, Tensor, Scalar)."""
    packet = getattr(aten, name)
    for o in preferred or ("default", "Tensor", "Scalar", "self", "input"):
        if o in packet.overloads():
            return getattr(packet, o)
    raise AssertionError(f"aten.{name} has none of the overloads {preferred}")


class Case(NamedTuple):
    packet: str
    example: Callable[[], Example]
    flops: int
    read: int
    written: int
    kernels: int
    flop_counter_differs: str  # why flop_counter's count is not ours (a documented divergence), or ""


CASES: dict[str, Case] = {}  # "aten.op" or "aten.op[variant]" -> case


def case(packet: str, example: Callable[[], Example], flops: int, read: int, written: int, kernels: int = 1,
         variant: str = "", flop_counter_differs: str = ""):
    """One worked example of ``aten.<packet>``; ``variant`` names a second example of the same op."""
    key = f"aten.{packet}" + (f"[{variant}]" if variant else "")
    assert key not in CASES, f"two cases for {key}"
    CASES[key] = Case("aten." + packet, example, flops, read, written, kernels, flop_counter_differs)


def inplace_twin(name: str) -> str | None:
    """``name_`` when this torch has it, else None."""
    return name + "_" if hasattr(aten, name + "_") else None


# ---- pointwise: FLOPs per output element, the rules of roofline.costs.pointwise -------------------

# unary on x (4, 8): read 128, write 128 (a bool result 32), flops = per element x 32
UNARY_ARITHMETIC = {
    "neg": 1, "negative": 1, "abs": 1, "absolute": 1, "relu": 1, "sign": 1, "sgn": 1, "reciprocal": 1,
    "ceil": 1, "floor": 1, "trunc": 1, "fix": 1, "frac": 2,  # x - trunc(x)
    "square": 1, "deg2rad": 1, "rad2deg": 1, "conj_physical": 1,
    "nan_to_num": 3,  # three selects: nan, +inf, -inf
    "hardtanh": 2, "relu6": 2, "leaky_relu": 2, "hardsigmoid": 4, "hardswish": 5, "hardshrink": 2, "softshrink": 3,
}
UNARY_BOOL = {"isnan": 1, "isinf": 1, "isposinf": 1, "isneginf": 1, "isfinite": 2, "signbit": 1}  # -> bool, 32 bytes
UNARY_TRANSCENDENTAL = {
    "exp": 1, "exp2": 1, "expm1": 1, "log": 1, "log2": 1, "log10": 1, "log1p": 1, "sin": 1, "cos": 1, "tan": 1,
    "asin": 1, "acos": 1, "atan": 1, "arcsin": 1, "arccos": 1, "arctan": 1, "sinh": 1, "cosh": 1, "tanh": 1,
    "asinh": 1, "acosh": 1, "atanh": 1, "erf": 1, "erfc": 1, "erfinv": 1, "sqrt": 1, "rsqrt": 1, "lgamma": 1,
    "digamma": 1, "i0": 1, "special_erf": 1, "angle": 1,
    "sinc": 3,  # sin(pi x) / (pi x)
    "logit": 3,  # log(x / (1 - x))
    "sigmoid": 3, "special_expit": 3,  # 1 / (1 + exp(-x))
    "silu": 4,  # x * sigmoid(x)
    "mish": 5, "softplus": 5, "elu": 4, "selu": 5, "celu": 5, "log_sigmoid": 4,
}
for _name, _f in {**UNARY_ARITHMETIC, **UNARY_TRANSCENDENTAL}.items():
    _arg = (lambda: x(dtype=torch.float32) / 2) if _name in ("atanh", "erfinv", "logit", "asin", "acos", "arcsin", "arccos") else x
    if _name in ("acosh",):
        _arg = lambda: x() + 1  # noqa: E731
    case(_name, lambda n=_name, a=_arg: run(ov(n), a()), _f * N, XB, XB)
    if inplace_twin(_name):
        case(_name + "_", lambda n=_name, a=_arg: run(ov(n + "_"), a()), _f * N, XB, XB)
for _name, _f in UNARY_BOOL.items():
    case(_name, lambda n=_name: run(ov(n), x()), _f * N, XB, N * B1)
case("bitwise_not", lambda: run(aten.bitwise_not.default, x(dtype=torch.int32)), N, XB, XB)
case("bitwise_not_", lambda: run(aten.bitwise_not_.default, x(dtype=torch.int32)), N, XB, XB)
case("logical_not", lambda: run(aten.logical_not.default, x()), N, XB, N * B1)
case("logical_not_", lambda: run(aten.logical_not_.default, x()), N, XB, XB)  # written into float self
case("threshold", lambda: run(aten.threshold.default, x(), 1.0, 0.0), N, XB, XB)
case("threshold_", lambda: run(aten.threshold_.default, x(), 1.0, 0.0), N, XB, XB)
case("prelu", lambda: run(aten.prelu.default, x(), r()), 2 * N, XB + RB, XB)  # x > 0 ? x : w x
case("_prelu_kernel", lambda: run(aten._prelu_kernel.default, x(), r()), 2 * N, XB + RB, XB)
case("glu", lambda: run(aten.glu.default, x(), -1), 4 * 16, XB, 16 * F32)  # a * sigmoid(b): (4, 4) out
# log_sigmoid_forward: -softplus(-x), 4 per element; the CPU kernel also writes a (4, 8) buffer
case("log_sigmoid_forward", lambda: run(aten.log_sigmoid_forward.default, x()), 4 * N, XB, 2 * XB)

# binary on x (4, 8) and a broadcast row r (8,): read 128 + 32, write 128 (bool 32); in place self
BINARY_ARITHMETIC = {
    "mul": 1, "multiply": 1, "copysign": 1, "heaviside": 1,
    "remainder": 2, "fmod": 2, "floor_divide": 2, "ldexp": 2,  # divide and floor; x * 2^e
}
BINARY_NO_INPLACE = {"maximum": 1, "minimum": 1, "fmax": 1, "fmin": 1}
COMPARISONS = ("eq", "ne", "lt", "gt", "le", "ge", "greater", "less", "greater_equal", "less_equal", "not_equal",
               "logical_and", "logical_or", "logical_xor")  # 1 per element, -> bool
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
           "__and__", "__or__", "__xor__", "__lshift__", "__rshift__")  # 1 per element, on int32
BINARY_TRANSCENDENTAL = {"atan2": 1, "arctan2": 1, "hypot": 4, "xlogy": 2, "logaddexp": 5, "logaddexp2": 5}
for _name, _f in {**BINARY_ARITHMETIC, **BINARY_NO_INPLACE, **BINARY_TRANSCENDENTAL}.items():
    case(_name, lambda n=_name: run(ov(n, "Tensor", "default"), x(), r()), _f * N, XB + RB, XB)
    if inplace_twin(_name) and _name not in BINARY_NO_INPLACE:
        case(_name + "_", lambda n=_name: run(ov(n + "_", "Tensor", "default"), x(), r()), _f * N, XB + RB, XB)
for _name in COMPARISONS:
    case(_name, lambda n=_name: run(ov(n, "Tensor", "default"), x(), r()), N, XB + RB, N * B1)
    case(_name + "_", lambda n=_name: run(ov(n + "_", "Tensor", "default"), x(), r()), N, XB + RB, XB)
for _name in BITWISE:
    _int = torch.int32
    case(_name, lambda n=_name: run(ov(n, "Tensor", "default"), x(dtype=torch.int32), r(torch.int32)), N, XB + RB, XB)
    _twin = "__i" + _name[2:] if _name.startswith("__") else _name + "_"
    case(_twin, lambda n=_twin: run(ov(n, "Tensor", "default"), x(dtype=torch.int32), r(torch.int32)), N, XB + RB, XB)
case("complex", lambda: run(aten.complex.default, x(), r()), N, XB + RB, N * C64)  # a store per element
case("polar", lambda: run(aten.polar.default, x(), r()), 4 * N, XB + RB, N * C64)  # abs cos, abs sin
# ternary, three (4, 8) operands: self + v t1 t2, self + v t1 / t2, start + w (end - start): 3 each
for _name in ("addcmul", "addcdiv"):
    case(_name, lambda n=_name: run(ov(n), x(), x(), x()), 3 * N, 3 * XB, XB)
    case(_name + "_", lambda n=_name: run(ov(n + "_"), x(), x(), x()), 3 * N, 3 * XB, XB)
case("lerp", lambda: run(aten.lerp.Scalar, x(), x(), 0.5), 3 * N, 2 * XB, XB)
case("lerp_", lambda: run(aten.lerp_.Tensor, x(), x(), x()), 3 * N, 3 * XB, XB)
# add/sub: 1 per element, 2 with alpha != 1 (the multiply)
case("add", lambda: run(aten.add.Tensor, x(), r()), N, XB + RB, XB)
case("add_", lambda: run(aten.add_.Tensor, x(), r(), alpha=2), 2 * N, XB + RB, XB)
case("sub", lambda: run(aten.sub.Tensor, x(), r(), alpha=3), 2 * N, XB + RB, XB)
case("sub_", lambda: run(aten.sub_.Tensor, x(), r()), N, XB + RB, XB)
case("subtract", lambda: run(aten.subtract.Tensor, x(), r()), N, XB + RB, XB)
case("subtract_", lambda: run(aten.subtract_.Tensor, x(), r(), alpha=0.5), 2 * N, XB + RB, XB)
case("rsub", lambda: run(aten.rsub.Scalar, x(), 1.0), N, XB, XB)  # a Python scalar moves nothing
# div: 1 per element, 2 with a rounding mode
case("div", lambda: run(aten.div.Tensor, x(), r()), N, XB + RB, XB)
case("div_", lambda: run(aten.div_.Tensor_mode, x(), r(), rounding_mode="floor"), 2 * N, XB + RB, XB)
case("divide", lambda: run(aten.divide.Tensor_mode, x(), r(), rounding_mode="trunc"), 2 * N, XB + RB, XB)
case("divide_", lambda: run(aten.divide_.Tensor, x(), r()), N, XB + RB, XB)
case("true_divide", lambda: run(aten.true_divide.Tensor, x(), r()), N, XB + RB, XB)
case("true_divide_", lambda: run(aten.true_divide_.Tensor, x(), r()), N, XB + RB, XB)
# clamp: one compare-and-select per bound given
case("clamp", lambda: run(aten.clamp.default, x(), 0.6, 1.2), 2 * N, XB, XB)
case("clamp_", lambda: run(aten.clamp_.default, x(), None, 1.2), N, XB, XB)
case("clip", lambda: run(aten.clip.default, x(), 0.6), N, XB, XB)
case("clip_", lambda: run(aten.clip_.default, x(), 0.6, 1.0), 2 * N, XB, XB)
case("clamp_min", lambda: run(aten.clamp_min.default, x(), 0.6), N, XB, XB)
case("clamp_min_", lambda: run(aten.clamp_min_.default, x(), 0.6), N, XB, XB)
case("clamp_max", lambda: run(aten.clamp_max.Tensor, x(), r()), N, XB + RB, XB)
case("clamp_max_", lambda: run(aten.clamp_max_.default, x(), 0.6), N, XB, XB)
# round: 1, 3 with decimals (scale, round, unscale)
case("round", lambda: run(aten.round.default, x()), N, XB, XB)
case("round_", lambda: run(aten.round_.decimals, x(), decimals=2), 3 * N, XB, XB)
# gelu: erf form 5, tanh form 9
case("gelu", lambda: run(aten.gelu.default, x()), 5 * N, XB, XB)
case("gelu_", lambda: run(aten.gelu_.default, x(), approximate="tanh"), 9 * N, XB, XB)
# pow: x^3 is 2 multiplies (square, times x); x^-2 is 1 multiply + 1 reciprocal; x^0.5 a sqrt; a
# tensor exponent exp(n log x) 3; 2.0^x exp(x log 2) 2; float_power computes in float64
case("pow", lambda: run(aten.pow.Tensor_Scalar, x(), 3), 2 * N, XB, XB)
case("pow_", lambda: run(aten.pow_.Scalar, x(), -2), 2 * N, XB, XB)
case("float_power", lambda: run(aten.float_power.Tensor_Scalar, x(), 0.5), N, XB, N * 8)
case("float_power_", lambda: run(aten.float_power_.Tensor, x(dtype=torch.float64), x(dtype=torch.float64)), 3 * N, 2 * N * 8, N * 8)
case("where", lambda: run(aten.where.self, x(dtype=torch.bool), x(), r()), N, N * B1 + XB + RB, XB)
case("pow", lambda: run(aten.pow.Scalar, 2.0, x()), 2 * N, XB, XB, variant="scalar base")
case("pow", lambda: run(aten.pow.Tensor_Tensor, x(), r()), 3 * N, XB + RB, XB, variant="tensor exponent")
case("pow", lambda: run(aten.pow.Tensor_Scalar, x(), 1), N, XB, XB, variant="x^1 still costs 1")
case("pow", lambda: run(aten.pow.Tensor_Scalar, x(), 2.5), 3 * N, XB, XB, variant="non-integer exponent")
case("pow", lambda: run(aten.pow.Tensor_Scalar, x(), 7), 4 * N, XB, XB, variant="x^7: 2 squarings, 2 multiplies")
case("pow", lambda: run(aten.pow.Tensor_Scalar, x(), -0.5), N, XB, XB, variant="rsqrt")


# ---- creation: written only; FLOPs per element written (roofline.costs.creation) ------------------

SHAPE = [4, 8]
case("zeros", lambda: run(aten.zeros.default, SHAPE), 0, 0, XB)
case("ones", lambda: run(aten.ones.default, SHAPE), 0, 0, XB)
case("full", lambda: run(aten.full.default, SHAPE, 2.0), 0, 0, XB)
case("zeros_like", lambda: run(aten.zeros_like.default, x()), 0, 0, XB)  # the template is not read
case("ones_like", lambda: run(aten.ones_like.default, x()), 0, 0, XB)
case("full_like", lambda: run(aten.full_like.default, x(), 2.0), 0, 0, XB)
case("new_zeros", lambda: run(aten.new_zeros.default, x(), SHAPE), 0, 0, XB)
case("new_ones", lambda: run(aten.new_ones.default, x(), SHAPE), 0, 0, XB)
case("new_full", lambda: run(aten.new_full.default, x(), SHAPE, 2.0), 0, 0, XB)
case("fill_", lambda: run(aten.fill_.Tensor, x(), torch.tensor(2.0)), 0, F32, XB)  # the 0-d value is read
case("fill", lambda: run(aten.fill.Scalar, x(), 2.0), 0, 0, XB)
case("zero_", lambda: run(aten.zero_.default, x()), 0, 0, XB)
case("zero", lambda: run(aten.zero.default, x()), 0, 0, XB)
case("scalar_tensor", lambda: run(aten.scalar_tensor.default, 2.0), 0, 0, F32)
case("eye", lambda: run(aten.eye.default, 4), 0, 0, 16 * F32)
case("tril_indices", lambda: run(aten.tril_indices.default, 4, 4), 0, 0, 2 * 10 * I64)  # 10 lower-triangle pairs
case("triu_indices", lambda: run(aten.triu_indices.default, 4, 4), 0, 0, 2 * 10 * I64)
case("arange", lambda: run(aten.arange.default, 32), 2 * 32, 0, 32 * I64)  # start + i * step
case("linspace", lambda: run(aten.linspace.default, 0.0, 1.0, 32), 2 * 32, 0, 32 * F32)
case("logspace", lambda: run(aten.logspace.default, 0.0, 1.0, 32), 5 * 32, 0, 32 * F32)  # + pow 3
case("rand", lambda: run(aten.rand.default, SHAPE), N, 0, XB)
case("rand_like", lambda: run(aten.rand_like.default, x()), N, 0, XB)
case("randint", lambda: run(aten.randint.default, 10, SHAPE), N, 0, N * I64)
case("randint_like", lambda: run(aten.randint_like.default, x(), 10), N, 0, XB)
case("uniform_", lambda: run(aten.uniform_.default, x()), N, 0, XB)
case("uniform", lambda: run(aten.uniform.default, x()), N, 0, XB)
case("random_", lambda: run(aten.random_.default, x()), N, 0, XB)
case("bernoulli", lambda: run(aten.bernoulli.default, x() / 2), N, XB, XB)  # reads its probabilities
case("bernoulli_", lambda: run(aten.bernoulli_.float, x(), 0.5), N, 0, XB)
case("randn", lambda: run(aten.randn.default, SHAPE), 4 * N, 0, XB)  # Box-Muller + affine
case("randn_like", lambda: run(aten.randn_like.default, x()), 4 * N, 0, XB)
case("normal", lambda: run(aten.normal.Tensor_Tensor, x(), x()), 4 * N, 2 * XB, XB)  # mean and std read
case("normal_", lambda: run(aten.normal_.default, x()), 4 * N, 0, XB)
case("log_normal_", lambda: run(aten.log_normal_.default, x()), 5 * N, 0, XB)
case("exponential_", lambda: run(aten.exponential_.default, x()), 2 * N, 0, XB)
case("cauchy_", lambda: run(aten.cauchy_.default, x()), 2 * N, 0, XB)
case("geometric_", lambda: run(aten.geometric_.default, x(), 0.5), 3 * N, 0, XB)
case("poisson", lambda: run(aten.poisson.default, x()), 4 * N, XB, XB)  # reads its rates
for _name in ("empty", "empty_permuted"):
    pass
case("empty", lambda: run(aten.empty.memory_format, SHAPE), 0, 0, 0, kernels=0)  # allocation only
case("empty_like", lambda: run(aten.empty_like.default, x()), 0, 0, 0, kernels=0)
case("empty_strided", lambda: run(aten.empty_strided.default, SHAPE, [8, 1]), 0, 0, 0, kernels=0)
case("new_empty", lambda: run(aten.new_empty.default, x(), SHAPE), 0, 0, 0, kernels=0)
case("new_empty_strided", lambda: run(aten.new_empty_strided.default, x(), SHAPE, [8, 1]), 0, 0, 0, kernels=0)
case("empty_permuted", lambda: run(aten.empty_permuted.default, SHAPE, [1, 0]), 0, 0, 0, kernels=0)
case("_efficientzerotensor", lambda: run(aten._efficientzerotensor.default, SHAPE), 0, 0, 0, kernels=0)
# randperm of 16: sort 16 random keys, 16 * ceil(log2 16) compares + 1 per key; 3 kernels
case("randperm", lambda: run(aten.randperm.default, 16), 16 * 4 + 16, 0, 16 * I64, kernels=3)
# multinomial, 2 draws from each of 4 rows of 8: cumsum 32 + per sample (draw 1 + search log2 8 = 3)
case("multinomial", lambda: run(aten.multinomial.default, x(), 2), N + 4 * 2 * (1 + 3), XB, 4 * 2 * I64, kernels=3)

# ---- views: no kernel, no bytes; reshape copies when strides forbid a view ------------------------

XT = lambda: x().t()  # noqa: E731  (8, 4), not contiguous
VIEWS = {
    "view": lambda: run(aten.view.default, x(), [32]),
    "_unsafe_view": lambda: run(aten._unsafe_view.default, x(), [32]),
    "expand": lambda: run(aten.expand.default, r(), SHAPE),
    "expand_as": lambda: run(aten.expand_as.default, r(), x()),
    "view_as": lambda: run(aten.view_as.default, x(), x(8, 4)),
    "permute": lambda: run(aten.permute.default, x(), [1, 0]),
    "transpose": lambda: run(aten.transpose.int, x(), 0, 1),
    "t": lambda: run(aten.t.default, x()),
    "squeeze": lambda: run(aten.squeeze.default, x(1, 8)),
    "unsqueeze": lambda: run(aten.unsqueeze.default, x(), 0),
    "slice": lambda: run(aten.slice.Tensor, x(), 0, 0, 2),
    "select": lambda: run(aten.select.int, x(), 0, 1),
    "split": lambda: run(aten.split.Tensor, x(), 2),
    "split_with_sizes": lambda: run(aten.split_with_sizes.default, x(), [1, 3]),
    "chunk": lambda: run(aten.chunk.default, x(), 2),
    "unbind": lambda: run(aten.unbind.int, x()),
    "narrow": lambda: run(aten.narrow.default, x(), 0, 0, 2),
    "as_strided": lambda: run(aten.as_strided.default, x(), [2, 2], [8, 1]),
    "alias": lambda: run(aten.alias.default, x()),
    "detach": lambda: run(aten.detach.default, x()),
    "unflatten": lambda: run(aten.unflatten.int, x(), 1, [2, 4]),
    "view_as_real": lambda: run(aten.view_as_real.default, x(dtype=torch.complex64)),
    "view_as_complex": lambda: run(aten.view_as_complex.default, x(4, 2)),
    "diagonal": lambda: run(aten.diagonal.default, x()),
    "lift_fresh": lambda: run(aten.lift_fresh.default, x()),
    "unsafe_split": lambda: run(aten.unsafe_split.Tensor, x(), 2),
    "unsafe_split_with_sizes": lambda: run(aten.unsafe_split_with_sizes.default, x(), [1, 3]),
    "unsafe_chunk": lambda: run(aten.unsafe_chunk.default, x(), 2),
    "_reshape_alias": lambda: run(aten._reshape_alias.default, x(), [32], [1]),
    "unfold": lambda: run(aten.unfold.default, x(), 1, 2, 2),
    "movedim": lambda: run(aten.movedim.int, x(), 0, 1),
    "moveaxis": lambda: run(aten.moveaxis.int, x(), 0, 1),
    "swapaxes": lambda: run(aten.swapaxes.default, x(), 0, 1),
    "swapdims": lambda: run(aten.swapdims.default, x(), 0, 1),
    "tensor_split": lambda: run(aten.tensor_split.sections, x(), 2),
    "hsplit": lambda: run(aten.hsplit.int, x(), 2),
    "vsplit": lambda: run(aten.vsplit.int, x(), 2),
    "dsplit": lambda: run(aten.dsplit.int, x(2, 2, 4), 2),
    "_conj": lambda: run(aten._conj.default, x(dtype=torch.complex64)),
    "conj": lambda: run(aten.conj.default, x(dtype=torch.complex64)),
    "_neg_view": lambda: run(aten._neg_view.default, x()),
    "real": lambda: run(aten.real.default, x(dtype=torch.complex64)),
    "imag": lambda: run(aten.imag.default, x(dtype=torch.complex64)),
    "resolve_conj": lambda: run(aten.resolve_conj.default, x()),
    "resolve_neg": lambda: run(aten.resolve_neg.default, x()),
    "positive": lambda: run(aten.positive.default, x()),
    "numpy_T": lambda: run(aten.numpy_T.default, x()),
    "mT": lambda: run(aten.mT.default, x()),
    "mH": lambda: run(aten.mH.default, x()),
    "adjoint": lambda: run(aten.adjoint.default, x()),
    "squeeze_": lambda: run(aten.squeeze_.default, x(1, 8)),
    "unsqueeze_": lambda: run(aten.unsqueeze_.default, x(), 0),
    "transpose_": lambda: run(aten.transpose_.default, x(), 0, 1),
    "t_": lambda: run(aten.t_.default, x()),
    "as_strided_": lambda: run(aten.as_strided_.default, x(), [2, 2], [8, 1]),
    "detach_": lambda: run(aten.detach_.default, x()),
    "swapaxes_": lambda: run(aten.swapaxes_.default, x(), 0, 1),
    "swapdims_": lambda: run(aten.swapdims_.default, x(), 0, 1),
    "set_": lambda: run(aten.set_.source_Tensor, x(), x()),
    "resize_": lambda: run(aten.resize_.default, x(), [2, 4]),
    "resize_as_": lambda: run(aten.resize_as_.default, x(), x(2, 4)),
}
for _name, _example in VIEWS.items():
    case(_name, _example, 0, 0, 0, kernels=0)
case("reshape", lambda: run(aten.reshape.default, XT(), [32]), 0, XB, XB)  # (8, 4) transposed: a copy
case("reshape", lambda: run(aten.reshape.default, x(), [2, 16]), 0, 0, 0, kernels=0, variant="a view")
case("reshape_as", lambda: run(aten.reshape_as.default, x(), x(8, 4)), 0, 0, 0, kernels=0)
case("flatten", lambda: run(aten.flatten.using_ints, x(2, 2, 8)), 0, 0, 0, kernels=0)
case("ravel", lambda: run(aten.ravel.default, XT()), 0, XB, XB)
case("flatten", lambda: run(aten.flatten.using_ints, x(2, 8, 2).transpose(1, 2), 1), 0, 2 * 16 * F32, 2 * 16 * F32,
     variant="a copy when the merged dims are not adjacent in memory")
case("reshape", lambda: run(aten.reshape.default, x(4, 1, 8).expand(4, 3, 8), [12, 8]), 0, XB, 3 * XB,
     variant="an expanded input is read at its own size")

# ---- materialized views: read what they keep, write it ----------------------------------------------

VIEW_COPIES = {  # name -> (example, bytes read, bytes written)
    "expand_copy": (lambda: run(aten.expand_copy.default, r(), SHAPE), RB, XB),
    "permute_copy": (lambda: run(aten.permute_copy.default, x(), [1, 0]), XB, XB),
    "view_copy": (lambda: run(aten.view_copy.default, x(), [32]), XB, XB),
    "transpose_copy": (lambda: run(aten.transpose_copy.int, x(), 0, 1), XB, XB),
    "t_copy": (lambda: run(aten.t_copy.default, x()), XB, XB),
    "unsqueeze_copy": (lambda: run(aten.unsqueeze_copy.default, x(), 0), XB, XB),
    "squeeze_copy": (lambda: run(aten.squeeze_copy.default, x(1, 8)), RB, RB),
    "slice_copy": (lambda: run(aten.slice_copy.Tensor, x(), 0, 0, 2), 2 * RB, 2 * RB),  # 2 of 4 rows
    "select_copy": (lambda: run(aten.select_copy.int, x(), 0, 1), RB, RB),
    "as_strided_copy": (lambda: run(aten.as_strided_copy.default, x(), [2, 2], [8, 1]), 4 * F32, 4 * F32),
    "alias_copy": (lambda: run(aten.alias_copy.default, x()), XB, XB),
    "detach_copy": (lambda: run(aten.detach_copy.default, x()), XB, XB),
    "split_copy": (lambda: run(aten.split_copy.Tensor, x(), 2), XB, XB),
    "split_with_sizes_copy": (lambda: run(aten.split_with_sizes_copy.default, x(), [1, 3]), XB, XB),
    "unbind_copy": (lambda: run(aten.unbind_copy.int, x()), XB, XB),
    "diagonal_copy": (lambda: run(aten.diagonal_copy.default, x()), 4 * F32, 4 * F32),
    "narrow_copy": (lambda: run(aten.narrow_copy.default, x(), 0, 0, 2), 2 * RB, 2 * RB),
    "unfold_copy": (lambda: run(aten.unfold_copy.default, x(), 1, 2, 2), XB, XB),
    "_reshape_alias_copy": (lambda: run(aten._reshape_alias_copy.default, x(), [32], [1]), XB, XB),
    "view_as_real_copy": (lambda: run(aten.view_as_real_copy.default, x(dtype=torch.complex64)), N * C64, N * C64),
    "view_as_complex_copy": (lambda: run(aten.view_as_complex_copy.default, x(4, 2)), 8 * F32, 8 * F32),
    "lift_fresh_copy": (lambda: run(aten.lift_fresh_copy.default, x()), XB, XB),
    "_neg_view_copy": (lambda: run(aten._neg_view_copy.default, x()), XB, XB),
    "_conj_copy": (lambda: run(aten._conj_copy.default, x(dtype=torch.complex64)), N * C64, N * C64),
    "_reshape_copy": (lambda: run(aten._reshape_copy.default, x(), [32]), XB, XB),
}
for _name, (_example, _read, _written) in VIEW_COPIES.items():
    case(_name, _example, 0, _read, _written)

# ---- data movement: inputs read once, output written once, no arithmetic ---------------------------

X3 = lambda: x(1, 4, 8)  # noqa: E731  (C=1, H=4, W=8)
MOVES = {  # name -> (example, bytes read, bytes written, kernels)
    "cat": (lambda: run(aten.cat.default, [x(), x(2, 8)]), XB + 2 * RB, XB + 2 * RB, 1),
    "concat": (lambda: run(aten.concat.default, [x(), x()]), 2 * XB, 2 * XB, 1),
    "concatenate": (lambda: run(aten.concatenate.default, [x(), x()]), 2 * XB, 2 * XB, 1),
    "stack": (lambda: run(aten.stack.default, [x(), x(), x()]), 3 * XB, 3 * XB, 1),
    "hstack": (lambda: run(aten.hstack.default, [x(), x()]), 2 * XB, 2 * XB, 1),
    "vstack": (lambda: run(aten.vstack.default, [x(), x()]), 2 * XB, 2 * XB, 1),
    "dstack": (lambda: run(aten.dstack.default, [x(), x()]), 2 * XB, 2 * XB, 1),
    "column_stack": (lambda: run(aten.column_stack.default, [x(), x()]), 2 * XB, 2 * XB, 1),
    "repeat": (lambda: run(aten.repeat.default, x(), [2, 1]), XB, 2 * XB, 1),
    "tile": (lambda: run(aten.tile.default, x(), [1, 3]), XB, 3 * XB, 1),
    # (4, 8) padded by 1 on each side of the last dim: (4, 10); fill, then the interior: 2 kernels
    "constant_pad_nd": (lambda: run(aten.constant_pad_nd.default, x(), [1, 1]), XB, 4 * 10 * F32, 2),
    "pad": (lambda: run(aten.pad.default, x(), [1, 1]), XB, 4 * 10 * F32, 2),
    "reflection_pad1d": (lambda: run(aten.reflection_pad1d.default, x(), [2, 2]), XB, 4 * 12 * F32, 1),
    "reflection_pad2d": (lambda: run(aten.reflection_pad2d.default, X3(), [1, 1, 1, 1]), XB, 6 * 10 * F32, 1),
    "reflection_pad3d": (lambda: run(aten.reflection_pad3d.default, x(1, 1, 4, 8), [1, 1, 1, 1, 0, 0]), XB, 6 * 10 * F32, 1),
    "replication_pad1d": (lambda: run(aten.replication_pad1d.default, x(), [2, 2]), XB, 4 * 12 * F32, 1),
    "replication_pad2d": (lambda: run(aten.replication_pad2d.default, X3(), [1, 1, 1, 1]), XB, 6 * 10 * F32, 1),
    "replication_pad3d": (lambda: run(aten.replication_pad3d.default, x(1, 1, 4, 8), [1, 1, 1, 1, 1, 1]), XB, 3 * 6 * 10 * F32, 1),
    "_pad_circular": (lambda: run(aten._pad_circular.default, X3(), [1, 1]), XB, 4 * 10 * F32, 1),
    "_pad_enum": (lambda: run(aten._pad_enum.default, x(), [1, 1], 0, 0.0), XB, 4 * 10 * F32, 2),
    "roll": (lambda: run(aten.roll.default, x(), [1]), XB, XB, 1),
    "flip": (lambda: run(aten.flip.default, x(), [0]), XB, XB, 1),
    "fliplr": (lambda: run(aten.fliplr.default, x()), XB, XB, 1),
    "flipud": (lambda: run(aten.flipud.default, x()), XB, XB, 1),
    "rot90": (lambda: run(aten.rot90.default, x()), XB, XB, 1),
    "tril": (lambda: run(aten.tril.default, x()), XB, XB, 1),
    "triu": (lambda: run(aten.triu.default, x()), XB, XB, 1),
    "tril_": (lambda: run(aten.tril_.default, x()), XB, XB, 1),
    "triu_": (lambda: run(aten.triu_.default, x()), XB, XB, 1),
    "pixel_shuffle": (lambda: run(aten.pixel_shuffle.default, x(1, 4, 2, 4), 2), XB, XB, 1),
    "pixel_unshuffle": (lambda: run(aten.pixel_unshuffle.default, x(1, 1, 4, 8), 2), XB, XB, 1),
    "channel_shuffle": (lambda: run(aten.channel_shuffle.default, x(1, 4, 8), 2), XB, XB, 1),
    "native_channel_shuffle": (lambda: run(aten.native_channel_shuffle.default, x(1, 4, 8), 2), XB, XB, 1),
    # im2col of (1, 1, 4, 8) with 2x2 patches, stride 2: 2 * 4 = 8 patches of 4 values
    "im2col": (lambda: run(aten.im2col.default, x(1, 1, 4, 8), [2, 2], [1, 1], [0, 0], [2, 2]), XB, XB, 1),
    "diag_embed": (lambda: run(aten.diag_embed.default, r()), RB, 8 * 8 * F32, 2),  # zeros, then the diagonal
    "diag": (lambda: run(aten.diag.default, r()), RB, 8 * 8 * F32, 1),
    "block_diag": (lambda: run(aten.block_diag.default, [x(), x()]), 2 * XB, 8 * 16 * F32, 2),
    # 3 sequences of lengths 3, 2, 1 packed from (T=3, B=3, 8): 6 rows and the 3 batch sizes
    "_pack_padded_sequence": (lambda: run(aten._pack_padded_sequence.default, x(3, 3, 8), torch.tensor([3, 2, 1]), False),
                              3 * 3 * 8 * F32 + 3 * I64, 6 * 8 * F32 + 3 * I64, 1),
    "_pad_packed_sequence": (lambda: run(aten._pad_packed_sequence.default, x(6, 8), torch.tensor([3, 2, 1]), False, 0.0, 3),
                             6 * 8 * F32 + 3 * I64, 3 * 3 * 8 * F32 + 3 * I64, 2),
}
for _name, (_example, _read, _written, _kernels) in MOVES.items():
    case(_name, _example, 0, _read, _written, kernels=_kernels)
# col2im: fold (1, 4, 8) columns (2x2 patches, 8 of them) back into (1, 1, 4, 8), summing: 1 add per input
case("col2im", lambda: run(aten.col2im.default, x(1, 4, 8), [4, 8], [2, 2], [1, 1], [0, 0], [2, 2]), N, XB, XB)
# repeat_interleave(repeats): 3 kernels (cumsum, fill, gather); repeats 1, 2, 1 -> 4 int64 written
case("repeat_interleave", lambda: run(aten.repeat_interleave.Tensor, torch.tensor([1, 2, 1])), 0, 3 * I64, 4 * I64, kernels=3)

# ---- copies and casts (roofline.costs.copy): source read at its dtype, destination written at its ----

case("clone", lambda: run(aten.clone.default, x()), 0, XB, XB)
case("_to_copy", lambda: run(aten._to_copy.default, x(), dtype=torch.float16), 0, XB, N * 2)  # a cast: 4 -> 2 bytes
case("copy", lambda: run(aten.copy.default, x(), r()), 0, RB, XB)  # src broadcast: read at its own size
case("_to_dense", lambda: built(aten._to_dense.default, m(4, 8), outputs=[m(4, 8)]), 0, XB, XB)
case("to_dense", lambda: run(aten.to_dense.default, x()), 0, XB, XB)
case("copy_", lambda: run(aten.copy_.default, x(), r()), 0, RB, XB)  # destination not read
case("_copy_from", lambda: built(aten._copy_from.default, m(4, 8), m(4, 8, device="cuda"), outputs=[m(4, 8, device="cuda")]), 0, XB, XB)
case("_copy_from_and_resize", lambda: built(aten._copy_from_and_resize.default, m(4, 8), m(4, 8, dtype=torch.float16, device="cuda"),
                                            outputs=[m(4, 8, dtype=torch.float16, device="cuda")]), 0, XB, N * 2, kernels=2)  # memcpy, then cast
case("_pin_memory", lambda: built(aten._pin_memory.default, m(4, 8), outputs=[m(4, 8)]), 0, XB, XB, kernels=0)  # host to host
case("to", lambda: run(aten.to.dtype, x(), torch.float64), 0, XB, N * 8)
case("to", lambda: run(aten.to.dtype, x(), torch.float32), 0, 0, 0, kernels=0, variant="unchanged: the input itself")
case("to", lambda: run(aten.to.dtype, x(), torch.float32, copy=True), 0, XB, XB, variant="copy=True")
case("type_as", lambda: run(aten.type_as.default, x(), x(dtype=torch.float16)), 0, XB, N * 2)
case("contiguous", lambda: built(aten.contiguous.default, TensorMeta.of(XT()), outputs=[m(8, 4)]), 0, XB, XB)
case("contiguous", lambda: run(aten.contiguous.default, x()), 0, 0, 0, kernels=0, variant="already contiguous")
case("_local_scalar_dense", lambda: run(aten._local_scalar_dense.default, x(1)), 0, F32, 0)  # .item()


# ---- matrix products: 2 FLOPs per multiply-add, 8 for complex operands (roofline.costs.matmul) --------

A, W5, BIAS5 = (lambda: x(4, 8)), (lambda: x(8, 5)), (lambda: x(5))  # (4, 8) @ (8, 5) + (5,)
MM_FLOPS, MM_READ, MM_WRITTEN = 2 * 4 * 5 * 8, (4 * 8 + 8 * 5) * F32, 4 * 5 * F32
case("mm", lambda: run(aten.mm.default, A(), W5()), MM_FLOPS, MM_READ, MM_WRITTEN)
case("mm", lambda: run(aten.mm.default, x(4, 8, dtype=torch.complex64), x(8, 5, dtype=torch.complex64)),
     8 * 4 * 5 * 8, (4 * 8 + 8 * 5) * C64, 4 * 5 * C64, variant="complex: 4 real multiplies and 4 adds per multiply-add")
case("_int_mm", lambda: built(aten._int_mm.default, m(32, 16, dtype=torch.int8), m(16, 8, dtype=torch.int8),
                              outputs=[m(32, 8, dtype=torch.int32)]), 2 * 32 * 8 * 16, 32 * 16 + 16 * 8, 32 * 8 * 4)
case("_scaled_mm", lambda: built(aten._scaled_mm.default, m(16, 32, dtype=torch.float8_e4m3fn), m(32, 16, dtype=torch.float8_e4m3fn),
                                 m(), m(), out_dtype=torch.bfloat16, outputs=[m(16, 16, dtype=torch.bfloat16)]),
     2 * 16 * 16 * 32, 16 * 32 + 32 * 16 + F32 + F32, 16 * 16 * 2)
# addmm with a 1-D bias: the bias epilogue, 1 kernel; the bias add is not counted (as flop_counter)
case("addmm", lambda: run(aten.addmm.default, BIAS5(), A(), W5()), MM_FLOPS, MM_READ + 5 * F32, MM_WRITTEN)
case("addmm", lambda: run(aten.addmm.default, x(4, 5), A(), W5()), MM_FLOPS, MM_READ + 4 * 5 * F32, MM_WRITTEN, kernels=2,
     variant="a 2-D self is copied into the result first")
case("addmm", lambda: run(aten.addmm.default, x(4, 5), A(), W5(), beta=0), MM_FLOPS, MM_READ, MM_WRITTEN,
     variant="beta=0 reads no self")
case("addmm", lambda: run(aten.addmm.default, BIAS5(), A(), W5(), beta=0.5), MM_FLOPS, MM_READ + 5 * F32, MM_WRITTEN, kernels=2,
     variant="beta != 1 copies the bias in first")
case("_addmm_activation", lambda: run(aten._addmm_activation.default, BIAS5(), A(), W5()), MM_FLOPS, MM_READ + 5 * F32, MM_WRITTEN)
# bmm (3, 4, 8) @ (3, 8, 5)
BMM_FLOPS, BMM_READ, BMM_WRITTEN = 2 * 3 * 4 * 5 * 8, (3 * 4 * 8 + 3 * 8 * 5) * F32, 3 * 4 * 5 * F32
# a grouped GEMM (mixture of experts): 128 bf16 rows over 4 experts of (64 -> 32), by hand (torch before 2.8 has no
# _grouped_mm): 2*128*64*32 FLOPs; read the rows 128*64*2, every expert's weight 4*64*32*2 and offs 4*4; write 128*32*2
case("_grouped_mm", lambda: built("aten._grouped_mm.default", self=m(128, 64, dtype=torch.bfloat16), mat2=m(4, 64, 32, dtype=torch.bfloat16),
                                  offs=m(4, dtype=torch.int32), outputs=(m(128, 32, dtype=torch.bfloat16),)),
     2 * 128 * 64 * 32, 128 * 64 * 2 + 4 * 64 * 32 * 2 + 4 * 4, 128 * 32 * 2)
case("bmm", lambda: run(aten.bmm.default, x(3, 4, 8), x(3, 8, 5)), BMM_FLOPS, BMM_READ, BMM_WRITTEN)
case("bmm", lambda: run(aten.bmm.default, x(3, 4, 8, dtype=torch.complex64), x(3, 8, 5, dtype=torch.complex64)),
     4 * BMM_FLOPS, 2 * BMM_READ, 2 * BMM_WRITTEN, variant="complex")
case("baddbmm", lambda: run(aten.baddbmm.default, x(3, 4, 5), x(3, 4, 8), x(3, 8, 5)), BMM_FLOPS, BMM_READ + BMM_WRITTEN, BMM_WRITTEN, kernels=2)
case("baddbmm", lambda: run(aten.baddbmm.default, x(3, 4, 5), x(3, 4, 8), x(3, 8, 5), beta=0), BMM_FLOPS, BMM_READ, BMM_WRITTEN,
     variant="beta=0")
# addbmm: the 3 products summed into one (4, 5): one GEMM with K = 3 * 8
case("addbmm", lambda: run(aten.addbmm.default, x(4, 5), x(3, 4, 8), x(3, 8, 5)), BMM_FLOPS, BMM_READ + 4 * 5 * F32, 4 * 5 * F32, kernels=2)
case("addbmm", lambda: run(aten.addbmm.default, x(4, 5, dtype=torch.complex64), x(3, 4, 8, dtype=torch.complex64),
                           x(3, 8, 5, dtype=torch.complex64), beta=0),
     4 * BMM_FLOPS, 2 * BMM_READ, 4 * 5 * C64, variant="complex, beta=0")
case("mv", lambda: run(aten.mv.default, x(6, 8), r()), 2 * 6 * 8, (6 * 8 + 8) * F32, 6 * F32)
case("addmv", lambda: run(aten.addmv.default, x(6), x(6, 8), r()), 2 * 6 * 8, (6 + 6 * 8 + 8) * F32, 6 * F32, kernels=2)
case("addmv", lambda: run(aten.addmv.default, x(6), x(6, 8), r(), beta=0), 2 * 6 * 8, (6 + 6 * 8 + 8) * F32, 6 * F32,
     variant="beta=0: one kernel")
case("dot", lambda: run(aten.dot.default, r(), r()), 2 * 8, 2 * RB, F32)
case("vdot", lambda: run(aten.vdot.default, x(8, dtype=torch.complex64), x(8, dtype=torch.complex64)), 8 * 8, 2 * 8 * C64, C64)
case("addr", lambda: run(aten.addr.default, x(4, 5), x(4), x(5)), 2 * 4 * 5, (4 * 5 + 4 + 5) * F32, 4 * 5 * F32)
# matmul (2, 1, 4, 8) @ (3, 8, 5): the batch broadcasts to 2 * 3
case("matmul", lambda: run(aten.matmul.default, x(2, 1, 4, 8), x(3, 8, 5)), 2 * 6 * 4 * 5 * 8, (2 * 4 * 8 + 3 * 8 * 5) * F32, 6 * 4 * 5 * F32)
case("matmul", lambda: run(aten.matmul.default, r(), x(8, 5)), 2 * 5 * 8, (8 + 40) * F32, 5 * F32, variant="vector @ matrix")
case("matmul", lambda: run(aten.matmul.default, r(), r()), 2 * 8, 2 * RB, F32, variant="vector . vector")
case("matmul", lambda: run(aten.matmul.default, x(5, 8), r()), 2 * 5 * 8, (40 + 8) * F32, 5 * F32, variant="matrix @ vector")
case("linear", lambda: run(aten.linear.default, x(2, 3, 8), x(5, 8), x(5)), 2 * 6 * 5 * 8, (2 * 3 * 8 + 5 * 8 + 5) * F32, 2 * 3 * 5 * F32)
case("linear", lambda: run(aten.linear.default, x(2, 3, 8), r()), 2 * 6 * 8, (2 * 3 * 8 + 8) * F32, 2 * 3 * F32,
     variant="a 1-D weight: one output column")
# nn.Bilinear(4, 5, 6) on 3 rows: the product space (3, 6, 4, 5), one multiply-add per element
case("_trilinear", lambda: run(aten._trilinear.default, x(3, 4), x(6, 4, 5), x(3, 5), [1, 3], [0], [1, 2], [2, 3]),
     2 * 3 * 6 * 4 * 5, (3 * 4 + 6 * 4 * 5 + 3 * 5) * F32, 3 * 6 * F32)
# affine_grid: per output coordinate, a 3-term dot product with theta's row: 2 * 3
case("affine_grid_generator", lambda: run(aten.affine_grid_generator.default, x(2, 2, 3), [2, 3, 8, 8], False),
     2 * 3 * (2 * 8 * 8 * 2), 2 * 2 * 3 * F32, 2 * 8 * 8 * 2 * F32)
# cdist p=2 of (1, 4, 3) and (1, 5, 3): per pair 3 x (subtract, square, add) + 1 sqrt
case("_cdist_forward", lambda: run(aten._cdist_forward.default, x(1, 4, 3), x(1, 5, 3), 2.0, None),
     4 * 5 * (3 * 3 + 1), (12 + 15) * F32, 20 * F32)
case("_cdist_forward", lambda: run(aten._cdist_forward.default, x(1, 4, 3), x(1, 5, 3), 3.0, None),
     4 * 5 * (3 * (5 + 1) + 3), (12 + 15) * F32, 20 * F32, variant="p=3: abs, pow, add per coordinate and a root per pair")

# ---- convolutions: 2 * N * out pixels * taps * Cout * Cin/groups (flop_counter's count) -------------

# x (1, 2, 5, 5) * w (4, 2, 3, 3) -> (1, 4, 3, 3): 2 * 9 pixels * 9 taps * 4 * 2 = 1296 FLOPs
CX, CW, CB = (lambda: x(1, 2, 5, 5)), (lambda: x(4, 2, 3, 3)), (lambda: x(4))
C_FLOPS, C_READ, C_OUT = 2 * 9 * 9 * 4 * 2, (50 + 72) * F32, 36 * F32
CMX, CMW, CMB, CMOUT = m(1, 2, 5, 5, device="cuda"), m(4, 2, 3, 3, device="cuda"), m(4, device="cuda"), m(1, 4, 3, 3, device="cuda")
S1, P0, D1 = [1, 1], [0, 0], [1, 1]
# ATen adds the bias of these entry points with a kernel of its own: 2 kernels
case("convolution", lambda: run(aten.convolution.default, CX(), CW(), CB(), S1, P0, D1, False, P0, 1), C_FLOPS, C_READ + 16, C_OUT, kernels=2)
case("_convolution", lambda: run(aten._convolution.default, CX(), CW(), None, S1, P0, D1, False, P0, 1, False, False, True, True),
     C_FLOPS, C_READ, C_OUT)
case("convolution_overrideable", lambda: built(aten.convolution_overrideable.default, CMX, CMW, CMB, S1, P0, D1, False, P0, 1, outputs=[CMOUT]),
     C_FLOPS, C_READ + 16, C_OUT, kernels=2)
case("_convolution_mode", lambda: run(aten._convolution_mode.default, CX(), CW(), CB(), S1, "valid", D1, 1), C_FLOPS, C_READ + 16, C_OUT, kernels=2)
# conv1d (1, 2, 5) * (4, 2, 3) -> (1, 4, 3): 2 * 3 * 3 * 4 * 2
case("conv1d", lambda: run(aten.conv1d.default, x(1, 2, 5), x(4, 2, 3)), 2 * 3 * 3 * 4 * 2, (10 + 24) * F32, 12 * F32)
case("conv1d", lambda: run(aten.conv1d.default, x(2, 5), x(4, 2, 3)), 2 * 3 * 3 * 4 * 2, (10 + 24) * F32, 12 * F32,
     variant="an unbatched input")
# grouped conv2d, groups 2: x (1, 4, 5, 5) * w (4, 2, 3, 3): each output sees 2 input channels
case("conv2d", lambda: run(aten.conv2d.default, x(1, 4, 5, 5), CW(), CB(), S1, P0, D1, 2), 2 * 9 * 9 * 4 * 2, (100 + 72) * F32 + 16, C_OUT, kernels=2)
case("conv2d", lambda: run(aten.conv2d.default, x(1, 2, 5, 5, dtype=torch.complex64), x(4, 2, 3, 3, dtype=torch.complex64)),
     4 * C_FLOPS, (50 + 72) * C64, 36 * C64, variant="complex")
# conv3d (1, 2, 3, 3, 3) * (2, 2, 2, 2, 2) -> (1, 2, 2, 2, 2): 2 * 8 * 8 * 2 * 2
case("conv3d", lambda: run(aten.conv3d.default, x(1, 2, 3, 3, 3), x(2, 2, 2, 2, 2)), 2 * 8 * 8 * 2 * 2, (54 + 32) * F32, 16 * F32)
# transposed: the INPUT pixels: (1, 2, 3) * w (2, 4, 3) -> (1, 4, 5): 2 * 3 * 3 * 2 * 4
case("conv_transpose1d", lambda: run(aten.conv_transpose1d.default, x(1, 2, 3), x(2, 4, 3)), 2 * 3 * 3 * 2 * 4, (6 + 24) * F32, 20 * F32)
case("conv_transpose2d", lambda: run(aten.conv_transpose2d.input, x(1, 2, 3, 3), x(2, 4, 2, 2), x(4)),
     2 * 9 * 4 * 2 * 4, (18 + 32 + 4) * F32, 4 * 16 * F32, kernels=2)
case("conv_transpose3d", lambda: run(aten.conv_transpose3d.input, x(1, 2, 2, 2, 2), x(2, 2, 2, 2, 2)),
     2 * 8 * 8 * 2 * 2, (16 + 32) * F32, 2 * 27 * F32)
case("cudnn_convolution", lambda: built(aten.cudnn_convolution.default, CMX, CMW, P0, S1, D1, 1, False, False, True, outputs=[CMOUT]),
     C_FLOPS, C_READ, C_OUT)
case("cudnn_convolution_transpose", lambda: built(aten.cudnn_convolution_transpose.default, m(1, 2, 3, 3), m(2, 4, 2, 2), P0, P0, S1, D1, 1,
                                                  False, False, True, outputs=[m(1, 4, 4, 4)]), 2 * 9 * 4 * 2 * 4, (18 + 32) * F32, 64 * F32)
# fused epilogues: relu 1 per output; add-relu z * alpha + out, relu: 3
case("cudnn_convolution_relu", lambda: built(aten.cudnn_convolution_relu.default, CMX, CMW, CMB, S1, P0, D1, 1, outputs=[CMOUT]),
     C_FLOPS + 36, C_READ + 16, C_OUT)
case("cudnn_convolution_add_relu", lambda: built(aten.cudnn_convolution_add_relu.default, CMX, CMW, CMOUT, 1.0, CMB, S1, P0, D1, 1, outputs=[CMOUT]),
     C_FLOPS + 3 * 36, C_READ + C_OUT + 16, C_OUT)
case("_slow_conv2d_forward", lambda: run(aten._slow_conv2d_forward.default, CX(), CW(), [3, 3], CB(), S1, P0), C_FLOPS, C_READ + 16, C_OUT)
case("thnn_conv2d", lambda: run(aten.thnn_conv2d.default, CX(), CW(), [3, 3]), C_FLOPS, C_READ, C_OUT)
case("mkldnn_convolution", lambda: built(aten.mkldnn_convolution.default, m(1, 2, 5, 5), m(4, 2, 3, 3), m(4), P0, S1, D1, 1, outputs=[m(1, 4, 3, 3)]),
     C_FLOPS, C_READ + 16, C_OUT)
case("slow_conv_transpose2d", lambda: run(aten.slow_conv_transpose2d.default, x(1, 2, 3, 3), x(2, 4, 2, 2), [2, 2]),
     2 * 9 * 4 * 2 * 4, (18 + 32) * F32, 64 * F32)
case("slow_conv_transpose3d", lambda: run(aten.slow_conv_transpose3d.default, x(1, 2, 2, 2, 2), x(2, 2, 2, 2, 2), [2, 2, 2]),
     2 * 8 * 8 * 2 * 2, (16 + 32) * F32, 2 * 27 * F32)
# dilation 2: a 3x3 filter spans 5x5, (1, 2, 5, 5) -> (1, 4, 1, 1)
case("slow_conv_dilated2d", lambda: run(aten.slow_conv_dilated2d.default, CX(), CW(), [3, 3], None, S1, P0, [2, 2]),
     2 * 1 * 9 * 4 * 2, C_READ, 4 * F32)
case("slow_conv_dilated3d", lambda: run(aten.slow_conv_dilated3d.default, x(1, 2, 3, 3, 3), x(2, 2, 2, 2, 2), [2, 2, 2], None, [1, 1, 1], [0, 0, 0], [2, 2, 2]),
     2 * 1 * 8 * 2 * 2, (54 + 32) * F32, 2 * F32)
case("slow_conv3d", lambda: run(aten.slow_conv3d.default, x(1, 2, 3, 3, 3), x(2, 2, 2, 2, 2), [2, 2, 2]), 2 * 8 * 8 * 2 * 2, (54 + 32) * F32, 16 * F32)
case("slow_conv3d_forward", lambda: run(aten.slow_conv3d_forward.default, x(1, 2, 3, 3, 3), x(2, 2, 2, 2, 2), [2, 2, 2], None, [1, 1, 1], [0, 0, 0]),
     2 * 8 * 8 * 2 * 2, (54 + 32) * F32, 16 * F32)
# depthwise (1, 4, 5, 5) * (4, 1, 3, 3): one input channel per output: 2 * 9 * 9 * 4 * 1
case("_conv_depthwise2d", lambda: built(aten._conv_depthwise2d.default, m(1, 4, 5, 5), m(4, 1, 3, 3), [3, 3], None, S1, P0, D1, outputs=[m(1, 4, 3, 3)]),
     2 * 9 * 9 * 4, (100 + 36) * F32, C_OUT)
case("conv_depthwise3d", lambda: built(aten.conv_depthwise3d.default, m(1, 2, 3, 3, 3), m(2, 1, 2, 2, 2), [2, 2, 2], None, [1, 1, 1], [0, 0, 0], [1, 1, 1],
                                       outputs=[m(1, 2, 2, 2, 2)]), 2 * 8 * 8 * 2, (54 + 16) * F32, 16 * F32)
case("_nnpack_spatial_convolution", lambda: built(aten._nnpack_spatial_convolution.default, m(1, 2, 5, 5), m(4, 2, 3, 3), m(4), P0, S1, outputs=[m(1, 4, 3, 3)]),
     C_FLOPS, C_READ + 16, C_OUT)
case("miopen_convolution", lambda: built(aten.miopen_convolution.default, CMX, CMW, None, P0, S1, D1, 1, False, False, outputs=[CMOUT]), C_FLOPS, C_READ, C_OUT)
case("miopen_convolution_transpose", lambda: built(aten.miopen_convolution_transpose.default, m(1, 2, 3, 3), m(2, 4, 2, 2), None, P0, P0, S1, D1, 1, False, False,
                                                   outputs=[m(1, 4, 4, 4)]), 2 * 9 * 4 * 2 * 4, (18 + 32) * F32, 64 * F32)
case("miopen_depthwise_convolution", lambda: built(aten.miopen_depthwise_convolution.default, m(1, 4, 5, 5), m(4, 1, 3, 3), None, P0, S1, D1, 4, False, False,
                                                   outputs=[m(1, 4, 3, 3)]), 2 * 9 * 9 * 4, (100 + 36) * F32, C_OUT)
# conv_tbc: input (T=5, B=1, Cin=2), weight (k=3, Cin=2, Cout=4) -> (3, 1, 4): 2 * 3 * 1 * 4 * 2 * 3
case("conv_tbc", lambda: run(aten.conv_tbc.default, x(5, 1, 2), x(3, 2, 4), x(4)), 2 * 3 * 4 * 2 * 3, (10 + 24 + 4) * F32, 12 * F32)

# ---- attention: the two GEMMs, 2 * B*H * Sq * Sk * (Dqk + Dv) (flop_counter's count) -----------------

Q = lambda: x(1, 2, 4, 8)  # noqa: E731  (B=1, H=2, S=4, D=8)
QM = m(1, 2, 4, 8, device="cuda")
ATT_FLOPS, ATT_READ, ATT_OUT, LSE = 2 * 2 * 4 * 4 * (8 + 8), 3 * 64 * F32, 64 * F32, 2 * 4 * F32
case("scaled_dot_product_attention", lambda: run(aten.scaled_dot_product_attention.default, Q(), Q(), Q()), ATT_FLOPS, ATT_READ, ATT_OUT)
case("_scaled_dot_product_flash_attention_for_cpu", lambda: run(aten._scaled_dot_product_flash_attention_for_cpu.default, Q(), Q(), Q()),
     ATT_FLOPS, ATT_READ, ATT_OUT + LSE)
# the math path writes the (1, 2, 4, 4) weights too and runs ~5 kernels
case("_scaled_dot_product_attention_math", lambda: run(aten._scaled_dot_product_attention_math.default, Q(), Q(), Q()),
     ATT_FLOPS, ATT_READ, ATT_OUT + 32 * F32, kernels=5)
case("_scaled_dot_product_attention_math_for_mps", lambda: built(aten._scaled_dot_product_attention_math_for_mps.default, QM, QM, QM,
                                                                 outputs=[QM, m(1, 2, 4, 4, device="cuda")]),
     ATT_FLOPS, ATT_READ, ATT_OUT + 32 * F32, kernels=5)
_LSE = m(1, 2, 4, device="cuda")
case("_scaled_dot_product_flash_attention", lambda: built(aten._scaled_dot_product_flash_attention.default, QM, QM, QM, outputs=[QM, _LSE]),
     ATT_FLOPS, ATT_READ, ATT_OUT + LSE)
# grouped-query attention: 2 query heads, 1 key/value head; the work is per query head, K/V read once
case("_scaled_dot_product_efficient_attention", lambda: built(aten._scaled_dot_product_efficient_attention.default, QM, m(1, 1, 6, 8, device="cuda"),
                                                              m(1, 1, 6, 4, device="cuda"), None, True, outputs=[m(1, 2, 4, 4, device="cuda"), _LSE]),
     2 * 2 * 4 * 6 * (8 + 4), (64 + 48 + 24) * F32, 32 * F32 + LSE)
case("_scaled_dot_product_cudnn_attention", lambda: built(aten._scaled_dot_product_cudnn_attention.default, QM, QM, QM, None, True, outputs=[QM, _LSE]),
     ATT_FLOPS, ATT_READ, ATT_OUT + LSE)
case("_scaled_dot_product_fused_attention_overrideable", lambda: built(aten._scaled_dot_product_fused_attention_overrideable.default, QM, QM, QM,
                                                                       outputs=[QM]), ATT_FLOPS, ATT_READ, ATT_OUT)
# the kernels' own entries take (B, S, H, D): S=4, H=2
QB = m(1, 4, 2, 8, device="cuda")
case("_flash_attention_forward", lambda: built(aten._flash_attention_forward.default, QB, QB, QB, None, None, 4, 4, 0.0, False, False,
                                               outputs=[QB, _LSE]), ATT_FLOPS, ATT_READ, ATT_OUT + LSE)
# packed: 2 sequences of at most 4 in 6 rows (cumulative lengths 0, 4, 6): counted as 2 x (4, 4)
QP, CUM = m(6, 2, 8, device="cuda"), m(3, dtype=torch.int32, device="cuda")
case("_flash_attention_forward", lambda: built(aten._flash_attention_forward.default, QP, QP, QP, CUM, CUM, 4, 4, 0.0, False, False, outputs=[QP]),
     2 * (2 * 2) * 4 * 4 * (8 + 8), 3 * 6 * 2 * 8 * F32 + 2 * 3 * 4, 6 * 2 * 8 * F32, variant="packed sequences")
case("_efficient_attention_forward", lambda: built(aten._efficient_attention_forward.default, QB, QB, QB, None, None, None, None, None, 0.0, 0,
                                                   outputs=[QB, _LSE]), ATT_FLOPS, ATT_READ, ATT_OUT + LSE)


# ---- normalization: per element 3 (statistics) + 2 (normalize) + 1 per affine term, 2 per row -------

BX = lambda: x(2, 4, 3)  # noqa: E731  (N=2, C=4, L=3): 24 elements, 96 bytes
C4 = lambda: x(4)  # noqa: E731
BN_TRAIN = 24 * (3 + 2 + 2) + 2 * 4 + 3 * 4 * 2  # statistics, normalize, affine; per channel; running updates
BN_EVAL = 24 * (2 + 2) + 2 * 4
BN_READ = 96 + 4 * 16  # input, weight, bias, running mean and var
BN_STATS = 16 + 16  # saved mean and inverse std, (4,) each
case("native_batch_norm", lambda: run(aten.native_batch_norm.default, BX(), C4(), C4(), C4(), C4(), True, 0.1, 1e-5),
     BN_TRAIN, BN_READ, 96 + BN_STATS + 32, kernels=3)  # the running statistics are written back
case("batch_norm", lambda: run(aten.batch_norm.default, BX(), C4(), C4(), C4(), C4(), False, 0.1, 1e-5, True), BN_EVAL, BN_READ, 96)
case("_batch_norm_impl_index", lambda: run(aten._batch_norm_impl_index.default, BX(), C4(), C4(), C4(), C4(), True, 0.1, 1e-5, True),
     BN_TRAIN, BN_READ, 96 + BN_STATS + 32, kernels=3)
case("_native_batch_norm_legit", lambda: run(aten._native_batch_norm_legit.default, BX(), C4(), C4(), C4(), C4(), True, 0.1, 1e-5),
     BN_TRAIN, BN_READ, 32 + 96 + BN_STATS, kernels=3)  # the schema marks the statistics written
case("_native_batch_norm_legit", lambda: run(aten._native_batch_norm_legit.no_stats, BX(), C4(), C4(), True, 0.1, 1e-5),
     24 * 7 + 2 * 4, 96 + 32, 96 + BN_STATS, kernels=3, variant="no running statistics")
case("_native_batch_norm_legit_no_training", lambda: run(aten._native_batch_norm_legit_no_training.default, BX(), C4(), C4(), C4(), C4(), 0.1, 1e-5),
     BN_EVAL, BN_READ, 96)
case("_native_batch_norm_legit_functional", lambda: run(aten._native_batch_norm_legit_functional.default, BX(), C4(), C4(), C4(), C4(), True, 0.1, 1e-5),
     BN_TRAIN, BN_READ, 96 + BN_STATS + 32, kernels=3)  # the new statistics are outputs
case("_batch_norm_with_update", lambda: run(aten._batch_norm_with_update.default, BX(), C4(), C4(), C4(), C4(), 0.1, 1e-5),
     BN_TRAIN, BN_READ, 32 + 96 + BN_STATS, kernels=3)
case("_batch_norm_no_update", lambda: run(aten._batch_norm_no_update.default, BX(), C4(), C4(), C4(), C4(), 0.1, 1e-5), BN_EVAL, BN_READ, 96)
BM, CM4 = m(2, 4, 3, device="cuda"), m(4, device="cuda")
case("cudnn_batch_norm", lambda: built(aten.cudnn_batch_norm.default, BM, CM4, CM4, CM4, CM4, True, 0.1, 1e-5, outputs=[BM, CM4, CM4]),
     BN_TRAIN, BN_READ, 96 + BN_STATS + 32)  # one cuDNN kernel
case("miopen_batch_norm", lambda: built(aten.miopen_batch_norm.default, BM, CM4, CM4, CM4, CM4, False, 0.1, 1e-5, outputs=[BM, CM4, CM4]),
     BN_EVAL, BN_READ, 96 + BN_STATS)
# instance norm: statistics per (sample, channel): 2 * 4 rows
case("instance_norm", lambda: run(aten.instance_norm.default, BX(), C4(), C4(), None, None, True, 0.1, 1e-5, False),
     24 * 7 + 2 * 2 * 4, 96 + 32, 96, kernels=3)
# layer norm over rows of 8: 4 rows
case("native_layer_norm", lambda: run(aten.native_layer_norm.default, x(), [8], r(), r(), 1e-5), N * 7 + 2 * 4, XB + 2 * RB, XB + 2 * 4 * F32)
# weight_norm of v (4, 8) over dim 0: 3 FLOPs per element of v + 2 per slice of g (4, 1); read v and g, write w and the norms
case("_weight_norm_interface", lambda: run(aten._weight_norm_interface.default, x(), x(4, 1), 0), 3 * N + 2 * 4, XB + 4 * F32, XB + 4 * F32)
case("layer_norm", lambda: run(aten.layer_norm.default, x(), [8]), N * 5 + 2 * 4, XB, XB)
# group norm, 2 groups of 2 channels: 2 samples x 2 groups statistics rows
case("native_group_norm", lambda: run(aten.native_group_norm.default, BX(), C4(), C4(), 2, 4, 3, 2, 1e-5),
     24 * 7 + 2 * 4, 96 + 32, 96 + 2 * 4 * F32, kernels=3)
case("group_norm", lambda: run(aten.group_norm.default, BX(), 2), 24 * 5 + 2 * 4, 96, 96, kernels=2)
# RMS norm: square and accumulate 2, scale 1, weight 1
case("rms_norm", lambda: run(aten.rms_norm.default, x(), [8], r()), N * 4 + 2 * 4, XB + RB, XB)
case("_fused_rms_norm", lambda: built(aten._fused_rms_norm.default, m(4, 8), [8], None, 1e-5, outputs=[m(4, 8), m(4, 1)]),
     N * 3 + 2 * 4, XB, XB + 4 * F32)

# ---- pooling and resampling (roofline.costs.pooling) ----------------------------------------------------

P1, P2, P3 = (lambda: x(1, 4, 8)), (lambda: x(1, 1, 4, 8)), (lambda: x(1, 1, 2, 4, 8))  # 128, 128, 256 bytes
# max: K compares per output; (1, 4, 8) by 2 -> 16 outputs; (4, 8) by 2x2 -> 8; (2, 4, 8) by 2x2x2 -> 8
case("max_pool1d", lambda: run(aten.max_pool1d.default, P1(), [2]), 2 * 16, XB, 16 * F32)
case("max_pool2d", lambda: run(aten.max_pool2d.default, P2(), [2, 2]), 4 * 8, XB, 8 * F32)
case("max_pool3d", lambda: run(aten.max_pool3d.default, P3(), [2]), 8 * 8, 2 * XB, 8 * F32)  # one size for all 3 dims
case("max_pool1d_with_indices", lambda: run(aten.max_pool1d_with_indices.default, P1(), [2]), 2 * 16, XB, 16 * (F32 + I64))
case("max_pool2d_with_indices", lambda: run(aten.max_pool2d_with_indices.default, P2(), [2, 2]), 4 * 8, XB, 8 * (F32 + I64))
case("max_pool3d_with_indices", lambda: run(aten.max_pool3d_with_indices.default, P3(), [2, 2, 2]), 8 * 8, 2 * XB, 8 * (F32 + I64))
case("mkldnn_max_pool2d", lambda: built(aten.mkldnn_max_pool2d.default, m(1, 1, 4, 8), [2, 2], outputs=[m(1, 1, 2, 4)]), 4 * 8, XB, 8 * F32)
case("mkldnn_max_pool3d", lambda: built(aten.mkldnn_max_pool3d.default, m(1, 1, 2, 4, 8), [2, 2, 2], outputs=[m(1, 1, 1, 2, 4)]), 8 * 8, 2 * XB, 8 * F32)
case("quantized_max_pool2d", lambda: built(aten.quantized_max_pool2d.default, m(1, 1, 4, 8, dtype=torch.uint8), [2],
                                           outputs=[m(1, 1, 2, 4, dtype=torch.uint8)]), 4 * 8, N, 8)
# average: K adds + 1 divide per output
case("avg_pool1d", lambda: run(aten.avg_pool1d.default, P1(), [2]), (2 + 1) * 16, XB, 16 * F32)
case("avg_pool2d", lambda: run(aten.avg_pool2d.default, P2(), [2, 2]), (4 + 1) * 8, XB, 8 * F32)
case("avg_pool3d", lambda: run(aten.avg_pool3d.default, P3(), [2, 2, 2]), (8 + 1) * 8, 2 * XB, 8 * F32)
# adaptive: the exact windows; 8 -> 3 spans [0, 3), [2, 6), [5, 8): 3 + 4 + 3 = 10 taps per plane
case("adaptive_avg_pool1d", lambda: run(aten.adaptive_avg_pool1d.default, P1(), [3]), 4 * 10 + 12, XB, 12 * F32)
case("adaptive_max_pool1d", lambda: run(aten.adaptive_max_pool1d.default, P1(), [3]), 4 * 10, XB, 12 * (F32 + I64))
# (4, 8) -> (2, 4): windows of 2 x 2, every input once: 32 taps
case("adaptive_avg_pool2d", lambda: run(aten.adaptive_avg_pool2d.default, P2(), [2, 4]), 32 + 8, XB, 8 * F32)
case("_adaptive_avg_pool2d", lambda: run(aten._adaptive_avg_pool2d.default, P2(), [2, 4]), 32 + 8, XB, 8 * F32)
case("adaptive_max_pool2d", lambda: run(aten.adaptive_max_pool2d.default, P2(), [2, 4]), 32, XB, 8 * (F32 + I64))
case("adaptive_avg_pool3d", lambda: run(aten.adaptive_avg_pool3d.default, P3(), [1, 2, 4]), 64 + 8, 2 * XB, 8 * F32)
case("_adaptive_avg_pool3d", lambda: run(aten._adaptive_avg_pool3d.default, P3(), [1, 2, 4]), 64 + 8, 2 * XB, 8 * F32)
case("adaptive_max_pool3d", lambda: run(aten.adaptive_max_pool3d.default, P3(), [1, 2, 4]), 64, 2 * XB, 8 * (F32 + I64))
# nearest: a gather, no arithmetic; twice the size along each dim
case("upsample_nearest1d", lambda: run(aten.upsample_nearest1d.default, P1(), [16]), 0, XB, 2 * XB)
case("upsample_nearest2d", lambda: run(aten.upsample_nearest2d.default, P2(), [8, 16]), 0, XB, 4 * XB)
case("upsample_nearest3d", lambda: run(aten.upsample_nearest3d.default, P3(), [2, 8, 16]), 0, 2 * XB, 8 * XB)
case("_upsample_nearest_exact1d", lambda: run(aten._upsample_nearest_exact1d.default, P1(), [16]), 0, XB, 2 * XB)
case("_upsample_nearest_exact2d", lambda: run(aten._upsample_nearest_exact2d.default, P2(), [8, 16]), 0, XB, 4 * XB)
case("_upsample_nearest_exact3d", lambda: run(aten._upsample_nearest_exact3d.default, P3(), [2, 8, 16]), 0, 2 * XB, 8 * XB)
# interpolation: 2 * taps - 1 per output (a multiply per tap, adds between): linear 3, bilinear 7,
# trilinear 15, bicubic 31
case("upsample_linear1d", lambda: run(aten.upsample_linear1d.default, P1(), [16], False), 3 * 64, XB, 2 * XB)
case("upsample_bilinear2d", lambda: run(aten.upsample_bilinear2d.default, P2(), [8, 16], False), 7 * 128, XB, 4 * XB)
case("upsample_trilinear3d", lambda: run(aten.upsample_trilinear3d.default, P3(), [2, 8, 16], False), 15 * 256, 2 * XB, 8 * XB)
case("upsample_bicubic2d", lambda: run(aten.upsample_bicubic2d.default, P2(), [8, 16], False), 31 * 128, XB, 4 * XB)
case("_upsample_bilinear2d_aa", lambda: run(aten._upsample_bilinear2d_aa.default, P2(), [8, 16], False), 7 * 128, XB, 4 * XB)
case("_upsample_bicubic2d_aa", lambda: run(aten._upsample_bicubic2d_aa.default, P2(), [8, 16], False), 31 * 128, XB, 4 * XB)
# grid_sample: per output 2 * taps - 1, per grid coordinate 4; (1, 3, 5, 2) grid -> 15 outputs, 30 coordinates
case("grid_sampler_2d", lambda: run(aten.grid_sampler_2d.default, P2(), x(1, 3, 5, 2) - 1, 0, 0, False),
     7 * 15 + 4 * 30, XB + 30 * F32, 15 * F32)
case("grid_sampler_2d", lambda: run(aten.grid_sampler_2d.default, P2(), x(1, 3, 5, 2) - 1, 2, 0, False),
     31 * 15 + 4 * 30, XB + 30 * F32, 15 * F32, variant="bicubic")
case("grid_sampler_3d", lambda: run(aten.grid_sampler_3d.default, P3(), x(1, 2, 3, 5, 3) - 1, 1, 0, False),
     4 * 90, 2 * XB + 90 * F32, 30 * F32)  # nearest: no interpolation arithmetic

# ---- reductions (roofline.costs.reduction): per input element, plus per output element --------------

case("sum", lambda: run(aten.sum.default, x()), N, XB, F32)
case("sum", lambda: run(aten.sum.dim_IntList, x(), [1]), N, XB, 4 * F32, variant="over rows")
case("prod", lambda: run(aten.prod.default, x()), N, XB, F32)
case("amax", lambda: run(aten.amax.default, x(), [1]), N, XB, 4 * F32)
case("amin", lambda: run(aten.amin.default, x(), [1]), N, XB, 4 * F32)
case("argmax", lambda: run(aten.argmax.default, x(), 1), N, XB, 4 * I64)
case("argmin", lambda: run(aten.argmin.default, x(), 1), N, XB, 4 * I64)
case("any", lambda: run(aten.any.default, x()), N, XB, B1)
case("all", lambda: run(aten.all.default, x()), N, XB, B1)
case("nansum", lambda: run(aten.nansum.default, x()), 2 * N, XB, F32)  # select + add
case("count_nonzero", lambda: run(aten.count_nonzero.dim_IntList, x(), [1]), 2 * N, XB, 4 * I64)
case("aminmax", lambda: run(aten.aminmax.default, x(), dim=1), 2 * N, XB, 2 * 4 * F32)
case("mean", lambda: run(aten.mean.default, x()), N + 1, XB, F32)  # + the divide
case("mean", lambda: run(aten.mean.dim, x(), [1]), N + 4, XB, 4 * F32, variant="over rows")
case("nanmean", lambda: run(aten.nanmean.default, x()), 2 * N + 1, XB, F32)
case("var", lambda: run(aten.var.correction, x(), [1]), 3 * N + 2 * 4, XB, 4 * F32)  # Welford 3, divide 2
case("var_mean", lambda: run(aten.var_mean.correction, x(), [1]), 3 * N + 2 * 4, XB, 2 * 4 * F32)
case("std", lambda: run(aten.std.default, x()), 3 * N + 3, XB, F32)  # + the sqrt
case("std_mean", lambda: run(aten.std_mean.correction, x(), [1]), 3 * N + 3 * 4, XB, 2 * 4 * F32)
case("cumsum", lambda: run(aten.cumsum.default, x(), 1), N, XB, XB)
case("cumsum_", lambda: run(aten.cumsum_.default, x(), 1), N, XB, XB)
case("cumprod", lambda: run(aten.cumprod.default, x(), 1), N, XB, XB)
case("cumprod_", lambda: run(aten.cumprod_.default, x(), 1), N, XB, XB)
case("cummax", lambda: run(aten.cummax.default, x(), 1), N, XB, XB + N * I64)
case("cummin", lambda: run(aten.cummin.default, x(), 1), N, XB, XB + N * I64)
case("logcumsumexp", lambda: run(aten.logcumsumexp.default, x(), 1), 4 * N, XB, XB)
# logsumexp: max, subtract, exp, add per element; log and add back per row; ATen's 9 kernels
case("logsumexp", lambda: run(aten.logsumexp.default, x(), [1]), 4 * N + 2 * 4, XB, 4 * F32, kernels=9)
case("special_logsumexp", lambda: run(aten.special_logsumexp.default, x(), [1]), 4 * N + 2 * 4, XB, 4 * F32, kernels=9)
case("trace", lambda: run(aten.trace.default, x()), 4, XB, F32)  # the 4 diagonal elements
case("max", lambda: run(aten.max.default, x()), N, XB, F32)
case("max", lambda: run(aten.max.dim, x(), 1), N, XB, 4 * (F32 + I64), variant="values and indices")
case("max", lambda: run(aten.max.other, x(), x()), N, 2 * XB, XB, variant="elementwise")
case("min", lambda: run(aten.min.dim, x(), 1), N, XB, 4 * (F32 + I64))
# p-norms: p=2 square, add + a sqrt per output; p=1, inf, 0 two per element; other p: abs, pow 3, add + pow per output
case("linalg_vector_norm", lambda: run(aten.linalg_vector_norm.default, x()), 2 * N + 1, XB, F32)
case("linalg_vector_norm", lambda: run(aten.linalg_vector_norm.default, x(), 1), 2 * N, XB, F32, variant="p=1")
case("linalg_vector_norm", lambda: run(aten.linalg_vector_norm.default, x(), float("inf")), 2 * N, XB, F32, variant="p=inf")
case("linalg_vector_norm", lambda: run(aten.linalg_vector_norm.default, x(), 0), 2 * N, XB, F32, variant="p=0")
case("norm", lambda: run(aten.norm.ScalarOpt_dim, x(), 3, [1]), 5 * N + 3 * 4, XB, 4 * F32)
case("norm", lambda: run(aten.norm.Scalar, x(), 2), 2 * N + 1, XB, F32, variant="p=2")
case("frobenius_norm", lambda: run(aten.frobenius_norm.dim, x(), [0, 1]), 2 * N + 1, XB, F32)
case("dist", lambda: run(aten.dist.default, x(), x()), 3 * N + 1, 2 * XB, F32)  # subtract + the 2-norm
# losses: elementwise then a mean (a second kernel); reduction='none' drops the accumulate and the kernel
case("mse_loss", lambda: run(aten.mse_loss.default, x(), x()), 3 * N + 1, 2 * XB, F32, kernels=2)
case("mse_loss", lambda: run(aten.mse_loss.default, x(), x(), 0), 2 * N, 2 * XB, XB, variant="reduction='none'")
case("l1_loss", lambda: run(aten.l1_loss.default, x(), x()), 3 * N + 1, 2 * XB, F32, kernels=2)
case("smooth_l1_loss", lambda: run(aten.smooth_l1_loss.default, x(), x()), 5 * N + 1, 2 * XB, F32, kernels=2)
case("huber_loss", lambda: run(aten.huber_loss.default, x(), x()), 5 * N + 1, 2 * XB, F32, kernels=2)
case("soft_margin_loss", lambda: run(aten.soft_margin_loss.default, x(), x()), 5 * N + 1, 2 * XB, F32, kernels=2)
case("kl_div", lambda: run(aten.kl_div.default, x(), x()), 4 * N + 1, 2 * XB, F32, kernels=2)
case("binary_cross_entropy", lambda: run(aten.binary_cross_entropy.default, x() / 2, x() / 2), 7 * N + 1, 2 * XB, F32, kernels=2)
case("binary_cross_entropy_with_logits", lambda: run(aten.binary_cross_entropy_with_logits.default, x(), x()), 8 * N + 1, 2 * XB, F32, kernels=6)
# nll: one gathered log-probability per target (4 targets of 8 classes), + 1 for the mean
T4 = lambda: torch.tensor([0, 3, 5, 7])  # noqa: E731
case("nll_loss_forward", lambda: run(aten.nll_loss_forward.default, x(), T4(), None, 1, -100), 4 + 1, 4 * F32 + 4 * I64, 2 * F32)
case("nll_loss", lambda: run(aten.nll_loss.default, x(), T4()), 4 + 1, 4 * F32 + 4 * I64, F32)
case("nll_loss_nd", lambda: run(aten.nll_loss_nd.default, x(), T4(), r()), 4 * 2 + 1, 4 * F32 + 4 * I64 + RB, F32)  # x the class weight
T22 = lambda: torch.tensor([[[0, 3], [5, 7]]])  # noqa: E731
case("nll_loss2d_forward", lambda: run(aten.nll_loss2d_forward.default, x(1, 8, 2, 2), T22(), None, 1, -100), 4 + 1, 4 * F32 + 4 * I64, 2 * F32)
case("nll_loss2d", lambda: run(aten.nll_loss2d.default, x(1, 8, 2, 2), T22(), None, 2), 4, 4 * F32 + 4 * I64, F32)  # a sum
# FFT: 5 n log2 n per complex transform of n points, half for a real input or output; 4 rows of 16
case("_fft_r2c", lambda: run(aten._fft_r2c.default, x(4, 16), [1], 0, True), 4 * (5 * 16 * 4) // 2, 4 * 16 * F32, 4 * 9 * C64)
case("_fft_c2c", lambda: run(aten._fft_c2c.default, x(4, 16, dtype=torch.complex64), [1], 0, True), 4 * 5 * 16 * 4, 4 * 16 * C64, 4 * 16 * C64)
case("_fft_c2r", lambda: run(aten._fft_c2r.default, x(4, 9, dtype=torch.complex64), [1], 0, 16), 4 * (5 * 16 * 4) // 2, 4 * 9 * C64, 4 * 16 * F32)

# ---- softmax: max, subtract, exp, accumulate, divide: 5 per element ------------------------------------

case("_softmax", lambda: run(aten._softmax.default, x(), 1, False), 5 * N, XB, XB)
case("softmax", lambda: run(aten.softmax.int, x(), 1), 5 * N, XB, XB)
case("special_softmax", lambda: run(aten.special_softmax.default, x(), 1), 5 * N, XB, XB)
case("_log_softmax", lambda: run(aten._log_softmax.default, x(), 1, False), 5 * N + 4, XB, XB)  # + a log per row
case("log_softmax", lambda: run(aten.log_softmax.int, x(), 0), 5 * N + 8, XB, XB)  # 8 columns
case("special_log_softmax", lambda: run(aten.special_log_softmax.default, x(), 1), 5 * N + 4, XB, XB)
case("_safe_softmax", lambda: run(aten._safe_softmax.default, x(), 1), 8 * N, XB, XB, kernels=6)


# ---- indexing (roofline.costs.indexing): a gather reads what it gathers; scatters write what they update --

IDX = lambda: torch.tensor([[0, 2, 5]] * 4)  # noqa: E731  (4, 3) int64: 96 bytes
ROWS = lambda: torch.tensor([0, 2])  # noqa: E731  (2,) int64: 16 bytes
SRC = lambda: x(4, 3)  # noqa: E731  48 bytes
case("gather", lambda: run(aten.gather.default, x(), 1, IDX()), 0, 12 * F32 + 12 * I64, 12 * F32)
case("index_select", lambda: run(aten.index_select.default, x(), 0, ROWS()), 0, 2 * RB + 2 * I64, 2 * RB)
case("take", lambda: run(aten.take.default, x(), torch.tensor([1, 5, 9])), 0, 3 * F32 + 3 * I64, 3 * F32)
case("take_along_dim", lambda: run(aten.take_along_dim.default, x(), IDX(), 1), 0, 12 * F32 + 12 * I64, 12 * F32)
case("gather", lambda: run(aten.gather.default, x(4, 2), 1, IDX() % 2), 0, 8 * F32 + 12 * I64, 12 * F32,
     variant="more gathered than the source holds: the source read once")
case("index", lambda: run(aten.index.Tensor, x(), [torch.tensor([0, 2, 3])]), 0, 3 * RB + 3 * I64, 3 * RB)
MASK4 = lambda: torch.tensor([True, False, True, True])  # noqa: E731
# a boolean mask: its nonzero first (2 kernels more)
case("index", lambda: run(aten.index.Tensor, x(), [MASK4()]), 0, 3 * RB + 4 * B1, 3 * RB, kernels=3, variant="boolean mask")
case("_unsafe_index", lambda: run(aten._unsafe_index.Tensor, x(), [torch.tensor([0, 2, 3])]), 0, 3 * RB + 3 * I64, 3 * RB)
# scatter along dim 1 of (4, 8) at (4, 3) indices: 12 updates; out of place copies self first (2 kernels)
SC_IN = 12 * I64 + 12 * F32  # index and source read
case("scatter", lambda: run(aten.scatter.src, x(), 1, IDX(), SRC()), 0, SC_IN + XB, 12 * F32 + XB, kernels=2)
case("scatter_", lambda: run(aten.scatter_.value, x(), 1, IDX(), 2.0), 0, 12 * I64, 12 * F32)
# accumulating: 1 FLOP per update, the updated destination elements read too
case("scatter_add", lambda: run(aten.scatter_add.default, x(), 1, IDX(), SRC()), 12, SC_IN + 12 * F32 + XB, 12 * F32 + XB, kernels=2)
case("scatter_add_", lambda: run(aten.scatter_add_.default, x(), 1, IDX(), SRC()), 12, SC_IN + 12 * F32, 12 * F32)
case("scatter_reduce", lambda: run(aten.scatter_reduce.two, x(), 1, IDX(), SRC(), "sum"), 12, SC_IN + 12 * F32 + XB, 12 * F32 + XB, kernels=2)
case("scatter_reduce_", lambda: run(aten.scatter_reduce_.two, x(), 1, IDX(), SRC(), "amax"), 12, SC_IN + 12 * F32, 12 * F32)
case("scatter_", lambda: run(aten.scatter_.reduce, x(), 1, IDX(), SRC(), reduce="add"), 12, SC_IN + 12 * F32, 12 * F32,
     variant="reduce='add' accumulates")
# index_add: rows 0 and 2 of (4, 8) get a (2, 8) source: 16 updates
IA_IN = 2 * I64 + 2 * RB
case("index_add", lambda: run(aten.index_add.default, x(), 0, ROWS(), x(2, 8)), 16, IA_IN + 2 * RB + XB, 2 * RB + XB, kernels=2)
case("index_add_", lambda: run(aten.index_add_.default, x(), 0, ROWS(), x(2, 8), alpha=2), 2 * 16, IA_IN + 2 * RB, 2 * RB)  # + the alpha multiply
case("index_copy", lambda: run(aten.index_copy.default, x(), 0, ROWS(), x(2, 8)), 0, IA_IN + XB, 2 * RB + XB, kernels=2)
case("index_copy_", lambda: run(aten.index_copy_.default, x(), 0, ROWS(), x(2, 8)), 0, IA_IN, 2 * RB)
case("index_reduce", lambda: run(aten.index_reduce.default, x(), 0, ROWS(), x(2, 8), "prod"), 16, IA_IN + 2 * RB + XB, 2 * RB + XB, kernels=2)
case("index_reduce_", lambda: run(aten.index_reduce_.default, x(), 0, ROWS(), x(2, 8), "amax"), 16, IA_IN + 2 * RB, 2 * RB)
# index_fill of columns 0 and 2 (dim 1): 2 slices of 4
case("index_fill", lambda: run(aten.index_fill.int_Scalar, x(), 1, ROWS(), 0.0), 0, 2 * I64 + XB, 8 * F32 + XB, kernels=2)
case("index_fill_", lambda: run(aten.index_fill_.int_Tensor, x(), 1, ROWS(), torch.tensor(0.0)), 0, 2 * I64 + F32, 8 * F32)
# index_put of rows 0 and 2: 16 positions
case("index_put", lambda: run(aten.index_put.default, x(), [ROWS()], x(2, 8)), 0, 2 * I64 + 2 * RB + XB, 2 * RB + XB, kernels=2)
case("index_put_", lambda: run(aten.index_put_.default, x(), [ROWS()], x(2, 8), True), 16, 2 * I64 + 2 * RB + 2 * RB, 2 * RB, kernels=4)  # sort-based accumulate
case("_index_put_impl_", lambda: run(aten._index_put_impl_.default, x(), [MASK4()], r()), 0, 4 * B1 + RB, XB, kernels=3)  # the mask: at most all 4 rows
case("_unsafe_index_put", lambda: run(aten._unsafe_index_put.default, x(), [ROWS()], x(2, 8)), 0, 2 * I64 + 2 * RB + XB, 2 * RB + XB, kernels=2)
case("index_put", lambda: run(aten.index_put.default, x(), [ROWS(), torch.tensor([1, 4])], x(2)), 0, 2 * 2 * I64 + 2 * F32 + XB, 2 * F32 + XB,
     kernels=2, variant="two index tensors: 2 positions")
case("index_put", lambda: run(aten.index_put.default, x(2, 4, 8), [None, ROWS()], x(2, 2, 8)), 0, 2 * I64 + 2 * 2 * 8 * F32 + 2 * XB,
     2 * 2 * 8 * F32 + 2 * XB, kernels=2, variant="a leading dim taken whole: 2 x 2 rows of 8")
case("put", lambda: run(aten.put.default, x(), torch.tensor([1, 5, 9]), x(3)), 0, 3 * I64 + 3 * F32 + XB, 3 * F32 + XB, kernels=2)
case("put_", lambda: run(aten.put_.default, x(), torch.tensor([1, 5, 9]), x(3), True), 3, 3 * I64 + 3 * F32 + 3 * F32, 3 * F32, kernels=4)
# masked_fill / masked_scatter: one select per element; masked_scatter also prefix-sums the mask (3 kernels)
MASK = lambda: torch.arange(32).reshape(4, 8) % 2 == 0  # noqa: E731  16 of 32 set
case("masked_fill", lambda: run(aten.masked_fill.Scalar, x(), MASK(), 0.0), N, XB + N * B1, XB)
case("masked_fill_", lambda: run(aten.masked_fill_.Scalar, x(), MASK(), 0.0), N, XB + N * B1, XB)
case("masked_scatter", lambda: run(aten.masked_scatter.default, x(), MASK(), x()), N, 2 * XB + N * B1, XB, kernels=3)
case("masked_scatter_", lambda: run(aten.masked_scatter_.default, x(), MASK(), x()), N, 2 * XB + N * B1, XB, kernels=3)
case("masked_select", lambda: run(aten.masked_select.default, x(), MASK()), N, XB + N * B1, 16 * F32, kernels=3)
# nonzero: 1 compare per element; 16 set -> (16, 2) int64 indices
case("nonzero", lambda: run(aten.nonzero.default, MASK()), N, N * B1, 16 * 2 * I64, kernels=2)
case("nonzero_static", lambda: run(aten.nonzero_static.default, MASK(), size=20), N, N * B1, 20 * 2 * I64, kernels=2)
case("argwhere", lambda: run(aten.argwhere.default, MASK()), N, N * B1, 16 * 2 * I64, kernels=2)
case("nonzero_numpy", lambda: run(aten.nonzero_numpy.default, MASK()), N, N * B1, 2 * 16 * I64, kernels=2)
case("where", lambda: run(aten.where.default, MASK()), N, N * B1, 2 * 16 * I64, kernels=2, variant="where(cond) is nonzero")
# sort along rows of 8: 8 * ... n * ceil(log2 8) = 32 * 3; values and int64 indices
case("sort", lambda: run(aten.sort.default, x(), 1), N * 3, XB, XB + N * I64)
case("sort", lambda: run(aten.sort.default, x(1, 5000)), 5000 * 13, 5000 * F32, 5000 * (F32 + I64), kernels=4,
     variant="a row longer than 4096: segmented radix sort")
case("argsort", lambda: run(aten.argsort.default, x(), 1), N * 3, XB, N * I64)
case("msort", lambda: run(aten.msort.default, x()), N * 2, XB, XB)  # along dim 0: columns of 4
# topk 3 of each row of 8: 1 compare per element + sorting the 3 results, 3 * ceil(log2 3) per row
case("topk", lambda: run(aten.topk.default, x(), 3), N + 4 * 3 * 2, XB, 4 * 3 * (F32 + I64), kernels=2)
case("topk", lambda: run(aten.topk.default, x(), 3, 1, True, False), N, XB, 4 * 3 * (F32 + I64), kernels=2, variant="unsorted")
case("kthvalue", lambda: run(aten.kthvalue.default, x(), 2, 1), N * 3, XB, 4 * (F32 + I64), kernels=2)
case("median", lambda: run(aten.median.default, x()), N * 5, XB, F32, kernels=2)  # over all 32: log2 32 = 5
case("nanmedian", lambda: run(aten.nanmedian.dim, x(), 1), N * 3, XB, 4 * (F32 + I64), kernels=2)
case("mode", lambda: run(aten.mode.default, x(), 1), N * 3, XB, 4 * (F32 + I64), kernels=2)
# unique of [3, 1, 3, 2]: sort 4 * ceil(log2 4) + compare and scan 2 * 4; 3 values out
U = lambda: torch.tensor([3, 1, 3, 2])  # noqa: E731
case("_unique2", lambda: run(aten._unique2.default, U(), True, True, True), 4 * 2 + 2 * 4, 4 * I64, (3 + 4 + 3) * I64, kernels=6)
case("_unique", lambda: run(aten._unique.default, U()), 4 * 2 + 2 * 4, 4 * I64, 3 * I64 + 0, kernels=6)
case("unique_dim", lambda: run(aten.unique_dim.default, U(), 0), 4 * 2 + 2 * 4, 4 * I64, (3 + 4 + 3) * I64, kernels=6)  # inverse, counts
case("unique_consecutive", lambda: run(aten.unique_consecutive.default, U()), 2 * 4, 4 * I64, 4 * I64, kernels=6)  # no sort
# binary search over 8 sorted boundaries: 3 compares per query
BOUNDS = lambda: torch.linspace(0.5, 1.5, 8)  # noqa: E731
case("searchsorted", lambda: run(aten.searchsorted.Tensor, BOUNDS(), x()), N * 3, RB + XB, N * I64)
case("bucketize", lambda: run(aten.bucketize.Tensor, x(), BOUNDS()), N * 3, XB + RB, N * I64)
case("bincount", lambda: run(aten.bincount.default, torch.tensor([0, 1, 1, 3, 2, 0])), 6, 6 * I64, 4 * I64, kernels=3)
case("bincount", lambda: run(aten.bincount.default, torch.tensor([0, 1, 1, 3, 2, 0]), x(6)), 2 * 6, 6 * I64 + 6 * F32, 4 * F32, kernels=3,
     variant="weighted: a multiply more")
case("histc", lambda: run(aten.histc.default, x(), 4), 4 * N, XB, 4 * F32, kernels=3)  # bin: sub, mul, floor; add

# ---- embedding: a lookup reads the rows it gathers (roofline.costs.embedding) ----------------------------

EW = lambda: x(10, 8)  # noqa: E731  10 rows of 32 bytes
case("embedding", lambda: run(aten.embedding.default, EW(), torch.tensor([1, 4, 4])), 0, 3 * RB + 3 * I64, 3 * RB)
case("embedding", lambda: run(aten.embedding.default, EW(), torch.arange(20) % 10), 0, 10 * RB + 20 * I64, 20 * RB,
     variant="more lookups than rows: each row read once")
BAG_IDX, BAG_OFF = (lambda: torch.tensor([1, 2, 4, 5, 4, 3])), (lambda: torch.tensor([0, 3]))
BAG_READ = 6 * RB + 6 * I64 + 2 * I64  # 6 rows gathered, indices, offsets
# sum: 1 add per gathered element; outputs (2, 8), offset2bag, bag_size, max_indices
case("embedding_bag", lambda: run(aten.embedding_bag.default, EW(), BAG_IDX(), BAG_OFF()), 6 * 8, BAG_READ,
     2 * RB + 0 + 2 * I64 + 2 * I64, kernels=3)  # offset2bag empty on the CPU for a sum
case("_embedding_bag", lambda: run(aten._embedding_bag.default, EW(), BAG_IDX(), BAG_OFF(), False, 1), 6 * 8 + 2 * 8, BAG_READ,
     2 * RB + 6 * I64 + 2 * I64 + 2 * I64, kernels=3)  # mean: + a divide per output
case("_embedding_bag_forward_only", lambda: run(aten._embedding_bag_forward_only.default, EW(), BAG_IDX(), BAG_OFF(), False, 0, False, x(6)),
     2 * 6 * 8, BAG_READ + 6 * F32, 2 * RB + 0 + 2 * I64 + 2 * I64, kernels=3)  # per-sample weights: a multiply more
# renorm of the 3 looked-up rows: norm (square, add) and rescale: 3 per element
case("embedding_renorm_", lambda: run(aten.embedding_renorm_.default, EW(), torch.tensor([1, 4, 7]), 1.0, 2.0),
     3 * 3 * 8, 3 * RB + 3 * I64, 3 * RB, kernels=3)

# ---- dropout (roofline.costs.dropout): draw, compare, scale per element; the bool mask written -----------

case("native_dropout", lambda: run(aten.native_dropout.default, x(), 0.5, True), 3 * N, XB, XB + N * B1)
case("native_dropout", lambda: run(aten.native_dropout.default, x(), 0.5, False), 0, XB, XB + N * B1, kernels=2,
     variant="train=False: a copy and a mask of ones")
case("dropout", lambda: run(aten.dropout.default, x(), 0.5, True), 3 * N, XB, XB + N * B1)
case("dropout", lambda: run(aten.dropout.default, x(), 0.5, False), 0, 0, 0, kernels=0, variant="eval: the input itself")
case("dropout_", lambda: run(aten.dropout_.default, x(), 0.5, True), 3 * N, XB, XB + N * B1)
case("dropout_", lambda: run(aten.dropout_.default, x(), 0.0, True), 0, 0, 0, kernels=0, variant="p=0: the input itself")
# feature dropout of (2, 4, 4): a mask per (sample, channel), 8 of them: draw and divide each, multiply each element
case("feature_dropout", lambda: run(aten.feature_dropout.default, x(2, 4, 4), 0.5, True), 32 + 2 * 8, XB, XB, kernels=3)
case("feature_dropout_", lambda: run(aten.feature_dropout_.default, x(2, 4, 4), 0.5, True), 32 + 2 * 8, XB, XB, kernels=3)
# alpha dropout: draw, mask multiply, affine a x + b: 4 per element, 6 kernels
case("alpha_dropout", lambda: run(aten.alpha_dropout.default, x(), 0.5, True), 4 * N, XB, XB, kernels=6)
case("alpha_dropout_", lambda: run(aten.alpha_dropout_.default, x(), 0.5, True), 4 * N, XB, XB, kernels=6)
case("feature_alpha_dropout", lambda: run(aten.feature_alpha_dropout.default, x(2, 4, 4), 0.5, True), 4 * N, XB, XB, kernels=6)
case("feature_alpha_dropout_", lambda: run(aten.feature_alpha_dropout_.default, x(2, 4, 4), 0.5, True), 4 * N, XB, XB, kernels=6)


# ---- backward ops (roofline.costs.backward): per element of the gradient made ---------------------------

G = x  # an incoming gradient of x's shape
ACTIVATION_BACKWARD = {  # name -> (FLOPs per element, example)
    "threshold_backward": (1, lambda: run(aten.threshold_backward.default, G(), x(), 0.0)),
    "hardtanh_backward": (2, lambda: run(aten.hardtanh_backward.default, G(), x(), -1.0, 1.0)),
    "leaky_relu_backward": (2, lambda: run(aten.leaky_relu_backward.default, G(), x(), 0.01, False)),
    "hardsigmoid_backward": (2, lambda: run(aten.hardsigmoid_backward.default, G(), x())),
    "hardswish_backward": (4, lambda: run(aten.hardswish_backward.default, G(), x())),
    "sigmoid_backward": (3, lambda: run(aten.sigmoid_backward.default, G(), x())),  # g y (1 - y)
    "tanh_backward": (3, lambda: run(aten.tanh_backward.default, G(), x())),
    "elu_backward": (4, lambda: run(aten.elu_backward.default, G(), 1.0, 1.0, 1.0, False, x())),
    "softplus_backward": (5, lambda: run(aten.softplus_backward.default, G(), x(), 1.0, 20.0)),
    "silu_backward": (6, lambda: run(aten.silu_backward.default, G(), x())),
    "mish_backward": (10, lambda: run(aten.mish_backward.default, G(), x())),
    "gelu_backward": (8, lambda: run(aten.gelu_backward.default, G(), x())),
}
for _name, (_f, _example) in ACTIVATION_BACKWARD.items():
    case(_name, _example, _f * N, 2 * XB, XB)
case("gelu_backward", lambda: run(aten.gelu_backward.default, G(), x(), approximate="tanh"), 12 * N, 2 * XB, XB, variant="tanh form")
case("log_sigmoid_backward", lambda: run(aten.log_sigmoid_backward.default, G(), x(), x()), 5 * N, 3 * XB, XB)  # + the buffer
case("_softmax_backward_data", lambda: run(aten._softmax_backward_data.default, G(), x(), 1, torch.float32), 4 * N, 2 * XB, XB)
case("_log_softmax_backward_data", lambda: run(aten._log_softmax_backward_data.default, G(), x(), 1, torch.float32), 4 * N, 2 * XB, XB)
# layer norm backward over rows of 8: input's 8, weight's 3, bias's 1 per element; 2 kernels
ROW_STAT = lambda: x(4, 1)  # noqa: E731  16 bytes
LN_READ = 2 * XB + 2 * 4 * F32 + 2 * RB  # g, x, mean, rstd, weight, bias
case("native_layer_norm_backward", lambda: run(aten.native_layer_norm_backward.default, G(), x(), [8], ROW_STAT(), ROW_STAT(), r(), r(),
                                               [True, True, True]), N * (8 + 3 + 1), LN_READ, XB + 2 * RB, kernels=2)
case("native_layer_norm_backward", lambda: run(aten.native_layer_norm_backward.default, G(), x(), [8], ROW_STAT(), ROW_STAT(), r(), r(),
                                               [True, False, False]), N * 8, LN_READ, XB, variant="the input's gradient only: 1 kernel")
case("native_layer_norm_backward", lambda: run(aten.native_layer_norm_backward.default, G(), x(), [8], ROW_STAT(), ROW_STAT(), r(), r(),
                                               [False, True, False]), N * 3, LN_READ, RB, kernels=2,
     variant="the weight's gradient only: 3 per element, its own kernel")
# batch norm backward of (2, 4, 3): as layer norm's, per channel; 2 kernels (reduce, elementwise)
BN_BACK_READ = 2 * 96 + 5 * 16  # g, x, weight, running mean and var, saved mean and inverse std
case("native_batch_norm_backward", lambda: run(aten.native_batch_norm_backward.default, BX(), BX(), C4(), C4(), C4(), C4(), C4(), True, 1e-5,
                                               [True, True, True]), 24 * 12, BN_BACK_READ, 96 + 16 + 16, kernels=2)
case("native_batch_norm_backward", lambda: run(aten.native_batch_norm_backward.default, BX(), BX(), C4(), C4(), C4(), C4(), C4(), True, 1e-5,
                                               [False, True, False]), 24 * 3, BN_BACK_READ, 16, kernels=2, variant="the weight's gradient only")
case("native_batch_norm_backward", lambda: run(aten.native_batch_norm_backward.default, BX(), BX(), C4(), C4(), C4(), C4(), C4(), True, 1e-5,
                                               [True, False, True]), 24 * (8 + 1), BN_BACK_READ, 96 + 16, kernels=2,
     variant="the input's and the bias's gradients")
case("batch_norm_backward", lambda: run(aten.batch_norm_backward.default, BX(), BX(), C4(), C4(), C4(), C4(), C4(), True, 1e-5,
                                        [True, True, True], torch.empty(0, dtype=torch.uint8)), 24 * 12, BN_BACK_READ, 96 + 16 + 16, kernels=2)
case("cudnn_batch_norm_backward", lambda: built(aten.cudnn_batch_norm_backward.default, BM, BM, CM4, CM4, CM4, CM4, CM4, 1e-5,
                                                m(0, dtype=torch.uint8, device="cuda"), outputs=[BM, CM4, CM4]), 24 * 12, BN_BACK_READ, 96 + 16 + 16, kernels=2)
case("miopen_batch_norm_backward", lambda: built(aten.miopen_batch_norm_backward.default, BM, BM, CM4, CM4, CM4, CM4, CM4, 1e-5,
                                                 outputs=[BM, CM4, CM4]), 24 * 12, BN_BACK_READ, 96 + 16 + 16, kernels=2)
# group norm backward: 2 groups, (2, 2) statistics; 3 kernels
case("native_group_norm_backward", lambda: run(aten.native_group_norm_backward.default, BX(), BX(), x(2, 2), x(2, 2), C4(), 2, 4, 3, 2,
                                               [True, True, True]), 24 * 12, 2 * 96 + 16 + 16 + 16, 96 + 16 + 16, kernels=3)
case("native_group_norm_backward", lambda: run(aten.native_group_norm_backward.default, BX(), BX(), x(2, 2), x(2, 2), C4(), 2, 4, 3, 2,
                                               [True, False, False]), 24 * 8, 2 * 96 + 16 + 16 + 16, 96, kernels=3,
     variant="the input's gradient only")
case("native_group_norm_backward", lambda: run(aten.native_group_norm_backward.default, BX(), BX(), x(2, 2), x(2, 2), C4(), 2, 4, 3, 2,
                                               [False, False, True]), 24 * 1, 2 * 96 + 16 + 16 + 16, 16, kernels=3,
     variant="the bias's gradient only")
# RMS norm backward: input's 6, weight's 2 per element
case("_fused_rms_norm_backward", lambda: built(aten._fused_rms_norm_backward.default, m(4, 8), m(4, 8), [8], m(4, 1), m(8), [True, True],
                                               outputs=[m(4, 8), m(8)]), N * (6 + 2), 2 * XB + 4 * F32 + RB, XB + RB, kernels=2)
case("_fused_rms_norm_backward", lambda: built(aten._fused_rms_norm_backward.default, m(4, 8), m(4, 8), [8], m(4, 1), m(8), [True, False],
                                               outputs=[m(4, 8)]), N * 6, 2 * XB + 4 * F32 + RB, XB, kernels=1, variant="the input's gradient only")
case("_fused_rms_norm_backward", lambda: built(aten._fused_rms_norm_backward.default, m(4, 8), m(4, 8), [8], m(4, 1), m(8), [False, True],
                                               outputs=[m(8)]), N * 2, 2 * XB + 4 * F32 + RB, RB, kernels=2, variant="the weight's gradient only")
# NLL backward: zeros, then -1 at each of the 4 targets; 2 kernels
case("nll_loss_backward", lambda: run(aten.nll_loss_backward.default, torch.tensor(1.0), x(), T4(), None, 1, -100, torch.tensor(4.0)),
     4, F32 + XB + 4 * I64 + F32, XB, kernels=2)
case("nll_loss2d_backward", lambda: run(aten.nll_loss2d_backward.default, torch.tensor(1.0), x(1, 8, 2, 2), T22(), None, 1, -100, torch.tensor(4.0)),
     4, F32 + XB + 4 * I64 + F32, XB, kernels=2)
case("mse_loss_backward", lambda: run(aten.mse_loss_backward.default, torch.tensor(1.0), x(), x(), 1), 3 * N, F32 + 2 * XB, XB)  # 2 (x - y) g / n
case("native_dropout_backward", lambda: run(aten.native_dropout_backward.default, G(), MASK(), 2.0), 2 * N, XB + N * B1, XB)  # g mask scale
# pooling backward: max scatters each output's gradient to its argmax (zeros first: 2 kernels)
PG2, PI2 = (lambda: x(1, 1, 2, 4)), (lambda: torch.zeros(1, 1, 2, 4, dtype=torch.int64))  # 8 outputs
PG3, PI3 = (lambda: x(1, 1, 1, 2, 4)), (lambda: torch.zeros(1, 1, 1, 2, 4, dtype=torch.int64))
case("max_pool2d_with_indices_backward", lambda: run(aten.max_pool2d_with_indices_backward.default, PG2(), P2(), [2, 2], [2, 2], [0, 0], [1, 1],
                                                     False, PI2()), 8, 8 * F32 + XB + 8 * I64, XB, kernels=2)
case("max_pool3d_with_indices_backward", lambda: run(aten.max_pool3d_with_indices_backward.default, PG3(), P3(), [2, 2, 2], [2, 2, 2], [0, 0, 0],
                                                     [1, 1, 1], False, PI3()), 8, 8 * F32 + 2 * XB + 8 * I64, 2 * XB, kernels=2)
case("adaptive_max_pool2d_backward", lambda: run(aten.adaptive_max_pool2d_backward.default, PG2(), P2(), PI2()), 8, 8 * F32 + XB + 8 * I64, XB, kernels=2)
case("adaptive_max_pool3d_backward", lambda: run(aten.adaptive_max_pool3d_backward.default, PG3(), P3(), PI3()), 8, 8 * F32 + 2 * XB + 8 * I64, 2 * XB,
     kernels=2)
# average pooling backward: a multiply-add per (output, tap)
case("avg_pool2d_backward", lambda: run(aten.avg_pool2d_backward.default, PG2(), P2(), [2, 2], [2, 2], [0, 0], False, True, None),
     8 * 4, 8 * F32 + XB, XB)
case("avg_pool3d_backward", lambda: run(aten.avg_pool3d_backward.default, PG3(), P3(), [2], [2], [0], False, True, None),
     8 * 8, 8 * F32 + 2 * XB, 2 * XB)
case("_adaptive_avg_pool2d_backward", lambda: run(aten._adaptive_avg_pool2d_backward.default, PG2(), P2()), N, 8 * F32 + XB, XB)  # 1 per input
case("_adaptive_avg_pool3d_backward", lambda: run(aten._adaptive_avg_pool3d_backward.default, PG3(), P3()), 2 * N, 8 * F32 + 2 * XB, 2 * XB)
# embedding backward: a zero (10, 8) gradient, then 3 looked-up rows added in: rows read and written again
case("embedding_dense_backward", lambda: run(aten.embedding_dense_backward.default, x(3, 8), torch.tensor([1, 4, 4]), 10, -1, False),
     3 * 8, 3 * RB + 3 * I64 + 3 * RB, 10 * RB + 3 * RB, kernels=2)
# a view's gradient: a zero (4, 8), then the view's gradient copied in
case("select_backward", lambda: run(aten.select_backward.default, r(), [4, 8], 0, 1), 0, RB, XB + RB, kernels=2)
case("slice_backward", lambda: run(aten.slice_backward.default, x(2, 8), [4, 8], 0, 0, 2, 1), 0, 2 * RB, XB + 2 * RB, kernels=2)
case("diagonal_backward", lambda: run(aten.diagonal_backward.default, x(4), [4, 8], 0, 0, 1), 0, 4 * F32, XB + 4 * F32, kernels=2)
# convolution backward of the (1, 2, 5, 5) * (4, 2, 3, 3) forward: input's gradient (the forward's
# FLOPs; reads the output's gradient, 36, and the weight, 72; writes the input's, 50), weight's (the
# forward's FLOPs; reads the output's gradient and the input; writes the weight's), bias's (a sum
# over 36 elements, priced but not counted)
case("convolution_backward", lambda: run(aten.convolution_backward.default, x(1, 4, 3, 3), CX(), CW(), [4], S1, P0, D1, False, P0, 1,
                                         [True, True, True]),
     2 * C_FLOPS, (36 + 72) * F32 + (36 + 50) * F32 + 36 * F32, 50 * F32 + 72 * F32 + 4 * F32, kernels=3)
case("convolution_backward", lambda: run(aten.convolution_backward.default, x(1, 4, 3, 3), x(1, 4, 5, 5), CW(), None, S1, P0, D1, False, P0, 2,
                                         [False, True, False]),
     2 * 2 * 2 * 18 * 9, (36 + 100) * F32, 72 * F32, variant="grouped, the weight's gradient only: 2 groups of (2, 9) @ (9, 18)",
     flop_counter_differs="flop_counter counts a grouped weight gradient groups times (roofline.costs.backward)")
# attention backward: five GEMMs, 2 * B*H * Sq * Sk * (3 Dqk + 2 Dv)
ATT_BACK_FLOPS = 2 * 2 * 4 * 4 * (3 * 8 + 2 * 8)
ATT_BACK_READ = ATT_OUT + ATT_READ + ATT_OUT + LSE  # grad_out, q, k, v, out, logsumexp
case("_scaled_dot_product_flash_attention_for_cpu_backward",
     lambda: run(aten._scaled_dot_product_flash_attention_for_cpu_backward.default, Q(), Q(), Q(), Q(), Q(), x(1, 2, 4), 0.0, False),
     ATT_BACK_FLOPS, ATT_BACK_READ, ATT_READ, kernels=2)
case("_scaled_dot_product_flash_attention_backward",
     lambda: built(aten._scaled_dot_product_flash_attention_backward.default, QM, QM, QM, QM, QM, _LSE, None, None, 4, 4, 0.0, False, None, None,
                   outputs=[QM, QM, QM]), ATT_BACK_FLOPS, ATT_BACK_READ, ATT_READ, kernels=2)
case("_scaled_dot_product_efficient_attention_backward",
     lambda: built(aten._scaled_dot_product_efficient_attention_backward.default, QM, QM, QM, QM, None, QM, _LSE, None, None, 0.0,
                   [True, True, True, False], outputs=[QM, QM, QM]), ATT_BACK_FLOPS, ATT_BACK_READ, ATT_READ)
case("_scaled_dot_product_cudnn_attention_backward",
     lambda: built(aten._scaled_dot_product_cudnn_attention_backward.default, QM, QM, QM, QM, QM, _LSE, None, None, None, None, None, 4, 4, 0.0, False,
                   outputs=[QM, QM, QM]), ATT_BACK_FLOPS, ATT_BACK_READ, ATT_READ)
case("_flash_attention_backward",
     lambda: built(aten._flash_attention_backward.default, QB, QB, QB, QB, QB, _LSE, None, None, 4, 4, 0.0, False, None, None,
                   outputs=[QB, QB, QB]), ATT_BACK_FLOPS, ATT_BACK_READ, ATT_READ)
case("_efficient_attention_backward",
     lambda: built(aten._efficient_attention_backward.default, QB, QB, QB, QB, None, QB, None, None, 4, 4, _LSE, 0.0, None, None, 0, False,
                   outputs=[QB, QB, QB]), ATT_BACK_FLOPS, ATT_BACK_READ, ATT_READ)

# ---- optimizers (roofline.costs.optimizer): lists of tensors; multi_tensor_apply's launches ------------

PARAMS = lambda: [x(4, 8), x(8)]  # noqa: E731  40 elements, 160 bytes a list
PL = 40 * F32
FOREACH_UNARY = {  # FLOPs per element, the pointwise rules
    "neg": 1, "abs": 1, "reciprocal": 1, "sign": 1, "ceil": 1, "floor": 1, "trunc": 1, "frac": 2,
    "sqrt": 1, "rsqrt": 1, "exp": 1, "expm1": 1, "log": 1, "log1p": 1, "log2": 1, "log10": 1,
    "sin": 1, "cos": 1, "tan": 1, "tanh": 1, "sigmoid": 3, "erf": 1, "erfc": 1,
}
FOREACH_BINARY = {"mul": 1, "maximum": 1, "minimum": 1, "add": 1, "sub": 1, "div": 1, "clamp_min": 1, "clamp_max": 1,
                  "pow": 3}  # pow of two lists: exp(n log x)
for _name, _f in FOREACH_UNARY.items():
    case(f"_foreach_{_name}", lambda n=_name: run(ov(f"_foreach_{n}"), PARAMS()), _f * 40, PL, PL)
    case(f"_foreach_{_name}_", lambda n=_name: run(ov(f"_foreach_{n}_"), PARAMS()), _f * 40, PL, PL)
for _name, _f in FOREACH_BINARY.items():
    case(f"_foreach_{_name}", lambda n=_name: run(ov(f"_foreach_{n}", "List"), PARAMS(), PARAMS()), _f * 40, 2 * PL, PL)
    case(f"_foreach_{_name}_", lambda n=_name: run(ov(f"_foreach_{n}_", "List"), PARAMS(), PARAMS()), _f * 40, 2 * PL, PL)
for _name in ("addcmul", "addcdiv"):  # self + v t1 t2: 3 per element
    case(f"_foreach_{_name}", lambda n=_name: run(ov(f"_foreach_{n}", "Scalar"), PARAMS(), PARAMS(), PARAMS()), 3 * 40, 3 * PL, PL)
    case(f"_foreach_{_name}_", lambda n=_name: run(ov(f"_foreach_{n}_", "Scalar"), PARAMS(), PARAMS(), PARAMS()), 3 * 40, 3 * PL, PL)
case("_foreach_lerp", lambda: run(aten._foreach_lerp.Scalar, PARAMS(), PARAMS(), 0.5), 3 * 40, 2 * PL, PL)
case("_foreach_lerp_", lambda: run(aten._foreach_lerp_.List, PARAMS(), PARAMS(), PARAMS()), 3 * 40, 3 * PL, PL)
case("_foreach_add_", lambda: run(aten._foreach_add_.Scalar, PARAMS(), 1.0), 40, PL, PL, variant="a scalar")
# zero and copy overwrite their destination: it is not read
case("_foreach_zero_", lambda: run(aten._foreach_zero_.default, PARAMS()), 0, 0, PL)
case("_foreach_zero", lambda: run(aten._foreach_zero.default, PARAMS()), 0, 0, PL)
case("_foreach_copy_", lambda: run(aten._foreach_copy_.default, PARAMS(), PARAMS()), 0, PL, PL)
case("_foreach_copy", lambda: run(aten._foreach_copy.default, PARAMS(), PARAMS()), 0, PL, PL)
case("_foreach_norm", lambda: run(aten._foreach_norm.Scalar, PARAMS()), 2 * 40, PL, 2 * F32)  # square and add; a 0-d norm each
# launches: 110 one-element tensors fill one kernel's argument space at depth 1; the 111th is a second launch
case("_foreach_neg_", lambda: built(aten._foreach_neg_.default, [m(1)] * 111), 111, 111 * F32, 111 * F32, kernels=2,
     variant="111 tensors: 2 launches")
# ... and 320 chunks of 65536 elements fill one launch: a tensor of 321 chunks needs 2
case("_foreach_neg_", lambda: built(aten._foreach_neg_.default, [m(321 * 65536)]), 321 * 65536, 321 * 65536 * F32,
     321 * 65536 * F32, kernels=2, variant="321 chunks: 2 launches")
case("_foreach_add_", lambda: built(aten._foreach_add_.List, [m(1)] * 65, [m(1)] * 65), 65, 2 * 65 * F32, 65 * F32, kernels=2,
     variant="65 tensors at depth 2 (64 a launch): 2 launches")
# fused Adam: 13 per element (moments 3 + 4, denominator 3, update 3); the 4 lists read and 3 written
# (gradients are written back only to unscale them); the 2 step counts read
STEPS = lambda: [torch.tensor(1.0), torch.tensor(1.0)]  # noqa: E731
ADAM_KW = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, maximize=False)
case("_fused_adam_", lambda: run(aten._fused_adam_.default, PARAMS(), PARAMS(), PARAMS(), PARAMS(), [], STEPS(), weight_decay=0.0, amsgrad=False,
                                 **ADAM_KW), 13 * 40, 4 * PL + 2 * F32, 3 * PL)
case("_fused_adamw_", lambda: run(aten._fused_adamw_.default, PARAMS(), PARAMS(), PARAMS(), PARAMS(), [], STEPS(), weight_decay=0.01, amsgrad=False,
                                  **ADAM_KW), (13 + 1) * 40, 4 * PL + 2 * F32, 3 * PL)  # p (1 - lr wd)
case("_fused_adam_", lambda: run(aten._fused_adam_.default, PARAMS(), PARAMS(), PARAMS(), PARAMS(), [], STEPS(), weight_decay=0.0, amsgrad=False,
                                 grad_scale=torch.tensor(2.0), **ADAM_KW), 13 * 40, 4 * PL + 2 * F32 + F32, 4 * PL,
     variant="with a grad scale: the gradients are unscaled in place")
# functional forms return the new lists instead: amsgrad (a 5th list, its running maximum: + 1) and Adam's decay g + wd p (+ 2)
case("_fused_adam", lambda: run(aten._fused_adam.default, PARAMS(), PARAMS(), PARAMS(), PARAMS(), PARAMS(), STEPS(), weight_decay=0.01, amsgrad=True,
                                **ADAM_KW), (13 + 1 + 2) * 40, 5 * PL + 2 * F32, 5 * PL)
case("_fused_adamw", lambda: run(aten._fused_adamw.default, PARAMS(), PARAMS(), PARAMS(), PARAMS(), [], STEPS(), weight_decay=0.0, amsgrad=False,
                                 **ADAM_KW), 13 * 40, 4 * PL + 2 * F32, 4 * PL)
# fused SGD: update 2, momentum 3, nesterov 2, weight decay 2
SGD_KW = dict(lr=0.1, dampening=0.0, maximize=False, is_first_step=False)
case("_fused_sgd_", lambda: run(aten._fused_sgd_.default, PARAMS(), PARAMS(), PARAMS(), weight_decay=0.01, momentum=0.9, nesterov=True, **SGD_KW),
     (2 + 3 + 2 + 2) * 40, 3 * PL, 2 * PL)
case("_fused_sgd", lambda: run(aten._fused_sgd.default, PARAMS(), PARAMS(), [], weight_decay=0.0, momentum=0.0, nesterov=False, **SGD_KW),
     2 * 40, 2 * PL, 2 * PL)
case("_fused_sgd_", lambda: run(aten._fused_sgd_.default, PARAMS(), PARAMS(), PARAMS(), weight_decay=0.0, momentum=0.9, nesterov=False, **SGD_KW),
     (2 + 3) * 40, 3 * PL, 2 * PL, variant="momentum without nesterov")
# fused Adagrad: s += g g (2), p -= lr g / (sqrt(s) + eps) (4), weight decay 2
ADAGRAD_KW = dict(lr=0.1, lr_decay=0.0, eps=1e-10, maximize=False)
case("_fused_adagrad_", lambda: run(aten._fused_adagrad_.default, PARAMS(), PARAMS(), PARAMS(), STEPS(), weight_decay=0.0, **ADAGRAD_KW),
     6 * 40, 3 * PL + 2 * F32, 2 * PL + 2 * F32)  # the step counts are marked written too
case("_fused_adagrad", lambda: run(aten._fused_adagrad.default, PARAMS(), PARAMS(), PARAMS(), STEPS(), weight_decay=0.1, **ADAGRAD_KW),
     (6 + 2) * 40, 3 * PL + 2 * F32, 3 * PL + 2 * F32)  # new params, grads, sums and steps

# ---- recurrent layers (roofline.costs.rnn): per (layer, direction) over R = T*B rows ---------------------
# input GEMM 2 R G H I, recurrent GEMM 2 R G H H, gate arithmetic R H (LSTM 19, GRU 14, RNN 2, + 2 per gate
# with biases); kernels per (layer, direction) 1 + 2 T

SEQ = lambda: x(3, 2, 4)  # noqa: E731  T=3, B=2, I=4: R = 6 rows, 96 bytes
H0 = lambda: x(1, 2, 5)  # noqa: E731  H=5: 40 bytes
LSTM_W = lambda: [x(20, 4), x(20, 5), x(20), x(20)]  # noqa: E731  880 bytes
LSTM_FLOPS = 2 * 6 * 20 * 4 + 2 * 6 * 20 * 5 + 6 * 5 * (19 + 2 * 4)
case("lstm", lambda: run(aten.lstm.input, SEQ(), [H0(), H0()], LSTM_W(), True, 1, 0.0, False, False, False),
     LSTM_FLOPS, 96 + 2 * 40 + 880, 6 * 5 * F32 + 2 * 40, kernels=1 + 2 * 3)
case("lstm", lambda: run(aten.lstm.data, x(6, 4), torch.tensor([2, 2, 2]), [H0(), H0()], LSTM_W(), True, 1, 0.0, False, False),
     LSTM_FLOPS, 96 + 3 * I64 + 2 * 40 + 880, 6 * 5 * F32 + 2 * 40, kernels=1 + 2 * 3, variant="packed: 3 steps of 2 rows")
case("gru", lambda: run(aten.gru.input, SEQ(), H0(), [x(15, 4), x(15, 5), x(15), x(15)], True, 1, 0.0, False, False, False),
     2 * 6 * 15 * 4 + 2 * 6 * 15 * 5 + 6 * 5 * (14 + 2 * 3), 96 + 40 + (60 + 75 + 15 + 15) * F32, 6 * 5 * F32 + 40, kernels=1 + 2 * 3)
# bidirectional, no biases: two (layer, direction) groups
case("rnn_tanh", lambda: run(aten.rnn_tanh.input, SEQ(), x(2, 2, 5), [x(5, 4), x(5, 5), x(5, 4), x(5, 5)], False, 1, 0.0, False, True, False),
     2 * (2 * 6 * 5 * 4 + 2 * 6 * 5 * 5 + 6 * 5 * 2), 96 + 80 + 2 * (20 + 25) * F32, 6 * 10 * F32 + 80, kernels=2 * (1 + 2 * 3))
case("rnn_relu", lambda: run(aten.rnn_relu.input, x(2, 3, 4), H0(), [x(5, 4), x(5, 5), x(5), x(5)], True, 1, 0.0, False, False, True),
     2 * 6 * 5 * 4 + 2 * 6 * 5 * 5 + 6 * 5 * (2 + 2), 96 + 40 + (20 + 25 + 5 + 5) * F32, 6 * 5 * F32 + 40, kernels=1 + 2 * 3)  # batch first
case("lstm_cell", lambda: run(aten.lstm_cell.default, x(2, 4), [x(2, 5), x(2, 5)], x(20, 4), x(20, 5), x(20), x(20)),
     2 * 2 * 20 * 4 + 2 * 2 * 20 * 5 + 2 * 5 * (19 + 8), (8 + 10 + 10) * F32 + 880, 2 * 10 * F32, kernels=3)
case("gru_cell", lambda: run(aten.gru_cell.default, x(2, 4), x(2, 5), x(15, 4), x(15, 5)),
     2 * 2 * 15 * 4 + 2 * 2 * 15 * 5 + 2 * 5 * 14, (8 + 10 + 60 + 75) * F32, 10 * F32, kernels=3)
case("rnn_tanh_cell", lambda: built(aten.rnn_tanh_cell.default, m(4), m(5), m(5, 4), m(5, 5), m(5), m(5), outputs=[m(5)]),
     2 * 5 * 4 + 2 * 5 * 5 + 5 * (2 + 2), (4 + 5 + 20 + 25 + 5 + 5) * F32, 5 * F32, kernels=4)  # unbatched: one row
case("rnn_relu_cell", lambda: run(aten.rnn_relu_cell.default, x(2, 4), x(2, 5), x(5, 4), x(5, 5)),
     2 * 2 * 5 * 4 + 2 * 2 * 5 * 5 + 2 * 5 * 2, (8 + 10 + 20 + 25) * F32, 10 * F32, kernels=4)
# the CUDA gate kernels, given the gate GEMMs: (2, 4 * 5) gates -> 10 units
case("_thnn_fused_lstm_cell", lambda: built(aten._thnn_fused_lstm_cell.default, m(2, 20), m(2, 20), m(2, 5), m(20), m(20),
                                            outputs=[m(2, 5), m(2, 5), m(2, 20)]), 10 * (19 + 8), (40 + 40 + 10 + 20 + 20) * F32, (10 + 10 + 40) * F32)
case("_thnn_fused_gru_cell", lambda: built(aten._thnn_fused_gru_cell.default, m(2, 15), m(2, 15), m(2, 5), outputs=[m(2, 5), m(2, 25)]),
     10 * 14, (30 + 30 + 10) * F32, (10 + 50) * F32)
SEQ_M, H0_M = m(3, 2, 4, device="cuda"), m(1, 2, 5, device="cuda")
case("_cudnn_rnn", lambda: built(aten._cudnn_rnn.default, SEQ_M, [m(20, 4), m(20, 5), m(20), m(20)], 4, None, H0_M, H0_M, 2, 5, 0, 1, False, 0.0,
                                 False, False, [], None, outputs=[m(3, 2, 5), m(1, 2, 5), m(1, 2, 5)]),
     LSTM_FLOPS, 96 + 880 + 2 * 40, 6 * 5 * F32 + 2 * 40, kernels=1 + 2 * 3)
case("miopen_rnn", lambda: built(aten.miopen_rnn.default, SEQ_M, [m(15, 4), m(15, 5)], 2, H0_M, None, 3, 5, 1, False, 0.0, False, False, [], None,
                                 outputs=[m(3, 2, 5), m(1, 2, 5)]),
     2 * 6 * 15 * 4 + 2 * 6 * 15 * 5 + 6 * 5 * 14, 96 + (60 + 75) * F32 + 40, 6 * 5 * F32 + 40, kernels=1 + 2 * 3)  # GRU, no biases
case("mkldnn_rnn_layer", lambda: built(aten.mkldnn_rnn_layer.default, m(3, 2, 4), m(20, 4), m(20, 5), m(20), m(20), m(2, 5), m(2, 5), False, [], 2, 5,
                                       1, True, False, False, False, outputs=[m(3, 2, 5), m(2, 5), m(2, 5)]),
     LSTM_FLOPS, 96 + 880 + 2 * 40, 6 * 5 * F32 + 2 * 40, kernels=1 + 2 * 3)

# ---- fused native layers: each kernel priced as its own op (OpCost.parts) -------------------------------
# nn.MultiheadAttention(8, 2 heads) on (1, 4, 8), self-attention, weights returned and averaged:
#   qkv mm (4, 8) @ (8, 24)     2*4*24*8 = 1536   read (32 + 192) * 4 = 896   write 96 * 4 = 384
#   bias add over (12, 8) + (8,)            96    read 96 * 4 + 32 = 416       write 384
#   bmm (2, 4, 4) @ (2, 4, 4)   2*2*4*4*4 = 256   read 64 * 4 = 256            write 32 * 4 = 128
#   softmax (2, 4, 4)           5 * 32 = 160      read 128                     write 128
#   bmm (2, 4, 4) @ (2, 4, 4)              256    read 256                     write 128
#   mean over heads (1, 2, 4, 4) -> (1, 4, 4): 32 + 16 = 48, read 128, write 64
#   merge heads (clone)                      0    read 128                     write 128
#   out addmm (4, 8) @ (8, 8) + (8,): 512         read (8 + 32 + 64) * 4 = 416 write 128
MHA_W = lambda: (x(24, 8), x(24), x(8, 8), x(8))  # noqa: E731
case("_native_multi_head_attention", lambda: (lambda q, w: run(aten._native_multi_head_attention.default, q, q, q, 8, 2, *w))(x(1, 4, 8), MHA_W()),
     1536 + 96 + 256 + 160 + 256 + 48 + 0 + 512, 896 + 416 + 256 + 128 + 256 + 128 + 128 + 416,
     384 + 384 + 128 + 128 + 128 + 64 + 128 + 128, kernels=8)
# nn.TransformerEncoderLayer(8, 2 heads, ffn 16, relu) on (1, 4, 8), post-norm: self-attention without
# weights (mm, bias add, fused attention 2*2*4*4*(4+4) = 512, merge, out projection), residual add
# (32; reads both operands), layer norm (32 * 7 + 2 * 4 = 232; read 128 + 64, write 128 + 2 * 16),
# ffn addmm (4, 8) @ (8, 16) 1024 (read (16 + 32 + 128) * 4, write 256), relu 64, addmm (4, 16) @ (16, 8)
# 1024 (read (8 + 64 + 128) * 4, write 128), residual add, layer norm
case("_transformer_encoder_layer_fwd",
     lambda: run(aten._transformer_encoder_layer_fwd.default, x(1, 4, 8), 8, 2, x(24, 8), x(24), x(8, 8), r(), False, False, 1e-5,
                 r(), r(), r(), r(), x(16, 8), x(16), x(8, 16), r()),
     1536 + 96 + 512 + 0 + 512 + 32 + 232 + 1024 + 64 + 1024 + 32 + 232,
     896 + 416 + 384 + 128 + 416 + 256 + 192 + 704 + 256 + 800 + 256 + 192,
     384 + 384 + 128 + 128 + 128 + 128 + 160 + 256 + 256 + 128 + 128 + 160, kernels=12)


# ---- the checks ------------------------------------------------------------------------------------

COUNTED = {p._qualified_op_name.replace("::", ".") for p in flop_registry if isinstance(p, torch._ops.OpOverloadPacket)}


def test_every_registered_op_has_a_case():
    registered = set(registered_ops())
    covered = {c.packet for c in CASES.values()}
    missing = sorted(registered - covered)
    assert not missing, f"{len(missing)} registered ops have no worked example in tests/test_every_op.py: {missing}"
    assert covered <= registered, f"cases for ops with no formula: {sorted(covered - registered)}"


@pytest.mark.parametrize("key", sorted(CASES))
def test_op_cost(key):
    c = CASES[key]
    torch.manual_seed(0)
    example = c.example()
    assert example.op.packet == c.packet, f"the example ran {example.op.name}, not {c.packet}"
    cost, supported = cost_of(example.op)
    assert supported
    got = (cost.flops, cost.bytes_read, cost.bytes_written, cost.kernels)
    assert got == (c.flops, c.read, c.written, c.kernels), "(flops, read, written, kernels)"
    complex_operands = any(t.dtype.is_complex for t in example.op.tensor_inputs())  # flop_counter counts them as real
    if c.packet in COUNTED and example.counted_flops is not None and not complex_operands and not c.flop_counter_differs:
        assert cost.flops == example.counted_flops, "torch.utils.flop_counter counts otherwise"
