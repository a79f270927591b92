"""Matrix products: mm, addmm, bmm, baddbmm, matmul, linear, and the vector/outer variants.

FLOPs: 2 per multiply-add, ``2*batch*m*n*k``, exactly as ``torch.utils.flop_counter`` counts mm,
addmm, bmm, baddbmm and _scaled_mm. Complex operands count 8 real FLOPs per multiply-add (4 real
multiplies, 4 real adds: ``registry.real_flops_factor``), where flop_counter counts 2. Like flop_counter, the ``beta*self`` / bias term of addmm,
baddbmm, linear, addmv and addbmm is NOT counted (it is O(m*n) against O(m*n*k), and counting it
would break agreement for addmm, which is what linear becomes). Ops flop_counter does not count
(linear, matmul, mv, dot, addmv, addbmm, addr, _int_mm, _addmm_activation) follow the same rule.

Bytes: each operand read once at its footprint, the output written once. ``addmm`` with a bias
also carries a pass over the result (``bias_pass_bytes``) that a backend without a bias epilogue
makes before the GEMM: ATen's CPU addmm copies the broadcast bias into it and accumulates onto it.

Kernels (CUDA eager): 1 for a GEMM. ``addmm`` with a 1-D bias and beta == 1 uses cuBLASLt's bias
epilogue (1 kernel); any other addmm/baddbmm/addmv/addbmm with beta != 0 first copies ``self`` into
the result (2 kernels). Before torch 2.10 the bias epilogue refused a single-row product (a Linear
at batch 1), which paid the copy too.
"""

from __future__ import annotations

import re

import torch

from roofline.costs.registry import OpCost, arguments, real_flops_factor, register, rw_bytes
from roofline.graph.ops import CapturedOp, TensorMeta

aten = torch.ops.aten

# torch 2.10 lets cuBLASLt's bias epilogue take single-row products (pytorch/pytorch#166307): a
# Linear at batch 1 runs one kernel and no copy; older torch copies the bias in first.
BIAS_EPILOGUE_TAKES_ONE_ROW = tuple(int(v) for v in re.match(r"(\d+)\.(\d+)", torch.__version__).groups()) >= (2, 10)  # 2.10 pre-releases too


def _gemm_cost(op: CapturedOp, batch: int, m: int, n: int, k: int, operand: TensorMeta,
               kernels: int = 1, skip_read: tuple[str, ...] = (), bias_pass_bytes: int = 0, flops: int | None = None) -> OpCost:
    """A GEMM-shaped op's cost; ``flops`` where the products are not the whole (batch, m, n, k) (a
    grouped GEMM whose groups' rows were rounded up)."""
    read, written = rw_bytes(op, skip_read=skip_read)
    return OpCost(
        flops=(2 * batch * m * n * k if flops is None else flops) * real_flops_factor(operand.dtype),
        bytes_read=read,
        bytes_written=written,
        kernels=kernels,
        category="matmul",
        gemm=(batch, m, n, k),
        compute_dtype=operand.dtype,
        bias_pass_bytes=bias_pass_bytes,
    )


def _beta(a: dict) -> float:
    beta = a.get("beta", 1)
    return 1.0 if beta is None else float(beta)


@register(aten.mm, aten._int_mm, aten._scaled_mm, category="matmul")
def mm_cost(op: CapturedOp) -> OpCost:
    """(m, k) @ (k, n): 2*m*n*k FLOPs (flop_counter's mm_flop / _scaled_mm_flop)."""
    a = arguments(op)
    x, y = a["self"], a["mat2"]
    m, k = x.shape
    n = y.shape[1]
    return _gemm_cost(op, 1, m, n, k, x)


@register(aten.addmm, aten._addmm_activation, category="matmul")
def addmm_cost(op: CapturedOp) -> OpCost:
    """beta*self + (m, k) @ (k, n): 2*m*n*k FLOPs (flop_counter's addmm_flop; bias not counted).

    _addmm_activation (bias + ReLU/GELU epilogue) is counted the same way: the epilogue is O(m*n).
    """
    a = arguments(op)
    x, y, bias = a["mat1"], a["mat2"], a["self"]
    m, k = x.shape
    n = y.shape[1]
    beta = _beta(a)
    fused = bias.ndim <= 1 and beta == 1.0 and (m > 1 or BIAS_EPILOGUE_TAKES_ONE_ROW)
    kernels = 1 if (fused or beta == 0.0) else 2
    # Where the GEMM library has no bias epilogue (ATen on the CPU), the bias is first broadcast into
    # the (m, n) result, which the GEMM then reads back (beta=1): a write and a read of the result.
    bias_pass = 0 if beta == 0.0 else 2 * m * n * x.itemsize
    return _gemm_cost(op, 1, m, n, k, x, kernels=kernels, skip_read=("self",) if beta == 0.0 else (), bias_pass_bytes=bias_pass)


