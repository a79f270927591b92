"""Kernels that run by another mechanism than the dense GEMM curve describes (GPU).

- Depthwise convolutions (groups = channels): a few FLOPs per byte, their own cuDNN kernels, whose
  rate depends on the filter size, the stride, the dtype and the memory layout (an NCHW bf16
  depthwise runs 3x slower than fp16 on the H100). Timed per (dtype, layout, filter, stride) at
  three sizes; prediction interpolates over multiply-accumulates.
- Grouped convolutions (ResNeXt, RegNet): per-group GEMMs of width channels/groups, far below the
  dense rate, with a floor of ~15 us per call at small sizes. Timed per group width at three sizes.
- GEMMs whose leading dimension breaks the 16-byte alignment cuBLAS's vectorized kernels need (a
  vocabulary of 50257 in fp16: 8x slower than 50304 at 2048 tokens): the ratio to the aligned
  product, per alignment (2, 4, 8 bytes) over size. float32 without TF32 runs SIMT kernels that do
  not care.
- addmm with a bias against mm: the bias runs in the GEMM's epilogue, and the kernel cuBLASLt picks
  for it is up to 2x slower in float32 at some shapes.
- Eval batch norm on NCHW (cuDNN's kernel in float32, ATen's in half precision): a block walks
  H x W planes, so on short planes (7 x 7) its time follows the number of planes, 3-4x the bytes'
  time. Timed per plane size from 7 x 7 to 112 x 112, launch-bound and beyond the L2 cache.
- Group norm: a moments pass with one block per (sample, group) row, then the normalize pass;
  few long rows (one image, 8 groups) leave most SMs idle. Timed per row count, from fewer rows
  than SMs to several waves, at two row lengths each; its backward (per-row sums of the gradient,
  then the input's gradient) at the same shapes.
- Training batch norm on the GPU: cuDNN's spatial kernels (forward: statistics, running stats,
  normalize; backward: all three gradients) give each channel a block that walks its N x H x W
  elements, so a layer of few channels over large planes (MobileNet's 16 x 112 x 112) leaves most
  SMs idle and runs several times its bytes' time. Timed per channel count, from fewer channels than SMs
  to several waves, at two lengths per channel each, as group norm's rows.
- Training batch norm on the CPU (``measure_batch_norm_training``): ATen's CPU kernel for an NCHW
  input gathers each channel's statistics over its planes, then normalizes, and runs at about a
  nanosecond per element whatever the shape, several times eval batch norm's bytes; its backward
  at a rate of its own. Both timed at a few element counts, up to beyond the L2 cache.

``benchmarks/mechanism_sweep.py`` times these families over the shapes of real models; the points
here are the few that the pricing in ``roofline.model.families`` needs.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from calibrate.matmul import _tf32
from roofline.costs.optimizer import CHUNK_ELEMENTS, FOREACH_CHUNK_BYTES, launches
from roofline.schema.profile import (
    ConvFamilyCurve, ConvFamilyPoint, ForeachKernels, GemmRatioCurve, GemmRatioPoint, NormFamilyCurve, NormFamilyPoint, Stat,
)
from roofline.timing import time_fn

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "tf32": torch.float32}

# depthwise: (filter, stride), and (batch, channels, size) from small to large
DEPTHWISE_FILTERS = [(3, 1), (3, 2), (5, 1), (7, 1)]
DEPTHWISE_SIZES = [(1, 192, 28), (32, 144, 56)]
# (dtype, layout) measured; bfloat16 channels-last runs as float16 does (each new cuDNN shape costs
# ~0.1 s of algorithm search). float32 channels-last (ConvNeXt's depthwise 7x7 after its permuted
# block) runs a kernel of its own, faster than float32's NCHW one.
DEPTHWISE_KINDS = [("float32", "nchw"), ("float16", "nchw"), ("float16", "channels_last"), ("bfloat16", "nchw"), ("float32", "channels_last")]
# channels-last kinds at fewer filters: each new cuDNN shape in that layout builds a plan on its
# first call in a process (tenths of a second), and a 5x5 is priced at its nearest filter's rate
# (docs/design.md, "Calibration")
CHANNELS_LAST_FILTERS = [(3, 1), (3, 2), (7, 1)]
# grouped: group width -> (channels, size); batches; stride 2 at one width. The widths span the
# networks' groups: 4-32 channels in 32 groups as ResNeXt runs them, 64 and 128 in 12 as RegNets run
# their wide ones, where cuDNN runs other kernels than at 32 (docs/design.md, "depthwise and grouped")
GROUPED_WIDTHS = {4: (128, 56), 8: (256, 28), 16: (512, 28), 32: (1024, 14), 64: (768, 28), 128: (1536, 14)}
GROUPED_BATCHES = [1, 32]
GROUPED_STRIDE2 = {8: (256, 56)}
GROUPED_DTYPES = ["float32", "float16"]
# few groups: float32 3x3 convolutions of 2 groups at stride 2 over a batch, group widths x input
# sides. cuDNN's heuristics run some such convolutions (2-3 groups) one group at a time on FP32
# implicit GEMMs between transposes, ~10x its grouped kernel, and others on that kernel; these
# points tell the model which (RegNet's first stage: 2-3 groups of 24 over 112 x 112), at one
# first call of a new cuDNN shape each (python benchmarks/grouped_kernels_check.py)
FEW_GROUP_WIDTHS = [16, 24, 32, 48]
FEW_GROUP_SIDES = [56, 112]
FEW_GROUP_BATCH, FEW_GROUP_COUNT, FEW_GROUP_STRIDE = 32, 2, 2
# depthwise gradients, each timed alone (aten.convolution_backward asked for one), over the
# forward's filters and sizes: cuDNN runs them on kernels of their own, slower than the forward's
# and slowest for a strided input gradient (docs/design.md, "Prices" of training). Each half
# precision is timed apart: ATen sends most float16 NCHW depthwise convolutions to cuDNN and every
# bfloat16 one to its own kernels (roofline.model.kernels.runs_cudnn_depthwise), forward and gradients alike.
# float32 channels-last (ConvNeXt's depthwise 7x7 after its permuted block) at the channels-last
# filters: its gradients run kernels of their own, slower than the NCHW ones.
DEPTHWISE_GRADIENT_KINDS = [("float32", "nchw"), ("float16", "nchw"), ("bfloat16", "nchw"), ("float32", "channels_last")]
GRADIENT_MASKS = {"input": [True, False, False], "weight": [False, True, False]}
# misaligned GEMMs: m values; K = 1024; N = 4096 - d for alignment bytes by dtype
MISALIGNED_M = [1, 64, 512, 2048]
MISALIGNED_N = {"float16": {2: 4095, 4: 4094, 8: 4092}, "tf32": {4: 4095, 8: 4094}}
# addmm against mm, as F.linear runs them (x @ W.T). float32 and TF32 on a grid of rows m x reduction
# k x width n: their ratio moves with all three (cuBLAS splits mm's reduction at few rows and long
# k, where the bias epilogue's kernel does not; docs/design.md). No row
# between 1 and 32: there mm's own kernel choice wanders (at 8 rows mm runs up to 3x addmm's time),
# and a ratio to it would carry that into addmm, while addmm itself runs close to the mm curve;
# prediction interpolates between the 1 and 32 rows. Beyond 1024 rows the 1024 row holds: a 4096 row
# reads ~1.0 to mm, yet the zoo's float32 addmm at thousands of rows runs slower than the mm curve,
# which the held row covers. Half precision runs addmm as mm does: a few shapes (m, k, n).
# A point whose ratio falls outside ADDMM_PLAUSIBLE is a stalled sample of one of the two calls: it is
# measured again.
ADDMM_GRID = dict(m=[1, 32, 64, 128, 256, 1024], k=[256, 512, 1024, 4096], n=[768, 3072])
ADDMM_GRID_DTYPES = ["float32", "tf32"]
ADDMM_SHAPES = [(1, 768, 768), (32, 768, 3072), (128, 768, 768), (64, 1024, 1024), (256, 1024, 1024), (1024, 3072, 768), (1024, 768, 3072), (8192, 768, 768)]
ADDMM_DTYPES = ["float32", "tf32", "float16"]
# Batches of small products, (batch, m, n, k), both operands as stored (``nn``), timed beside the same
# rows stacked into one tall GEMM (kept for reading; the model prices a batch against its own price
# of that GEMM): the score and value products of windowed, text-length and ViT-length attention, a
# long sequence, 4-wide talking-heads mixing (m x 4 @ 4 x 4), and a few larger products.
# benchmarks/results/h100_gemm_sweep.json's bmm points check them (benchmarks/bmm_check.py): most
# at these products and other batch counts, or with the second operand transposed; the 128-long
# products are shapes of their own.
BMM_SHAPES = [(2048, 49, 49, 32), (2048, 49, 32, 49), (512, 77, 77, 64), (512, 77, 64, 77), (64, 197, 197, 64), (64, 197, 64, 197),
              (32, 1024, 1024, 64), (32, 1024, 64, 1024), (4096, 196, 4, 4), (16, 256, 256, 64), (8, 512, 512, 512)]
BMM_DTYPES = ["float32", "bfloat16", "float16"]
ADDMM_PLAUSIBLE = (0.5, 3.0)
ADDMM_RETRIES = 2
# eval batch norm: plane sides (7x7 ... 112x112), each at a launch-bound count of planes and at
# one whose input is past the L2 cache (2^24 elements); float32 runs cuDNN's kernel, bfloat16 (and
# float16 with half weights, as model.half() makes them) ATen's
NORM_PLANE_SIDES = [7, 14, 28, 56, 112]
NORM_SMALL_PLANES = 128
NORM_LARGE_ELEMENTS = 1 << 24
NORM_CHANNELS = 256
# group norm: rows (N x groups, 8 groups of 8 channels) from fewer than the SMs to several waves,
# each at a short row length and a long one (C / groups x H x W; from 512 rows on, inputs past the
# L2 cache, whose second read comes from memory)
GROUP_NORM_ROWS = {8: (4096, 65536), 64: (4096, 65536), 512: (1024, 65536), 4096: (1024, 16384)}
GROUP_NORM_GROUPS = 8
NORM_DTYPES = ["float32", "bfloat16"]
# training batch norm (CPU): (batch, channels, side) of NCHW inputs of 2^14 to 2^22 elements
BATCH_NORM_TRAIN_SHAPES = [(1, 64, 16), (8, 64, 16), (64, 64, 16), (256, 64, 16)]
# training batch norm (GPU): channels (a block each) x elements per channel (N x H x W), NCHW; the
# lengths span a batch of 32 at 7 x 7 to 112 x 112 (a channel's time is not affine over that span)
BATCH_NORM_TRAIN_CHANNELS = [16, 64, 256, 1024]
BATCH_NORM_TRAIN_PER_CHANNEL = [1 << 10, 1 << 13, 1 << 16, 1 << 19]


def _stat(fn, device: str, budget_s: float, label: str, warnings: list) -> Stat:
    t = time_fn(fn, device=device, budget_s=budget_s, warmup_budget_s=budget_s, min_samples=5, label=label)
    if t.warning:
        warnings.append(t.warning)
    return t.stat()


def _filters(layout: str, quick: bool) -> list[tuple[int, int]]:
    """(filter, stride) of the depthwise points (forward and gradients) in ``layout``."""
    if quick:
        return DEPTHWISE_FILTERS[:1]
    return CHANNELS_LAST_FILTERS if layout == "channels_last" else DEPTHWISE_FILTERS


def measure_conv_families(device: str, *, budget_s: float, warnings: list, progress=None, quick: bool = False) -> list[ConvFamilyCurve]:
    """Depthwise convolutions per (dtype, layout), their two gradients per (dtype, layout) of
    ``DEPTHWISE_GRADIENT_KINDS``, grouped convolutions per dtype (NCHW), and the few-group points."""
    gen = torch.Generator(device=device).manual_seed(0)
    tf32 = bool(torch.backends.cudnn.allow_tf32)
    curves = []
    with torch.no_grad():
        for dtype_name, layout in (DEPTHWISE_KINDS[:1] if quick else DEPTHWISE_KINDS):
            dtype, points = DTYPES[dtype_name], []
            for kernel, stride in _filters(layout, quick):
                for batch, channels, size in DEPTHWISE_SIZES:
                    x = torch.randn(batch, channels, size, size, device=device, dtype=dtype, generator=gen)
                    w = torch.randn(channels, 1, kernel, kernel, device=device, dtype=dtype, generator=gen)
                    if layout == "channels_last":
                        x, w = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
                    stat = _stat(lambda: F.conv2d(x, w, None, stride, kernel // 2, 1, channels), device, budget_s,
                                 f"depthwise {dtype_name} {layout} {batch}x{channels}x{size}^2 k{kernel} s{stride}", warnings)
                    points.append(ConvFamilyPoint(batch=batch, channels=channels, groups=channels, size=size, kernel=kernel, stride=stride, time=stat))
                    if progress:
                        progress()
            curves.append(ConvFamilyCurve(kind="depthwise", dtype=dtype_name, layout=layout, tf32=tf32 and dtype_name == "float32", points=points))
        for dtype_name, layout in (DEPTHWISE_GRADIENT_KINDS[:1] if quick else DEPTHWISE_GRADIENT_KINDS):
            for gradient, mask in GRADIENT_MASKS.items():
                dtype, points = DTYPES[dtype_name], []
                for kernel, stride in _filters(layout, quick):
                    for batch, channels, size in DEPTHWISE_SIZES:
                        x = torch.randn(batch, channels, size, size, device=device, dtype=dtype, generator=gen)
                        w = torch.randn(channels, 1, kernel, kernel, device=device, dtype=dtype, generator=gen)
                        if layout == "channels_last":
                            x, w = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
                        g = torch.randn_like(F.conv2d(x, w, None, stride, kernel // 2, 1, channels))
                        args = ([stride] * 2, [kernel // 2] * 2, [1, 1], False, [0, 0], channels)
                        stat = _stat(lambda: torch.ops.aten.convolution_backward(g, x, w, None, *args, mask), device, budget_s,
                                     f"depthwise {gradient} gradient {dtype_name} {layout} {batch}x{channels}x{size}^2 k{kernel} s{stride}", warnings)
                        points.append(ConvFamilyPoint(batch=batch, channels=channels, groups=channels, size=size, kernel=kernel, stride=stride, time=stat))
                        if progress:
                            progress()
                curves.append(ConvFamilyCurve(kind="depthwise", dtype=dtype_name, layout=layout, tf32=tf32 and dtype_name == "float32",
                                              gradient=gradient, points=points))
        for dtype_name in (GROUPED_DTYPES[:1] if quick else GROUPED_DTYPES):
            dtype, points = DTYPES[dtype_name], []
            shapes = [(width, channels, size, 1) for width, (channels, size) in GROUPED_WIDTHS.items()]
            shapes += [(width, channels, size, 2) for width, (channels, size) in GROUPED_STRIDE2.items()]
            for width, channels, size, stride in (shapes[1:2] if quick else shapes):
                for batch in GROUPED_BATCHES:
                    groups = channels // width
                    x = torch.randn(batch, channels, size, size, device=device, dtype=dtype, generator=gen)
                    w = torch.randn(channels, width, 3, 3, device=device, dtype=dtype, generator=gen)
                    stat = _stat(lambda: F.conv2d(x, w, None, stride, 1, 1, groups), device, budget_s,
                                 f"grouped {dtype_name} {batch}x{channels}x{size}^2 g{groups} s{stride}", warnings)
                    points.append(ConvFamilyPoint(batch=batch, channels=channels, groups=groups, size=size, kernel=3, stride=stride, time=stat))
                    if progress:
                        progress()
            curves.append(ConvFamilyCurve(kind="grouped", dtype=dtype_name, layout="nchw", tf32=tf32 and dtype_name == "float32", points=points))
        if not quick:
            curves.append(_few_group_curve(device, budget_s, warnings, progress, gen, tf32))
    return curves


def _few_group_curve(device: str, budget_s: float, warnings: list, progress, gen: torch.Generator, tf32: bool) -> ConvFamilyCurve:
    """The few-group points (``FEW_GROUP_WIDTHS`` x ``FEW_GROUP_SIDES``), float32 NCHW."""
    points = []
    groups, stride = FEW_GROUP_COUNT, FEW_GROUP_STRIDE
    for width in FEW_GROUP_WIDTHS:
        for side in FEW_GROUP_SIDES:
            channels = groups * width
            x = torch.randn(FEW_GROUP_BATCH, channels, side, side, device=device, generator=gen)
            w = torch.randn(channels, width, 3, 3, device=device, generator=gen)
            stat = _stat(lambda: F.conv2d(x, w, None, stride, 1, 1, groups), device, budget_s,
                         f"few groups float32 {FEW_GROUP_BATCH}x{channels}x{side}^2 g{groups} s{stride}", warnings)
            points.append(ConvFamilyPoint(batch=FEW_GROUP_BATCH, channels=channels, groups=groups, size=side, kernel=3, stride=stride, time=stat))
            if progress:
                progress()
    return ConvFamilyCurve(kind="grouped_few", dtype="float32", layout="nchw", tf32=tf32, points=points)


def measure_gemm_ratios(device: str, *, budget_s: float, warnings: list, progress=None, quick: bool = False) -> list[GemmRatioCurve]:
    """Misaligned GEMMs against the aligned one, and addmm against mm, per dtype."""
    gen = torch.Generator(device=device).manual_seed(1)
    curves = []
    with torch.no_grad():
        for dtype_name, by_bytes in MISALIGNED_N.items():
            dtype = DTYPES[dtype_name]
            with _tf32(dtype_name == "tf32"):
                refs = {}
                for m in (MISALIGNED_M[1:3] if quick else MISALIGNED_M):
                    x = torch.randn(m, 1024, device=device, dtype=dtype, generator=gen)
                    w = torch.randn(4096, 1024, device=device, dtype=dtype, generator=gen)
                    refs[m] = _stat(lambda: F.linear(x, w), device, budget_s, f"gemm {dtype_name} {m}x4096x1024", warnings)
                for align, n in by_bytes.items():
                    points = []
                    for m, ref in refs.items():
                        x = torch.randn(m, 1024, device=device, dtype=dtype, generator=gen)
                        w = torch.randn(n, 1024, device=device, dtype=dtype, generator=gen)
                        stat = _stat(lambda: F.linear(x, w), device, budget_s, f"gemm {dtype_name} {m}x{n}x1024 ({align}-byte rows)", warnings)
                        points.append(GemmRatioPoint(m=m, n=n, k=1024, time=stat, reference=ref))
                        if progress:
                            progress()
                    curves.append(GemmRatioCurve(kind=f"misaligned_{align}", dtype=dtype_name, points=points))
        for dtype_name in (ADDMM_DTYPES[:1] if quick else ADDMM_DTYPES):
            dtype, points = DTYPES[dtype_name], []
            with _tf32(dtype_name == "tf32"):
                for m, k, n in (ADDMM_SHAPES[1:3] if quick else addmm_shapes(dtype_name)):
                    x = torch.randn(m, k, device=device, dtype=dtype, generator=gen)
                    wt = torch.randn(n, k, device=device, dtype=dtype, generator=gen).t()
                    bias = torch.randn(n, device=device, dtype=dtype, generator=gen)
                    ref, stat = addmm_pair(lambda: torch.mm(x, wt), lambda: torch.addmm(bias, x, wt), device, budget_s,
                                           f"{dtype_name} {m}x{n}x{k}", warnings)
                    points.append(GemmRatioPoint(m=m, n=n, k=k, time=stat, reference=ref))
                    if progress:
                        progress()
            curves.append(GemmRatioCurve(kind="addmm", dtype=dtype_name, points=points))
        for dtype_name in (BMM_DTYPES[:1] if quick else BMM_DTYPES):
            dtype, points = DTYPES[dtype_name], []
            for batch, m, n, k in (BMM_SHAPES[:2] if quick else BMM_SHAPES):
                a = torch.randn(batch, m, k, device=device, dtype=dtype, generator=gen)
                b = torch.randn(batch, k, n, device=device, dtype=dtype, generator=gen)
                tall, w = a.reshape(batch * m, k), torch.randn(k, n, device=device, dtype=dtype, generator=gen)
                with _tf32(False):  # float32 batches on the SIMT path, as the model reads them
                    ref = _stat(lambda: torch.mm(tall, w), device, budget_s, f"gemm {dtype_name} {batch * m}x{n}x{k}", warnings)
                    stat = _stat(lambda: torch.bmm(a, b), device, budget_s, f"bmm {dtype_name} {batch}x{m}x{n}x{k}", warnings)
                points.append(GemmRatioPoint(m=m, n=n, k=k, batch=batch, time=stat, reference=ref))
                if progress:
                    progress()
            curves.append(GemmRatioCurve(kind="bmm", dtype=dtype_name, points=points))
    return curves


def addmm_pair(mm, addmm, device: str, budget_s: float, label: str, warnings: list, stat=None) -> tuple[Stat, Stat]:
    """(mm, addmm) timed one after the other, again while their ratio is outside ``ADDMM_PLAUSIBLE``
    (at most ``ADDMM_RETRIES`` times, the pair with the ratio nearest 1 kept, and a warning if none
    was plausible). ``stat``: the timing function (``_stat``)."""
    stat = stat or _stat
    low, high = ADDMM_PLAUSIBLE
    best = None
    for _ in range(1 + ADDMM_RETRIES):
        pair = stat(mm, device, budget_s, f"mm {label}", warnings), stat(addmm, device, budget_s, f"addmm {label}", warnings)
        ratio = pair[1].median_s / pair[0].median_s
        if best is None or abs(math.log(ratio)) < abs(math.log(best[1].median_s / best[0].median_s)):
            best = pair
        if low <= ratio <= high:
            return pair
    warnings.append(f"addmm {label}: addmm / mm x{best[1].median_s / best[0].median_s:.2f} after {1 + ADDMM_RETRIES} tries, outside x{low:g}..x{high:g}")
    return best


def addmm_shapes(dtype_name: str) -> list[tuple[int, int, int]]:
    """The (m, k, n) addmm is timed at against mm for one dtype: the grid, or the few shapes."""
    if dtype_name in ADDMM_GRID_DTYPES:
        return [(m, k, n) for m in ADDMM_GRID["m"] for k in ADDMM_GRID["k"] for n in ADDMM_GRID["n"]]
    return ADDMM_SHAPES


def _batch_norm_points(dtype: torch.dtype, device: str, gen, budget_s: float, label: str, warnings: list, progress, sides) -> list[NormFamilyPoint]:
    """Eval batch norm per plane size, at a few planes and at many, with weights of the input's dtype."""
    points = []
    for side in sides:
        plane = side * side
        large = max(round(NORM_LARGE_ELEMENTS / plane / NORM_CHANNELS), 1)
        for batch, channels in ((1, NORM_SMALL_PLANES), (large, NORM_CHANNELS)):
            x = torch.randn(batch, channels, side, side, device=device, dtype=dtype, generator=gen)
            w, b = torch.rand(channels, device=device, dtype=dtype), torch.rand(channels, device=device, dtype=dtype)
            mean, var = torch.zeros(channels, device=device, dtype=dtype), torch.ones(channels, device=device, dtype=dtype)
            stat = _stat(lambda: F.batch_norm(x, mean, var, w, b, False), device, budget_s, f"batch_norm eval {label} {batch}x{channels}x{side}^2", warnings)
            points.append(NormFamilyPoint(rows=batch * channels, row=plane, time=stat))
            if progress:
                progress()
    return points


