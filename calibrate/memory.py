"""Memory bandwidth over working-set size, and the throughput of a transcendental pointwise op.

Three access patterns (copy: read one buffer and write another; read: a full sum; write: a fill)
from cache-resident sizes to many times the last-level cache. No flush here: at small sizes the
point of the curve is the cache's own bandwidth, which is what a small op in a real model sees.
Bytes moved count both reads and writes.
"""

from __future__ import annotations

import math

import torch

from calibrate.matmul import DTYPES
from roofline.model.kernels import (
    ADAPTIVE_POOL_FAMILY, ADAPTIVE_POOL_SIDE, POOL_AVERAGE_FAMILY, POOL_BACKWARD_FAMILY, POOL_REFERENCE_FAMILY, POOL_WINDOW_FAMILY, REDUCE_LONG, REDUCE_LONG_ROW, REDUCE_OUTER_WIDTHS, REDUCE_SHORT, REDUCE_SHORT_ROW, UPSAMPLE_FAMILY,
    UPSAMPLE_NEAREST_FAMILY, UPSAMPLE_PIXEL_FAMILY, UPSAMPLE_PIXEL_SIDE, UPSAMPLE_SIDE, reduce_outer_family,
)
from roofline.schema.profile import BandwidthCurve, BandwidthPoint, PointwiseCurve, PointwisePoint, Stat
from roofline.timing import time_fn


RANDOM_BLOCK = 1 << 20  # elements of the random block that fills large CPU buffers


