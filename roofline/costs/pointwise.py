"""Elementwise ops: unary, binary with broadcasting, ternary, activations, and in-place variants.

FLOP rule (flop_counter does not count these), per OUTPUT element:
  * 1 FLOP per arithmetic operation: add, sub, mul, div, compare, select, min/max, abs, negate,
    bitwise/logical op. A compare-and-select such as relu (max(x, 0)) is 1.
  * 1 FLOP per transcendental function evaluation (exp, log, sin, cos, tan, tanh, erf, sqrt,
    rsqrt, ...), plus 1 per arithmetic operation around it. Such ops are category
    "transcendental" (priced on the calibrated transcendental curve); everything else "pointwise".
  * The composite activations spell out what they compute:
        sigmoid  1/(1+exp(-x))                 3  (exp, add, div)
        silu     x*sigmoid(x)                  4
        gelu     0.5*x*(1+erf(x/sqrt2))        5  (div, erf, add, mul, mul)
        gelu     tanh approximation            9  (x^3: 2, *c, +, *sqrt(2/pi), tanh, +1, *x, *0.5)
        softplus log1p(exp(b*x))/b, threshold  5  (mul, exp, log1p, div, compare)
        mish     x*tanh(softplus(x))           5  (exp, log1p, compare, tanh, mul)
        elu      x>0 ? x : a*(exp(x)-1)        4; selu/celu 5 (one more scale)
        hardswish x*clamp(x+3, 0, 6)/6         5; hardsigmoid 4 (no final multiply)
        pow      integer exponent n: multiplications by repeated squaring, +1 for n < 0;
                 0.5 / -0.5 -> sqrt / rsqrt (1, transcendental); other exponents or a tensor
                 exponent -> exp(n*log(x)): 3, transcendental.
  * add/sub with alpha != 1 add 1 (the multiply). Ops that do no arithmetic still cost >= 1.

Bytes: each tensor input read once at its own size (a broadcast operand, or an expanded one with
stride 0, is read at its un-broadcast size); the output written once. An in-place op reads and
writes its ``self`` and allocates no output; an ``out=`` op writes ``out`` only. Python scalars move
nothing (a 0-d tensor moves its one element).

Kernels (CUDA eager): 1 (one TensorIterator launch), for every op here.
"""

from __future__ import annotations

import torch

from roofline.costs.registry import (
    OpCost,
    arguments,
    compute_dtype_of,
    register,
    rw_bytes,
    tensors_in,
)
from roofline.graph.ops import CapturedOp

aten = torch.ops.aten


def _packets(names: dict[str, int], inplace: bool = True) -> list:
    """The aten packets for these names (and their in-place ``name_`` twins) in this torch."""
    out = []
    for name in names:
        for n in (name, name + "_") if inplace else (name,):
            if hasattr(aten, n):
                out.append(getattr(aten, n))
    return out


def _base(op: CapturedOp) -> str:
    """'aten.relu_' -> 'relu'."""
    name = op.packet.split(".", 1)[1]
    return name[:-1] if name.endswith("_") and not name.startswith("__") else name


def output_elements(op: CapturedOp) -> int:
    """Elements the op produces: its output's, or for in-place/out= its mutated tensor's."""
    if op.outputs:
        return op.outputs[0].numel
    for t in op.tensor_inputs():
        return t.numel
    return 0


def elementwise_cost(op: CapturedOp, flops_per_element: int, category: str = "pointwise") -> OpCost:
    """flops_per_element x output elements; one-pass bytes; one kernel."""
    if not op.outputs and not op.tensor_inputs():  # a Python-scalar overload (e.g. angle.float)
        return OpCost(flops=0, bytes_read=0, bytes_written=0, kernels=0, category="other")
    read, written = rw_bytes(op)
    return OpCost(
        flops=max(1, flops_per_element) * output_elements(op),
        bytes_read=read,
        bytes_written=written,
        kernels=1,
        category=category,
        compute_dtype=compute_dtype_of(op),
    )