def _group_norm_points(dtype: torch.dtype, device: str, gen, budget_s: float, label: str, warnings: list, progress,
                       shapes) -> tuple[list[NormFamilyPoint], list[NormFamilyPoint]]:
    """Group norm (with its affine) and its backward of all three gradients per (rows, row length)."""
    aten = torch.ops.aten
    forward, backward = [], []
    channels = 8 * GROUP_NORM_GROUPS
    for rows, row in shapes:
        batch, spatial = rows // GROUP_NORM_GROUPS, row * GROUP_NORM_GROUPS // channels
        x = torch.randn(batch, channels, spatial, device=device, dtype=dtype, generator=gen)
        g = torch.randn_like(x)
        w, b = torch.rand(channels, device=device, dtype=dtype), torch.rand(channels, device=device, dtype=dtype)
        name = f"group_norm {label} {rows} rows of {row}"
        stat = _stat(lambda: F.group_norm(x, GROUP_NORM_GROUPS, w, b), device, budget_s, name, warnings)
        _, mean, rstd = aten.native_group_norm(x, w, b, batch, channels, spatial, GROUP_NORM_GROUPS, 1e-5)
        back = _stat(lambda: aten.native_group_norm_backward(g, x, mean, rstd, w, batch, channels, spatial, GROUP_NORM_GROUPS, [True, True, True]),
                     device, budget_s, f"{name} backward", warnings)
        forward.append(NormFamilyPoint(rows=rows, row=row, time=stat))
        backward.append(NormFamilyPoint(rows=rows, row=row, time=back))
        if progress:
            progress()
            progress()
    return forward, backward


