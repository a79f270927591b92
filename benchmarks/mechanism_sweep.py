"""Kernels whose time the GEMM curve cannot tell, timed over the shapes real models use.

    python benchmarks/mechanism_sweep.py [--device cuda] [--budget 0.02] [--only convs|gemms|conv_channels|conv_backward|attention_lengths|attention_heads|grouped_widths|cat_inputs|conv3d|grouped_pointwise|foreach|grouped_kernels|token_grid] --json OUT.json

Each family is a mechanism of how the kernel runs, not a model: depthwise convolutions (groups =
channels: a few FLOPs per byte), grouped convolutions (ResNeXt, RegNet), the other convolutions
models start and end with (strided stems, patchify, 1x1, 1-d, 3-d, transposed), GEMMs whose
leading dimension breaks the vector alignment of their dtype (a 50257-token vocabulary), addmm
with a bias against mm, and the small batched GEMMs of hand-written attention in both operand
layouts. Every point is the device time of one call (``roofline.timing.time_fn``, device clock),
recorded with its shape, dtype and layout: the evidence the calibration families and their
pricing are designed from, and the fixture their tests read (tests/fixtures/h100_mechanisms.json).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from calibrate.conv import CHANNELS_3D, CLIPS_3D, FILTERS_3D, STEMS_3D, channel_shapes  # noqa: E402
from roofline.timing import time_fn  # noqa: E402

DT = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "tf32": torch.float32}

# depthwise: (channels, size, kernel, stride) from MobileNetV2/V3, EfficientNet-B0, MNASNet, ConvNeXt
DEPTHWISE = [
    (32, 112, 3, 1), (96, 112, 3, 2), (144, 56, 3, 1), (144, 56, 3, 2), (192, 28, 3, 1), (384, 14, 3, 1), (576, 14, 3, 2), (960, 7, 3, 1),
    (72, 56, 5, 2), (240, 28, 5, 1), (480, 14, 5, 1), (672, 14, 5, 2), (1152, 7, 5, 1),
    (96, 56, 7, 1), (192, 28, 7, 1), (384, 14, 7, 1), (768, 7, 7, 1),
]
# grouped: (in = out channels, groups, size, stride) from ResNeXt-50 32x4d and RegNetY
GROUPED = [
    (128, 32, 56, 1), (256, 32, 56, 2), (256, 32, 28, 1), (512, 32, 28, 2), (512, 32, 14, 1), (1024, 32, 7, 1),
    (48, 6, 56, 1), (104, 13, 28, 1), (208, 26, 14, 1), (440, 55, 7, 1), (64, 4, 56, 2), (128, 8, 28, 1), (320, 20, 14, 1), (784, 49, 7, 1),
]
# other convolutions: (kind, batch-free shape); kind in conv2d, conv1d, conv3d, convT2d
OTHER = [
    ("conv2d", dict(cin=3, cout=32, size=224, kernel=3, stride=2, padding=1)),
    ("conv2d", dict(cin=3, cout=64, size=224, kernel=7, stride=2, padding=3)),
    ("conv2d", dict(cin=3, cout=96, size=224, kernel=4, stride=4, padding=0)),
    ("conv2d", dict(cin=3, cout=768, size=224, kernel=16, stride=16, padding=0)),
    ("conv2d", dict(cin=32, cout=16, size=112, kernel=1, stride=1, padding=0)),
    ("conv2d", dict(cin=16, cout=96, size=112, kernel=1, stride=1, padding=0)),
    ("conv2d", dict(cin=144, cout=24, size=56, kernel=1, stride=1, padding=0)),
    ("conv2d", dict(cin=960, cout=160, size=7, kernel=1, stride=1, padding=0)),
    ("conv2d", dict(cin=320, cout=1280, size=7, kernel=1, stride=1, padding=0)),
    ("conv2d", dict(cin=64, cout=256, size=56, kernel=1, stride=1, padding=0)),
    ("conv2d", dict(cin=1024, cout=256, size=14, kernel=1, stride=1, padding=0)),
    ("conv2d", dict(cin=2048, cout=512, size=7, kernel=1, stride=1, padding=0)),
    ("conv2d", dict(cin=32, cout=32, size=128, kernel=3, stride=1, padding=1)),
    ("conv2d", dict(cin=64, cout=64, size=64, kernel=3, stride=1, padding=1)),
    ("conv2d", dict(cin=128, cout=128, size=32, kernel=3, stride=1, padding=1)),
    ("conv2d", dict(cin=256, cout=256, size=16, kernel=3, stride=1, padding=1)),
    ("conv2d", dict(cin=512, cout=512, size=7, kernel=3, stride=1, padding=1)),
    ("conv1d", dict(cin=1, cout=64, size=16000, kernel=10, stride=5, padding=0)),
    ("conv1d", dict(cin=64, cout=64, size=4096, kernel=3, stride=1, padding=1)),
    ("conv1d", dict(cin=128, cout=128, size=1024, kernel=3, stride=1, padding=1)),
    ("conv1d", dict(cin=256, cout=256, size=512, kernel=5, stride=1, padding=2)),
    ("conv1d", dict(cin=80, cout=384, size=3000, kernel=3, stride=1, padding=1)),
    ("conv3d", dict(cin=3, cout=64, size=56, depth=16, kernel=3, stride=1, padding=1)),
    ("conv3d", dict(cin=64, cout=64, size=28, depth=8, kernel=3, stride=1, padding=1)),
    ("convT2d", dict(cin=256, cout=128, size=16, kernel=2, stride=2, padding=0)),
    ("convT2d", dict(cin=128, cout=64, size=32, kernel=2, stride=2, padding=0)),
    ("convT2d", dict(cin=64, cout=32, size=64, kernel=4, stride=2, padding=1)),
]
# dense NCHW convolutions over the channel counts networks use (calibrate.conv.CHANNELS): a sample
# of the grid drawn with another seed than calibration's, so that it checks the calibrated points
CONV_SAMPLE, CONV_SEED = 240, 7
CONV_SWEEP_FLOPS = (2e6, 2e9)  # the recorded sweeps' range of work (calibration's own sample now reaches further)
CONV_BACKWARD_SAMPLE, CONV_BACKWARD_SEED = 80, 5  # the backward kernels, over a sample of the same grid


def kernel_names(fn, device: str) -> list[str]:
    """The device kernels one call of ``fn`` runs (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name[:100] for e in prof.events() if e.device_type.name == "CUDA"]