# ---- arithmetic (category "pointwise"): FLOPs per output element ----------------------------------

ARITHMETIC = {
    # unary
    "neg": 1, "negative": 1, "abs": 1, "absolute": 1, "relu": 1, "sign": 1, "sgn": 1,
    "reciprocal": 1, "ceil": 1, "floor": 1, "trunc": 1, "fix": 1, "frac": 2, "square": 1,
    "bitwise_not": 1, "logical_not": 1, "signbit": 1, "isnan": 1, "isinf": 1, "isposinf": 1,
    "isneginf": 1, "isfinite": 2, "nan_to_num": 3, "deg2rad": 1, "rad2deg": 1, "conj_physical": 1,
    # activations without transcendentals
    "threshold": 1, "hardtanh": 2, "relu6": 2, "leaky_relu": 2, "hardsigmoid": 4, "hardswish": 5,
    "hardshrink": 2, "softshrink": 3, "_prelu_kernel": 2, "prelu": 2,
    # binary
    "mul": 1, "multiply": 1, "maximum": 1, "minimum": 1, "fmax": 1, "fmin": 1,
    "eq": 1, "ne": 1, "lt": 1, "gt": 1, "le": 1, "ge": 1, "greater": 1, "less": 1,
    "greater_equal": 1, "less_equal": 1, "not_equal": 1,
    "logical_and": 1, "logical_or": 1, "logical_xor": 1,
    "bitwise_and": 1, "bitwise_or": 1, "bitwise_xor": 1,
    "bitwise_left_shift": 1, "bitwise_right_shift": 1,
    "__and__": 1, "__or__": 1, "__xor__": 1, "__lshift__": 1, "__rshift__": 1,
    "__iand__": 1, "__ior__": 1, "__ixor__": 1, "__ilshift__": 1, "__irshift__": 1,
    "copysign": 1, "heaviside": 1, "remainder": 2, "fmod": 2, "floor_divide": 2, "ldexp": 2,
    "complex": 1,  # interleave (real, imag): a store per element
    # ternary: self + value*t1*t2, self + value*t1/t2, start + w*(end-start), cond ? a : b
    "addcmul": 3, "addcdiv": 3, "lerp": 3,
}

# ---- transcendental (category "transcendental"): FLOPs per output element -----------------------

TRANSCENDENTAL = {
    "exp": 1, "exp2": 1, "expm1": 1, "log": 1, "log2": 1, "log10": 1, "log1p": 1,
    "sin": 1, "cos": 1, "tan": 1, "asin": 1, "acos": 1, "atan": 1,
    "arcsin": 1, "arccos": 1, "arctan": 1, "sinh": 1, "cosh": 1, "tanh": 1,
    "asinh": 1, "acosh": 1, "atanh": 1, "erf": 1, "erfc": 1, "erfinv": 1,
    "sqrt": 1, "rsqrt": 1, "lgamma": 1, "digamma": 1, "i0": 1,
    "sinc": 3, "logit": 3,  # sin(pi x)/(pi x); log(x/(1-x))
    "sigmoid": 3, "special_expit": 3, "special_erf": 1,
    "silu": 4, "mish": 5, "softplus": 5, "elu": 4, "selu": 5, "celu": 5,
    "log_sigmoid_forward": 4, "log_sigmoid": 4,  # -softplus(-x)
    "glu": 4,  # a * sigmoid(b) per output element
    "atan2": 1, "arctan2": 1, "hypot": 4, "xlogy": 2, "angle": 1,
    "polar": 4,  # abs*cos(angle), abs*sin(angle)
    "logaddexp": 5, "logaddexp2": 5,  # max + log1p(exp(-|a-b|)): sub, abs, exp, log1p, add
}


@register(*_packets(ARITHMETIC), category="pointwise")
def arithmetic_cost(op: CapturedOp) -> OpCost:
    """Elementwise arithmetic: ARITHMETIC[name] FLOPs per output element."""
    return elementwise_cost(op, ARITHMETIC[_base(op)], "pointwise")


