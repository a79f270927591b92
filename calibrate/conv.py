"""Dense convolution time at shapes that span what picks cuDNN's (GPU) or oneDNN's (CPU) kernel.

A convolution is priced as its implicit GEMM on the matmul curve times a ratio these points
measure, so the points must span what makes a convolution run faster or slower than that GEMM:

- the kind of convolution: 2-d, 1-d (cuDNN runs it as a 2-d one of height 1), 3-d, transposed;
- the filter taps (1x1, 3x3, 7x7 and patch filters whose stride equals their size) and the stride:
  1x1 convolutions and strided ones gather their input differently from a 3x3 of stride 1;
- input channels that fill whole 16-byte vectors or not (``in_channels x itemsize % 16``): a
  3-channel image or an odd channel count sends cuDNN to slower kernels, as a misaligned leading
  dimension does cuBLAS;
- the GEMM's size: positions (batch x output pixels, from 7x7 to 224x224 images) and channels.

Shapes are grid points of these parameters, not layers of particular models. NCHW unless a shape
says channels-last (strided ones, whose NCHW twins pay layout transforms), no bias (ATen
adds a conv's bias with its own kernel), default algorithm selection (torch.backends.cudnn.benchmark
off, PyTorch's default).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

from calibrate.matmul import DTYPES
from roofline.schema.profile import ConvCurve, ConvPoint
from roofline.timing import time_fn


class ConvShape(NamedTuple):
    """One calibrated convolution: square (cubic) input of ``size`` and filter of ``kernel``."""

    batch: int
    in_channels: int
    out_channels: int
    size: int
    kernel: int
    stride: int
    padding: int
    dims: int = 2
    transposed: bool = False
    layout: str = "nchw"  # or "channels_last" (2-d)
    # a 3-d convolution's depth where it is not the cube's (a clip of frames; a 1x3x3 or 3x1x1 filter)
    depth: int | None = None
    kernel_depth: int | None = None
    stride_depth: int | None = None
    padding_depth: int | None = None


_S = ConvShape
GPU_SHAPES = [
    # 3x3, stride 1, aligned input channels: from launch-bound to compute-bound
    _S(1, 64, 64, 56, 3, 1, 1), _S(32, 64, 64, 56, 3, 1, 1), _S(8, 256, 256, 56, 3, 1, 1), _S(64, 256, 256, 56, 3, 1, 1),
    _S(8, 512, 512, 14, 3, 1, 1), _S(32, 32, 32, 112, 3, 1, 1), _S(32, 128, 128, 28, 3, 1, 1),
    # 3x3, stride 2
    _S(32, 64, 128, 56, 3, 2, 1), _S(32, 256, 256, 28, 3, 2, 1),
    # 1x1, stride 1: few channels over many pixels to many channels over few pixels
    _S(1, 256, 256, 14, 1, 1, 0), _S(32, 16, 64, 112, 1, 1, 0), _S(32, 64, 64, 56, 1, 1, 0), _S(8, 256, 64, 56, 1, 1, 0),
    _S(32, 256, 256, 28, 1, 1, 0), _S(32, 128, 512, 14, 1, 1, 0), _S(32, 64, 384, 14, 1, 1, 0),
    _S(32, 1024, 256, 14, 1, 1, 0), _S(32, 512, 2048, 7, 1, 1, 0),
    # 1x1, stride 2
    _S(32, 64, 128, 56, 1, 2, 0), _S(32, 256, 512, 28, 1, 2, 0),
    # input channels not a multiple of 16 bytes: an odd width, 3-channel images under 3x3, 7x7 and patch
    # filters (one image and a batch: these kernels' ratio moves with the batch)
    _S(32, 99, 256, 28, 1, 1, 0), _S(32, 3, 32, 128, 3, 1, 1), _S(32, 3, 32, 224, 3, 2, 1),
    _S(1, 3, 64, 224, 7, 2, 3), _S(8, 3, 64, 224, 7, 2, 3),
    _S(32, 3, 128, 224, 4, 4, 0), _S(1, 3, 256, 224, 16, 16, 0), _S(32, 3, 256, 224, 16, 16, 0),
    # 1-d (length 1024 and 2048), 2x2 stride-2 transposed (3-d: ``GPU_3D_SHAPES``)
    _S(8, 128, 128, 1024, 3, 1, 1, dims=1), _S(8, 256, 256, 2048, 3, 2, 1, dims=1),
    _S(32, 128, 64, 56, 2, 2, 0, transposed=True), _S(32, 512, 256, 14, 2, 2, 0, transposed=True),
]


def shape_3d(batch: int, cin: int, cout: int, depth: int, side: int, kernel: tuple, stride: tuple, padding: tuple) -> ConvShape:
    """A 3-d convolution over a clip (``depth`` frames of ``side`` x ``side``), its filter, stride and
    padding given depth first (d, h, w) with h = w."""
    other = lambda v, cube: None if v == cube else v  # noqa: E731
    return ConvShape(batch, cin, cout, side, kernel[1], stride[1], padding[1], dims=3, depth=other(depth, side),
                     kernel_depth=other(kernel[0], kernel[1]), stride_depth=other(stride[0], stride[1]), padding_depth=other(padding[0], padding[1]))


# 3-d convolutions (video networks), NCDHW. cuDNN runs them as NDHWC implicit GEMMs behind layout
# transforms (a 1x1x1 of stride 1 as a GEMM), at ratios to the GEMM curve of their own, which the
# 2-d points do not tell. The filters video networks use (name, filter, stride, padding, output
# channels per input channel), depth first: 3x3x3, the 1x3x3 spatial and 3x1x1 temporal halves of
# (2+1)-d and separable blocks, 1x1x1; each of stride 1 and strided (all sides, or the spatial or
# temporal ones). Calibration times each at 64 and 256 input channels over eight clips of 16x32x32
# and 4x8x8, and two 3-channel stems (``benchmarks/conv3d_check.py`` checks them on the layers of
# torchvision's video models, held out).
FILTERS_3D = [
    ("3x3x3 s1", (3, 3, 3), (1, 1, 1), (1, 1, 1), 1), ("3x3x3 s2", (3, 3, 3), (2, 2, 2), (1, 1, 1), 2),
    ("1x3x3 s1", (1, 3, 3), (1, 1, 1), (0, 1, 1), 1), ("1x3x3 s1x2x2", (1, 3, 3), (1, 2, 2), (0, 1, 1), 2),
    ("3x1x1 s1", (3, 1, 1), (1, 1, 1), (1, 0, 0), 1), ("3x1x1 s2x1x1", (3, 1, 1), (2, 1, 1), (1, 0, 0), 2),
    ("1x1x1 s1", (1, 1, 1), (1, 1, 1), (0, 0, 0), 2), ("1x1x1 s2", (1, 1, 1), (2, 2, 2), (0, 0, 0), 2),
]
CHANNELS_3D = (64, 256)
CLIPS_3D = ((16, 32), (8, 16), (4, 8))  # (frames, side) of the sweep's grid; calibration takes the first and last
STEMS_3D = [
    ("stem 3x3x3 s1x2x2", 3, 32, 16, 64, (3, 3, 3), (1, 2, 2), (1, 1, 1)),
    ("stem 1x5x5 s1x2x2", 3, 64, 8, 128, (1, 5, 5), (1, 2, 2), (0, 2, 2)),
]
GPU_3D_SHAPES = [
    *[shape_3d(8, c, widen * c, d, side, k, st, pad) for _, k, st, pad, widen in FILTERS_3D for c in CHANNELS_3D for d, side in (CLIPS_3D[0], CLIPS_3D[-1])],
    *[shape_3d(8, *stem[1:]) for stem in STEMS_3D],
]
# Patch embeddings of vision transformers at ViT-Base's width (768 channels), 16x16 and 32x32, one
# image and 32, beside the 16x16 ones of 256 channels above: cuDNN switches kernels with the output
# channels (half precision: NHWC kernels behind layout transforms from 768) and at one image runs the
# widest filters' reduction in one wave of few tiles (``benchmarks/token_grid_check.py``). Then the
# spatial-reduction convolutions of pyramid vision transformers (PVT, SegFormer, Twins): an 8x8 filter
# of stride 8 over a channels-last token grid of 32 or 64 channels, which cuDNN runs several times
# slower than the 3x3 and 7x7 points it would otherwise be priced from, float32 most (one wave of few
# tiles, each reducing 2048-4096 products); at planes and batches of no model in the zoos.
GPU_PATCH_SHAPES = [
    _S(1, 3, 768, 224, 16, 16, 0), _S(32, 3, 768, 224, 16, 16, 0), _S(1, 3, 768, 224, 32, 32, 0), _S(32, 3, 768, 224, 32, 32, 0),
    _S(1, 32, 32, 64, 8, 8, 0, layout="channels_last"), _S(8, 32, 32, 64, 8, 8, 0, layout="channels_last"),
    _S(1, 64, 64, 128, 8, 8, 0, layout="channels_last"), _S(32, 64, 64, 32, 8, 8, 0, layout="channels_last"),
]


def is_patch_point(p) -> bool:
    """Whether a calibrated forward point (``ConvPoint``) is one of ``GPU_PATCH_SHAPES``."""
    return p.gradient == "none" and ConvShape(**{f: getattr(p, f) for f in ConvShape._fields}) in GPU_PATCH_SHAPES


# Strided channels-last 2-d convolutions: cuDNN runs its NHWC kernels on them directly, where the
# same convolution in NCHW pays layout transforms around those kernels (strided 1x1s and 3x3s, the 7x7
# stem); 32 images and one. A channels-last convolution of stride 1 runs what its NCHW twin's points
# say closely enough (``roofline.model.curves.ConvKey``).
GPU_CHANNELS_LAST_SHAPES = [
    _S(32, 64, 128, 56, 3, 2, 1, layout="channels_last"), _S(32, 256, 256, 28, 3, 2, 1, layout="channels_last"),
    _S(1, 128, 256, 28, 3, 2, 1, layout="channels_last"), _S(32, 256, 512, 56, 1, 2, 0, layout="channels_last"),
    _S(32, 1024, 2048, 14, 1, 2, 0, layout="channels_last"), _S(1, 512, 1024, 28, 1, 2, 0, layout="channels_last"),
    _S(8, 3, 64, 224, 7, 2, 3, layout="channels_last"), _S(1, 3, 64, 224, 7, 2, 3, layout="channels_last"),
]
# Half-precision NCHW 1x1 convolutions of stride 1 over small planes whose output channels are not a
# multiple of 64 (``roofline.model.curves.conv_out_aligned``): cuDNN's legacy SIMT kernel over
# 14x14 and 16x16 planes (expansions of MobileNet-style blocks), layout transforms over 7x7; one
# image and 32. Float32 has no such key.
GPU_HALF_SHAPES = [
    _S(32, 112, 672, 14, 1, 1, 0), _S(32, 80, 200, 14, 1, 1, 0), _S(32, 120, 40, 14, 1, 1, 0), _S(32, 88, 528, 16, 1, 1, 0),
    _S(32, 600, 100, 7, 1, 1, 0), _S(1, 112, 672, 14, 1, 1, 0),
]
# NCHW 1x1 convolutions of stride 1 over planes larger than 16x16 whose bytes are not a multiple of
# 16 (``roofline.model.curves.conv_narrow_plane``): cuDNN runs their plane-major GEMMs on kernels of
# narrower loads than an aligned plane's, in every dtype; Inception's and SqueezeNet's planes, a
# batch of 32, from a few MFLOP to a few GFLOP.
GPU_NARROW_PLANE_SHAPES = [
    _S(32, 192, 64, 35, 1, 1, 0), _S(32, 768, 160, 17, 1, 1, 0), _S(32, 64, 16, 55, 1, 1, 0), _S(32, 128, 32, 27, 1, 1, 0),
    _S(32, 512, 128, 25, 1, 1, 0), _S(32, 64, 80, 73, 1, 1, 0),
]
# Dense convolutions over the channel counts networks use: multiples of 64 and the 8- and
# 16-multiples of width multipliers (24, 40, 72, 112, 120, 144, 240, 480, 672, ...). cuDNN picks
# among its kernels (cuBLAS for an aligned 1x1, its own GEMMs, NHWC kernels behind layout
# transforms, a slow legacy kernel) by them, beyond what the GEMM's size says; a seeded sample of
# this grid lets the nearest calibrated points share a convolution's kernel more often.
CHANNELS = [16, 24, 32, 40, 48, 64, 72, 96, 112, 120, 128, 144, 160, 192, 240, 256, 320, 384, 480, 512, 576, 672, 720, 960, 1024, 1280, 2048]
SIZES = [7, 14, 28, 56, 112]
CHANNEL_SAMPLE = 180
CHANNEL_FLOPS = (2e6, 2e10)  # the sample's range of work per convolution: 3x3 layers of a batch of 32 reach 10-20 GFLOP
CHANNEL_SEED = 11  # a check sample of the grid is drawn with another seed, so calibration's is held out of it


def channel_shapes(n: int | None = None, seed: int = CHANNEL_SEED, flops: tuple[float, float] = CHANNEL_FLOPS) -> list[ConvShape]:
    """``n`` (default ``CHANNEL_SAMPLE``) 2-d convolutions (1x1 or 3x3, stride 1 or 2, batch 1 or
    32) drawn from the grid of ``CHANNELS`` and ``SIZES``, each of ``flops``."""
    import random

    n = CHANNEL_SAMPLE if n is None else n
    lo, hi = flops
    rng = random.Random(seed)
    out: list[ConvShape] = []
    while len(out) < n:
        cin, cout, size = rng.choice(CHANNELS), rng.choice(CHANNELS), rng.choice(SIZES)
        kernel, stride, batch = rng.choice((1, 1, 3)), rng.choice((1, 1, 1, 2)), rng.choice((1, 32, 32))
        work = 2 * batch * (size // stride) ** 2 * cout * cin * kernel * kernel
        if lo <= work <= hi:
            out.append(ConvShape(batch, cin, cout, size, kernel, stride, kernel // 2))
    return out


GPU_SHAPES_QUICK = [
    _S(8, 64, 64, 56, 3, 1, 1), _S(8, 256, 64, 56, 1, 1, 0), _S(32, 128, 512, 14, 1, 1, 0), _S(8, 3, 64, 224, 7, 2, 3),
    _S(32, 3, 256, 224, 16, 16, 0),
]
CPU_SHAPES = [_S(1, 64, 64, 56, 3, 1, 1), _S(1, 256, 256, 14, 3, 1, 1), _S(1, 256, 64, 56, 1, 1, 0), _S(1, 3, 64, 224, 7, 2, 3)]
CPU_SHAPES_QUICK = [_S(1, 64, 64, 28, 3, 1, 1)]

_CONV = {(1, False): F.conv1d, (2, False): F.conv2d, (3, False): F.conv3d,
         (1, True): F.conv_transpose1d, (2, True): F.conv_transpose2d, (3, True): F.conv_transpose3d}


def _label(dtype_name: str, s: ConvShape) -> str:
    kind = f"{'transposed ' if s.transposed else ''}{s.dims}d{' channels-last' if s.layout == 'channels_last' else ''}"
    if s.dims == 3 and (s.depth or s.kernel_depth or s.stride_depth):
        point = ConvPoint.model_construct(**s._asdict())
        depth, filter_depth, stride_depth = point.in_sides[0], point.shapes()[1][2], point.strides[0]
        return (f"conv {kind} {dtype_name} {s.batch}x{s.in_channels}x{depth}x{s.size}^2 "
                f"k{filter_depth}x{s.kernel}^2 s{stride_depth}x{s.stride}^2 -> {s.out_channels}")
    return f"conv {kind} {dtype_name} {s.batch}x{s.in_channels}x{s.size}^{s.dims} k{s.kernel} s{s.stride} -> {s.out_channels}"


def measure_conv(dtype_name: str, shapes: list[tuple], device: str, *, budget_s: float, warnings: list, progress=None,
                 keyed: bool = False) -> ConvCurve:
    """Time each shape's convolution forward in one dtype. ``keyed``: the shapes span the keys
    prediction selects points by (``roofline.model.curves.ConvKey``)."""
    dtype = DTYPES[dtype_name]
    tf32 = bool(device.startswith("cuda") and dtype_name == "float32" and torch.backends.cudnn.allow_tf32)
    points = []
    with torch.no_grad():
        for shape in shapes:
            s = ConvShape(*shape)
            call = _conv_call(s, dtype, device)
            t = time_fn(call, device=device, budget_s=budget_s, warmup_budget_s=budget_s, min_samples=5, label=_label(dtype_name, s))
            if t.warning:
                warnings.append(t.warning)
            stat = t.stat()
            points.append(ConvPoint(**s._asdict(), time=stat, flop_per_s=ConvPoint.model_construct(**s._asdict()).flops / stat.median_s))
            del call
            if progress:
                progress()
    return ConvCurve(dtype=dtype_name, tf32=tf32, keyed=keyed, points=points)


def _conv_call(s: ConvShape, dtype: torch.dtype, device: str):
    """One call of the shape's convolution on fresh random tensors."""
    point = ConvPoint.model_construct(**s._asdict())
    x_shape, w_shape, _ = point.shapes()
    x = torch.randn(x_shape, device=device, dtype=dtype)
    w = torch.randn(w_shape, device=device, dtype=dtype) / (s.in_channels * point.taps) ** 0.5
    if s.layout == "channels_last":
        x, w = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
    conv, stride, padding = _CONV[(s.dims, s.transposed)], point.strides, point.paddings
    return lambda: conv(x, w, None, stride, padding)


