"""Kernel time of one op on one device: ``max(F / P, B / W, floor)``, each ceiling read from the
calibrated curves at the op's own size and family, plus the passes a backend makes besides its
main kernel.

- F / P: a GEMM-shaped op (matmul, convolution, attention) on the matmul curve of its dtype at its
  equivalent GEMM; a convolution times the calibrated conv-to-GEMM ratio at the nearest calibrated
  convolutions; fused attention on the calibrated SDPA curve; a fused RNN stack from calibrated
  layers; anything else at the vector FLOP rate.
- B / W: bytes over the bandwidth the op family's own calibrated kernel reaches at this size (sin,
  unary, add, add with a broadcast operand, layer_norm, softmax), else the plain copy, read or write
  curve; eval batch norm and group norm take their calibrated row families' time instead
  (``model.families.NormFamilyModel``); GPU pools and resampling are priced by the work of their
  threads (``pool_costs``, ``_upsample_s``), not their bytes.
- floor: the device's least time per kernel (a kernel inside a CUDA graph).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from roofline.costs import OpCost
from roofline.costs.backward import layer_norm_backward_reread_bytes
from roofline.costs.conv import is_transposed
from roofline.costs.pooling import kernel_taps, spatial_dims
from roofline.costs.norm import batch_norm_training, is_batch_norm_forward
from roofline.costs.optimizer import FOREACH_CHUNK_BYTES, multi_tensor_kernels
from roofline.costs.registry import arguments, is_contiguous, parts_on, schema_of
from roofline.graph.ops import CapturedOp, TensorMeta
from roofline.model.curves import (
    ConvKey, ConvModel, conv_aligned, conv_channels_last_key, conv_kind, conv_narrow_plane, conv_out_aligned, conv_patch_key, conv_plane_aligned,
)
from roofline.model.device import DeviceModel
from roofline.model.kernel_table import kernel_key
from roofline.model.reuse import Reach

DTYPE_NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}

# (device kind, op category) whose backend makes a separate pass for a bias (``OpCost.bias_pass_bytes``):
# cuDNN convolves without the bias and ATen adds it after; ATen's CPU addmm copies it in before.
BIAS_PASS = {("cuda", "conv"), ("cpu", "matmul")}


def matmul_dtype_name(dtype: torch.dtype | None, allow_tf32: bool) -> str:
    """The matmul curve that prices a product of this operand dtype."""
    name = DTYPE_NAMES.get(dtype, "float32")
    return "tf32" if name == "float32" and allow_tf32 else name


def _bandwidth_kind(cost: OpCost, dev: DeviceModel) -> str:
    """The calibrated access pattern an op's bytes move at: a fill's, a read's or a copy's. The read
    curve is torch.sum to one value: within the cache its time is the reduction's own passes (flat
    over sizes), beyond it DRAM's read rate. An op that reads far more than it writes without
    reducing to few values (a GEMV, a GEMM with a small output) shares the latter, not the former:
    within the cache it streams as a copy does."""
    if cost.bytes_read == 0:
        return "write"
    if cost.bytes_written * 8 < cost.bytes_read:
        cache = dev.cache_bytes
        if cost.category == "reduction" or cache is None or cost.bytes_read + cost.bytes_written > cache:
            return "read"
    return "copy"


def multi_tensor_s(chunks: list[list[int]], cost: OpCost, dev: DeviceModel) -> float:
    """A foreach op's kernels on the profile's multi-tensor rates: each kernel
    takes at least its floor, its bytes at the streaming rate, and its largest chunk at the rate one
    block streams (a kernel of few blocks, or of one large tensor's last chunks, waits on its
    slowest block: small parameter lists run far below the bandwidth curve)."""
    rates = dev.foreach
    elements = sum(sum(k) for k in chunks)
    if not elements:
        return 0.0
    per_element = (cost.bytes_read + cost.bytes_written) / elements
    block_bytes_per_s = FOREACH_CHUNK_BYTES / rates.chunk.median_s
    return sum(max(rates.kernel_floor.median_s, sum(k) * per_element / rates.stream_bytes_per_s, max(k) * per_element / block_bytes_per_s)
               for k in chunks)


def kernel_terms(op: CapturedOp, cost: OpCost, dev: DeviceModel, reach: Reach = ()) -> tuple[float, float, float]:
    """(compute_s, memory_s, floor_s) of one op on one device; zeros for ops that launch no kernel.
    ``reach``: its inputs' reuse distances (``roofline.model.reuse``), which slow its memory term
    where they lie beyond its own bytes (``_reach_factor``)."""
    if cost.kernels == 0:
        return 0.0, 0.0, 0.0
    chunks = multi_tensor_kernels(op) if dev.foreach is not None else None
    if chunks:  # the floor term: the kernels at their floor, so that a list of tiny tensors reads as floor-bound
        return cost.flops / dev.vector_flop_per_s, multi_tensor_s(chunks, cost, dev), len(chunks) * dev.foreach.kernel_floor.median_s
    attention = _attention_time(op, cost, dev) if cost.category == "attention" else None
    if attention is not None:
        compute = attention
    elif cost.recurrence is not None:
        rec = cost.recurrence
        stack = _rnn_stack_s(cost, dev)
        if stack is not None:
            return stack, 0.0, 0.0  # calibrated whole layers: their bytes and launches are in it
        # per (layer, direction), one small GEMM per time step, one after another
        curve = dev.matmul_model(matmul_dtype_name(cost.compute_dtype, dev.modes.matmul_tf32))
        steps = max(rec.steps, 1)
        compute = rec.layers * steps * curve.time_s(rec.m, rec.n, rec.k) if rec.m and rec.n and rec.k else 0.0
        compute += max(cost.flops - 2 * steps * rec.m * rec.n * rec.k, 0) / dev.vector_flop_per_s
    elif cost.gemm is not None and cost.category in ("matmul", "conv", "attention"):
        batch, m, n, k = cost.gemm
        tf32 = dev.modes.matmul_tf32 or (cost.category == "conv" and dev.kind == "cuda" and dev.modes.conv_tf32)
        curve_name = matmul_dtype_name(cost.compute_dtype, tf32)
        family = _conv_family_s(op, cost, dev) if cost.category == "conv" and batch > 1 else None
        if family is not None:
            compute = family
        else:
            compute = dev.matmul_model(curve_name).time_s(max(batch, 1) * m, n, k) if m and n and k else 0.0
        onednn = _onednn_conv_s(op, cost, dev, compute) if cost.category == "conv" and compute and family is None else None
        if onednn is not None:
            compute = onednn
        elif cost.category == "conv" and compute and family is None:
            ratio = _conv_ratio(op, cost, dev, tf32)
            if ratio != 1.0:  # the calibrated ratio is to the conv's roofline: its GEMM or its bytes
                compute = max(compute, _memory_s(op, cost, dev)) * ratio
        if cost.category == "matmul" and compute and dev.kind == "cuda":
            compute *= _gemm_ratio(op, cost, dev, curve_name, m, n, k, batch)
            if batch > 1 and _batched_products(op):
                compute = max(compute, batched_tile_floor_s(batch, m, n, k, dev.matmul_model(curve_name).peak_flop_per_s))
        # FLOPs beyond the GEMM's own (bias, scaling) at the vector rate.
        compute += max(cost.flops - 2 * max(batch, 1) * m * n * k, 0) / dev.vector_flop_per_s
    else:
        compute = cost.flops / dev.vector_flop_per_s
    memory = _memory_s(op, cost, dev)
    if reach and memory:
        memory *= _reach_factor(op, cost, dev, reach)
    floor = dev.kernel_floor_s * cost.kernels
    return compute, memory, floor


def _reach_factor(op: CapturedOp, cost: OpCost, dev: DeviceModel, reach: Reach) -> float:
    """How much slower an op's bytes move when some inputs must be fetched from farther than its own
    working set: the curves were timed repeating the op on its own buffers (every input as near as
    the op's own bytes). Each input's share of the bytes moves at the op's curve's rate at its reach
    (``roofline.model.reuse``), the rest at the rate at the op's own bytes."""
    nbytes = cost.bytes_read + cost.bytes_written
    far = [(in_bytes, reach_bytes) for in_bytes, reach_bytes in reach if reach_bytes > nbytes and in_bytes > 0]
    if not far or nbytes <= 0:
        return 1.0
    family = _family(op, cost, dev)
    dtype = DTYPE_NAMES.get(_out_dtype(op, cost), "float32")
    kind = _bandwidth_kind(cost, dev)

    def rate(n: int) -> float:
        return dev.family_bytes_per_s(family, n, dtype) or dev.bandwidth.bytes_per_s(max(n, 1), kind)

    own = rate(nbytes)
    inputs_bytes = sum(in_bytes for in_bytes, _ in reach) or 1
    factor = 1.0
    for in_bytes, reach_bytes in far:
        share = cost.bytes_read * min(in_bytes / inputs_bytes, 1.0) / nbytes  # of the op's bytes, this input's reads
        factor += share * max(own / rate(reach_bytes) - 1.0, 0.0)
    return factor


# From rows of this many elements, CUDA layer norm's backward streams the output's gradient and the input
# twice: its input-gradient kernel, then GammaBetaBackward (benchmarks/results/h100_layer_norm_backward_rows.json,
# whose kernels show both at every row length: priced so, rows of 256-1024 read -20% to +31% where one pass
# read -12% to -51%). Over shorter rows GammaBetaBackward runs other strategies (a few column blocks
# scanning every row, or partial sums and two reductions over more than 64Ki rows) that neither pricing
# follows.
LAYER_NORM_REREAD_ROW = 256


def rereads_bytes(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> int:
    """Bytes a GPU's kernels read beyond the op's one pass: a layer norm backward's GammaBetaBackward
    over rows of ``LAYER_NORM_REREAD_ROW`` and more (``costs.backward.layer_norm_backward_reread_bytes``)."""
    if dev.kind != "cuda" or op.packet != "aten.native_layer_norm_backward":
        return 0
    row = math.prod(int(d) for d in arguments(op)["normalized_shape"])
    return layer_norm_backward_reread_bytes(op) if row >= LAYER_NORM_REREAD_ROW else 0


def _memory_s(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> float:
    """Compulsory bytes over the bandwidth of the op's family (or the copy, read or write curve)."""
    nbytes = cost.bytes_read + cost.bytes_written + rereads_bytes(op, cost, dev)
    if not nbytes:
        return 0.0
    rows_s = _norm_family_s(op, cost, dev) if cost.category == "norm" and dev.norm_families else None
    if rows_s is not None:
        return rows_s
    if _warp_softmax_backward(op, dev):  # two passes over the op's bytes at the binary elementwise rate
        dtype = DTYPE_NAMES.get(_out_dtype(op, cost), "float32")
        return 2 * nbytes / (dev.family_bytes_per_s("add", nbytes, dtype) or dev.bandwidth.bytes_per_s(nbytes, _bandwidth_kind(cost, dev)))
    strided = _strided_copy(op, cost, dev)
    if strided is not None:
        return _strided_s(op, cost, dev, strided)
    run = _strided_operand_run(op, cost, dev)
    if run is not None:
        return _run_copy_s(nbytes, run, DTYPE_NAMES.get(_out_dtype(op, cost), "float32"), dev)
    window = _pool_window_s(op, dev)
    if window is None:
        window = _upsample_s(op, cost, dev)
    if window is None:
        window = _im2col_s(op, dev)
    if window is not None:
        return window
    planes = _adaptive_pool_planes_s(op, dev)
    if planes is not None:
        return max(planes, nbytes / dev.bandwidth.bytes_per_s(nbytes, _bandwidth_kind(cost, dev)))
    reduced = _row_reduction_s(op, cost, nbytes, dev)
    if reduced is None:
        reduced = _outer_reduction_s(op, nbytes, dev)
    if reduced is not None:
        return reduced
    family = _family(op, cost, dev)
    dtype = DTYPE_NAMES.get(_out_dtype(op, cost), "float32")
    if family in ELEMENT_BOUND and not dev.has_family(family, dtype):
        nbytes = round(nbytes * _float32_scale(op))
    rate = dev.family_bytes_per_s(family, nbytes, dtype)
    if op.packet == "aten.cat":
        batched = _batched_cat_s(op, nbytes, rate or dev.bandwidth.bytes_per_s(max(nbytes, 1), _bandwidth_kind(cost, dev)), dev)
        if batched is not None:
            return batched
    gathered = _row_gather_s(op, dev)
    if gathered is not None:
        return max(gathered, nbytes / (rate or dev.bandwidth.bytes_per_s(max(nbytes, 1), _bandwidth_kind(cost, dev))))
    if rate and family in ROW_FAMILIES and ("layer_norm" in op.packet or "softmax" in op.packet):
        padded = _warp_softmax_row(op, family, dev)
        if padded is not None:  # each row walked as if of its padded length
            nbytes = round(nbytes * padded / _row_length(op, family))
        rate = _row_rate(op, family, rate, nbytes, dtype, dev, row=padded)
    return nbytes / (rate or dev.bandwidth.bytes_per_s(max(nbytes, 1), _bandwidth_kind(cost, dev)))


def pool_costs(dev: DeviceModel) -> tuple[float, float] | None:
    """(what a GPU pool's output costs besides its taps, in max-pool taps; what an average's tap
    costs, in max-pool taps) from the 3x3 and 2x2 stride-2 max pools and the 3x3 stride-2 average
    at their largest common size (the same outputs), where the kernels stream: 3x3 over 2x2 takes
    r = (a + 9) / (a + 4); the average over the 2x2 max takes (a + 9 t) / (a + 4). None without
    the 2x2 curve; an average's tap as a max's without the average's."""
    curves = [dev.family.get((f, "float32")) for f in (POOL_REFERENCE_FAMILY, POOL_WINDOW_FAMILY, POOL_AVERAGE_FAMILY)]
    if not all(c and c.curve for c in curves[:2]):
        return None
    at = [{p.elements: p.time.median_s for p in c.curve.points} if c and c.curve else {} for c in curves]
    common = set(at[0]) & set(at[1])
    if not common:
        return None
    top = max(common)
    r = at[0][top] / at[1][top]
    a = POOL_OUTPUT_TAPS_MAX if r <= 1.0 else min(max((POOL_REFERENCE_TAPS - POOL_WINDOW_TAPS * r) / (r - 1.0), 0.0), POOL_OUTPUT_TAPS_MAX)
    if top not in at[2]:
        return a, 1.0
    tap = ((a + POOL_WINDOW_TAPS) * at[2][top] / at[1][top] - a) / POOL_REFERENCE_TAPS
    return a, min(max(tap, 0.05), 1.0)


def window_work_s(outputs: int, taps: float, dev: DeviceModel, average: bool = True) -> float | None:
    """Time of a GPU kernel that gives each of ``outputs`` a thread reading ``taps`` values (a
    pool's window, a resampling's neighbours; ``average``: weighted adds, else a max's compares),
    as the calibrated 3x3 stride-2 max pool doing the same work: outputs x (an output's cost +
    taps x a tap's cost), in that pool's bytes at its rate. None without the window families."""
    costs = pool_costs(dev)
    if costs is None or outputs < 1:
        return None
    a, avg_tap = costs
    work = outputs * (a + (avg_tap if average else 1.0) * taps)
    nbytes = max(round(work / (a + POOL_REFERENCE_TAPS) * POOL_REFERENCE_BYTES_PER_OUTPUT), 1)
    return nbytes / dev.family_bytes_per_s(POOL_REFERENCE_FAMILY, nbytes, "float32")


def _channels_last(x) -> bool:
    """A 4-d or 5-d tensor whose channels are its innermost dimension (more than one channel and
    one position: a 1 x 1 plane has stride 1 in channels either way)."""
    return x.ndim in (4, 5) and x.shape[1] > 1 and math.prod(x.shape[2:]) > 1 and x.stride[1] == 1


# ATen's adaptive average pool of a channels-first input to more than one output position
# (``_adaptive_avg_pool2d``; to 1 x 1 it is a mean) gives each (image, channel) plane a block of
# threads that walks the plane's outputs: over a VGG's or AlexNet's 7 x 7 and 6 x 6 planes most of
# them idle, and time follows the planes, not the bytes. Timed by its own family (``calibrate.memory``:
# ``ADAPTIVE_POOL_SIDE``-square planes to the same side) at the op's planes: their bytes in that
# geometry at the family's rate, never under the op's own bytes' time.
ADAPTIVE_POOL_FAMILY = "adaptive_avg_pool_planes"
ADAPTIVE_POOL_SIDE = 7
ADAPTIVE_POOL_PLANE_BYTES = 4 * 2 * ADAPTIVE_POOL_SIDE**2  # float32 in and out of one calibrated plane


def _adaptive_pool_planes_s(op: CapturedOp, dev: DeviceModel) -> float | None:
    """A GPU channels-first adaptive average pool's time by its planes (above); None elsewhere or
    without the family."""
    if dev.kind != "cuda" or op.packet != "aten._adaptive_avg_pool2d" or not op.tensor_inputs():
        return None
    x = op.tensor_inputs()[0]
    if x.ndim not in (3, 4) or _channels_last(x):
        return None
    nbytes = math.prod(x.shape[:-2]) * ADAPTIVE_POOL_PLANE_BYTES
    rate = dev.family_bytes_per_s(ADAPTIVE_POOL_FAMILY, nbytes, "float32")
    return nbytes / rate if rate else None


def _pool_window_s(op: CapturedOp, dev: DeviceModel) -> float | None:
    """A GPU 2-d NCHW pool's time by its window work (``window_work_s``); None off the GPU, for
    other ops and layouts, or where the profile lacks the window families."""
    if dev.kind != "cuda" or op.packet not in GPU_WINDOW_POOLS or not op.outputs or not op.tensor_inputs():
        return None
    kernel = arguments(op).get("kernel_size")
    if kernel is None or _channels_last(op.tensor_inputs()[0]):
        return None
    return window_work_s(op.outputs[0].numel, kernel_taps(kernel, spatial_dims(op)), dev, average="avg" in op.packet)


# ATen's linear, bilinear, bicubic and trilinear resampling of a channels-first input on the GPU
# gives each output position a thread that loops over every image and channel: with an output of
# a few thousand positions each step of the loop waits on its loads, so time follows the loop's
# length (batch x channels) at a step's latency, which grows once the output leaves the L2 cache,
# many times what its bytes would take. A step is timed by the calibrated family (``calibrate.memory``: a
# ``UPSAMPLE_SIDE``-square image of C channels to twice its side, C steps) at the op's own working
# set. An output of more positions than the GPU holds threads (an image resized whole) runs its
# threads in waves and is bound by the work of a thread per output reading its neighbours
# (``window_work_s``), which is all a channels-last input's kernel does (a thread per output
# element); a resampling to the input's own size is a copy.
UPSAMPLE_FAMILY = "upsample_bilinear"
UPSAMPLE_SIDE = 64
# A one-pixel plane resampled up (a pooled branch broadcast back over a feature map: DeepLabV3's image
# pooling, LR-ASPP) reads, step after step, the next channel's one value: 32 float32 steps share a
# cache line, so a step waits on the L1 cache, not on the L2 the calibrated family's 64x64 planes miss
# to (on the H100 DeepLabV3's 8 x 256 steps took 64 ns each against the family's 285). Its own family:
# C one-pixel channels to UPSAMPLE_PIXEL_SIDE square, timed like the other (``calibrate.memory``).
UPSAMPLE_PIXEL_FAMILY = "upsample_bilinear_pixel"
UPSAMPLE_PIXEL_SIDE = 32
UPSAMPLE_PIXEL_STEP_BYTES = 4 * (1 + UPSAMPLE_PIXEL_SIDE**2)  # float32 in and out per channel of the calibrated loop
# Nearest-neighbour resampling gives each output element a thread that computes its source index:
# below the copy's rate (about half on the H100), priced on its own calibrated family (the same
# image doubled), by bytes.
UPSAMPLE_NEAREST_FAMILY = "upsample_nearest"
GPU_NEAREST = {f"aten.{p}": UPSAMPLE_NEAREST_FAMILY for p in (
    "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "_upsample_nearest_exact1d", "_upsample_nearest_exact2d",
    "_upsample_nearest_exact3d")}
UPSAMPLE_TAPS = {"aten.upsample_linear1d": 2, "aten.upsample_bilinear2d": 4, "aten.upsample_bicubic2d": 16, "aten.upsample_trilinear3d": 8}
UPSAMPLE_CALIBRATED_STEP_BYTES = 4 * (UPSAMPLE_SIDE**2 + (2 * UPSAMPLE_SIDE) ** 2)  # float32 in and out per channel of the calibrated loop


def _upsample_s(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> float | None:
    """A GPU resampling's time: the larger of its loop over images and channels (channels-first;
    from a one-pixel plane on the pixel family where the profile has it) and its threads' window
    work, never under its bytes' time; None elsewhere, for a resampling to the same size, or
    without the families."""
    taps = UPSAMPLE_TAPS.get(op.packet)
    if dev.kind != "cuda" or taps is None or not dev.has_family(UPSAMPLE_FAMILY, "float32") or not op.outputs or not op.tensor_inputs():
        return None
    x, out = op.tensor_inputs()[0], op.outputs[0]
    if x.ndim < 3 or tuple(x.shape[2:]) == tuple(out.shape[2:]):
        return None
    nbytes = max(cost.bytes_read + cost.bytes_written, 1)
    bytes_s = nbytes / dev.bandwidth.bytes_per_s(nbytes, "copy")
    positions = math.prod(out.shape[2:])
    if _channels_last(x) or positions > resident_threads(dev):
        return max(window_work_s(out.numel, taps, dev) or 0.0, bytes_s)
    if math.prod(x.shape[2:]) == 1 and dev.has_family(UPSAMPLE_PIXEL_FAMILY, "float32"):
        step_s = UPSAMPLE_PIXEL_STEP_BYTES / dev.family_bytes_per_s(UPSAMPLE_PIXEL_FAMILY, nbytes, "float32")
    else:
        step_s = UPSAMPLE_CALIBRATED_STEP_BYTES / dev.family_bytes_per_s(UPSAMPLE_FAMILY, nbytes, "float32")
    return max(x.shape[0] * x.shape[1] * step_s, bytes_s)


# threads one SM holds at once, by compute capability (CUDA's occupancy tables: 2048 on Volta, the
# A100 and Hopper, 1536 on other Ampere and Ada parts, 1024 on Turing)
THREADS_PER_SM = {"7.5": 1024, "8.6": 1536, "8.7": 1536, "8.9": 1536}


def aten_im2col_launches(op: CapturedOp) -> int:
    """Kernels ATen's GPU ``im2col`` (``nn.Unfold``) launches: one an image of a batched input, from a
    loop over the batch in C++; 1 for any other op or an unbatched input (``col2im`` runs the batch
    in one launch)."""
    if op.packet != "aten.im2col" or not op.tensor_inputs():
        return 1
    x = op.tensor_inputs()[0]
    return max(int(x.shape[0]), 1) if x.ndim == 4 else 1


def _im2col_s(op: CapturedOp, dev: DeviceModel) -> float | None:
    """A GPU ``im2col``: its images one launch after another (``aten_im2col_launches``), each a thread
    per (channel, output position) walking the filter's taps, priced as a window's work
    (``window_work_s``) and never under the least kernel time. None elsewhere or without the window
    families."""
    if dev.kind != "cuda" or op.packet != "aten.im2col" or not op.outputs or not op.tensor_inputs():
        return None
    x, out = op.tensor_inputs()[0], op.outputs[0]
    kernel = arguments(op).get("kernel_size")
    if x.ndim < 3 or not isinstance(kernel, (list, tuple)):
        return None
    taps = math.prod(int(k) for k in kernel)
    work = window_work_s(int(x.shape[-3]) * int(out.shape[-1]), taps, dev, average=False)
    return None if work is None else aten_im2col_launches(op) * max(work, dev.kernel_floor_s)


def resident_threads(dev: DeviceModel) -> int:
    """Threads the GPU holds at once (SMs x threads per SM; 132 SMs of 2048 where the profile
    names neither)."""
    ident = dev.part.identity
    sms = getattr(ident, "sm_count", None) or 132
    return sms * THREADS_PER_SM.get(str(getattr(ident, "compute_capability", "")), 2048)


def _batched_cat_s(op: CapturedOp, nbytes: int, rate: float, dev: DeviceModel) -> float | None:
    """A GPU cat of contiguous inputs, which ATen's batched kernel runs with one grid per input sized
    for the largest input: each input moves its share of the bytes at the cat's ``rate``, but
    takes at least the time of that grid (the calibrated ``cat_grid`` curve, over the largest
    input's bytes), so many small inputs beside a large one cost far more than their bytes (a
    DenseNet block's cat of 25). None without that curve or with fewer than two inputs."""
    if dev.kind != "cuda" or not dev.has_family("cat_grid") or not op.outputs or op.outputs[0].ndim > 4:
        return None  # past 4 dimensions ATen copies input by input
    if _strided_cat_inputs(op) is not None:
        return None  # an input not dense in the output's layout: the generic kernel
    sizes = [t.numel * t.itemsize for t in op.tensor_inputs() if t.numel]
    if len(sizes) < 2:
        return None
    largest = max(sizes)
    grid_rate = dev.family_bytes_per_s("cat_grid", largest, "float32")
    if not grid_rate:
        return None
    grid_s = largest / grid_rate
    return sum(max(nbytes * size / sum(sizes) / rate, grid_s) for size in sizes)


# ATen's gather of whole rows (``calibrate.memory.GATHER_ROW_BYTES``'s comment): where each gathered row
# is a multiple of GATHER_VECTOR_BYTES, a block per index copies it in vectors of that size, and a
# row of at most GATHER_WARP_ROW_BYTES gets a block of one warp, whose time follows the rows.
GATHER_VECTOR_BYTES, GATHER_WARP_ROW_BYTES = 16, 512
GATHER_ROW_FAMILY = "gather_rows"
ROW_GATHER_OPS = ("aten.index", "aten.index_select", "aten.embedding")


def row_gather(op: CapturedOp) -> tuple[int, int] | None:
    """(rows, bytes of a row) of a gather of whole rows by one contiguous integer index from a contiguous
    table on 16-byte boundaries: ``table[index]`` (``aten.index`` with the index on the first dimension
    alone), ``index_select`` on dimension 0, an embedding's forward; None for any other op."""
    a = arguments(op)
    if op.packet == "aten.index":
        table, indices = a.get("self"), a.get("indices") or []
        index = indices[0] if len(indices) == 1 else None
    elif op.packet == "aten.index_select":
        table, index = a.get("self"), a.get("index")
        if not isinstance(table, TensorMeta) or a.get("dim") not in (0, -table.ndim):
            return None
    elif op.packet == "aten.embedding":
        table, index = a.get("weight"), a.get("indices")
    else:
        return None
    if not isinstance(table, TensorMeta) or not isinstance(index, TensorMeta) or table.ndim < 2 or not is_contiguous(table):
        return None
    if index.dtype not in (torch.int64, torch.int32) or not is_contiguous(index):
        return None  # a strided or expanded index: the elementwise kernel
    if table.storage_offset * table.itemsize % GATHER_VECTOR_BYTES:
        return None  # rows not on 16-byte boundaries: the elementwise kernel
    return index.numel, math.prod(table.shape[1:]) * table.itemsize


def _row_gather_s(op: CapturedOp, dev: DeviceModel) -> float | None:
    """A GPU gather of rows of at most GATHER_WARP_ROW_BYTES, each a multiple of GATHER_VECTOR_BYTES:
    its row count on the calibrated ``gather_rows`` curve (those rows' bytes at that curve's rate).
    None for other ops and rows, on the CPU, and without the curve."""
    found = row_gather(op) if op.packet in ROW_GATHER_OPS else None
    if found is None or dev.kind != "cuda" or not dev.has_family(GATHER_ROW_FAMILY):
        return None
    rows, row_bytes = found
    if not rows or row_bytes % GATHER_VECTOR_BYTES or row_bytes > GATHER_WARP_ROW_BYTES:
        return None
    model = dev.family.get((GATHER_ROW_FAMILY, "float32"))
    if model is None or model.curve is None or not model.curve.points:
        return None
    first = model.curve.points[0]
    nbytes = max(round(rows * first.bytes / first.elements), 1)  # the rows at the calibrated rows' size
    return nbytes / model.bytes_per_s(nbytes)


# ATen's softmax on the GPU gives rows of at most 1024 elements (and 4 KB) along the innermost
# dimension to a warp each (SoftMax.cu, dispatch_softmax_forward and its backward), in registers
# sized for the next power of two. Rows shorter than 64 are bound by that warp's per-row work: a row
# of 49 (Swin's windows) runs as a row of 64 would. From 64 on the kernel streams the row's own
# bytes: rows of 77, 196 or 768 take their bytes' time, not their padded length's
# (benchmarks/row_kernels.py --op softmax).
WARP_SOFTMAX_PADDED_BELOW, WARP_SOFTMAX_MAX_ROW, WARP_SOFTMAX_MAX_ROW_BYTES = 64, 1024, 4096


def _warp_rows(op: CapturedOp, dev: DeviceModel) -> int | None:
    """The row length of a GPU softmax (or its backward) that runs ATen's warp-per-row kernel:
    innermost rows of at most WARP_SOFTMAX_MAX_ROW elements and WARP_SOFTMAX_MAX_ROW_BYTES; None
    for any other op."""
    inputs = op.tensor_inputs()
    row = _row_length(op, "softmax")
    if dev.kind != "cuda" or not inputs or not row or row > WARP_SOFTMAX_MAX_ROW or row * inputs[0].itemsize > WARP_SOFTMAX_MAX_ROW_BYTES:
        return None
    return row if _softmax_dim(op) % inputs[0].ndim == inputs[0].ndim - 1 else None


def _warp_softmax_row(op: CapturedOp, family: str, dev: DeviceModel) -> int | None:
    """The padded row length of a GPU softmax forward (log or not), or log_softmax's backward, over
    warp rows shorter than ``WARP_SOFTMAX_PADDED_BELOW`` and not a power of two; None for any other
    op (softmax's own backward is ``_warp_softmax_backward``'s)."""
    row = _warp_rows(op, dev) if family == "softmax" else None
    if not row or row & (row - 1) == 0 or row >= WARP_SOFTMAX_PADDED_BELOW:
        return None
    return 1 << (row - 1).bit_length()


def _warp_softmax_backward(op: CapturedOp, dev: DeviceModel) -> bool:
    """A GPU softmax backward over warp rows, which runs two streaming passes, each reading the
    gradient and the softmax's output and writing the result (the gradient times the output, then
    the warp kernel's row sums and update; two kernels with torch 2.11, ``benchmarks/row_kernels.py
    --op softmax_backward --kernels``), at the binary elementwise rate: unlike the forward, no
    exponential binds them, in any dtype. False for log_softmax's backward and rows a block each
    (not timed)."""
    return op.packet == "aten._softmax_backward_data" and bool(op.outputs) and _warp_rows(op, dev) is not None


def _float32_scale(op: CapturedOp) -> float:
    """Bytes of the op's tensors with every narrower float as float32, over their bytes."""
    tensors = [*op.tensor_inputs(), *op.outputs]
    actual = sum(t.numel * t.itemsize for t in tensors)
    widened = sum(t.numel * (4 if t.dtype.is_floating_point and t.itemsize < 4 else t.itemsize) for t in tensors)
    return widened / actual if actual else 1.0


def _row_rate(op: CapturedOp, family: str, long_rate: float, nbytes: int, dtype: str, dev: DeviceModel,
              row: int | None = None) -> float:
    """A row-wise kernel's rate at its own row length (``row``, else the op's), between the family
    calibrated on short rows and the one on long rows: a GPU layer norm's time linear in 1 / row
    (``_block_per_row_s``), any other kernel's rate interpolated in log(row)."""
    short_family, short_row, long_row = ROW_FAMILIES[family]
    short_rate = dev.family_bytes_per_s(short_family, nbytes, dtype) if dev.has_family(short_family) else None
    row = row or _row_length(op, family)
    if not short_rate or not row or row >= long_row:
        return long_rate
    if dev.kind == "cuda" and op.packet in BLOCK_PER_ROW:
        return nbytes / _block_per_row_s(nbytes / short_rate, nbytes / long_rate, row, short_row, long_row)
    if row <= short_row:
        return short_rate
    f = math.log(row / short_row) / math.log(long_row / short_row)
    return math.exp((1 - f) * math.log(short_rate) + f * math.log(long_rate))


# ATen's reductions that give each output one innermost row (its reduce kernel's inner-dimension
# configuration), priced per row up to REDUCE_LONG_ROW elements; rows shorter than REDUCE_MIN_ROW
# take a row of that length's time per element (benchmarks/row_kernels.py --op sum|norm: rows of 8,
# 16 and 32 take the same time over the same elements)
ROW_REDUCTIONS = {"aten.sum", "aten.mean", "aten.linalg_vector_norm", "aten.amax", "aten.amin"}
REDUCE_SHORT, REDUCE_LONG, REDUCE_SHORT_ROW, REDUCE_LONG_ROW, REDUCE_MIN_ROW = "reduce_short", "reduce_long", 64, 1024, 32
# ATen's reductions over outer dimensions keep a run of innermost elements as outputs (a bias
# gradient x.sum(0) of (tokens, features)): calibrated at these widths of the kept run
# (``calibrate.memory.REDUCTION_FAMILIES``)
REDUCE_OUTER_WIDTHS = (64, 256, 1024)


def reduce_outer_family(width: int) -> str:
    """The calibrated family of outer reductions that keep ``width`` innermost elements."""
    return f"reduce_outer_{width}"


def _reduced_dims(op: CapturedOp) -> tuple[object, list[int]] | None:
    """The input of a reduction (``ROW_REDUCTIONS``) over named dimensions and those dimensions,
    sorted and non-negative; None for any other op, a 0-d input, or a reduction to one value."""
    if op.packet not in ROW_REDUCTIONS or not op.tensor_inputs():
        return None
    x = op.tensor_inputs()[0]
    dims = arguments(op).get("dim")
    if x.ndim == 0 or dims is None:
        return None
    dims = sorted({int(d) % x.ndim for d in ([dims] if isinstance(dims, int) else dims)})
    return (x, dims) if dims else None


def inner_reduction_row(op: CapturedOp) -> int | None:
    """Elements per output of a reduction (``ROW_REDUCTIONS``) over its input's innermost
    dimensions laid out contiguously: one row per output, more than one output. None for any other
    op or layout (a reduction to one value, over outer or strided dimensions)."""
    found = _reduced_dims(op)
    if found is None:
        return None
    x, dims = found
    if dims != list(range(x.ndim - len(dims), x.ndim)):
        return None
    row, stride = 1, 1
    for d in reversed(dims):  # the reduced dimensions one contiguous run
        if x.shape[d] > 1 and x.stride[d] != stride:
            return None
        row, stride = row * x.shape[d], stride * x.shape[d]
    return row if 1 < row < x.numel else None


def _row_reduction_s(op: CapturedOp, cost: OpCost, nbytes: int, dev: DeviceModel) -> float | None:
    """A GPU row reduction (``inner_reduction_row``) of rows up to REDUCE_LONG_ROW: linear in
    1 / row between the families calibrated at rows of REDUCE_SHORT_ROW and REDUCE_LONG_ROW
    (``calibrate.memory.ROW_REDUCTION_FAMILIES``), as a block per row runs (``_block_per_row_s``). None for
    longer rows (few outputs split each row across blocks: 256 rows of 4096 took up to 2x the time
    of 1024 rows of 1024), any other op, or a profile without those families."""
    row = inner_reduction_row(op) if dev.kind == "cuda" else None
    dtype = DTYPE_NAMES.get(op.tensor_inputs()[0].dtype, "float32") if row else None
    if not row or row > REDUCE_LONG_ROW or not (dev.has_family(REDUCE_SHORT, dtype) and dev.has_family(REDUCE_LONG, dtype)):
        return None
    short_s = nbytes / dev.family_bytes_per_s(REDUCE_SHORT, nbytes, dtype)
    long_s = nbytes / dev.family_bytes_per_s(REDUCE_LONG, nbytes, dtype)
    return _block_per_row_s(short_s, long_s, max(row, REDUCE_MIN_ROW), REDUCE_SHORT_ROW, REDUCE_LONG_ROW)


def outer_reduction_width(op: CapturedOp) -> int | None:
    """The run of kept elements inside the innermost reduced dimension, in memory order, of a
    reduction (``ROW_REDUCTIONS``) over outer dimensions: a bias gradient's x.sum(0) of (tokens,
    features) keeps its features, a channels-last tensor's sum over N, H and W its channels,
    ResNeSt's sum over its radix dimension the C x H x W after it. ATen's kernel gives a thread a few
    adjacent outputs of that run and splits the reduced elements over the block and, when long,
    over blocks with a second pass. None for a reduction over the innermost elements (a row
    reduction, ``inner_reduction_row``), to one value, or whose kept run is not dense."""
    found = _reduced_dims(op)
    if found is None:
        return None
    x, reduced = found
    order = sorted((d for d in range(x.ndim) if x.shape[d] > 1), key=lambda d: -x.stride[d])  # outermost first
    positions = [order.index(d) for d in reduced if d in order]
    if not positions:
        return None
    run = 1
    for d in reversed(order[max(positions) + 1:]):  # the kept dimensions inside the innermost reduced one
        if x.stride[d] != run:
            return None
        run *= x.shape[d]
    return run if run > 1 else None


def _outer_reduction_s(op: CapturedOp, nbytes: int, dev: DeviceModel) -> float | None:
    """A GPU outer reduction (``outer_reduction_width``) at its bytes over the rate of the calibrated
    outer reductions, log-linear in the kept run's width between the widths around it
    (``REDUCE_OUTER_WIDTHS``; the nearest beyond them: from 1024 columns on, every thread of a warp
    has outputs). None for other ops or a profile without those families."""
    width = outer_reduction_width(op) if dev.kind == "cuda" else None
    if not width:
        return None
    dtype = DTYPE_NAMES.get(op.tensor_inputs()[0].dtype, "float32")
    widths = [w for w in REDUCE_OUTER_WIDTHS if dev.has_family(reduce_outer_family(w), dtype)]
    if not widths:
        return None
    log_rates = [math.log(dev.family_bytes_per_s(reduce_outer_family(w), nbytes, dtype)) for w in widths]
    return nbytes / math.exp(float(np.interp(math.log(width), [math.log(w) for w in widths], log_rates)))


def _block_per_row_s(short_s: float, long_s: float, row: int, short_row: int, long_row: int) -> float:
    """A kernel that gives each row a block of its own (ATen's vectorized layer norm) takes a fixed
    time per row (the block's launch and its two reductions) plus a time per element: over the same
    elements, time is linear in 1 / row, fixed by the two calibrated row lengths' times and carried
    below the short one (rows of 16-48 take their time per row, not per byte)."""
    per_row_s = max(short_s - long_s, 0.0) / (1 / short_row - 1 / long_row)
    return long_s + per_row_s * (1 / row - 1 / long_row)


def _row_length(op: CapturedOp, family: str) -> int | None:
    """Elements per row: layer_norm's normalized shape, softmax's reduced dimension."""
    inputs = op.tensor_inputs()
    if not inputs:
        return None
    x = inputs[0]
    if family == "layer_norm":
        shape = op.args[1] if len(op.args) > 1 and isinstance(op.args[1], (list, tuple)) else None
        return math.prod(shape) if shape else (x.shape[-1] if x.ndim else None)
    return x.shape[_softmax_dim(op)] if x.ndim else None


def _softmax_dim(op: CapturedOp) -> int:
    """The dimension a softmax reduces: ``dim`` follows the input, or the gradient and the output
    in a backward."""
    at = 2 if "backward" in op.packet else 1
    return op.args[at] if len(op.args) > at and isinstance(op.args[at], int) else -1


# eval batch norm's entry points (``costs.norm``: the training flag tells train from eval)
BATCH_NORM = {"aten.native_batch_norm", "aten.cudnn_batch_norm", "aten._native_batch_norm_legit", "aten._native_batch_norm_legit_no_training"}
BATCH_NORM_BACKWARD = {"aten.native_batch_norm_backward", "aten.cudnn_batch_norm_backward"}  # ATen's own (the CPU's), cuDNN's
GROUP_NORM = {"aten.native_group_norm": "group_norm", "aten.native_group_norm_backward": "group_norm_backward"}


def _norm_rows(op: CapturedOp) -> tuple[str, int, int] | None:
    """(family, rows, elements per row) of a normalization whose kernel walks rows: batch norm on a
    contiguous NCHW input (channels-last and 2-D inputs run another kernel), eval (a row per N x C
    plane of H x W) or training and its backward (a row per channel of N x H x W: cuDNN's block
    walks a channel for its statistics); group norm and its backward (a row per sample and group);
    None for any other."""
    inputs = op.tensor_inputs()
    if op.packet not in (*BATCH_NORM, *BATCH_NORM_BACKWARD, *GROUP_NORM) or not inputs or inputs[0].ndim < 3:
        return None
    a = arguments(op)
    x = a["input"]
    if op.packet in GROUP_NORM:
        rows = x.shape[0] * int(a["group"])
        return GROUP_NORM[op.packet], rows, x.numel // max(rows, 1)
    plane = math.prod(x.shape[2:])
    if not _row_major(x) or plane <= 1:
        return None
    if op.packet in BATCH_NORM_BACKWARD:
        kind = "batch_norm_train_backward" if a.get("train", op.packet == "aten.cudnn_batch_norm_backward") else None
    else:
        kind = "batch_norm_train" if a.get("training", False) else "batch_norm_eval"
    if kind == "batch_norm_eval":
        return kind, x.shape[0] * x.shape[1], plane
    return None if kind is None else (kind, x.shape[1], x.shape[0] * plane)


def _norm_family_s(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> float | None:
    """A batch norm (eval, training, training's backward) or group norm on its calibrated family
    (None: another op, or the profile has no curve for it)."""
    shape = _norm_rows(op)
    if shape is None:
        return None
    kind, rows, row = shape
    return dev.norm_families.time_s(kind, DTYPE_NAMES.get(_out_dtype(op, cost), "float32"), rows, row)


def bias_pass_s(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> float:
    """Time of the separate bias pass this device's backend makes for this op (``BIAS_PASS``). On a
    GPU ATen adds a convolution's bias after cuDNN's kernel as ``output.add_(bias)`` with the bias
    broadcast over every position, which runs TensorIterator's non-vectorized kernel: priced on the
    broadcast binary curve of the output's dtype (a half-precision one streams at about half the
    plain add's rate); the CPU's addmm copies its bias in: the binary add's curve. A copy where
    neither is calibrated."""
    nbytes = cost.bias_pass_bytes if (dev.kind, cost.category) in BIAS_PASS else 0
    if not nbytes or _native_depthwise(op, cost, dev):
        return 0.0
    rate = dev.family_bytes_per_s("mul_broadcast", nbytes, DTYPE_NAMES.get(_out_dtype(op, cost), "float32")) if dev.kind == "cuda" else None
    rate = rate or dev.family_bytes_per_s("add", nbytes) or dev.bandwidth.bytes_per_s(nbytes, "copy")
    return nbytes / rate


def _native_depthwise(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> bool:
    """A depthwise convolution that ATen runs with its own CUDA kernel (``conv_depthwise2d``), which
    adds the bias as it writes each output: no bias pass."""
    if dev.kind != "cuda" or cost.category != "conv" or cost.gemm is None:
        return False
    return is_depthwise(op) and not runs_cudnn_depthwise(op)


def is_depthwise(op: CapturedOp) -> bool:
    """ATen's ``is_depthwise``: a 1-d (viewed as 2-d, as ATen does), 2-d or 3-d convolution, not
    transposed, with one group per input channel and any multiple of the channels out."""
    inputs = op.tensor_inputs()
    if len(inputs) < 2 or inputs[0].ndim not in (3, 4, 5) or is_transposed(op):
        return False
    x, w = inputs[0], inputs[1]
    groups = int(arguments(op).get("groups") or 1)
    return groups > 1 and x.shape[1] == groups and w.shape[0] % x.shape[1] == 0


def _as_2d(op: CapturedOp) -> tuple[tuple, tuple, list[int], list[int]]:
    """(input shape, weight shape, stride, dilation) of a convolution as ATen selects its backend: a
    1-d one viewed as 2-d, (N, C, L) as (N, C, 1, L)."""
    x, w = op.tensor_inputs()[:2]
    a = arguments(op)
    stride = [int(v) for v in a.get("stride") or [1]]
    dilation = [int(v) for v in a.get("dilation") or [1]]
    if x.ndim == 3:
        return (x.shape[0], x.shape[1], 1, x.shape[2]), (w.shape[0], w.shape[1], 1, w.shape[2]), [1, stride[-1]], [1, dilation[-1]]
    return tuple(x.shape), tuple(w.shape), stride * (x.ndim - 2) if len(stride) == 1 else stride, dilation


def runs_cudnn_depthwise(op: CapturedOp) -> bool:
    """Whether a GPU depthwise convolution (``is_depthwise``) runs cuDNN rather than ATen's own kernel,
    by ATen's rule (``ConvParams::use_cudnn_depthwise``, cuDNN 8.2 and later): a channels-last input
    (``cudnn_conv_suggest_memory_format``; never float64; a depthwise weight's one channel a group
    looks alike in either layout) always runs cuDNN; an NCHW one
    only in float16, with at least 32 channels, an undilated square stride (or a 1-d one), and a
    workload that cuDNN's depthwise kernels serve (``check_cudnn_depthwise_workload_with_filter``): a
    1-d one at stride 1, or a square 1x1, 3x3 or 5x5 filter over an input at least 7 wide, at stride
    1, or at stride 2 for one image (a 1x1 then only up to 28 wide) or for a batch with 512 channels
    or more, 256 or more at 28 wide or more, or (1x1) at most 16 images of 128 channels or more at
    most 7 wide. ``benchmarks/depthwise_backends.py`` checks it against ATen's own choice on the GPU."""
    x, w = op.tensor_inputs()[:2]
    if torch.float64 in (x.dtype, w.dtype):
        return False
    if _channels_last(x):
        return True
    xs, ws, stride, dilation = _as_2d(op)
    if x.dtype != torch.float16 or w.dtype != torch.float16 or len(xs) != 4 or any(d != 1 for d in dilation):
        return False
    if xs[1] < 32 or (stride[0] != stride[1] and xs[2] != 1):
        return False
    s = stride[1]
    if xs[2] == 1 and s == 1:
        return True
    if ws[2] != ws[3] or ws[3] not in (1, 3, 5) or xs[3] < 7:
        return False
    if s == 1:
        return True
    if s != 2:
        return False
    batch, channels, width, filt = xs[0], xs[1], xs[3], ws[3]
    if batch == 1:
        return (filt == 1 and width <= 28) or filt in (3, 5)
    if filt == 1 and batch <= 16 and channels >= 128 and width <= 7:
        return True
    return filt in (3, 5) and (channels >= 512 or (channels >= 256 and width >= 28))


# cuDNN's heuristics run some float32 convolutions of this many groups or fewer one group at a time,
# on FP32 (not TF32) kernels between transposes (python benchmarks/grouped_kernels_check.py)
FEW_GROUPS = 3
# ... of at most this many channels a group, over a batch: the sweep's widths reach 48, the zoo's
# convolutions of 64 and more a group, and of one image, ran their grouped kernels; 56 lies between
FEW_GROUPS_WIDTH_MAX = 56


def cudnn_may_loop_groups(op: CapturedOp) -> str | None:
    """Why cuDNN may run this forward GPU convolution (``aten.convolution``'s arguments) group by
    group on slow kernels, where the calibrated families may price the other kernel (the few-group
    points cover stride 2 over 40-158 pixels only); None otherwise. Which shapes it picks that for is
    its heuristics' choice, not a rule of shapes:

    - a float32 NCHW 2-d convolution of a batch in 2-3 groups of at most 56 channels over a filter
      of several taps (26 of the 48 such shapes ``mechanism_sweep.py --only grouped_kernels``
      timed on the H100 did, most at stride 2);
    - a depthwise one whose filters multiply the channels (out = k x in) that cuDNN rather than
      ATen runs (``runs_cudnn_depthwise``): it may take one legacy kernel a group; channels-last in
      half precision at a stride it does (``cudnn_depthwise_group_launches``, priced: the flag says
      so and names the fix);
    - a channels-last depthwise one with a multiplier or a filter wider than
      ``CUDNN_NHWC_DEPTHWISE_FILTER_MAX``: cuDNN's generic grouped kernel, not the NHWC depthwise
      kernel its family prices.

    Its gradients are not flagged: their kernels were not recorded."""
    inputs = op.tensor_inputs()
    if len(inputs) < 2 or is_transposed(op):
        return None
    x, w = inputs[0], inputs[1]
    groups = int(arguments(op).get("groups") or 1)
    if groups < 2 or x.ndim not in (3, 4, 5):
        return None
    if is_depthwise(op):
        if cudnn_depthwise_group_launches(op):
            return (f"a channels-last half-precision depthwise convolution with a channel multiplier ({w.shape[0] // x.shape[1]}) and a "
                    f"stride: cuDNN launches one kernel per group ({groups}), priced as a launch a group (measured at 3x3 filters of "
                    "multiplier 2 and stride 2); an NCHW input (`.contiguous()`) runs ATen's one kernel instead")
        if _channels_last(x) and x.ndim == 4 and (w.shape[0] > x.shape[1] or max(w.shape[2:]) > CUDNN_NHWC_DEPTHWISE_FILTER_MAX):
            return ("a channels-last depthwise convolution with a channel multiplier or a filter over "
                    f"{CUDNN_NHWC_DEPTHWISE_FILTER_MAX} taps wide: cuDNN runs its generic grouped kernel, 1.7-4.9x ATen's NCHW "
                    "kernel, not the NHWC depthwise kernel priced here; an NCHW input (`.contiguous()`) runs ATen's")
        if w.shape[0] > x.shape[1] and runs_cudnn_depthwise(op):
            return (f"a depthwise convolution with a channel multiplier ({w.shape[0] // x.shape[1]}) that cuDNN runs: it may run "
                    "one legacy kernel per group, many times the depthwise kernel priced here; `roofline calibrate --for` times it")
        return None
    if _few_groups(x, w, groups):
        return (f"a float32 convolution of {groups} groups: cuDNN runs some one group at a time on FP32 kernels, ~10x its "
                "grouped kernel; at stride 2 near calibration's few-group points priced as the nearest one ran, else on the "
                "grouped kernel, and cuDNN may have chosen otherwise; `roofline calibrate --for` times it")
    return None


# the widest filter cuDNN's NHWC depthwise kernel (``conv2d_c1_k1_nhwc``) takes; wider ones, and
# channel multipliers, run its generic grouped kernel (``benchmarks/token_grid_check.py --rows``)
CUDNN_NHWC_DEPTHWISE_FILTER_MAX = 7


def cudnn_depthwise_group_launches(op: CapturedOp) -> int:
    """Kernels cuDNN launches for a forward depthwise convolution it runs one group at a time, else
    0: a 2-d channels-last one in half precision whose filters multiply the channels (out = k x in),
    at a stride over 1, launches its NHWC engine once per group (a token grid that a vision
    transformer reshapes, PiT's pooling; ``mechanism_sweep.py --only token_grid``: 144 and 288
    launches at about the device's least time a kernel each, one image or 32). Measured at 3x3
    filters of multiplier 2 and stride 2 only; other filters, multipliers and strides of that kind
    are taken to loop alike."""
    if op.packet not in _DENSE_CONV or not is_depthwise(op):
        return 0
    x, w = op.tensor_inputs()[:2]
    if x.ndim != 4 or not _channels_last(x) or x.dtype not in (torch.float16, torch.bfloat16) or w.shape[0] <= x.shape[1]:
        return 0
    return x.shape[1] if max(_as_2d(op)[2]) > 1 else 0


def _few_groups(x, w, groups: int) -> bool:
    """A float32 NCHW 2-d convolution of a batch in 2 to ``FEW_GROUPS`` groups of at most
    ``FEW_GROUPS_WIDTH_MAX`` channels over a filter of several taps: cuDNN may loop over its groups."""
    return (2 <= groups <= FEW_GROUPS and w.shape[1] <= FEW_GROUPS_WIDTH_MAX and x.shape[0] > 1 and x.ndim == 4
            and x.dtype == torch.float32 and not _channels_last(x) and math.prod(w.shape[2:]) > 1)


# ATen's own eval batch norm on a GPU: two per-channel kernels (the scale and shift from the running
# statistics), then the normalize pass (benchmarks/conv_host_cost.py records them)
ATEN_BATCH_NORM_KERNELS = 3
CUDNN_BATCH_NORM_MAX_EVAL_BATCH = 65535


def runs_cudnn_batch_norm(op: CapturedOp, a: dict | None = None) -> bool:
    """Whether a GPU batch norm forward runs cuDNN's one kernel, by ATen's rule
    (``_batch_norm_impl_index``): a float32 input, or a float16 one with float32 weights (as autocast
    leaves them; bfloat16 never), with weight and bias, at least 3-d, under 2^31 - 1 elements, and in
    eval at most 65535 samples. Half-precision weights (``model.half()``), bfloat16 or a 2-d input
    run ATen's own kernels. A capture names the path only where it ran with cuDNN present; this
    decides it from the operands wherever the model was traced. ``a``: the op's ``arguments`` where
    the caller has them."""
    if op.packet in ("aten.cudnn_batch_norm", "aten.miopen_batch_norm"):
        return True
    a = arguments(op) if a is None else a
    x, weight, bias = a.get("input"), a.get("weight"), a.get("bias")
    if not isinstance(x, TensorMeta) or not isinstance(weight, TensorMeta) or not isinstance(bias, TensorMeta):
        return False
    if not (x.dtype == torch.float32 or (x.dtype == torch.float16 and weight.dtype == torch.float32)):
        return False
    if x.ndim < 3 or x.numel >= 2**31 - 1:
        return False
    return batch_norm_training(op, a) or x.shape[0] <= CUDNN_BATCH_NORM_MAX_EVAL_BATCH


def aten_batch_norm_launches(op: CapturedOp) -> int:
    """Kernels a GPU eval batch norm forward launches from C++ beyond cuDNN's one (which the
    representative batch norm's calibrated dispatch holds): ATen's own path's two per-channel
    kernels. 0 for any other op, a training batch norm, or an op whose schema is unknown (its
    arguments cannot be read)."""
    if not is_batch_norm_forward(op) or schema_of(op) is None:
        return 0
    a = arguments(op)
    return 0 if batch_norm_training(op, a) or runs_cudnn_batch_norm(op, a) else ATEN_BATCH_NORM_KERNELS - 1


# ops whose kernels need a row-major input and copy a strided one first (ATen's layer_norm and
# softmax call ``input.contiguous()``): the copy is a kernel of its own inside the op
CONTIGUOUS_INPUT = {"aten.native_layer_norm", "aten._softmax"}


def _row_major(t) -> bool:
    """Whether a tensor's strides are the dense row-major ones (size-1 dimensions aside)."""
    return _dense_in_order(t, list(reversed(range(t.ndim))))


def contiguous_pass_s(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> float:
    """Time of the copy an op makes of a strided input before its kernel (``CONTIGUOUS_INPUT``),
    one read and one write of the input: a strided copy on the strided-copy families where the
    profile has them (a transposed input is copied in runs of one element), else on the copy curve;
    0 for a row-major input."""
    inputs = op.tensor_inputs()
    if op.packet not in CONTIGUOUS_INPUT or not inputs or _row_major(inputs[0]) or not cost.kernels:
        return 0.0
    x = inputs[0]
    return _copy_pass_s(x, TensorMeta.contiguous(tuple(x.shape), x.dtype), dev)


def _copy_pass_s(src, dst, dev: DeviceModel) -> float:
    """One copy of ``src`` into the layout of ``dst`` (one read and one write of its bytes): on the
    strided-copy families at the run it gathers where the profile has them, else on the copy curve."""
    nbytes = 2 * src.nbytes
    run = gather_run(src, dst, gpu=dev.kind == "cuda")
    if run is not None and _has_strided_families(dev):
        return _run_copy_s(nbytes, run, DTYPE_NAMES.get(src.dtype, "float32"), dev)
    return nbytes / dev.bandwidth.bytes_per_s(nbytes, "copy")


def contiguous_copy_s(t, dev: DeviceModel) -> float:
    """One ``.contiguous()`` of ``t`` into dense row-major (NCHW) order, as a kernel of its own."""
    return _copy_pass_s(t, TensorMeta.contiguous(tuple(t.shape), t.dtype), dev) + dev.kernel_floor_s


def _channels_last_like(t) -> TensorMeta:
    """A dense channels-last tensor of ``t``'s shape and dtype: channels innermost, then the spatial
    dimensions from the last, the batch outermost."""
    order = [0, *range(2, t.ndim), 1]  # outermost first
    dense = TensorMeta.contiguous(tuple(t.shape[i] for i in order), t.dtype)
    stride = [0] * t.ndim
    for pos, dim in enumerate(order):
        stride[dim] = dense.stride[pos]
    return TensorMeta(shape=tuple(t.shape), dtype=t.dtype, stride=tuple(stride), device=t.device)


def weight_layout_pass_s(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> float:
    """Time of the copy of a GPU convolution's weight into its input's layout: cuDNN runs a
    channels-last input channels-last (``cudnn_conv_suggest_memory_format``, never in float64) and
    ATen hands it the weight ``.contiguous()`` in that layout, so an NCHW weight (a model's
    parameters as created, under an input a token reshape left channels-last: ConvNeXt's
    downsampling) is copied on every call: a copy into the channels-last layout (``_copy_pass_s``)
    plus the copy kernel's least time. 0 for a weight already dense channels-last (1x1 and depthwise
    weights are either way), an NCHW input, float64, a transposed convolution (not measured), and
    anything but a forward convolution."""
    if dev.kind != "cuda" or cost.category != "conv" or cost.conv_gradient is not None or op.packet not in _DENSE_CONV or is_transposed(op):
        return 0.0
    inputs = op.tensor_inputs()
    if len(inputs) < 2 or not _channels_last(inputs[0]) or torch.float64 in (inputs[0].dtype, inputs[1].dtype):
        return 0.0
    w = inputs[1]
    if w.ndim != inputs[0].ndim or _dense_in_order(w, [1, *reversed(range(2, w.ndim)), 0]):
        return 0.0
    return _copy_pass_s(w, _channels_last_like(w), dev) + dev.kernel_floor_s


def _timed(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> float | None:
    """The op's kernel from the profile's kernel table, if timed there. A convolution gradient's
    stand-in (``OpCost.conv_gradient``) has its layer's forward signature but is not that kernel."""
    if not dev.kernel_table or cost.conv_gradient:
        return None
    return dev.kernel_table.get(kernel_key(op))


def kernel_s(op: CapturedOp, cost: OpCost, dev: DeviceModel, reach: Reach = ()) -> tuple[float, float, float, float]:
    """(kernel_s, compute_s, memory_s, floor_s): the op's predicted device time and its terms; a
    fused native op that runs several kernels (``OpCost.parts``) the sums of theirs; an op of the
    profile's kernel table its timed kernel. ``reach``: as ``kernel_terms``."""
    if cost.parts:
        timed = _timed(op, cost, dev)
        terms = [kernel_s(p_op, p_cost, dev) for p_op, p_cost in parts_on(cost, dev.kind)]
        summed = tuple(sum(t[i] for t in terms) for i in range(4))
        return summed if timed is None else (timed, *summed[1:])
    compute, memory, floor = kernel_terms(op, cost, dev, reach)
    if not cost.kernels:
        return 0.0, compute, memory, floor
    timed = _timed(op, cost, dev)
    kernel = timed if timed is not None else (max(compute, memory, floor) + bias_pass_s(op, cost, dev) + contiguous_pass_s(op, cost, dev)
                                              + weight_layout_pass_s(op, cost, dev))
    return kernel, compute, memory, floor


def kernel_source(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> str:
    """Where an op's kernel time comes from: 'table' (timed at its exact signature), 'curve', or
    'none' for an op that launches no kernel."""
    if not cost.kernels:
        return "none"
    if _timed(op, cost, dev) is not None:
        return "table"
    if cost.parts:
        sources = {kernel_source(p_op, p_cost, dev) for p_op, p_cost in parts_on(cost, dev.kind)} - {"none"}
        return sources.pop() if len(sources) == 1 else "mixed"
    return "curve"


def _rnn_stack_s(cost: OpCost, dev: DeviceModel) -> float | None:
    """A fused LSTM/GRU's (layer, direction) groups from the calibrated RNN layers
    (``RnnModel.stack_s``); None when the profile has none for this dtype or the op is another cell type."""
    rec = cost.recurrence
    model = dev.rnn_model(DTYPE_NAMES.get(cost.compute_dtype, "float32"))
    if model is None or rec.cell not in ("lstm", "gru") or not (rec.m and rec.n and rec.k):
        return None
    return model.stack_s(rec.cell, rec.layers, max(rec.steps, 1), rec.m, rec.n, rec.k)


def _conv_points(op: CapturedOp, cost: OpCost, dev: DeviceModel, tf32: bool) -> tuple[ConvModel, tuple] | None:
    """The calibrated conv model that prices an ungrouped convolution and the arguments of its
    lookup (m, n, k, taps, key); None for grouped and depthwise convolutions, an unbatched input,
    and a kind the profile's curve does not price. A keyed curve prices 1-d, 3-d and transposed
    convolutions too (``ConvKey``); an older curve only 2-d forward ones."""
    batch, m, n, k = cost.gemm
    inputs = op.tensor_inputs()
    if batch != 1 or len(inputs) < 2 or op.packet == "aten.conv_tbc":
        return None
    x, w = inputs[0], inputs[1]
    model = dev.conv_model(DTYPE_NAMES.get(cost.compute_dtype, "float32"), tf32)
    if model is None or x.ndim != w.ndim:
        return None
    taps = math.prod(w.shape[2:])
    if not model.keyed:
        if x.ndim != 4 or is_transposed(op):
            return None
        return model, (m, n, k, taps, None)
    if x.ndim not in (3, 4, 5):
        return None
    stride = arguments(op).get("stride", [1])
    strided = any(int(s) > 1 for s in stride) if isinstance(stride, (list, tuple)) else int(stride) > 1
    kind = conv_kind(x.ndim - 2, is_transposed(op))
    out = op.outputs[0] if op.outputs else None
    positions = math.prod(out.shape[2:]) if out is not None and out.ndim == x.ndim else 0
    # channels with unit stride: a channels-last input, or an NCHW one over a 1 x 1 plane; neither
    # takes the plane or output-channel key of an NCHW 1x1
    unit_channels = x.shape[1] > 1 and x.stride[1] == 1
    plane = conv_plane_aligned(kind, taps, strided, positions, x.itemsize, channels_last=unit_channels)
    # the output-channel key is the forward's kernel choice: a gradient's stand-in (costs.backward)
    # runs other kernels, and an op without its output has no plane to key on
    out_aligned = (cost.conv_gradient is not None or out is None or positions == 0
                   or conv_out_aligned(kind, taps, strided, out.shape[1], positions, x.itemsize, channels_last=unit_channels))
    last = cost.conv_gradient is None and conv_channels_last_key(kind, strided, _channels_last(x))
    # a gradient's stand-in runs other kernels than the forward's narrow-plane GEMMs
    narrow = cost.conv_gradient is None and conv_narrow_plane(kind, taps, strided, positions, x.itemsize, channels_last=unit_channels)
    _, _, strides, dilation = _as_2d(op)
    patch = conv_patch_key(kind, cost.conv_gradient is None, w.shape[2:], strides, dilation)
    key = ConvKey(kind, taps, strided, conv_aligned(x.shape[1], x.itemsize), plane, out_aligned, last, narrow, patch)
    return model, (m, n, k, taps, key)


def _conv_ratio(op: CapturedOp, cost: OpCost, dev: DeviceModel, tf32: bool) -> float:
    """Calibrated conv-to-roofline time ratio for an ungrouped convolution (1.0 where no points
    price it, ``_conv_points``)."""
    found = _conv_points(op, cost, dev, tf32)
    return 1.0 if found is None else found[0].ratio(*found[1])


def kernels_busy_s(op: CapturedOp, cost: OpCost, dev: DeviceModel, kernel: float, compute: float, memory: float) -> float | None:
    """An op's kernels' summed time, without the gaps between them, where it differs from its
    ``kernel`` time: a dense NCHW GPU convolution priced from calibrated points whose kernels' time
    was measured (``ConvPoint.kernels_s``) runs several kernels (layout transforms around its GEMM),
    and its kernel time (the device time it takes, what the timeline adds) holds the gaps between
    them, which the profiler's per-op time leaves out. ``compute``, ``memory``: its terms, the larger
    of which the points' ratio and share price. None for the rest, a channels-last one too (its
    stride-1 points are its NCHW twin's, gaps and all)."""
    if dev.kind != "cuda" or cost.category != "conv" or cost.parts or cost.gemm is None or _timed(op, cost, dev) is not None:
        return None
    if any(_channels_last(t) for t in op.tensor_inputs()[:2]):  # ATen runs NHWC if either is
        return None
    found = _conv_points(op, cost, dev, dev.modes.matmul_tf32 or dev.modes.conv_tf32)
    if found is None:
        return None
    share = found[0].busy_share(*found[1])
    return kernel - (1.0 - share) * max(compute, memory) if share < 1.0 else None


def _onednn_conv_s(op: CapturedOp, cost: OpCost, dev: DeviceModel, gemm_s: float) -> float | None:
    """A dense 2-d NCHW float32 convolution (or one gradient of it) that ATen runs with oneDNN on
    the CPU, on the profile's calibrated passes (``CpuConvPassModel``); None where the profile has
    none or ATen runs it otherwise. ATen's ``use_mkldnn``: a 1x1 stride-1 convolution of fewer
    than 16 images on one thread, or of one small image (at most 20480 input elements) under a
    filter of at most 3x3, goes to its own kernels. The passes are calibrated at 8-16 images; a
    one-image forward (inference) keeps the one-image points' ratio."""
    model = dev.conv_passes
    inputs = op.tensor_inputs()
    if model is None or cost.gemm[0] != 1 or len(inputs) < 2 or op.packet not in _DENSE_CONV or is_transposed(op):
        return None
    x, w = inputs[0], inputs[1]
    if x.ndim != 4 or w.ndim != 4 or x.dtype != torch.float32 or w.dtype != torch.float32 or not op.outputs:
        return None
    if _channels_last(x):
        return None  # no reorders
    a = arguments(op)
    stride = [int(v) for v in a.get("stride", [1])] if isinstance(a.get("stride", [1]), (list, tuple)) else [int(a["stride"])]
    dilation = a.get("dilation", [1])
    dilated = any(int(v) > 1 for v in dilation) if isinstance(dilation, (list, tuple)) else int(dilation) > 1
    one_by_one = w.shape[2] == 1 and w.shape[3] == 1
    threads = dev.part.identity.threads_used if dev.part.identity is not None else 1
    if not (max(stride) > 1 or dilated or x.shape[0] >= 16 or not one_by_one or threads > 1):
        return None
    if not (x.shape[0] > 1 or math.prod(x.shape) > 20480 or (w.shape[2] > 3 and w.shape[3] > 3)):
        return None
    if not cost.conv_gradient and x.shape[0] == 1:
        return None  # one image: the calibrated one-image forwards (``_conv_ratio``) price it
    out = op.outputs[0]
    return model.time_s(cost.conv_gradient or "none", gemm_s, x.shape, out.shape, max(stride))


_DENSE_CONV = {"aten.convolution", "aten._convolution", "aten.conv2d", "aten.mkldnn_convolution"}


def _conv_family_s(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> float | None:
    """A grouped or depthwise convolution on its calibrated family (None: dense, transposed, or
    the profile has no family curves)."""
    if not dev.conv_families or is_transposed(op):
        return None
    inputs = op.tensor_inputs()
    if len(inputs) < 2:
        return None
    x, w = inputs[0], inputs[1]
    groups, m, n, k = cost.gemm
    c_in_g = w.shape[1]
    taps = math.prod(w.shape[2:])
    kind = "depthwise" if c_in_g == 1 else "grouped"  # ATen's is_depthwise: groups = in channels, any multiple out
    layout = "channels_last" if _channels_last(x) else "nchw"
    dtype = DTYPE_NAMES.get(cost.compute_dtype, "float32")
    if kind == "depthwise" and dtype == "float16" and layout == "nchw" and not runs_cudnn_depthwise(op):
        dtype = "bfloat16"  # ATen's own kernel, as it runs every bfloat16 NCHW one: that curve's, at the same bytes
    stride = arguments(op).get("stride", [1])
    stride = int(stride[0]) if isinstance(stride, (list, tuple)) and stride else 1
    kernel = w.shape[2] if w.ndim == 4 else math.sqrt(taps)
    macs = groups * m * n * k  # = batch x out positions x Cout x Cin/groups x taps
    t = dev.conv_families.time_s(kind, dtype, layout, kernel, stride, c_in_g, macs, gradient=cost.conv_gradient or "none")
    if t is not None and cost.conv_gradient is None:
        t += cudnn_depthwise_group_launches(op) * dev.kernel_floor_s  # each group's launch, beside the work
    if t is not None and kind == "grouped" and cost.conv_gradient is None and _few_groups(x, w, groups):
        looped = dev.conv_families.looped_groups_s(dtype, c_in_g, x.shape[-1], stride, op.outputs[0].numel if op.outputs else 0)
        if looped is not None:
            return max(t, looped)
    return t


def _leading_bytes(t) -> int | None:
    """Bytes between rows of a matrix operand (its non-unit stride among the last two dims)."""
    if t.ndim < 2:
        return None
    s1, s2 = t.stride[-2], t.stride[-1]
    if s2 == 1 and t.shape[-2] > 1:
        return s1 * t.itemsize
    if s1 == 1 and t.shape[-1] > 1:
        return s2 * t.itemsize
    return None


BATCHED_PRODUCTS = {"aten.bmm", "aten.baddbmm"}
# cuBLAS's batched kernels give each product of a batch output tiles of its own, at least this many
# rows: a product narrower than a tile computes the whole tile (Twins' 7-row windows, whose linear
# layers torch runs as a batch of 7-row products, take 64-row tiles' time on the H100 in float32 and
# half precision alike: docs/design.md, "The model of time", batched products)
BATCHED_TILE = 64


def batched_tile_floor_s(batch: int, m: int, n: int, k: int, peak_flop_per_s: float) -> float:
    """The least price of a batch of (m, n, k) products on a GPU: each product's narrower side rounded
    up to a whole ``BATCHED_TILE``, computed at the dtype's calibrated peak. None is set for a product
    of one row or column (cuBLAS runs matrix-vector kernels there), nor beyond the narrow side: the
    H100's evidence is products of 7 rows and whole tiles of columns."""
    if min(m, n) <= 1 or peak_flop_per_s <= 0:
        return 0.0
    narrow, wide = min(m, n), max(m, n)
    return 2.0 * batch * (-(-narrow // BATCHED_TILE) * BATCHED_TILE) * wide * k / peak_flop_per_s


def _batched_products(op: CapturedOp) -> bool:
    """A batch of products as cuBLAS's batched kernels run it: bmm and baddbmm, and a matmul whose
    operands both keep a batch (a 3-d @ 2-d matmul folds into one mm; a grouped GEMM runs kernels
    of its own)."""
    if op.packet in BATCHED_PRODUCTS:
        return True
    inputs = op.tensor_inputs()
    return op.packet == "aten.matmul" and len(inputs) >= 2 and min(t.ndim for t in inputs[:2]) >= 3


def _gemm_ratio(op: CapturedOp, cost: OpCost, dev: DeviceModel, curve_name: str, m: int, n: int, k: int, batch: int = 1) -> float:
    """A GEMM's time over the aligned mm's: a leading dimension not a multiple of 16 bytes sends
    cuBLAS to slower kernels; addmm's bias epilogue picks other kernels than mm; a batch of small
    products runs tiles of one product each, not the tall GEMM of all their rows that the matmul
    curve prices, and reads the calibrated batches of its own row alignment. ``(m, n, k)``: one
    product of a batch."""
    align = 16
    for t in (*op.tensor_inputs(), *op.outputs[:1]):
        lead = _leading_bytes(t)
        if lead is not None:
            align = min(align, math.gcd(16, lead))
        if t.storage_offset:
            align = min(align, math.gcd(16, t.storage_offset * t.itemsize))
    ratio = dev.gemm_ratios.bmm_ratio(curve_name, m, n, k, aligned=align == 16) if batch > 1 and _batched_products(op) else 1.0
    if align < 16:
        ratio *= dev.gemm_ratios.misaligned_ratio(curve_name, align, m, n, k)
    if op.packet == "aten.addmm" and op.tensor_inputs() and op.tensor_inputs()[0].ndim >= 1 and op.tensor_inputs()[0].numel > 1:
        ratio *= dev.gemm_ratios.addmm_ratio(curve_name, m, n, k)
    return ratio


def _out_dtype(op: CapturedOp, cost: OpCost) -> torch.dtype | None:
    """The dtype an op's kernel streams: its first output's, else its compute dtype."""
    return op.outputs[0].dtype if op.outputs else cost.compute_dtype


def _broadcasts(op: CapturedOp) -> bool:
    """A binary op with an operand broadcast up to the output (neither a scalar nor full size)."""
    if not op.outputs:
        return False
    n = op.outputs[0].numel
    return any(1 < t.numel < n for t in op.tensor_inputs())


# ops priced on a calibrated selection-family curve (calibrate.memory.SELECTION_OPS), by overload packet
SELECTION_FAMILY = {
    **{f"aten.{p}": "compare" for p in ("eq", "ne", "lt", "gt", "le", "ge", "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf")},
    "aten.masked_fill": "masked_fill", "aten.masked_fill_": "masked_fill", "aten.where": "masked_fill",
    "aten.cumsum": "cumsum", "aten.cumprod": "cumsum", "aten.cummax": "cumsum", "aten.cummin": "cumsum",
    "aten.topk": "topk", "aten.sort": "sort", "aten.argsort": "sort",
    "aten.max_pool2d_with_indices": "max_pool2d", "aten.max_pool2d": "max_pool2d",
    "aten.cat": "cat", "aten.roll": "roll",
}
# On a GPU, a pool the window model does not price (3-d, channels-last, or a profile without the
# window families) moves its bytes at the max-pool family's rate (the CPU's loops differ by kind).
GPU_POOLING = {f"aten.{p}": "max_pool2d" for p in ("max_pool3d_with_indices", "max_pool3d", "avg_pool2d", "avg_pool3d")}
# A 2-d max pool's backward gives each input a thread that walks the windows over it, reading their
# gradients and indices: its own calibrated rate (calibrate.memory), well below the copy's
POOL_BACKWARD_FAMILY = "max_pool2d_backward"
GPU_POOLING["aten.max_pool2d_with_indices_backward"] = POOL_BACKWARD_FAMILY
# ATen's GPU pooling kernels give each output a thread that walks its window: the time follows the
# outputs (index arithmetic; the value, and a max pool's index, written) and the window taps (a load
# and a compare or add each), not the bytes, so a 3x3 stride-1 pool (Inception's branches,
# PoolFormer) costs twice the bytes' worth and a 2x2 stride-2 one (VGG, UNets) less. Priced as the
# calibrated 3x3 stride-2 max pool (``max_pool2d``) doing the same work, in taps (``pool_costs``: an
# output's own cost from the 2x2 curve, an average's tap from the average's; the same outputs each).
POOL_REFERENCE_FAMILY, POOL_WINDOW_FAMILY, POOL_AVERAGE_FAMILY = "max_pool2d", "max_pool2d_2x2", "avg_pool2d_3x3"
POOL_REFERENCE_TAPS, POOL_WINDOW_TAPS = 9, 4  # the 3x3 and the 2x2 pool's window (calibrate.memory)
# bytes the reference pool moves per output as the registry counts them: 4 float32 inputs, the
# float32 value and its int64 index
POOL_REFERENCE_BYTES_PER_OUTPUT = 4 * 4 + 4 + 8
POOL_OUTPUT_TAPS_MAX = 64.0  # where the two curves barely differ (launch-bound), an output is all
# 3-d pools, and channels-last 2-d ones, run kernels of their own
GPU_WINDOW_POOLS = {"aten.max_pool2d_with_indices", "aten.max_pool2d", "aten.avg_pool2d"}
# families whose kernels are bound by per-element index work, not by the bytes of their values: a
# dtype the profile did not calibrate is priced as the float32 op over the same elements (fp16 max
# pooling takes as long as fp32 pooling)
ELEMENT_BOUND = {"max_pool2d", POOL_BACKWARD_FAMILY}
# row-wise kernels calibrated at two row lengths (calibrate.memory: ROW and SHORT_ROW)
ROW_FAMILIES = {"layer_norm": ("layer_norm_short", 64, 1024), "softmax": ("softmax_short", 64, 1024)}
# row-wise GPU kernels with a block per row, whatever its length (ATen's vectorized_layer_norm_kernel,
# which every row of benchmarks/row_kernels.py ran: 16-1024 elements, multiples of its vector width)
BLOCK_PER_ROW = {"aten.native_layer_norm"}


# copies whose kernel is ATen's TensorIterator copy (``copy_`` under every name)
COPY_OPS = {"aten.clone", "aten._to_copy", "aten.copy", "aten.copy_", "aten.contiguous", "aten._copy_from", "aten.to", "aten.type_as"}
# strided copies calibrated at two inner runs (calibrate.memory: a transposed copy, in inner runs of
# one element, and a permuted copy whose rows of STRIDED_RUN elements stay whole), and a cat of
# strided inputs
STRIDED_FAMILIES = ("transpose_copy", "strided_copy", "cat_strided")
STRIDED_RUN = 32
# ATen's batched cat kernel for inputs that are not all contiguous gives each input a grid of two
# 512-thread blocks per SM, a quarter of an SM's 2048 threads each: one input alone fills half the
# GPU (as a class token joins the patches), two or more fill it
CAT_GRID_SHARE = 0.5


def _has_strided_families(dev: DeviceModel) -> bool:
    return all(dev.has_family(f) for f in STRIDED_FAMILIES)


def _dims_inner_first(t) -> list[int]:
    """Dimensions of ``t`` of size > 1, from its smallest stride to its largest."""
    return sorted((i for i in range(t.ndim) if t.shape[i] != 1), key=lambda i: (t.stride[i], -i))


def copy_run(src, dst) -> int | None:
    """Elements of the innermost run that a copy from ``src`` to ``dst`` (same shape) reads and
    writes contiguously in both, walking dst's dimensions from its smallest stride; None when the
    whole copy is one run (both dense in one order: ATen copies it as a flat vectorized stream).
    A strided copy computes an offset per element and cannot vectorize."""
    if src.shape != dst.shape or not dst.numel:
        return None
    run = 1
    for i in _dims_inner_first(dst):
        if src.stride[i] != run or dst.stride[i] != run:
            break
        run *= dst.shape[i]
    return None if run == dst.numel else run


# A copy with no inner run shared by source and destination still reads whole cache lines where a
# warp's 32 neighbouring outputs lie close in the source: outputs that step through the source a few
# elements apart (a head dimension of 4 moved inward, NHWC to NCHW of a few channels) share each
# line with the warps of the next few outputs, and few channels moved last (NCHW to NHWC) leave a
# warp a handful of contiguous stretches. Such copies run near the permuted copy's rate, far
# stretches at the transposed copy's (``benchmarks/permute_copies.py``): the rate is interpolated in
# log between them over these gathers.
GATHER_NEAR, GATHER_FAR = 8, 32  # elements between neighbouring outputs' sources
STRETCHES_FEW, STRETCHES_MANY = 16, 256  # a warp's contiguous stretches (the moved dimension's size)
WARP = 32


def gather_run(src, dst, *, gpu: bool) -> float | None:
    """The inner run a copy from ``src`` to ``dst`` streams as (``copy_run``), with a GPU copy of runs
    of one element credited with the locality of its gathers: as long as ``STRIDED_RUN`` where a
    warp's outputs read close or few stretches of the source, 1 where they read far apart, between
    them in log. Only a dense destination whose innermost dimension holds a warp's outputs (or,
    for few stretches, whose next dimension continues it) is credited, and no broadcast source
    (stride 0). None for a flat copy. A CPU's copies keep their inner runs (not measured there)."""
    run = copy_run(src, dst)
    if run != 1 or not gpu:
        return run
    dims = _dims_inner_first(dst)
    inner = dims[0]
    step = abs(src.stride[inner])
    if dst.stride[inner] != 1 or step == 0:
        return 1
    if step <= GATHER_FAR and dst.shape[inner] >= WARP:
        near = math.log(GATHER_FAR / step) / math.log(GATHER_FAR / GATHER_NEAR)
    elif (step > GATHER_FAR and len(dims) > 1 and abs(src.stride[dims[1]]) == 1
          and dst.stride[dims[1]] == dst.shape[inner]):  # the next outputs walk the source contiguously
        near = math.log(STRETCHES_MANY / dst.shape[inner]) / math.log(STRETCHES_MANY / STRETCHES_FEW)
    else:
        return 1
    return STRIDED_RUN ** min(max(near, 0.0), 1.0)


def _dense_in_order(t, order: list[int]) -> bool:
    """Whether ``t`` is dense in this order of its dimensions (innermost first), size-1 dims aside."""
    expected = 1
    for i in order:
        if t.shape[i] == 1:
            continue
        if t.stride[i] != expected:
            return False
        expected *= t.shape[i]
    return True


def _strided_cat_inputs(op: CapturedOp) -> list | None:
    """A cat's inputs (but the legacy 1-D empty tensors ATen skips) when ATen cannot run its
    contiguous batched kernel: an input not contiguous in the output's layout, or a skipped empty
    one (ATen's cat then counts the inputs as not all contiguous); None otherwise."""
    if not op.outputs:
        return None
    out = op.outputs[0]
    inputs = op.tensor_inputs()
    kept = [t for t in inputs if not (t.ndim == 1 and t.numel == 0)]
    order = sorted(range(out.ndim), key=lambda i: (out.stride[i], -i))
    if len(kept) < len(inputs) or any(t.ndim == out.ndim and not _dense_in_order(t, order) for t in kept):
        return kept
    return None


def _copy_source(op: CapturedOp):
    """The tensor a copy reads: ``src`` of copy_ (broadcast to self's shape), else its first input."""
    inputs = op.tensor_inputs()
    if op.packet in ("aten.copy_", "aten.copy") and len(inputs) > 1:
        src, dst = inputs[1], inputs[0]
        if src.shape != dst.shape and src.ndim <= dst.ndim:  # broadcast: stride 0 along new or size-1 dims
            lead = dst.ndim - src.ndim
            stride = tuple(0 if i < lead or src.shape[i - lead] == 1 else src.stride[i - lead] for i in range(dst.ndim))
            return TensorMeta(dst.shape, src.dtype, stride, src.device)
        return src
    return inputs[0] if inputs else None


def _strided_copy(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> tuple[str, float, int] | None:
    """(family, inner run (``gather_run``), elements) of a copy-like kernel that walks a strided
    layout, priced on the strided-copy families; None for a flat copy or where the profile lacks them."""
    if (op.packet not in COPY_OPS and op.packet != "aten.cat") or not cost.kernels or not op.outputs:
        return None
    if not _has_strided_families(dev):
        return None
    out = op.outputs[0]
    if op.packet in COPY_OPS:
        src = _copy_source(op)
        run = gather_run(src, out, gpu=dev.kind == "cuda") if src is not None and src.device == out.device else None
        return None if run is None else ("strided_copy", run, out.numel)
    if op.packet == "aten.cat":
        inputs = _strided_cat_inputs(op)
        if not inputs or not out.numel:
            return None
        run = min(copy_run(t, TensorMeta(t.shape, t.dtype, out.stride, t.device)) or t.numel for t in inputs if t.numel)
        if dev.kind == "cuda" and (out.ndim > 4 or len(op.tensor_inputs()) < 2):
            return "strided_copy", run, out.numel  # ATen copies input by input
        return "cat_strided", run, out.numel
    return None


def _strided_s(op: CapturedOp, cost: OpCost, dev: DeviceModel, strided: tuple[str, float, int]) -> float:
    """Time of a strided copy: its elements at the calibrated strided rate, as the bytes that the
    calibrated copy of as many elements moves (one element read and one written each, whatever a
    broadcast source's footprint: the kernel is bound by its per-element offsets). A copy's rate
    is interpolated in log(inner run) between the transposed copy (inner runs of one element) and
    the permuted copy (inner runs of STRIDED_RUN elements; longer ones at its rate). On a GPU a cat
    gives each input a grid of its own (``CAT_GRID_SHARE``): an input larger than the rest together
    leaves part of the GPU idle and takes as long as a cat of proportionally more elements on the
    whole GPU."""
    family, run, elements = strided
    out = op.outputs[0]
    src = _copy_source(op) if op.packet in COPY_OPS else out
    nbytes = elements * (src.itemsize + out.itemsize)
    dtype = DTYPE_NAMES.get(out.dtype, "float32")
    if family == "cat_strided":
        if dev.kind == "cuda":
            sizes = [t.numel for t in _strided_cat_inputs(op)]
            nbytes = round(nbytes * max(1.0, max(sizes) / sum(sizes) / CAT_GRID_SHARE))
        return nbytes / dev.family_bytes_per_s(family, nbytes, dtype)
    return _run_copy_s(nbytes, run, dtype, dev)


def _strided_operand_run(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> float | None:
    """The shortest inner run of an elementwise op's full-size operands that are not laid out as
    its output (a transposed conv output plus a positional embedding): ATen's TensorIterator then
    computes an offset per element and cannot vectorize, as a strided copy does. None where every
    operand streams with the output, or the profile lacks the strided-copy families."""
    if cost.category not in ("pointwise", "transcendental") or not cost.kernels or not op.outputs:
        return None
    out = op.outputs[0]
    # an expanded operand (stride 0) is a broadcast, priced as one
    full = [t for t in op.tensor_inputs() if t.shape == out.shape and all(st or n == 1 for st, n in zip(t.stride, t.shape))]
    runs = [r for r in (gather_run(t, out, gpu=dev.kind == "cuda") for t in full) if r is not None]
    if not runs or not _has_strided_families(dev):
        return None
    return min(runs)


def _run_copy_s(nbytes: int, run: float, dtype: str, dev: DeviceModel) -> float:
    """A strided copy moving ``nbytes`` in inner runs of ``run`` elements: its rate interpolated in
    log(run) between the transposed copy (inner runs of one element) and the permuted copy (inner
    runs of STRIDED_RUN elements)."""
    rate_1 = dev.family_bytes_per_s("transpose_copy", nbytes, dtype)
    rate_run = dev.family_bytes_per_s("strided_copy", nbytes, dtype)
    f = min(math.log(run) / math.log(STRIDED_RUN), 1.0)
    return nbytes / math.exp((1 - f) * math.log(rate_1) + f * math.log(rate_run))


def _family(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> str | None:
    """Which calibrated op-family curve prices this op's memory traffic, if any."""
    selection = SELECTION_FAMILY.get(op.packet) or ((GPU_POOLING.get(op.packet) or GPU_NEAREST.get(op.packet)) if dev.kind == "cuda" else None)
    if selection is not None and dev.has_family(selection):
        return selection
    if cost.category == "transcendental":
        return "sin"
    if cost.category == "pointwise":
        if _broadcasts(op):
            return "mul_broadcast"
        # One operand in, one result out (neg, relu, x * 0.5, y * y): the unary curve where the
        # profile has one. The binary add's curve moves 1.5x the bytes per element, and so leaves
        # the cache at a smaller tensor.
        if cost.bytes_read * 2 < cost.bytes_written * 3 and dev.has_family("unary"):
            return "unary"
        return "add"
    if cost.category == "norm":
        return "layer_norm"
    if cost.category == "reduction" and "softmax" in op.packet:
        return "softmax"
    return None


# Query and key tiles of the fused attention kernels SDPA runs on the GPU: float32's memory-efficient
# kernel 64 x 64, the half-precision flash and cuDNN kernels 128. A length between multiples runs its
# last tile whole, so time steps at each multiple and is flat between (docs/design.md).
ATTENTION_TILE = {"float32": 64, "bfloat16": 128, "float16": 128}


# Head sizes the GPU's half-precision attention kernels are built for: multiples of 32 (a 40- or
# 48-wide head runs the 64-wide kernel, as FlashAttention rounds it; docs/design.md, "fused attention")
HALF_HEAD_STEP = 32


def _runs_half_head_kernels(op: CapturedOp, dtype: str) -> bool:
    """A half-precision attention forward that runs FlashAttention's or cuDNN's kernels on the GPU:
    not the memory-efficient kernel (float32, a mask, or chosen by name) nor a backward."""
    if dtype == "float32" or "backward" in op.packet or "efficient" in op.packet:
        return False
    if op.packet.endswith("_for_cpu"):  # traced on the CPU: a masked attention would run the memory-efficient kernel
        mask = arguments(op).get("attn_mask")
        return mask is None
    return True


def half_head_dim(head_dim: int) -> int:
    """The head size the GPU's half-precision attention kernels run a head of ``head_dim`` at."""
    return -(-head_dim // HALF_HEAD_STEP) * HALF_HEAD_STEP


def _tiled(length: int, tile: int) -> int:
    return -(-length // tile) * tile


def _attention_time(op: CapturedOp, cost: OpCost, dev: DeviceModel) -> float | None:
    """Fused attention priced on the calibrated SDPA curve: dense FLOPs over the rate measured at
    this key length (each query tile walks every key) and number of query tokens in flight (how
    many tiles fill the GPU), both lengths padded to whole tiles (``ATTENTION_TILE``: the padding
    is work the kernel does), and from the curve's head size to the op's as time grows with it
    (``DeviceModel.attention_head_factor``); None when the profile has no curve."""
    if not dev.attention or not op.tensor_inputs() or cost.gemm is None:
        return None
    q = op.tensor_inputs()[0]
    if q.ndim < 2:
        return None
    try:
        causal = bool(arguments(op).get("is_causal", False))
    except Exception:
        causal = False
    batch_heads, s_q, s_k, _ = cost.gemm
    head_dim = q.shape[-1]
    dtype = DTYPE_NAMES.get(q.dtype, "float32")
    model = dev.attention_model(dtype, head_dim, causal)
    if model is None:
        return None
    tile = ATTENTION_TILE.get(dtype, 1) if dev.kind == "cuda" else 1
    q_run, k_run = _tiled(s_q, tile), _tiled(s_k, tile)
    flops = cost.flops * (q_run * k_run) / (s_q * s_k) if s_q and s_k else cost.flops
    tokens = batch_heads * q_run
    run_dim = half_head_dim(head_dim) if dev.kind == "cuda" and _runs_half_head_kernels(op, dtype) else head_dim
    flops *= dev.attention_head_factor(dtype, causal, run_dim, model.curve.head_dim, k_run, tokens) * run_dim / head_dim
    return flops / model.flop_per_s(k_run, tokens)
