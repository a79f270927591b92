"""Norm family: 3 stats + 2 normalize + 1 per affine parameter per element, + 2 per row."""

import torch
import torch.nn as nn

from roofline.costs import cost_of
from tests.opcapture import meta, op_of, priced

aten = torch.ops.aten
X = (2, 3, 8, 8)  # 384 elements, 1536 bytes


def test_batch_norm_training():
    # per element 3 (stats) + 2 (normalize) + 2 (weight, bias) = 7 -> 2688; + 2 per channel row (3) = 6;
    # running stats update 3 per channel per stat: 3*3*2 = 18 -> 2712
    # read x 1536 + w, b, running mean, var 4*12 = 1584; write out 1536 + save mean/invstd 24
    # + running stats written back 24 = 1584; CUDA: stats, update, elementwise = 3 kernels
    _, c = priced("aten.native_batch_norm", nn.BatchNorm2d(3), torch.randn(*X))
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (2712, 1584, 1584, 3)
    assert c.category == "norm"


def test_batch_norm_eval():
    # per element 2 + 2 = 4 -> 1536; + 2 per channel = 6 -> 1542; 1 kernel; no running-stat writes
    _, c = priced("aten.native_batch_norm", nn.BatchNorm2d(3).eval(), torch.randn(*X))
    assert (c.flops, c.bytes_written, c.kernels) == (1542, 1536, 1)


def test_layer_norm():
    # LayerNorm(8) on 384 elements = 48 rows: 7*384 + 2*48 = 2784
    # read x 1536 + w 32 + b 32 = 1600; write out 1536 + mean 192 + rstd 192 = 1920
    _, c = priced("aten.native_layer_norm", nn.LayerNorm(8), torch.randn(*X))
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (2784, 1600, 1920, 1)


def test_layer_norm_without_affine():
    # elementwise_affine=False: 5*384 + 2*48 = 2016
    _, c = priced("aten.native_layer_norm", nn.LayerNorm(8, elementwise_affine=False), torch.randn(*X))
    assert c.flops == 2016


def test_group_norm():
    # GroupNorm(1, 3): rows = N*groups = 2: 7*384 + 2*2 = 2692; 3 kernels
    _, c = priced("aten.native_group_norm", nn.GroupNorm(1, 3), torch.randn(*X))
    assert c.flops == 2692 and c.kernels == 3


def test_instance_norm_is_batch_norm_over_n_times_c():
    # InstanceNorm2d(3) decomposes to native_batch_norm on (1, 6, 8, 8), training statistics,
    # no affine: (3 + 2) * 384 + 2 * 6 rows = 1932
    _, c = priced("aten.native_batch_norm", nn.InstanceNorm2d(3), torch.randn(*X))
    assert c.flops == 1932


def test_rms_norm_fused_op():
    # _fused_rms_norm (CUDA path) on (2, 4, 16) with weight: (2 + 1 + 1) * 128 + 2 * 8 rows = 528
    x = meta(2, 4, 16)
    op = op_of(aten._fused_rms_norm.default, x, [16], meta(16), 1e-6,
               outputs=[meta(2, 4, 16), meta(2, 4, 1)])
    c, ok = cost_of(op)
    assert ok and c.flops == 528 and c.kernels == 1
    assert c.bytes_read == 128 * 4 + 16 * 4 and c.bytes_written == 128 * 4 + 8 * 4


def test_legit_functional_and_no_training():
    x, ch = meta(2, 3, 4, 4), meta(3)
    out = [meta(2, 3, 4, 4), meta(3), meta(3)]
    # no_training: 4 * 96 + 2 * 3 = 390
    op = op_of(aten._native_batch_norm_legit_no_training.default, x, ch, ch, ch, ch, 0.1, 1e-5, outputs=out)
    assert cost_of(op)[0].flops == 390 and cost_of(op)[0].kernels == 1
    # functional, training: 7*96 + 6 + 18 = 696; running stats are returned (counted as outputs)
    op = op_of(aten._native_batch_norm_legit_functional.default, x, ch, ch, ch, ch, True, 0.1, 1e-5,
               outputs=out + [meta(3), meta(3)])
    c, _ = cost_of(op)
    assert c.flops == 696 and c.bytes_written == (96 + 3 * 4) * 4


def test_weight_norm_scales_each_slice_by_its_norm():
    # weight_norm over the last dim of v (64, 8, 128): 3 FLOPs per element of v + 2 per slice of g;
    # read v 64*8*128*4 + g 128*4, write w (as v) + the 128 norms
    v, g = torch.randn(64, 8, 128), torch.randn(1, 1, 128)
    _, c = priced("aten._weight_norm_interface", lambda v, g: torch._weight_norm(v, g, 2), v, g)
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels, c.category) == (3 * 65536 + 2 * 128, 262144 + 512, 262144 + 512, 1, "norm")