def _rand(*shape: int, device: str, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Uniform [0, 1) values of ``shape``. A large CPU buffer is one random block repeated: the
    CPU's generator is sequential (about 4 ns an element, seconds for the DRAM-sized points), and
    a memory-bound kernel's time follows its values' range, not their order."""
    n = math.prod(shape)
    if not device.startswith("cpu") or n <= RANDOM_BLOCK:
        return torch.rand(*shape, device=device, dtype=dtype)
    block = torch.rand(RANDOM_BLOCK, device=device, dtype=dtype)
    out = torch.empty(n, device=device, dtype=dtype)
    whole = n // RANDOM_BLOCK * RANDOM_BLOCK
    out[:whole].view(-1, RANDOM_BLOCK).copy_(block)
    out[whole:].copy_(block[: n - whole])
    return out.view(shape)


def _timed(fn, device, budget_s, label, warnings):
    t = time_fn(fn, device=device, budget_s=budget_s, warmup_budget_s=budget_s, min_samples=5, label=label)
    if t.warning:
        warnings.append(t.warning)
    return t.stat()


def measure_bandwidth(kind: str, sizes_bytes: list[int], device: str, *, budget_s: float, warnings: list, progress=None) -> BandwidthCurve:
    points = []
    for ws in sizes_bytes:
        if kind == "copy":
            n = max(ws // 8, 1)  # two float32 buffers make up the working set
            src = _rand(n, device=device)
            dst = torch.empty_like(src)
            fn, moved = (lambda: dst.copy_(src)), 8 * n
        elif kind == "read":
            n = max(ws // 4, 1)
            src = _rand(n, device=device)
            out = torch.empty((), device=device)
            fn, moved = (lambda: torch.sum(src, dim=0, out=out)), 4 * n + 4
        elif kind == "write":
            n = max(ws // 4, 1)
            dst = torch.empty(n, device=device)
            fn, moved = (lambda: dst.fill_(1.5)), 4 * n
        else:
            raise ValueError(kind)
        stat = _timed(fn, device, budget_s, f"{kind} bandwidth {ws} B", warnings)
        points.append(
            BandwidthPoint(bytes=moved, working_set_bytes=ws, time=stat, bytes_per_s=moved / stat.median_s)
        )
        del fn
        if progress:
            progress()
    return BandwidthCurve(kind=kind, dtype="float32", points=points)


ROW = 1024  # row length of the layer_norm and softmax benchmarks


def _pointwise_call(op: str, n: int, device: str, dtype: torch.dtype = torch.float32):
    """(callable, bytes moved) for one representative kernel of an op family over n elements."""
    import torch.nn.functional as F

    e = torch.empty((), dtype=dtype).element_size()
    # Each call allocates its output, as model code does: on the CPU a large fresh output costs page
    # faults (tens of percent of the op at 64 MB), which an out= benchmark never pays.
    if op in ("sin", "exp", "tanh"):
        x = _rand(n, device=device, dtype=dtype)
        fn_op = getattr(torch, op)
        return (lambda: fn_op(x)), 2 * e * n
    if op == "unary":
        # one operand in, one result out (neg, abs, relu, x * 0.5): the stream a copy moves, but
        # through TensorIterator with a freshly allocated output, as model code runs it
        x = _rand(n, device=device, dtype=dtype)
        return (lambda: torch.neg(x)), 2 * e * n
    if op == "add":
        x, z = _rand(n, device=device, dtype=dtype), _rand(n, device=device, dtype=dtype)
        return (lambda: torch.add(x, z)), 3 * e * n
    rows = max(n // ROW, 1)
    x = _rand(rows, ROW, device=device, dtype=dtype)
    if op == "layer_norm":
        w, b = _rand(ROW, device=device, dtype=dtype), _rand(ROW, device=device, dtype=dtype)
        return (lambda: F.layer_norm(x, (ROW,), w, b)), 2 * e * rows * ROW + 2 * e * ROW
    if op == "softmax":
        return (lambda: torch.softmax(x, dim=-1)), 2 * e * rows * ROW
    if op == "mul_broadcast":
        # a binary op whose second operand is broadcast along the last dimension (x * rms in an
        # RMSNorm): the kernel cannot use vectorized loads, so it runs below the plain add's rate
        s = _rand(rows, 1, device=device, dtype=dtype)
        return (lambda: torch.mul(x, s)), 2 * e * rows * ROW + e * rows
    if op in SELECTION_OPS or op in GPU_SELECTION_OPS or op in LAYOUT_OPS or op in STRIDED_OPS or op in REDUCTION_FAMILIES:
        return _selection_call(op, n, device, dtype)
    raise ValueError(op)


# Kernels that select, scan or compare: memory-bound, but each well below the plain copy's rate
# (a comparison writes bools, a scan is sequential along its row, top-k and sort run selection
# networks, max pooling writes indices). Calibrated in float32 only.
SELECTION_OPS = ("compare", "masked_fill", "cumsum", "topk", "sort", "max_pool2d")
# A GPU pool runs a thread per output that walks its window: its time follows outputs and taps,
# not bytes. Max pooling at 2x2 stride 2 has the outputs of the 3x3 stride-2 family (max_pool2d)
# with 4 taps instead of 9: the two curves part an output's own cost from its taps'; average
# pooling at 3x3 stride 2, the same outputs again, prices an average's tap (an add, no compare or
# index to keep) against a max's (roofline.model.kernels.pool_costs). ATen's bilinear resampling
# of an NCHW image gives each output pixel a thread that loops over every image and channel: time
# follows that loop's length, each step waiting on its loads (roofline.model.kernels._upsample_s);
# timed as an UPSAMPLE_SIDE-square image of as many channels as the size asks resampled to twice
# its side, and as one-pixel channels resampled to UPSAMPLE_PIXEL_SIDE square (a pooled branch broadcast
# back: its steps read the L1 cache); nearest-neighbour resampling of the same image (a thread per output element); the 3x3
# stride-2 max pool's backward (a thread per input walking the windows over it); adaptive average
# pooling of ADAPTIVE_POOL_SIDE-square planes to their own side (a block per plane). Float32,
# GPU only (the CPU's loops differ); timed and recorded as one stage, "pooling".
GPU_SELECTION_OPS = (POOL_WINDOW_FAMILY, POOL_AVERAGE_FAMILY, POOL_BACKWARD_FAMILY, UPSAMPLE_FAMILY, UPSAMPLE_NEAREST_FAMILY, ADAPTIVE_POOL_FAMILY,
                     UPSAMPLE_PIXEL_FAMILY)
# a resampling step's time rises from the L2 cache's latency to memory's over the sizes models
# resample at: calibrated at the sizes x4 apart (the others x16), from one channel on
DENSE_SELECTION_OPS = (UPSAMPLE_FAMILY, UPSAMPLE_NEAREST_FAMILY, UPSAMPLE_PIXEL_FAMILY)
# Normalizations and data movement whose kernels run below the copy's rate by how they walk memory:
# layer_norm and softmax over short rows (ConvNeXt's 96 channels, Swin's 49-token windows: a
# block per row idles most of its threads), cat (a kernel per input layout) and roll (index
# arithmetic per element). Calibrated per pointwise dtype. Eval batch norm and group norm, whose
# time follows plane size and rows in flight rather than bytes, are calibrated over those
# parameters in calibrate.mechanisms.
LAYOUT_OPS = ("layer_norm_short", "softmax_short", "cat", "roll")
# Strided copies: ATen's copy of a non-contiguous layout (attention heads split or merged, windows
# partitioned, a transposed matrix made contiguous) computes an offset per element and cannot
# vectorize, so it runs below the flat copy's rate, by how long a run of the input stays whole:
# a transposed copy (inner runs of one element) and a permuted one whose rows of STRIDED_RUN
# elements stay whole (longer runs copy at its rate). A cat with a strided input runs ATen's generic batched kernel.
# Calibrated per pointwise dtype on the pointwise sizes (x4 apart): the models' copies lie in the
# millions of elements, between a launch-bound point and a streaming one, where points x16
# apart interpolate far from either.
STRIDED_OPS = ("strided_copy", "transpose_copy", "cat_strided")
SHORT_ROW = 64  # row length of layer_norm_short and softmax_short
# A GPU reduction of each innermost row to one value (x.sum(-1), a mean over a pooled plane,
# F.normalize's norm) gives each output a warp's or block's share of work: over short rows it takes
# a time per row, not per byte (rows of 32 run four times the time of rows of 1024 over the same
# elements), and even over rows of 1024 it runs without the cross-block pass of a reduction to one
# value (the bandwidth curve's read). Calibrated per pointwise dtype at the two row lengths
# roofline.model.kernels prices a row between (linear in 1 / row). GPU only.
ROW_REDUCTION_FAMILIES = (REDUCE_SHORT, REDUCE_LONG)
# A GPU reduction over outer dimensions (a bias gradient's x.sum(0) of (tokens, features)) keeps a
# run of innermost elements: a thread takes a few adjacent outputs and the reduced rows are split
# over the block and, when long, over blocks with a second pass, so few columns leave most of a
# warp idle, and even many run below a row reduction's rate. Timed as
# x.sum(0) of (rows, width) at each of REDUCE_OUTER_WIDTHS, per pointwise dtype. GPU only.
OUTER_REDUCTION_FAMILIES = tuple(reduce_outer_family(w) for w in REDUCE_OUTER_WIDTHS)
REDUCTION_FAMILIES = ROW_REDUCTION_FAMILIES + OUTER_REDUCTION_FAMILIES
STRIDED_RUN = 32  # elements per whole row of strided_copy (roofline.model.kernels.STRIDED_RUN)
STRIDED_HEADS = 8  # the permuted dimension's size: one whole row in 8 is adjacent in the output


def _selection_call(op: str, n: int, device: str, dtype: torch.dtype):
    """(callable, bytes moved as the cost registry counts them) for one selection-family kernel."""
    import torch.nn.functional as F

    rows = max(n // ROW, 1)
    side = max(int((rows * ROW / 64) ** 0.5), 2)

    def rows_of(width: int = ROW) -> torch.Tensor:
        return _rand(max(rows * ROW // width, 1), width, device=device, dtype=dtype)

    if op in ("layer_norm_short", "softmax_short"):
        short = rows_of(SHORT_ROW)
        if op == "layer_norm_short":
            w64, b64 = _rand(SHORT_ROW, device=device, dtype=dtype), _rand(SHORT_ROW, device=device, dtype=dtype)
            fn = lambda: F.layer_norm(short, (SHORT_ROW,), w64, b64)  # noqa: E731
        else:
            fn = lambda: torch.softmax(short, dim=-1)  # noqa: E731
    elif op in ROW_REDUCTION_FAMILIES:
        x = rows_of(REDUCE_SHORT_ROW if op == REDUCE_SHORT else REDUCE_LONG_ROW)
        fn = lambda: x.sum(-1)  # noqa: E731
    elif op in OUTER_REDUCTION_FAMILIES:
        x = rows_of(REDUCE_OUTER_WIDTHS[OUTER_REDUCTION_FAMILIES.index(op)])
        fn = lambda: x.sum(0)  # noqa: E731
    elif op == "cat":
        # as a class token joins the patches: per row, a short and a long contiguous run
        a = _rand(rows, 1, ROW // 4, device=device, dtype=dtype)
        b = _rand(rows, 3, ROW // 4, device=device, dtype=dtype)
        fn = lambda: torch.cat([a, b], dim=1)  # noqa: E731
    elif op in ("roll", POOL_REFERENCE_FAMILY, POOL_WINDOW_FAMILY, POOL_AVERAGE_FAMILY, POOL_BACKWARD_FAMILY):
        img = _rand(1, 64, side, side, device=device, dtype=dtype)
        if op == POOL_BACKWARD_FAMILY:
            out, idx = F.max_pool2d(img, 3, 2, 1, return_indices=True)
            grad = torch.ones_like(out)
            fn = lambda: torch.ops.aten.max_pool2d_with_indices_backward(grad, img, [3, 3], [2, 2], [1, 1], [1, 1], False, idx)  # noqa: E731
        elif op == "roll":
            fn = lambda: torch.roll(img, shifts=(3, 3), dims=(2, 3))  # noqa: E731
        elif op == POOL_REFERENCE_FAMILY:  # 3x3, stride 2, over 64 channels, as a CNN's stem pools
            fn = lambda: F.max_pool2d(img, 3, 2, 1)  # noqa: E731
        elif op == POOL_WINDOW_FAMILY:  # 2x2, stride 2: the same outputs (an even side), 4 taps each
            fn = lambda: F.max_pool2d(img, 2, 2)  # noqa: E731
        else:  # 3x3 average, stride 2: the same outputs and taps as the 3x3 max pool
            fn = lambda: F.avg_pool2d(img, 3, 2, 1)  # noqa: E731
    elif op == ADAPTIVE_POOL_FAMILY:  # planes pooled to their own side: a block per plane
        img = _rand(1, max(rows * ROW // ADAPTIVE_POOL_SIDE**2, 1), ADAPTIVE_POOL_SIDE, ADAPTIVE_POOL_SIDE, device=device, dtype=dtype)
        fn = lambda: F.adaptive_avg_pool2d(img, (ADAPTIVE_POOL_SIDE, ADAPTIVE_POOL_SIDE))  # noqa: E731
    elif op in (UPSAMPLE_FAMILY, UPSAMPLE_NEAREST_FAMILY):
        img = _rand(1, max(rows * ROW // UPSAMPLE_SIDE**2, 1), UPSAMPLE_SIDE, UPSAMPLE_SIDE, device=device, dtype=dtype)
        mode = dict(mode="bilinear", align_corners=False) if op == UPSAMPLE_FAMILY else dict(mode="nearest")
        fn = lambda: F.interpolate(img, size=(2 * UPSAMPLE_SIDE, 2 * UPSAMPLE_SIDE), **mode)  # noqa: E731
    elif op == UPSAMPLE_PIXEL_FAMILY:
        img = _rand(1, max(rows * ROW // UPSAMPLE_PIXEL_SIDE**2, 1), 1, 1, device=device, dtype=dtype)
        fn = lambda: F.interpolate(img, size=(UPSAMPLE_PIXEL_SIDE, UPSAMPLE_PIXEL_SIDE), mode="bilinear", align_corners=False)  # noqa: E731
    elif op in STRIDED_OPS:
        fn = _strided_call(op, rows * ROW, device, dtype)
    else:
        x = rows_of()
        if op == "compare":
            y = rows_of()
            fn = lambda: torch.lt(x, y)  # noqa: E731
        elif op == "masked_fill":
            mask = _rand(rows, ROW, device=device) < 0.5
            fn = lambda: x.masked_fill(mask, 0.0)  # noqa: E731
        elif op == "cumsum":
            fn = lambda: torch.cumsum(x, dim=-1)  # noqa: E731
        elif op == "topk":
            fn = lambda: torch.topk(x, 8, dim=-1)  # noqa: E731
        elif op == "sort":
            fn = lambda: torch.sort(x, dim=-1)  # noqa: E731
        else:
            raise ValueError(op)
    return fn, _registry_bytes(fn)


def _strided_call(op: str, n: int, device: str, dtype: torch.dtype):
    """A copy of n elements through a strided layout, as a batch of attention heads is split or
    merged: (2, S, 8, 32) permuted to (2, 8, S, 32) made contiguous (whole rows of 32 elements);
    (2, 8, S, 32) with its last two dimensions transposed, as keys are for a product (inner runs of
    one element); or
    two permuted halves joined by cat."""
    seq = max(n // (2 * STRIDED_HEADS * STRIDED_RUN), 1)
    if op == "cat_strided":
        half = max(seq // 2, 1)
        a = _rand(2, half, STRIDED_HEADS, STRIDED_RUN, device=device, dtype=dtype).permute(0, 2, 1, 3)
        b = _rand(2, half, STRIDED_HEADS, STRIDED_RUN, device=device, dtype=dtype).permute(0, 2, 1, 3)
        return lambda: torch.cat([a, b], dim=1)
    if op == "strided_copy":
        view = _rand(2, seq, STRIDED_HEADS, STRIDED_RUN, device=device, dtype=dtype).permute(0, 2, 1, 3)
    else:
        view = _rand(2, STRIDED_HEADS, seq, STRIDED_RUN, device=device, dtype=dtype).transpose(2, 3)
    return lambda: view.contiguous()


def _registry_bytes(fn) -> int:
    """Bytes the cost registry counts for the ops ``fn`` runs: the rate calibrated here divides
    the same bytes prediction will."""
    from roofline.costs import cost_of
    from roofline.graph.capture import capture

    graph = capture(fn, (), real=True)
    costs = [cost_of(op)[0] for op in graph.ops]
    return max(sum(c.bytes_read + c.bytes_written for c in costs if c.kernels), 1)


def measure_pointwise(
    sizes_elements: list[int], device: str, *, op: str = "sin", dtype_name: str = "float32", budget_s: float, warnings: list, progress=None
) -> PointwiseCurve:
    """Throughput of one op family's representative kernel over size: sin (transcendental), unary
    (one-operand arithmetic: neg), add (binary elementwise), mul_broadcast (binary with a broadcast operand), layer_norm and softmax
    (row-wise over rows of 1024). Half precision moves half the bytes but does not run twice as
    fast where the kernel computes in float32 or cannot vectorize, hence a curve per dtype."""
    points = []
    for n in sizes_elements:
        fn, moved = _pointwise_call(op, n, device, DTYPES[dtype_name])
        n = max(n // ROW, 1) * ROW if op in ("layer_norm", "softmax", "mul_broadcast", *SELECTION_OPS, *GPU_SELECTION_OPS, *LAYOUT_OPS, *STRIDED_OPS, *REDUCTION_FAMILIES) else n
        stat = _timed(fn, device, budget_s, f"{op} {dtype_name} over {n} elements", warnings)
        points.append(
            PointwisePoint(
                elements=n, bytes=moved, time=stat, elements_per_s=n / stat.median_s, bytes_per_s=moved / stat.median_s
            )
        )
        if progress:
            progress()
    return PointwiseCurve(op=op, dtype=dtype_name, points=points)


# ATen's batched cat on the GPU gives every input of a launch the grid of blocks the largest input
# needs (capped at a wave of the SMs' resident blocks): the blocks of a smaller input find no work
# but are scheduled all the same, so each input costs at least that grid's time. Timed as a cat of
# CAT_GRID_INPUTS (one large input and one-row ones) less the cat of the large input and one row,
# per added input, over the large input's bytes (DenseNet joins a 1.6 MB block output to 25 others).
CAT_GRID_INPUTS = 33
CAT_GRID_BYTES = [1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26]


def measure_cat_grid(device: str, *, budget_s: float, warnings: list, quick: bool = False, progress=None) -> list[PointwiseCurve]:
    """Per-input time of the batched cat's grid over the largest input's bytes (GPU, float32; the
    grid is sized in 16-byte vectors, whatever the dtype): one curve."""
    points = []
    for nbytes in CAT_GRID_BYTES[1::2] if quick else CAT_GRID_BYTES:
        big = _rand(max(nbytes // (4 * ROW), 1), ROW, device=device)
        rows = [_rand(1, ROW, device=device) for _ in range(CAT_GRID_INPUTS - 1)]
        many = _timed(lambda: torch.cat([big, *rows]), device, budget_s, f"cat of {CAT_GRID_INPUTS} inputs beside {nbytes} B", warnings)
        two = _timed(lambda: torch.cat([big, rows[0]]), device, budget_s, f"cat of 2 inputs beside {nbytes} B", warnings)
        per_input = max((many.median_s - two.median_s) / (CAT_GRID_INPUTS - 2), 1e-9)
        time = Stat(median_s=per_input, iqr_s=(many.iqr_s + two.iqr_s) / (CAT_GRID_INPUTS - 2), samples=min(many.samples, two.samples))
        moved = big.numel() * big.element_size()
        points.append(PointwisePoint(elements=big.numel(), bytes=moved, time=time, elements_per_s=big.numel() / per_input, bytes_per_s=moved / per_input))
        if progress:
            progress()
    return [PointwiseCurve(op="cat_grid", dtype="float32", points=points)]


# ATen's gather of whole rows by a 1-d index (``table[index]``, ``index_select`` on dim 0, an embedding)
# runs, where a row's bytes are a multiple of 16, a kernel with a block per index that copies the
# row in 16-byte vectors. A row of up to 512 bytes gets a block of one warp, and such blocks, each
# waiting on the index and then the row, are as many as an SM holds at once: the time follows the
# number of rows, not their bytes (BEiT's 38,809 rows of 48 bytes take 25 us on the H100, their bytes
# 2 us). Timed over rows of GATHER_ROW_BYTES from a small table; the model prices such a gather at its
# row count on this curve (``roofline.model.kernels.row_gather``).
GATHER_ROW_BYTES = 48
GATHER_TABLE_ROWS = 732
GATHER_ROWS = [1 << 12, 1 << 15, 1 << 18, 1 << 20]


def measure_gather_rows(device: str, *, budget_s: float, warnings: list, quick: bool = False, progress=None) -> list[PointwiseCurve]:
    """``table[index]`` over rows of ``GATHER_ROW_BYTES`` (GPU, float32) by the number of rows: one
    curve whose bytes are the rows' (rows x GATHER_ROW_BYTES)."""
    table = _rand(GATHER_TABLE_ROWS, GATHER_ROW_BYTES // 4, device=device)
    points = []
    for rows in GATHER_ROWS[1:3] if quick else GATHER_ROWS:
        index = torch.randint(0, GATHER_TABLE_ROWS, (rows,), device=device)
        stat = _timed(lambda: table[index], device, budget_s, f"gather of {rows} rows of {GATHER_ROW_BYTES} B", warnings)
        moved = rows * GATHER_ROW_BYTES
        points.append(PointwisePoint(elements=rows, bytes=moved, time=stat, elements_per_s=rows / stat.median_s, bytes_per_s=moved / stat.median_s))
        if progress:
            progress()
    return [PointwiseCurve(op="gather_rows", dtype="float32", points=points)]


def measure_attention(device: str, dtype_name: str, head_dim: int, causal: bool, *, seqs: list[int], tokens: list[int], budget_s: float, warnings: list, progress=None, single: bool = False):
    """Fused SDPA forward over sequence length x tokens in flight (batch*heads*seq). With ``single``,
    also one sequence alone at each length: a grid of one row of query tiles, under one wave of the
    GPU's multiprocessors, whose time is one tile's walk over the keys (the least any call at that
    key length takes, however few queries it has)."""
    import torch.nn.functional as F

    from roofline.schema.profile import AttentionCurve, AttentionPoint

    dtype = DTYPES[dtype_name]
    points = []
    for seq in seqs:
        counts = sorted({max(tok // seq, 1) for tok in tokens} | ({1} if single else set()))
        for bh in counts:
            q = torch.randn(1, bh, seq, head_dim, device=device, dtype=dtype)
            k, v = torch.randn_like(q), torch.randn_like(q)
            stat = _timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), device, budget_s, f"sdpa {dtype_name} bh={bh} s={seq}", warnings)
            flops = 4 * bh * seq * seq * head_dim
            points.append(AttentionPoint(batch_heads=bh, seq=seq, time=stat, flop_per_s=flops / stat.median_s))
            if progress:
                progress()
    return AttentionCurve(dtype=dtype_name, head_dim=head_dim, causal=causal, points=points)