@register(aten.bmm, category="matmul")
def bmm_cost(op: CapturedOp) -> OpCost:
    """(b, m, k) @ (b, k, n): 2*b*m*n*k FLOPs (flop_counter's bmm_flop)."""
    a = arguments(op)
    x, y = a["self"], a["mat2"]
    b, m, k = x.shape
    n = y.shape[2]
    return _gemm_cost(op, b, m, n, k, x)


# By name: torch before 2.8 has no _grouped_mm.
@register("aten._grouped_mm", category="matmul")
def grouped_mm_cost(op: CapturedOp) -> OpCost:
    """A grouped GEMM (a mixture of experts' layers: each group's rows by its own weight), in its
    three forms (torch.nn.functional.grouped_mm), 2 FLOPs per multiply-add of the groups' products
    (flop_counter does not count it):

    - (S, K) @ (G, K, N) with ``offs`` splitting the S rows among G groups -> (S, N): 2*S*K*N, priced
      as G products of S/G rows (a group's rows share a launch, not a tile);
    - (G, M, K) @ (G, K, N) -> (G, M, N): 2*G*M*K*N, as bmm;
    - (M, S) @ (S, N) with ``offs`` splitting the reduction S among G groups -> (G, M, N) (the
      experts' weight gradients): 2*M*S*N, as G products of reduction S/G.

    Bytes: every operand read once (all G weights, whether or not a group has rows), the output
    written once."""
    a = arguments(op)
    x, y, offs = a["self"], a["mat2"], a.get("offs")
    groups = offs.shape[0] if offs is not None and offs.ndim else 1
    if x.ndim == 2 and y.ndim == 3:
        rows, k = x.shape
        return _gemm_cost(op, y.shape[0], -(-rows // y.shape[0]), y.shape[2], k, x, flops=2 * rows * k * y.shape[2])
    if x.ndim == 3 and y.ndim == 3:
        return _gemm_cost(op, x.shape[0], x.shape[1], y.shape[2], x.shape[2], x)
    if x.ndim == 2 and y.ndim == 2:
        m, s = x.shape
        return _gemm_cost(op, groups, m, y.shape[1], -(-s // groups), x, flops=2 * m * s * y.shape[1])
    # (G, M, K) @ (K, N) with offs, or another form: each output element a reduction over K
    out = op.outputs[0]
    k = x.shape[-1]
    return _gemm_cost(op, 1, max(out.numel // max(out.shape[-1], 1), 1), out.shape[-1], k, x)


@register(aten.baddbmm, category="matmul")
def baddbmm_cost(op: CapturedOp) -> OpCost:
    """beta*self + (b, m, k) @ (b, k, n): 2*b*m*n*k FLOPs (flop_counter's baddbmm_flop)."""
    a = arguments(op)
    x, y = a["batch1"], a["batch2"]
    b, m, k = x.shape
    n = y.shape[2]
    beta = _beta(a)
    return _gemm_cost(op, b, m, n, k, x, kernels=1 if beta == 0.0 else 2,
                      skip_read=("self",) if beta == 0.0 else ())


@register(aten.addbmm, category="matmul")
def addbmm_cost(op: CapturedOp) -> OpCost:
    """beta*self + sum_b (m, k) @ (k, n): 2*b*m*n*k FLOPs (the batch sum is the K reduction)."""
    a = arguments(op)
    x, y = a["batch1"], a["batch2"]
    b, m, k = x.shape
    n = y.shape[2]
    beta = _beta(a)
    # One GEMM with K = b*k over the reshaped batches; gemm shape says so.
    read, written = rw_bytes(op, skip_read=("self",) if beta == 0.0 else ())
    return OpCost(flops=2 * b * m * n * k * real_flops_factor(x.dtype), bytes_read=read, bytes_written=written,
                  kernels=1 if beta == 0.0 else 2, category="matmul", gemm=(1, m, n, b * k),
                  compute_dtype=x.dtype)


@register(aten.mv, aten.addmv, category="matmul")
def mv_cost(op: CapturedOp) -> OpCost:
    """(m, n) @ (n,): 2*m*n FLOPs, a GEMM with n = 1 (addmv's beta*self not counted)."""
    a = arguments(op)
    mat = a["self"] if op.packet == "aten.mv" else a["mat"]
    m, k = mat.shape
    kernels = 1 if op.packet == "aten.mv" or _beta(a) == 0.0 else 2
    return _gemm_cost(op, 1, m, 1, k, mat, kernels=kernels)


@register(aten.dot, aten.vdot, category="matmul")
def dot_cost(op: CapturedOp) -> OpCost:
    """(n,) . (n,): 2*n FLOPs (n multiply-adds), a 1x1xn GEMM."""
    x = arguments(op)["self"]
    return _gemm_cost(op, 1, 1, 1, x.shape[0], x)


@register(aten.addr, category="matmul")
def addr_cost(op: CapturedOp) -> OpCost:
    """beta*self + outer(vec1, vec2): a k = 1 GEMM, 2*m*n FLOPs (one multiply-add per output)."""
    a = arguments(op)
    v1, v2 = a["vec1"], a["vec2"]
    return _gemm_cost(op, 1, v1.shape[0], v2.shape[0], 1, v1)


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        out.append(max(x, y) if 1 in (x, y) else x)
    return tuple(reversed(out))


def matmul_shape(x: tuple[int, ...], y: tuple[int, ...]) -> tuple[int, int, int, int]:
    """(batch, m, n, k) of ``torch.matmul`` with its 1-D and broadcasting rules."""
    if len(x) == 1 and len(y) == 1:
        return 1, 1, 1, x[0]
    if len(x) == 1:
        x = (1, x[0])
    if len(y) == 1:
        y = (y[0], 1)
    m, k = x[-2], x[-1]
    n = y[-1]
    batch = 1
    for s in _broadcast(x[:-2], y[:-2]):
        batch *= s
    return batch, m, n, k


@register(aten.matmul, category="matmul")
def matmul_cost(op: CapturedOp) -> OpCost:
    """torch.matmul (broadcast batch dims, 1-D promotion): 2*batch*m*n*k FLOPs.

    Normally decomposed into mm/bmm before capture; priced whole if a capture keeps it.
    """
    a = arguments(op)
    x, y = a["self"], a["other"]
    b, m, n, k = matmul_shape(x.shape, y.shape)
    return _gemm_cost(op, b, m, n, k, x)


@register(aten.linear, category="matmul")
def linear_cost(op: CapturedOp) -> OpCost:
    """input (..., k) @ weight(n, k)^T (+ bias): 2*rows*n*k FLOPs, bias not counted (as addmm)."""
    a = arguments(op)
    x, w = a["input"], a["weight"]
    k = x.shape[-1]
    n = w.shape[0] if w.ndim == 2 else 1
    rows = 1
    for s in x.shape[:-1]:
        rows *= s
    return _gemm_cost(op, 1, rows, n, k, x)


def _expanded(shape: tuple[int, ...], expand: list[int]) -> list[int]:
    out = list(shape)
    for d in sorted(int(e) for e in expand):
        out.insert(d, 1)
    return out


@register(aten._trilinear, category="matmul")
def trilinear_cost(op: CapturedOp) -> OpCost:
    """nn.Bilinear's kernel: sum over ``sumdim`` of i1*i2*i3 in their broadcast product space.

    2 FLOPs per element of that space (a multiply-add of the contraction): for nn.Bilinear,
    2 * B * out * in1 * in2. Equivalent GEMM: M = output rows, N = output columns, K = the summed
    size.
    """
    a = arguments(op)
    shapes = [_expanded(a[t].shape, a[e]) for t, e in
              (("i1", "expand1"), ("i2", "expand2"), ("i3", "expand3"))]
    space = [max(sizes) for sizes in zip(*shapes)]
    total = 1
    for s in space:
        total *= s
    out = op.outputs[0]
    m = out.shape[0] if out.ndim else 1
    n = max(1, out.numel // max(1, m))
    k = max(1, total // max(1, out.numel))
    read, written = rw_bytes(op)
    return OpCost(flops=2 * total * real_flops_factor(a["i1"].dtype), bytes_read=read, bytes_written=written, kernels=1,
                  category="matmul", gemm=(1, m, n, k), compute_dtype=a["i1"].dtype)


@register(aten.affine_grid_generator, category="matmul")
def affine_grid_cost(op: CapturedOp) -> OpCost:
    """Sampling grid = base coordinates (H*W, 3) @ theta^T (3, 2) per batch: 2*3 FLOPs per output."""
    theta = arguments(op)["theta"]
    out = op.outputs[0]
    n, k = theta.shape[0], theta.shape[-1]
    coords = theta.shape[-2]
    read, written = rw_bytes(op)
    return OpCost(flops=2 * k * out.numel, bytes_read=read, bytes_written=written, kernels=1,
                  category="matmul", gemm=(n, out.numel // max(1, n * coords), coords, k),
                  compute_dtype=theta.dtype)


@register(aten._cdist_forward, category="matmul")
def cdist_cost(op: CapturedOp) -> OpCost:
    """Pairwise p-distances between (B, P, M) and (B, R, M).

    Per (pair, coordinate): 1 subtract + the p-norm's per-element FLOPs (roofline.costs.reduction:
    p = 2 -> 2); per pair the norm's finishing FLOPs (p = 2: 1 sqrt). For p = 2 the CUDA kernel is a
    GEMM (|x|^2 + |y|^2 - 2 x.y), hence category "matmul" with gemm (B, P, R, M).
    """
    from roofline.costs.reduction import vector_norm_flops

    a = arguments(op)
    x1, x2 = a["x1"], a["x2"]
    m = x1.shape[-1]
    p_rows, r_rows = x1.shape[-2], x2.shape[-2]
    batch = op.outputs[0].numel // max(1, p_rows * r_rows)
    per_in, per_out = vector_norm_flops(a["p"])
    pairs = batch * p_rows * r_rows
    read, written = rw_bytes(op)
    return OpCost(flops=pairs * ((per_in + 1) * m + per_out), bytes_read=read,
                  bytes_written=written, kernels=1, category="matmul",
                  gemm=(batch, p_rows, r_rows, m), compute_dtype=x1.dtype)