@register(*_packets(TRANSCENDENTAL), category="transcendental")
def transcendental_cost(op: CapturedOp) -> OpCost:
    """Elementwise transcendental functions: TRANSCENDENTAL[name] FLOPs per output element."""
    return elementwise_cost(op, TRANSCENDENTAL[_base(op)], "transcendental")


@register(*_packets({"add": 1, "sub": 1, "subtract": 1, "rsub": 1}), category="pointwise")
def add_cost(op: CapturedOp) -> OpCost:
    """a + alpha*b: 1 FLOP per element, 2 when alpha != 1 (the multiply)."""
    alpha = arguments(op).get("alpha", 1)
    return elementwise_cost(op, 1 if alpha in (None, 1) else 2)


@register(*_packets({"div": 1, "divide": 1, "true_divide": 1}), category="pointwise")
def div_cost(op: CapturedOp) -> OpCost:
    """a / b: 1 FLOP per element, 2 with a rounding mode (divide, then floor/trunc)."""
    mode = arguments(op).get("rounding_mode")
    return elementwise_cost(op, 1 if mode is None else 2)


@register(*_packets({"clamp": 1, "clip": 1, "clamp_min": 1, "clamp_max": 1}), category="pointwise")
def clamp_cost(op: CapturedOp) -> OpCost:
    """One compare-and-select per bound given: clamp(x, lo, hi) is 2, clamp_min is 1."""
    a = arguments(op)
    if "min" in a and "max" in a:
        bounds = (a["min"] is not None) + (a["max"] is not None)
    else:  # clamp_min / clamp_max
        bounds = 1
    return elementwise_cost(op, bounds)


@register(*_packets({"round": 1}), category="pointwise")
def round_cost(op: CapturedOp) -> OpCost:
    """round(x): 1; round(x, decimals): 3 (scale, round, unscale)."""
    return elementwise_cost(op, 3 if arguments(op).get("decimals") else 1)


@register(*_packets({"gelu": 1}), category="transcendental")
def gelu_cost(op: CapturedOp) -> OpCost:
    """GELU: 5 FLOPs per element (erf form), 9 (tanh approximation); see module docstring."""
    return elementwise_cost(op, 9 if arguments(op).get("approximate") == "tanh" else 5,
                            "transcendental")


def pow_flops(exponent) -> tuple[int, str]:
    """(FLOPs per element, category) of x ** exponent; see the module docstring."""
    if isinstance(exponent, bool) or not isinstance(exponent, (int, float)):
        return 3, "transcendental"  # tensor (or complex) exponent: exp(n*log(x))
    if float(exponent).is_integer():
        n = abs(int(exponent))
        mults = (n.bit_length() - 1 + bin(n).count("1") - 1) if n > 1 else 0  # square-and-multiply
        return max(1, mults + (1 if exponent < 0 else 0)), "pointwise"  # n < 0: one reciprocal
    if exponent in (0.5, -0.5):
        return 1, "transcendental"
    return 3, "transcendental"


@register(*_packets({"pow": 1, "float_power": 1}), category="transcendental")
def pow_cost(op: CapturedOp) -> OpCost:
    """x ** n: integer n by repeated squaring (pointwise), otherwise exp(n*log x) (transcendental)."""
    a = arguments(op)
    base, exponent = a.get("self"), a.get("exponent")
    if not tensors_in(base):  # scalar ** tensor: exp(x * log(base)), log(base) is a constant
        flops, category = 2, "transcendental"
    elif tensors_in(exponent):
        flops, category = 3, "transcendental"
    else:
        flops, category = pow_flops(exponent)
    return elementwise_cost(op, flops, category)


@register(aten.where, category="pointwise")
def where_cost(op: CapturedOp) -> OpCost:
    """where(cond, a, b): 1 select per element. where(cond) alone is nonzero (see indexing)."""
    if op.name.endswith(".default") and len(op.args) == 1:  # aten.where.default(condition) -> Tensor[]
        from roofline.costs.indexing import nonzero_cost

        return nonzero_cost(op)
    return elementwise_cost(op, 1)

