"""Pooling family: taps per output, adaptive windows, resampling."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from roofline.costs import cost_of
from tests.opcapture import capture_ops, priced

X = (2, 3, 8, 8)  # 384 elements, 1536 bytes


def test_max_pool2d_with_indices():
    # 2x2 window, out (2,3,4,4) = 96: 4 compares each = 384; write 96*4 + 96*8 (indices) = 1152
    _, c = priced("aten.max_pool2d_with_indices", nn.MaxPool2d(2), torch.randn(*X))
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (384, 1536, 1152, 1)


def test_avg_pool2d_strided_overlapping():
    # 3x3 window stride 1 padding 1: out = 384 elements, (9 adds + 1 div) each = 3840
    _, c = priced("aten.avg_pool2d", nn.AvgPool2d(3, stride=1, padding=1), torch.randn(*X))
    assert c.flops == 3840 and c.bytes_read == 1536 and c.bytes_written == 1536


def test_adaptive_avg_pool_exact_windows():
    # 8 -> 3 per dim: windows [0,3) [2,6) [5,8) = 3 + 4 + 3 = 10 taps per dim, 100 per plane
    # 6 planes * 100 = 600 adds + 54 divides = 654
    _, c = priced("aten._adaptive_avg_pool2d", nn.AdaptiveAvgPool2d(3), torch.randn(*X))
    assert c.flops == 654


def test_adaptive_to_one_is_mean():
    # AdaptiveAvgPool2d(1) becomes mean over (H, W): 384 adds + 6 divides
    _, c = priced("aten.mean", nn.AdaptiveAvgPool2d(1), torch.randn(*X))
    assert c.flops == 390


def test_adaptive_max_pool():
    # 8 -> 4: windows of 2, 4 taps per output, 6*16 outputs = 384 compares
    _, c = priced("aten.adaptive_max_pool2d", nn.AdaptiveMaxPool2d(4), torch.randn(*X))
    assert c.flops == 384


def test_max_pool1d():
    # (2, 3, 8) kernel 2: out (2,3,4) = 24 outputs, 2 compares each = 48
    ops = capture_ops(lambda t: F.max_pool1d(t, 2), torch.randn(2, 3, 8))
    pools = [cost_of(o) for o in ops if "pool" in o.packet]
    assert pools and all(ok for _, ok in pools) and pools[0][0].flops == 48


def test_upsample():
    # nearest x2: (2,3,8,8) -> (2,3,16,16): 0 FLOPs, data movement, read 1536, write 6144
    _, c = priced("aten.upsample_nearest2d", nn.Upsample(scale_factor=2), torch.randn(*X))
    assert (c.flops, c.bytes_read, c.bytes_written, c.category) == (0, 1536, 6144, "data_movement")
    # bilinear: 4 taps -> 7 FLOPs per output, 1536 outputs = 10752
    _, c = priced("aten.upsample_bilinear2d", nn.Upsample(scale_factor=2, mode="bilinear"), torch.randn(*X))
    assert c.flops == 10752 and c.category == "pointwise"


def test_grid_sample_bilinear():
    # (2,3,8,8) sampled at a (2,4,4,2) grid -> (2,3,4,4) = 96 outputs * 7 + 64 coords * 4 = 928
    _, c = priced("aten.grid_sampler_2d", lambda t: F.grid_sample(t, torch.rand(2, 4, 4, 2) * 2 - 1,
                                                                  align_corners=False), torch.randn(*X))
    assert c.flops == 96 * 7 + 64 * 4 and c.bytes_read == 1536 + 64 * 4


def test_grid_sample_3d_trilinear():
    # grid_sample of (1, 1, 2, 2, 2) at one point (grid (1, 1, 1, 1, 3)), trilinear: 8 taps -> 2*8 - 1 = 15 FLOPs
    # for the one output element, + 4 per grid coordinate (3): 15 + 12 = 27
    fn = lambda a, g: F.grid_sample(a, g, mode="bilinear", align_corners=False)  # noqa: E731
    _, c = priced("aten.grid_sampler_3d", fn, torch.randn(1, 1, 2, 2, 2), torch.zeros(1, 1, 1, 1, 3))
    assert c.flops == 27