# GEMMs (m, k, n) as F.linear runs them (x @ W.T): aligned and not
GEMM_KN = [(768, 50257), (768, 50304), (768, 50256), (1024, 1000), (1280, 1000), (768, 1001), (1024, 4095), (1024, 4096), (1023, 4096), (4095, 1024), (768, 2304), (768, 2306)]
GEMM_M = [1, 64, 512, 2048]
# addmm against mm: (m, k, n)
ADDMM = [(1, 768, 768), (32, 768, 3072), (128, 768, 768), (1024, 768, 3072), (1024, 3072, 768), (64, 1024, 1024), (256, 1024, 1024), (4096, 4096, 4096), (8192, 768, 768), (197 * 32, 384, 1536)]
# addmm against mm over a grid: rows (m) by reduction length (k) by width (n), where cuBLASLt's
# bias epilogue and cuBLAS's own mm heuristics part ways (split-K at few rows and long k)
ADDMM_GRID_M = [1, 8, 32, 64, 128, 256, 1024]
ADDMM_GRID_K = [256, 384, 512, 768, 1024, 1536, 3072, 4096]
ADDMM_GRID_N = [768, 1000, 3072]
# batched GEMMs (batch, m, k, n) of attention
BMM = [
    (768, 77, 64, 77), (768, 77, 77, 64), (96, 197, 64, 197), (96, 197, 197, 64), (12, 128, 64, 128), (12, 128, 128, 64),
    (96, 128, 64, 128), (96, 128, 128, 64), (48, 1024, 64, 1024), (48, 1024, 1024, 64), (8, 512, 512, 512), (1536, 49, 32, 49), (1536, 49, 49, 32),
]


def _time(fn, device, budget):
    t = time_fn(fn, device=device, budget_s=budget, warmup_budget_s=budget, min_samples=5)
    return dict(median_s=t.median_s, iqr_s=t.iqr_s, samples=t.n)