def measure_norm_families(device: str, *, budget_s: float, warnings: list, progress=None, quick: bool = False) -> list[NormFamilyCurve]:
    """Eval batch norm over plane size, group norm and its backward over rows in flight, and
    training batch norm and its backward over channels in flight, per dtype."""
    gen = torch.Generator(device=device).manual_seed(2)
    sides = NORM_PLANE_SIDES[::2] if quick else NORM_PLANE_SIDES
    counts = list(GROUP_NORM_ROWS)[::3] if quick else list(GROUP_NORM_ROWS)  # quick: the fewest rows and the most
    shapes = [(rows, row) for rows in counts for row in GROUP_NORM_ROWS[rows]]
    curves = []
    with torch.no_grad():
        for dtype_name in NORM_DTYPES[:1] if quick else NORM_DTYPES:
            dtype = DTYPES[dtype_name]
            bn = _batch_norm_points(dtype, device, gen, budget_s, dtype_name, warnings, progress, sides)
            gn, gn_backward = _group_norm_points(dtype, device, gen, budget_s, dtype_name, warnings, progress, shapes)
            curves += [NormFamilyCurve(kind="batch_norm_eval", dtype=dtype_name, points=bn), NormFamilyCurve(kind="group_norm", dtype=dtype_name, points=gn),
                       NormFamilyCurve(kind="group_norm_backward", dtype=dtype_name, points=gn_backward)]
            channels = BATCH_NORM_TRAIN_CHANNELS[::3] if quick else BATCH_NORM_TRAIN_CHANNELS
            forward, backward = _batch_norm_training_points(_gpu_batch_norm_training_shapes(channels), dtype, device, gen, budget_s, dtype_name,
                                                            warnings, progress)
            curves += [NormFamilyCurve(kind="batch_norm_train", dtype=dtype_name, points=forward),
                       NormFamilyCurve(kind="batch_norm_train_backward", dtype=dtype_name, points=backward)]
    return curves