# points profiled in one session: their tensors are held until it ends
PROFILED_AT_ONCE = 128


def summed_kernels_s(calls: list, reps: int = 3) -> list[float | None]:
    """Per call, the summed durations of the kernels it launches (torch.profiler, one session for
    all): a call's time without the gaps between its kernels, as the profiler shows an op. Each call
    runs ``reps`` times back to back and keeps its least, as the timed calls ran warm (the first run
    after another shape finds its data out of the cache); one throwaway call opens the session.
    Each call must be one top-level aten op, its cuDNN plan already built (``cudnn.benchmark``
    would time its search); None where the events do not line up with the calls."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        calls[0]()
        for fn in calls:
            for _ in range(reps):
                fn()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.cpu_parent is None and e.name.startswith("aten::")][1:]
    if len(events) != reps * len(calls):
        return [None] * len(calls)
    out = []
    for i in range(len(calls)):
        times = [e.device_time_total for e in events[i * reps:(i + 1) * reps] if e.device_time_total > 0]
        out.append(min(times) * 1e-6 if times else None)
    return out


def with_kernel_times(curves: list[ConvCurve], device: str, warnings: list) -> list[ConvCurve]:
    """The GPU curves with each point's kernels' summed time (``ConvPoint.kernels_s``). A profiler
    session leaves CUPTI's callbacks on every later launch of the process (pytorch/pytorch#144455),
    so calibration calls this after every other measurement."""
    out = []
    with torch.no_grad():
        for curve in curves:
            dtype = DTYPES[curve.dtype]
            kernels: list[float | None] = []
            for i in range(0, len(curve.points), PROFILED_AT_ONCE):
                batch = curve.points[i:i + PROFILED_AT_ONCE]
                calls = [_conv_call(ConvShape(**{f: getattr(p, f) for f in ConvShape._fields}), dtype, device) for p in batch]
                for call in calls:  # cuDNN's plan for each shape is built outside the session
                    call()
                kernels += summed_kernels_s(calls)
                del calls
            missing = sum(k is None for k in kernels)
            if missing:
                warnings.append(f"conv {curve.dtype}: {missing} points' kernel times not measured (profiler events did not line up)")
            out.append(curve.model_copy(update=dict(points=[p.model_copy(update=dict(kernels_s=k)) for p, k in zip(curve.points, kernels)])))
    return out


# oneDNN's dense convolutions on the CPU, forward and each gradient, at batch > 1 (ATen sends a
# 1x1 stride-1 convolution of fewer than 16 images on one thread to its own GEMM instead): a
# 3-channel stem (oneDNN reads its NCHW input as it is), 16 to 128 channels over 14-48 pixels
# (few channels over many pixels: the reorders to and from the blocked layout weigh most), 3x3
# strides 1 and 2 (a strided input gradient runs a channels-last kernel and is copied back to
# NCHW) and 1x1. Prediction fits each pass's efficiency on the implicit GEMM and the reorders'
# time per element to them (``roofline.model.curves.CpuConvPassModel``).
CPU_PASS_SHAPES = [
    _S(8, 3, 32, 48, 3, 1, 1), _S(8, 16, 32, 48, 3, 1, 1), _S(8, 128, 128, 14, 3, 1, 1),
    _S(8, 32, 64, 48, 3, 2, 1), _S(16, 64, 64, 14, 1, 1, 0), _S(8, 96, 192, 14, 3, 2, 1),
]
PASS_MASKS = {"input": [True, False, False], "weight": [False, True, False]}


def measure_conv_passes(device: str, *, budget_s: float, warnings: list, progress=None) -> ConvCurve:
    """Time ``CPU_PASS_SHAPES``' forward and each gradient (``convolution_backward`` asked for it
    alone), float32."""
    points = []
    backward = torch.ops.aten.convolution_backward
    with torch.no_grad():
        for s in CPU_PASS_SHAPES:
            point = ConvPoint.model_construct(**s._asdict())
            x_shape, w_shape, _ = point.shapes()
            x = torch.randn(x_shape, device=device)
            w = torch.randn(w_shape, device=device) / (s.in_channels * s.kernel**2) ** 0.5
            g = torch.randn_like(F.conv2d(x, w, None, s.stride, s.padding))
            conv = ([s.stride] * 2, [s.padding] * 2, [1, 1], False, [0, 0], 1)
            runs = {"none": lambda: F.conv2d(x, w, None, s.stride, s.padding)}
            runs.update({name: (lambda mask=mask: backward(g, x, w, None, *conv, mask)) for name, mask in PASS_MASKS.items()})
            for gradient, fn in runs.items():
                t = time_fn(fn, device=device, budget_s=budget_s, warmup_budget_s=budget_s / 2, min_samples=5,
                            label=f"{_label('float32', s)} {gradient if gradient != 'none' else 'forward'}")
                if t.warning:
                    warnings.append(t.warning)
                stat = t.stat()
                points.append(ConvPoint(**s._asdict(), gradient=gradient, time=stat, flop_per_s=point.flops / stat.median_s))
            if progress:
                progress()
    return ConvCurve(dtype="float32", tf32=False, points=points)