def sweep_convs(device: str, budget: float, out: list) -> None:
    gen = torch.Generator(device=device).manual_seed(0)
    for batch in (1, 32):
        for dtype in ("float32", "float16", "bfloat16"):
            dt = DT[dtype]
            for layout in ("nchw", "channels_last"):
                for c, size, k, s in DEPTHWISE:
                    x = torch.randn(batch, c, size, size, device=device, dtype=dt, generator=gen)
                    w = torch.randn(c, 1, k, k, device=device, dtype=dt, generator=gen)
                    if layout == "channels_last":
                        x, w = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
                    t = _time(lambda: F.conv2d(x, w, None, s, k // 2, 1, c), device, budget)
                    out.append(dict(family="conv_depthwise", dtype=dtype, layout=layout, batch=batch, cin=c, cout=c, groups=c, size=size, kernel=k, stride=s, padding=k // 2, **t))
            if dtype == "bfloat16":
                continue
            for c, g, size, s in GROUPED:
                x = torch.randn(batch, c, size, size, device=device, dtype=dt, generator=gen)
                w = torch.randn(c, c // g, 3, 3, device=device, dtype=dt, generator=gen)
                t = _time(lambda: F.conv2d(x, w, None, s, 1, 1, g), device, budget)
                out.append(dict(family="conv_grouped", dtype=dtype, layout="nchw", batch=batch, cin=c, cout=c, groups=g, size=size, kernel=3, stride=s, padding=1, **t))
            for kind, p in OTHER:
                b = max(batch // 8, 1) if kind in ("conv3d", "conv1d") else batch
                cin, cout, size, k, s, pad = p["cin"], p["cout"], p["size"], p["kernel"], p["stride"], p["padding"]
                if kind == "conv2d":
                    x = torch.randn(b, cin, size, size, device=device, dtype=dt, generator=gen)
                    w = torch.randn(cout, cin, k, k, device=device, dtype=dt, generator=gen)
                    fn = lambda: F.conv2d(x, w, None, s, pad)  # noqa: E731
                elif kind == "conv1d":
                    x = torch.randn(b, cin, size, device=device, dtype=dt, generator=gen)
                    w = torch.randn(cout, cin, k, device=device, dtype=dt, generator=gen)
                    fn = lambda: F.conv1d(x, w, None, s, pad)  # noqa: E731
                elif kind == "conv3d":
                    x = torch.randn(b, cin, p["depth"], size, size, device=device, dtype=dt, generator=gen)
                    w = torch.randn(cout, cin, k, k, k, device=device, dtype=dt, generator=gen)
                    fn = lambda: F.conv3d(x, w, None, s, pad)  # noqa: E731
                else:
                    x = torch.randn(b, cin, size, size, device=device, dtype=dt, generator=gen)
                    w = torch.randn(cin, cout, k, k, device=device, dtype=dt, generator=gen)
                    fn = lambda: F.conv_transpose2d(x, w, None, s, pad)  # noqa: E731
                t = _time(fn, device, budget)
                out.append(dict(family=kind, dtype=dtype, layout="nchw", batch=b, groups=1, **p, **t))
            torch.cuda.empty_cache() if device.startswith("cuda") else None


def sweep_conv_channels(device: str, budget: float, out: list) -> None:
    """Dense NCHW convolutions over channel counts (``calibrate.conv.channel_shapes``), fp32 (TF32 as cuDNN
    runs it by default) and fp16, each with the kernels it ran."""
    gen = torch.Generator(device=device).manual_seed(2)
    for dtype in ("float32", "float16"):
        dt = DT[dtype]
        for shape in channel_shapes(CONV_SAMPLE, CONV_SEED, CONV_SWEEP_FLOPS):
            p = dict(batch=shape.batch, cin=shape.in_channels, cout=shape.out_channels, size=shape.size, kernel=shape.kernel, stride=shape.stride, padding=shape.padding)
            x = torch.randn(p["batch"], p["cin"], p["size"], p["size"], device=device, dtype=dt, generator=gen)
            w = torch.randn(p["cout"], p["cin"], p["kernel"], p["kernel"], device=device, dtype=dt, generator=gen)
            fn = lambda: F.conv2d(x, w, None, p["stride"], p["padding"])  # noqa: E731
            t = _time(fn, device, budget)
            names = kernel_names(fn, device) if device.startswith("cuda") else []
            out.append(dict(family="conv_channels", dtype=dtype, layout="nchw", groups=1, kernels=names, **p, **t))


def sweep_conv_backward(device: str, budget: float, out: list) -> None:
    """A convolution's two backward kernels timed apart (``aten.convolution_backward`` with one
    gradient asked for: the input's, then the weight's), beside its forward, over a sample of
    ``calibrate.conv``'s channel grid and the depthwise shapes above at batch 32, fp32 (TF32,
    cuDNN's default), fp16 and bf16, with their kernels."""
    gen = torch.Generator(device=device).manual_seed(3)
    for dtype in ("float32", "float16", "bfloat16"):
        dt = DT[dtype]
        for shape in channel_shapes(CONV_BACKWARD_SAMPLE, CONV_BACKWARD_SEED, CONV_SWEEP_FLOPS):
            p = dict(batch=shape.batch, cin=shape.in_channels, cout=shape.out_channels, size=shape.size, kernel=shape.kernel, stride=shape.stride, padding=shape.padding)
            x = torch.randn(p["batch"], p["cin"], p["size"], p["size"], device=device, dtype=dt, generator=gen)
            w = torch.randn(p["cout"], p["cin"], p["kernel"], p["kernel"], device=device, dtype=dt, generator=gen)
            g = torch.randn_like(F.conv2d(x, w, None, p["stride"], p["padding"]))
            _time_gradients(x, w, g, p, 1, dtype, device, budget, out)
        for c, size, k, s in DEPTHWISE:  # depthwise (groups = channels), at a training batch
            p = dict(batch=32, cin=c, cout=c, size=size, kernel=k, stride=s, padding=k // 2)
            x = torch.randn(32, c, size, size, device=device, dtype=dt, generator=gen)
            w = torch.randn(c, 1, k, k, device=device, dtype=dt, generator=gen)
            g = torch.randn_like(F.conv2d(x, w, None, s, k // 2, 1, c))
            _time_gradients(x, w, g, p, c, dtype, device, budget, out)


def _time_gradients(x, w, g, p: dict, groups: int, dtype: str, device: str, budget: float, out: list) -> None:
    """One convolution's forward and each gradient alone, with the kernels each ran."""
    args = ([p["stride"]] * 2, [p["padding"]] * 2, [1, 1], False, [0, 0], groups)
    for variant, fn in (
        ("forward", lambda: F.conv2d(x, w, None, p["stride"], p["padding"], 1, groups)),
        ("input_grad", lambda: torch.ops.aten.convolution_backward(g, x, w, None, *args, [True, False, False])),
        ("weight_grad", lambda: torch.ops.aten.convolution_backward(g, x, w, None, *args, [False, True, False])),
    ):
        t = _time(fn, device, budget)
        names = kernel_names(fn, device) if device.startswith("cuda") else []
        out.append(dict(family="conv_backward", variant=variant, dtype=dtype, layout="nchw", groups=groups, kernels=names, **p, **t))


ATTENTION_LENGTHS = [128, 136, 160, 192, 197, 224, 256, 320, 384, 448, 512]
ATTENTION_BATCH_HEADS = [96, 384]


def sweep_attention_lengths(device: str, budget: float, out: list) -> None:
    """Fused attention (SDPA, no mask, head size 64) over sequence lengths between and off the
    calibrated ones (197: a ViT's 196 patches and its class token), at two batch x heads, float32
    and bfloat16: how time follows the length between multiples of the kernels' tiles."""
    gen = torch.Generator(device=device).manual_seed(4)
    for dtype in ("float32", "bfloat16"):
        for bh in ATTENTION_BATCH_HEADS:
            for seq in ATTENTION_LENGTHS:
                q, k, v = (torch.randn(1, bh, seq, 64, device=device, dtype=DT[dtype], generator=gen) for _ in range(3))
                fn = lambda: F.scaled_dot_product_attention(q, k, v)  # noqa: E731
                t = _time(fn, device, budget)
                names = kernel_names(fn, device) if device.startswith("cuda") else []
                out.append(dict(family="attention_lengths", dtype=dtype, batch_heads=bh, seq=seq, head_dim=64, kernels=names, **t))


# head sizes of models, beside the calibrated ones (bfloat16 64 and 128, float32 32 and 64): Swin's and SegFormer's
# 32, MobileViT's 36 and 40, CaiT's and PiT's 48, 56, 80, 96 and 112 of larger ViTs and LLMs; at a ViT's 197 tokens,
# 1024 and 4096
ATTENTION_HEADS = (32, 36, 40, 48, 56, 80, 96, 112)
ATTENTION_HEAD_SHAPES = [(384, 197), (64, 1024), (8, 4096)]  # (batch x heads, sequence)


def sweep_attention_heads(device: str, budget: float, out: list) -> None:
    """Fused attention (SDPA, no mask) over ``ATTENTION_HEADS``, float32 (the memory-efficient kernel) and
    bfloat16 (flash): how time follows the head size."""
    gen = torch.Generator(device=device).manual_seed(5)
    for dtype in ("float32", "bfloat16"):
        for bh, seq in ATTENTION_HEAD_SHAPES:
            for head in ATTENTION_HEADS:
                q, k, v = (torch.randn(1, bh, seq, head, device=device, dtype=DT[dtype], generator=gen) for _ in range(3))
                fn = lambda: F.scaled_dot_product_attention(q, k, v)  # noqa: E731
                t = _time(fn, device, budget)
                names = kernel_names(fn, device) if device.startswith("cuda") else []
                out.append(dict(family="attention_heads", dtype=dtype, batch_heads=bh, seq=seq, head_dim=head, kernels=names, **t))


# grouped convolutions at group widths between and off calibration's (4-32 in 32 groups, 64 and 128 in 12):
# RegNets' 24, 40, 48, 56, 64, 112 and 120 channels per group, at a few groups and at many
GROUPED_SWEEP_WIDTHS = [8, 16, 24, 32, 40, 48, 56, 64, 112, 120]
GROUPED_SWEEP_SHAPES = [(32, 3, 56), (32, 12, 28), (1, 12, 28)]  # (batch, groups, side)


def sweep_grouped_widths(device: str, budget: float, out: list) -> None:
    """3x3 grouped convolutions (stride 1, NCHW) over group widths and group counts, float32 and
    float16: how time follows a group's width where calibration has none."""
    gen = torch.Generator(device=device).manual_seed(6)
    with torch.no_grad():
        for dtype in ("float32", "float16"):
            for batch, groups, side in GROUPED_SWEEP_SHAPES:
                for width in GROUPED_SWEEP_WIDTHS:
                    c = groups * width
                    x = torch.randn(batch, c, side, side, device=device, dtype=DT[dtype], generator=gen)
                    w = torch.randn(c, width, 3, 3, device=device, dtype=DT[dtype], generator=gen)
                    fn = lambda: F.conv2d(x, w, None, 1, 1, 1, groups)  # noqa: E731
                    t = _time(fn, device, budget)
                    out.append(dict(family="grouped_widths", dtype=dtype, batch=batch, groups=groups, side=side, width=width, **t))


# 3-d convolutions (video models), (label, in channels, out channels, depth, side, filter, stride,
# padding), batch-free: the grid calibration picks its 3-d points from (``calibrate.conv``: its filters
# at 64 and 256 channels over three clips, and two 3-channel stems); four of its filters at other
# channel counts and clips (``CONV3D_OFFGRID``); and the layers of torchvision's video models (R3D-18,
# MC3-18, R(2+1)D-18, S3D, the Swin3D and MViT patch embeddings), held out of both
CONV3D_GRID = [
    *[(f"grid {name}", c, widen * c, d, s, k, st, pad) for name, k, st, pad, widen in FILTERS_3D for c in CHANNELS_3D for d, s in CLIPS_3D],
    *[(f"grid {stem[0]}", *stem[1:]) for stem in STEMS_3D],
]
CONV3D_OFFGRID = [
    *[(f"offgrid {name}", c, widen * c, d, s, k, st, pad) for name, k, st, pad, widen in FILTERS_3D[:2] + FILTERS_3D[-2:]
      for c in (32, 96, 192, 384) for d, s in ((16, 64), (8, 32), (4, 16))],
]


def _r2plus1d_mid(cin: int, cout: int) -> int:
    return cin * cout * 27 // (cin * 9 + 3 * cout)


# (channels, frames, side) at each stage of an R3D-18 / R(2+1)D-18 clip of 16 x 112 x 112; the last has no stride after it
VIDEO_STAGES = ((64, 16, 56), (128, 8, 28), (256, 4, 14), (512, 2, 7))
STRIDED_STAGES = VIDEO_STAGES[:-1]
CONV3D_LAYERS = [
    ("r3d stem", 3, 64, 16, 112, (3, 7, 7), (1, 2, 2), (1, 3, 3)),
    *[("r3d k3 s1", c, c, d, s, (3, 3, 3), (1, 1, 1), (1, 1, 1)) for c, d, s in VIDEO_STAGES],
    *[("r3d k3 s2", c, 2 * c, d, s, (3, 3, 3), (2, 2, 2), (1, 1, 1)) for c, d, s in STRIDED_STAGES],
    *[("r3d k1 s2", c, 2 * c, d, s, (1, 1, 1), (2, 2, 2), (0, 0, 0)) for c, d, s in STRIDED_STAGES],
    *[("mc3 1x3x3 s1", c, c, 16, s, (1, 3, 3), (1, 1, 1), (0, 1, 1)) for c, s in ((128, 28), (256, 14), (512, 7))],
    *[("mc3 1x3x3 s2", c, 2 * c, 16, s, (1, 3, 3), (1, 2, 2), (0, 1, 1)) for c, s in ((64, 56), (128, 28), (256, 14))],
    *[("mc3 k1 s2", c, 2 * c, 16, s, (1, 1, 1), (1, 2, 2), (0, 0, 0)) for c, s in ((64, 56), (128, 28), (256, 14))],
    ("r2plus1d stem spatial", 3, 45, 16, 112, (1, 7, 7), (1, 2, 2), (0, 3, 3)),
    ("r2plus1d stem temporal", 45, 64, 16, 56, (3, 1, 1), (1, 1, 1), (1, 0, 0)),
    *[("r2plus1d 1x3x3 s1", c, _r2plus1d_mid(c, c), d, s, (1, 3, 3), (1, 1, 1), (0, 1, 1)) for c, d, s in VIDEO_STAGES],
    *[("r2plus1d 3x1x1 s1", _r2plus1d_mid(c, c), c, d, s, (3, 1, 1), (1, 1, 1), (1, 0, 0)) for c, d, s in VIDEO_STAGES],
    *[("r2plus1d 1x3x3 s2", c, _r2plus1d_mid(c, 2 * c), d, s, (1, 3, 3), (1, 2, 2), (0, 1, 1)) for c, d, s in STRIDED_STAGES],
    *[("r2plus1d 3x1x1 s2", _r2plus1d_mid(c, 2 * c), 2 * c, d, s // 2, (3, 1, 1), (2, 1, 1), (1, 0, 0)) for c, d, s in STRIDED_STAGES],
    ("s3d stem spatial", 3, 64, 16, 224, (1, 7, 7), (1, 2, 2), (0, 3, 3)),
    ("s3d stem temporal", 64, 64, 16, 112, (7, 1, 1), (2, 1, 1), (3, 0, 0)),
    ("s3d k1", 64, 64, 8, 56, (1, 1, 1), (1, 1, 1), (0, 0, 0)),
    ("s3d 1x3x3", 64, 192, 8, 56, (1, 3, 3), (1, 1, 1), (0, 1, 1)),
    ("s3d 3x1x1", 192, 192, 8, 56, (3, 1, 1), (1, 1, 1), (1, 0, 0)),
    ("s3d k1", 192, 96, 8, 28, (1, 1, 1), (1, 1, 1), (0, 0, 0)),
    ("s3d k1", 480, 192, 4, 14, (1, 1, 1), (1, 1, 1), (0, 0, 0)),
    ("s3d k1", 832, 256, 2, 7, (1, 1, 1), (1, 1, 1), (0, 0, 0)),
    ("swin3d patch", 3, 96, 16, 224, (2, 4, 4), (2, 4, 4), (0, 0, 0)),
    ("mvit patch", 3, 96, 16, 224, (3, 7, 7), (2, 4, 4), (1, 3, 3)),
]


def _first_call_s(fn, device: str) -> float:
    """Wall time of a shape's first call, synchronized: what calibrating it costs beyond its timing
    (cuDNN picks and builds its plan on a shape's first call)."""
    t0 = time.perf_counter()
    fn()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def sweep_conv3d(device: str, budget: float, out: list) -> None:
    """3-d convolutions (``CONV3D_GRID``, ``CONV3D_OFFGRID``, ``CONV3D_LAYERS``), NCDHW, no bias, at one clip and eight,
    float32 (TF32, cuDNN's default), float16 and bfloat16, with the kernels each ran."""
    gen = torch.Generator(device=device).manual_seed(8)
    with torch.no_grad():
        for dtype in ("float32", "float16", "bfloat16"):
            dt = DT[dtype]
            for role, shapes in (("grid", CONV3D_GRID), ("offgrid", CONV3D_OFFGRID), ("layer", CONV3D_LAYERS)):
                for batch in (1, 8):
                    for label, cin, cout, depth, side, kernel, stride, padding in shapes:
                        x = torch.randn(batch, cin, depth, side, side, device=device, dtype=dt, generator=gen)
                        w = torch.randn(cout, cin, *kernel, device=device, dtype=dt, generator=gen) / (cin * kernel[0] * kernel[1] * kernel[2]) ** 0.5
                        fn = lambda: F.conv3d(x, w, None, stride, padding)  # noqa: E731
                        first = _first_call_s(fn, device)
                        t = _time(fn, device, budget)
                        names = kernel_names(fn, device) if device.startswith("cuda") else []
                        out.append(dict(family="conv3d", role=role, label=label, dtype=dtype, batch=batch, cin=cin, cout=cout, depth=depth,
                                        size=side, kernel=list(kernel), stride=list(stride), padding=list(padding), kernels=names, first_call_s=first, **t))
                        del x, w
            torch.cuda.empty_cache() if device.startswith("cuda") else None


# 1x1 grouped convolutions (grouped GEMMs: SqueezeBERT's conv1d of 4 groups, ShuffleNet-style 2-d
# pointwise groups): (dims, batch, in channels, out channels, groups, length or side)
GROUPED_POINTWISE = [
    *[(1, b, cin, cout, 4, 128) for b in (1, 8) for cin, cout in ((768, 768), (768, 3072), (3072, 768))],
    *[(1, 8, c, c, g, 512) for c, g in ((512, 2), (512, 8), (1024, 16), (256, 4))],
    *[(2, 32, c, c, g, s) for c, g, s in ((240, 3, 28), (480, 3, 14), (512, 4, 28), (1024, 8, 14))],
]


def sweep_grouped_pointwise(device: str, budget: float, out: list) -> None:
    """``GROUPED_POINTWISE`` in float32 (TF32) and float16, no bias, with the kernels each ran."""
    gen = torch.Generator(device=device).manual_seed(9)
    with torch.no_grad():
        for dtype in ("float32", "float16"):
            dt = DT[dtype]
            for dims, batch, cin, cout, groups, side in GROUPED_POINTWISE:
                x = torch.randn(batch, cin, *(side,) * dims, device=device, dtype=dt, generator=gen)
                w = torch.randn(cout, cin // groups, *(1,) * dims, device=device, dtype=dt, generator=gen)
                conv = F.conv1d if dims == 1 else F.conv2d
                fn = lambda: conv(x, w, None, 1, 0, 1, groups)  # noqa: E731
                t = _time(fn, device, budget)
                names = kernel_names(fn, device) if device.startswith("cuda") else []
                out.append(dict(family="grouped_pointwise", dtype=dtype, dims=dims, batch=batch, cin=cin, cout=cout, groups=groups, size=side,
                                kernels=names, **t))


# grouped convolutions of few groups (RegNet's stems of stages: 2-8 groups over 28-112 pixels) and
# depthwise ones whose filters multiply the channels (PiT's strided pooling: out = 2 x in), where
# the kernel cuDNN or ATen picks is not the one the calibrated families time
FEW_GROUP_COUNTS = [2, 3, 4, 8]
FEW_GROUP_WIDTHS = [16, 24, 32, 48]
FEW_GROUP_SIDES = [28, 56, 112]
MULTIPLIERS = [1, 2, 4]
MULTIPLIER_SHAPES = [(32, 144, 28), (32, 288, 14), (32, 64, 56), (1, 144, 28), (32, 512, 28)]  # (batch, channels, side)


def sweep_grouped_kernels(device: str, budget: float, out: list) -> None:
    """3x3 grouped convolutions of few groups and depthwise ones with channel multipliers (NCHW,
    no bias), stride 1 and 2, float32 (TF32) and float16, with the kernels each ran."""
    gen = torch.Generator(device=device).manual_seed(10)
    cuda = device.startswith("cuda")
    with torch.no_grad():
        for dtype in ("float32", "float16"):
            dt = DT[dtype]
            for groups in FEW_GROUP_COUNTS:
                for width in FEW_GROUP_WIDTHS:
                    for side in FEW_GROUP_SIDES:
                        for stride in (1, 2):
                            c = groups * width
                            x = torch.randn(32, c, side, side, device=device, dtype=dt, generator=gen)
                            w = torch.randn(c, width, 3, 3, device=device, dtype=dt, generator=gen)
                            fn = lambda: F.conv2d(x, w, None, stride, 1, 1, groups)  # noqa: E731
                            t = _time(fn, device, budget)
                            out.append(dict(family="grouped_few", dtype=dtype, batch=32, groups=groups, width=width, side=side, stride=stride,
                                            kernels=kernel_names(fn, device) if cuda else [], **t))
            for batch, c, side in MULTIPLIER_SHAPES:
                for mult in MULTIPLIERS:
                    for stride in (1, 2):
                        x = torch.randn(batch, c, side, side, device=device, dtype=dt, generator=gen)
                        w = torch.randn(mult * c, 1, 3, 3, device=device, dtype=dt, generator=gen)
                        fn = lambda: F.conv2d(x, w, None, stride, 1, 1, c)  # noqa: E731
                        t = _time(fn, device, budget)
                        out.append(dict(family="depthwise_multiplier", dtype=dtype, batch=batch, channels=c, multiplier=mult, side=side,
                                        stride=stride, kernels=kernel_names(fn, device) if cuda else [], **t))


# convolutions of vision transformers and hybrids: 3-channel patch embeddings over an NCHW image
# ((filter, stride, padding), output channels), and convolutions over a grid of tokens, which a
# reshape of (batch, tokens, channels) hands the convolution channels-last: dense downsamplings
# (filter = stride) and depthwise mixers (filter, channel multiplier, stride)
PATCH_EMBEDS = [(4, 4, 0), (7, 4, 2), (8, 8, 0), (14, 14, 0), (16, 16, 0), (32, 32, 0), (7, 7, 0)]
PATCH_CHANNELS = [96, 384, 768, 1024]
GRID_DENSE = [(48, 96, 64, 2), (96, 192, 56, 2), (192, 384, 28, 2), (384, 768, 14, 2), (160, 160, 32, 2), (64, 64, 64, 4), (32, 32, 128, 8), (64, 128, 56, 1)]  # (in, out, side, filter = stride)
GRID_DEPTHWISE = [(144, 27, 3, 2, 2), (288, 14, 3, 2, 2), (96, 56, 7, 1, 1), (304, 8, 9, 1, 1), (160, 16, 9, 1, 1), (96, 32, 5, 1, 1), (192, 28, 3, 1, 1), (128, 28, 3, 2, 1)]  # (channels, side, filter, multiplier, stride)


def sweep_token_grid(device: str, budget: float, out: list) -> None:
    """Patch embeddings (NCHW, with a bias) at 224 pixels, and dense and depthwise convolutions over
    token grids in both layouts (channels-last as a token reshape leaves them, and NCHW), batch 1
    and 32, float32 (TF32 as cuDNN's default), float16 and bfloat16, with the kernels each ran."""
    gen = torch.Generator(device=device).manual_seed(11)
    cuda = device.startswith("cuda")

    def record(fn, **point):
        t = _time(fn, device, budget)
        out.append(dict(point, kernels=kernel_names(fn, device) if cuda else [], **t))

    with torch.no_grad():
        for dtype in ("float32", "float16", "bfloat16"):
            dt = DT[dtype]
            for batch in (1, 32):
                x = torch.randn(batch, 3, 224, 224, device=device, dtype=dt, generator=gen)
                for k, s, pad in PATCH_EMBEDS:
                    for cout in PATCH_CHANNELS:
                        w = torch.randn(cout, 3, k, k, device=device, dtype=dt, generator=gen)
                        b = torch.randn(cout, device=device, dtype=dt, generator=gen)
                        record(lambda: F.conv2d(x, w, b, s, pad), family="patch_embed", dtype=dtype, layout="nchw", batch=batch, cin=3, cout=cout,
                               size=224, kernel=k, stride=s, padding=pad, groups=1, multiplier=1)
                for layout in ("channels_last", "nchw"):
                    for cin, cout, side, k in GRID_DENSE:
                        g = torch.randn(batch, cin, side, side, device=device, dtype=dt, generator=gen)
                        w = torch.randn(cout, cin, k, k, device=device, dtype=dt, generator=gen)
                        b = torch.randn(cout, device=device, dtype=dt, generator=gen)
                        if layout == "channels_last":
                            g = g.contiguous(memory_format=torch.channels_last)
                        record(lambda: F.conv2d(g, w, b, k, 0), family="grid_dense", dtype=dtype, layout=layout, batch=batch, cin=cin, cout=cout,
                               size=side, kernel=k, stride=k, padding=0, groups=1, multiplier=1)
                    for c, side, k, mult, s in GRID_DEPTHWISE:
                        g = torch.randn(batch, c, side, side, device=device, dtype=dt, generator=gen)
                        w = torch.randn(mult * c, 1, k, k, device=device, dtype=dt, generator=gen)
                        b = torch.randn(mult * c, device=device, dtype=dt, generator=gen)
                        if layout == "channels_last":
                            g = g.contiguous(memory_format=torch.channels_last)
                        record(lambda: F.conv2d(g, w, b, s, k // 2, 1, c), family="grid_depthwise", dtype=dtype, layout=layout, batch=batch, cin=c,
                               cout=mult * c, size=side, kernel=k, stride=s, padding=k // 2, groups=c, multiplier=mult)
            torch.cuda.empty_cache() if cuda else None


# multi-tensor (foreach) ops as torch's default AdamW runs them, over the parameter lists of models
# (torchvision's, where installed) and of equal tensors: (op, lists it reads, the call)
FOREACH_OPS = {
    "mul_": lambda p, g, v: torch._foreach_mul_(p, 0.999),
    "add_": lambda p, g, v: torch._foreach_add_(p, g, alpha=0.1),
    "lerp_": lambda p, g, v: torch._foreach_lerp_(p, g, 0.1),
    "addcmul_": lambda p, g, v: torch._foreach_addcmul_(v, g, g, value=0.001),
    "sqrt": lambda p, g, v: torch._foreach_sqrt(v),
    "addcdiv_": lambda p, g, v: torch._foreach_addcdiv_(p, g, v, value=-0.001),
}
FOREACH_EQUAL = [(16, 1 << 24), (64, 1 << 20), (200, 4096), (1000, 1024)]  # (tensors, elements each)
FOREACH_MODELS = ["resnet18", "mobilenet_v2", "convnext_tiny", "vit_b_16"]


def foreach_lists() -> list[tuple[str, list[tuple[int, ...]]]]:
    """(label, the shapes of a parameter list): torchvision models' parameters where torchvision is
    installed, and lists of equal tensors."""
    lists = [(f"equal {n}x{e}", [(e,)] * n) for n, e in FOREACH_EQUAL]
    try:
        import torchvision

        for name in FOREACH_MODELS:
            with torch.device("meta"):
                model = getattr(torchvision.models, name)()
            lists.append((name, [tuple(q.shape) for q in model.parameters()]))
    except ImportError:
        pass
    return lists


def sweep_foreach(device: str, budget: float, out: list) -> None:
    """``FOREACH_OPS`` over ``foreach_lists()`` in float32, with the kernels each ran."""
    gen = torch.Generator(device=device).manual_seed(10)
    for label, shapes in foreach_lists():
        p, g, v = ([torch.rand(s, device=device, generator=gen) + 0.5 for s in shapes] for _ in range(3))
        for op, call in FOREACH_OPS.items():
            fn = lambda: call(p, g, v)  # noqa: E731
            t = _time(fn, device, budget)
            names = kernel_names(fn, device) if device.startswith("cuda") else []
            out.append(dict(family="foreach", op=op, label=label, dtype="float32", shapes=[list(x) for x in shapes],
                            elements=sum(math.prod(x) for x in shapes), kernels=names, **t))
        del p, g, v
        torch.cuda.empty_cache() if device.startswith("cuda") else None


# cats of contiguous inputs: (dim, the inputs' shapes) from DenseNet's blocks (a large input and many
# of 32 channels), feature pyramids and U-Nets (a few unequal or equal inputs), a key cache grown by
# one step, and many equal small inputs
CAT_INPUTS = [
    *[(1, [(b, c0, h, h)] + [(b, 32, h, h)] * k) for b in (8, 32) for c0, h in ((64, 56), (128, 28), (256, 14), (512, 7)) for k in (1, 4, 12, 24)],
    (1, [(8, 256, 64, 64), (8, 128, 64, 64), (8, 64, 64, 64), (8, 32, 64, 64)]),
    (1, [(16, 512, 32, 32), (16, 16, 32, 32), (16, 16, 32, 32)]),
    (1, [(32, 64, 128, 128), (32, 64, 128, 128)]),
    (1, [(4, 256, 50, 76), (4, 512, 50, 76), (4, 1024, 50, 76)]),
    (2, [(8, 12, 1024, 64), (8, 12, 1, 64)]),
    (2, [(32, 16, 255, 64), (32, 16, 1, 64)]),
    (0, [(1, 256)] * 64),
    (1, [(64, 3, 512), (64, 61, 512), (64, 1, 512)]),
]


def sweep_cat_inputs(device: str, budget: float, out: list) -> None:
    """torch.cat of contiguous inputs over the shapes of ``CAT_INPUTS``, float32 and float16: how a
    cat's time follows its inputs' count and their sizes beside the largest one."""
    gen = torch.Generator(device=device).manual_seed(5)
    for dtype in ("float32", "float16"):
        for dim, shapes in CAT_INPUTS:
            xs = [torch.randn(*shape, device=device, dtype=DT[dtype], generator=gen) for shape in shapes]
            fn = lambda: torch.cat(xs, dim)  # noqa: E731
            t = _time(fn, device, budget)
            names = kernel_names(fn, device) if device.startswith("cuda") else []
            out.append(dict(family="cat_inputs", dtype=dtype, dim=dim, shapes=[list(x) for x in shapes], kernels=names, **t))


def sweep_gemms(device: str, budget: float, out: list) -> None:
    gen = torch.Generator(device=device).manual_seed(1)
    prev = torch.backends.cuda.matmul.allow_tf32
    try:
        for dtype in ("float16", "bfloat16", "float32", "tf32"):
            torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
            dt = DT[dtype]
            for m in GEMM_M:
                for k, n in GEMM_KN:
                    x = torch.randn(m, k, device=device, dtype=dt, generator=gen)
                    w = torch.randn(n, k, device=device, dtype=dt, generator=gen)
                    t = _time(lambda: F.linear(x, w), device, budget)
                    out.append(dict(family="gemm_alignment", dtype=dtype, m=m, k=k, n=n, **t))
            for m, k, n in ADDMM:
                x = torch.randn(m, k, device=device, dtype=dt, generator=gen)
                w = torch.randn(n, k, device=device, dtype=dt, generator=gen)
                bias = torch.randn(n, device=device, dtype=dt, generator=gen)
                wt = w.t()
                for variant, fn in (("mm", lambda: torch.mm(x, wt)), ("addmm", lambda: torch.addmm(bias, x, wt))):
                    t = _time(fn, device, budget)
                    out.append(dict(family="addmm", variant=variant, dtype=dtype, m=m, k=k, n=n, **t))
            for m in ADDMM_GRID_M:
                for k in ADDMM_GRID_K:
                    for n in ADDMM_GRID_N:
                        x = torch.randn(m, k, device=device, dtype=dt, generator=gen)
                        wt = torch.randn(n, k, device=device, dtype=dt, generator=gen).t()
                        bias = torch.randn(n, device=device, dtype=dt, generator=gen)
                        for variant, fn in (("mm", lambda: torch.mm(x, wt)), ("addmm", lambda: torch.addmm(bias, x, wt))):
                            t = _time(fn, device, budget)
                            out.append(dict(family="addmm_grid", variant=variant, dtype=dtype, m=m, k=k, n=n, **t))
            if dtype == "tf32":
                continue
            for b, m, k, n in BMM:
                a = torch.randn(b, m, k, device=device, dtype=dt, generator=gen)
                for layout in ("nn", "nt"):
                    if layout == "nn":
                        bb = torch.randn(b, k, n, device=device, dtype=dt, generator=gen)
                    else:
                        bb = torch.randn(b, n, k, device=device, dtype=dt, generator=gen).transpose(1, 2)
                    t = _time(lambda: torch.bmm(a, bb), device, budget)
                    out.append(dict(family="bmm", dtype=dtype, layout=layout, batch=b, m=m, k=k, n=n, **t))
            torch.cuda.empty_cache() if device.startswith("cuda") else None
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--budget", type=float, default=0.02)
    ap.add_argument("--json", required=True)
    ap.add_argument("--only", choices=["convs", "gemms", "conv_channels", "conv_backward", "attention_lengths", "attention_heads", "grouped_widths", "cat_inputs", "conv3d", "grouped_pointwise", "foreach", "grouped_kernels", "token_grid"], help="one sweep")
    args = ap.parse_args()
    t0 = time.perf_counter()
    points: list[dict] = []
    if args.only == "conv_channels":
        sweep_conv_channels(args.device, args.budget, points)
    if args.only == "conv_backward":
        sweep_conv_backward(args.device, args.budget, points)
    if args.only == "attention_lengths":
        sweep_attention_lengths(args.device, args.budget, points)
    if args.only == "attention_heads":
        sweep_attention_heads(args.device, args.budget, points)
    if args.only == "grouped_widths":
        sweep_grouped_widths(args.device, args.budget, points)
    if args.only == "cat_inputs":
        sweep_cat_inputs(args.device, args.budget, points)
    if args.only == "conv3d":
        sweep_conv3d(args.device, args.budget, points)
    if args.only == "grouped_pointwise":
        sweep_grouped_pointwise(args.device, args.budget, points)
    if args.only == "foreach":
        sweep_foreach(args.device, args.budget, points)
    if args.only == "grouped_kernels":
        sweep_grouped_kernels(args.device, args.budget, points)
    if args.only == "token_grid":
        sweep_token_grid(args.device, args.budget, points)
    if args.only in (None, "convs"):
        sweep_convs(args.device, args.budget, points)
        print(f"convolutions: {len(points)} points, {time.perf_counter() - t0:.0f} s", flush=True)
    if args.only in (None, "gemms"):
        sweep_gemms(args.device, args.budget, points)
    name = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    Path(args.json).write_text(json.dumps(dict(device=name, torch=torch.__version__, date=time.strftime("%Y-%m-%d"), cudnn_tf32=torch.backends.cudnn.allow_tf32, points=points), indent=0))
    print(f"{len(points)} points in {time.perf_counter() - t0:.0f} s -> {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