def _batch_norm_training_points(shapes: list[tuple[int, int, int]], dtype: torch.dtype, device: str, gen, budget_s: float, label: str,
                                warnings: list, progress) -> tuple[list[NormFamilyPoint], list[NormFamilyPoint]]:
    """Training batch norm (float32 weights, as a model's are under autocast) and its backward of all
    three gradients per NCHW (batch, channels, side), through ATen's backend choice
    (``_batch_norm_impl_index``: cuDNN's kernels where it takes the input, else ATen's) as a training
    step runs them. A point's rows are the channels, its row the elements per channel."""
    aten = torch.ops.aten
    forward, backward = [], []
    for batch, channels, side in shapes:
        x = torch.randn(batch, channels, side, side, device=device, dtype=dtype, generator=gen)
        g = torch.randn(batch, channels, side, side, device=device, dtype=dtype, generator=gen)
        w, b = torch.rand(channels, device=device), torch.rand(channels, device=device)
        mean, var = torch.zeros(channels, device=device), torch.ones(channels, device=device)
        out = aten._batch_norm_impl_index(x, w, b, mean, var, True, 0.1, 1e-5, True)
        name = f"batch_norm train {label} {batch}x{channels}x{side}^2"
        fwd = _stat(lambda: aten._batch_norm_impl_index(x, w, b, mean, var, True, 0.1, 1e-5, True), device, budget_s, name, warnings)
        bwd = _stat(lambda: aten._batch_norm_impl_index_backward(out[4], x, g, w, mean, var, out[1], out[2], True, 1e-5, [True, True, True], out[3]),
                    device, budget_s, f"{name} backward", warnings)
        forward.append(NormFamilyPoint(rows=channels, row=batch * side * side, time=fwd))
        backward.append(NormFamilyPoint(rows=channels, row=batch * side * side, time=bwd))
        if progress:
            progress()
            progress()
    return forward, backward


