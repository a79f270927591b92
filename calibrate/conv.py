"""2-D convolution time at representative shapes: what cuDNN (GPU) or oneDNN (CPU) actually reach.

A convolution is priced as its implicit GEMM on the matmul curve times a ratio these points
measure. On the H100 large bf16 3x3 convolutions run about 1.5x slower than the GEMM curve
(conv_big's convolutions) and small fp32 ones 1.5x faster (ResNet stages, where
cuDNN's TF32 kernels beat the GEMM curve's skinny shapes), so no single factor fits. The shapes
cover the stages of a ResNet (3x3 at 64 and 256 channels over a range of batch, 1x1 projections,
the 7x7 stride-2 stem, a late 512-channel stage). NCHW, no bias (ATen adds a conv's bias with its
own kernel), default algorithm selection (torch.backends.cudnn.benchmark off, PyTorch's default).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from calibrate.matmul import DTYPES
from roofline.schema.profile import ConvCurve, ConvPoint, conv2d_output_size
from roofline.timing import time_fn

# (batch, in_channels, out_channels, size, kernel, stride, padding)
GPU_SHAPES = [
    (1, 64, 64, 56, 3, 1, 1), (8, 64, 64, 56, 3, 1, 1), (32, 64, 64, 56, 3, 1, 1),
    (1, 256, 256, 56, 3, 1, 1), (8, 256, 256, 56, 3, 1, 1), (64, 256, 256, 56, 3, 1, 1),
    (8, 512, 512, 14, 3, 1, 1),
    (8, 256, 64, 56, 1, 1, 0), (64, 256, 64, 56, 1, 1, 0), (8, 64, 256, 56, 1, 1, 0),
    (8, 3, 64, 224, 7, 2, 3),
]
GPU_SHAPES_QUICK = [(8, 64, 64, 56, 3, 1, 1), (8, 256, 64, 56, 1, 1, 0), (8, 3, 64, 224, 7, 2, 3)]
CPU_SHAPES = [(1, 64, 64, 56, 3, 1, 1), (1, 256, 256, 14, 3, 1, 1), (1, 256, 64, 56, 1, 1, 0), (1, 3, 64, 224, 7, 2, 3)]
CPU_SHAPES_QUICK = [(1, 64, 64, 28, 3, 1, 1)]


def measure_conv(dtype_name: str, shapes: list[tuple], device: str, *, budget_s: float, warnings: list, progress=None) -> ConvCurve:
    """Time each shape's convolution forward in one dtype."""
    dtype = DTYPES[dtype_name]
    tf32 = bool(device.startswith("cuda") and dtype_name == "float32" and torch.backends.cudnn.allow_tf32)
    points = []
    with torch.no_grad():
        for batch, cin, cout, size, kernel, stride, padding in shapes:
            x = torch.randn(batch, cin, size, size, device=device, dtype=dtype)
            w = torch.randn(cout, cin, kernel, kernel, device=device, dtype=dtype) / (cin * kernel * kernel) ** 0.5
            t = time_fn(
                lambda: F.conv2d(x, w, None, stride, padding), device=device, budget_s=budget_s, warmup_budget_s=budget_s,
                min_samples=5, label=f"conv {dtype_name} {batch}x{cin}x{size}^2 k{kernel} -> {cout}",
            )
            if t.warning:
                warnings.append(t.warning)
            stat = t.stat()
            point = dict(batch=batch, in_channels=cin, out_channels=cout, size=size, kernel=kernel, stride=stride, padding=padding)
            out = conv2d_output_size(size, kernel, stride, padding)
            flops = 2 * batch * out * out * cout * cin * kernel * kernel
            points.append(ConvPoint(**point, time=stat, flop_per_s=flops / stat.median_s))
            del x, w
            if progress:
                progress()
    return ConvCurve(dtype=dtype_name, tf32=tf32, points=points)