def _gpu_batch_norm_training_shapes(channel_counts: list[int]) -> list[tuple[int, int, int]]:
    """(batch, channels, side) of each channel count at each length per channel: planes of 64 x 64,
    one square plane below 4096 elements."""
    shapes = []
    for channels in channel_counts:
        for per_channel in BATCH_NORM_TRAIN_PER_CHANNEL:
            batch, side = (per_channel // 4096, 64) if per_channel >= 4096 else (1, math.isqrt(per_channel))
            shapes.append((batch, channels, side))
    return shapes


def measure_batch_norm_training(device: str, *, budget_s: float, warnings: list, progress=None) -> list[NormFamilyCurve]:
    """Training batch norm on the CPU (float32, NCHW): the forward (statistics, running stats,
    normalize) and the backward of all three gradients, per element count."""
    gen = torch.Generator(device=device).manual_seed(3)
    with torch.no_grad():
        forward, backward = _batch_norm_training_points(BATCH_NORM_TRAIN_SHAPES, torch.float32, device, gen, budget_s, "float32", warnings, progress)
    return [NormFamilyCurve(kind="batch_norm_train", dtype="float32", points=forward),
            NormFamilyCurve(kind="batch_norm_train_backward", dtype="float32", points=backward)]


def norm_steps(quick: bool) -> int:
    """Progress steps of the normalization stage."""
    training = 2 * len(BATCH_NORM_TRAIN_PER_CHANNEL)  # per channel count: forward and backward
    if quick:
        return 2 * len(NORM_PLANE_SIDES[::2]) + 4 * len(list(GROUP_NORM_ROWS)[::3]) + training * len(BATCH_NORM_TRAIN_CHANNELS[::3])
    return len(NORM_DTYPES) * (2 * len(NORM_PLANE_SIDES) + 4 * len(GROUP_NORM_ROWS) + training * len(BATCH_NORM_TRAIN_CHANNELS))


def steps(quick: bool) -> int:
    """Progress steps of both stages."""
    gradients = len(GRADIENT_MASKS) * len(DEPTHWISE_SIZES)  # per (dtype, layout) and filter
    if quick:
        return len(DEPTHWISE_SIZES) + gradients + len(GROUPED_BATCHES) + 2 * 3 + 2 + len(BMM_DTYPES[:1]) * len(BMM_SHAPES[:2])
    forward = sum(len(_filters(layout, False)) for _, layout in DEPTHWISE_KINDS) * len(DEPTHWISE_SIZES)
    dw = forward + sum(len(_filters(layout, False)) for _, layout in DEPTHWISE_GRADIENT_KINDS) * gradients
    grouped = len(GROUPED_DTYPES) * (len(GROUPED_WIDTHS) + len(GROUPED_STRIDE2)) * len(GROUPED_BATCHES) + len(FEW_GROUP_WIDTHS) * len(FEW_GROUP_SIDES)
    misaligned = sum(len(v) for v in MISALIGNED_N.values()) * len(MISALIGNED_M)
    return dw + grouped + misaligned + sum(len(addmm_shapes(d)) for d in ADDMM_DTYPES) + len(BMM_DTYPES) * len(BMM_SHAPES)


# multi_tensor_apply's kernels (``roofline.schema.profile.ForeachKernels``), each timed with
# torch._foreach_add_ over two float32 lists: tiny tensors (a kernel's floor), a few whole chunks
# (the rate one block streams), large tensors (the streaming rate)
FOREACH_TINY = (1000, 1024)  # (tensors, elements): 16 kernels
FOREACH_CHUNKS = 8  # tensors of one chunk each: one kernel of 8 blocks
FOREACH_LARGE = (8, 1 << 24)  # 512 MiB a list


def measure_foreach(device: str, *, budget_s: float, warnings: list, progress=None) -> ForeachKernels:
    """A kernel's floor, one block's chunk and the streaming rate of ``torch._foreach_add_``."""
    gen = torch.Generator(device=device).manual_seed(12)

    def timed(tensors: int, elements: int) -> Stat:
        p, g = ([torch.rand(elements, device=device, generator=gen) for _ in range(tensors)] for _ in range(2))
        stat = _stat(lambda: torch._foreach_add_(p, g, alpha=1e-3), device, budget_s, f"foreach add {tensors} x {elements}", warnings)
        if progress:
            progress()
        return stat

    tiny = timed(*FOREACH_TINY)
    per_kernel = launches([FOREACH_TINY[1]] * FOREACH_TINY[0], 2)
    floor = Stat(median_s=tiny.median_s / per_kernel, iqr_s=tiny.iqr_s / per_kernel, samples=tiny.samples)
    chunk = timed(FOREACH_CHUNKS, CHUNK_ELEMENTS)
    large = timed(*FOREACH_LARGE)
    stream = FOREACH_CHUNK_BYTES / CHUNK_ELEMENTS * FOREACH_LARGE[0] * FOREACH_LARGE[1] / large.median_s  # p and g read, p written
    return ForeachKernels(kernel_floor=floor, chunk=chunk, stream_bytes_per_s=stream)
