"""Convolution family: flop_counter's count, implicit-GEMM shape, bytes, bias kernel."""

import torch
import torch.nn.functional as F

from roofline.costs import cost_of
from tests.opcapture import meta, op_of, priced

aten = torch.ops.aten


def test_conv2d_strided_with_bias():
    # x (2,3,10,10), w (4,3,3,3), stride 2 -> out (2,4,4,4)
    # FLOPs 2 * N*outHW * k*k * Cout*Cin = 2 * 2*16 * 9 * 4*3 = 6912
    # read x 600*4 + w 108*4 + b 4*4 = 2848; write 128*4 = 512; conv + bias add = 2 kernels
    _, c = priced("aten.convolution", F.conv2d, torch.randn(2, 3, 10, 10), torch.randn(4, 3, 3, 3),
                  torch.randn(4), stride=2)
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (6912, 2848, 512, 2)
    # implicit GEMM: m = N*outHW = 32, n = Cout = 4, k = Cin*9 = 27; 2*32*4*27 = 6912
    assert c.gemm == (1, 32, 4, 27) and c.category == "conv"


def test_conv_without_bias_is_one_kernel():
    _, c = priced("aten.convolution", F.conv2d, torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3))
    assert c.kernels == 1


def test_grouped_conv():
    # groups=2: x (1,4,6,6), w (6,2,3,3) -> out (1,6,4,4)
    # FLOPs 2 * 16 * 9 * 6 * 2 = 3456 (each output sees Cin/groups = 2 channels)
    # GEMM per group: batch 2, m 16, n 3, k 2*9 = 18 -> 2*2*16*3*18 = 3456
    _, c = priced("aten.convolution", F.conv2d, torch.randn(1, 4, 6, 6), torch.randn(6, 2, 3, 3),
                  groups=2)
    assert c.flops == 3456 and c.gemm == (2, 16, 3, 18)


def test_depthwise_conv():
    # depthwise: x (2,8,5,5), w (8,1,3,3), padding 1 -> out (2,8,5,5)
    # FLOPs 2 * 2*25 * 9 * 8 * 1 = 7200; GEMM batch 8 (groups), m 50, n 1, k 9
    _, c = priced("aten.convolution", F.conv2d, torch.randn(2, 8, 5, 5), torch.randn(8, 1, 3, 3),
                  padding=1, groups=8)
    assert c.flops == 7200 and c.gemm == (8, 50, 1, 9)


def test_transposed_conv():
    # conv_transpose2d: x (1,4,5,5), w (4,3,2,2), stride 2 -> out (1,3,10,10)
    # FLOPs (input spatial) 2 * 25 * 4 * 4 * 3 = 2400
    # GEMM m = N*inHW = 25, n = Cout*k = 3*4 = 12, k = Cin = 4: 2*25*12*4 = 2400
    _, c = priced("aten.convolution", F.conv_transpose2d, torch.randn(1, 4, 5, 5),
                  torch.randn(4, 3, 2, 2), stride=2)
    assert c.flops == 2400 and c.gemm == (1, 25, 12, 4)
    assert c.bytes_written == 300 * 4


def test_grouped_transposed_conv():
    # groups=2: x (1,4,3,3), w (4,1,2,2) -> Cout = 2; out (1,2,4,4)
    # FLOPs 2 * 9 * 4 * 4 * 1 = 288; GEMM batch 2, m 9, n 1*4, k 2: 2*2*9*4*2 = 288
    _, c = priced("aten.convolution", F.conv_transpose2d, torch.randn(1, 4, 3, 3),
                  torch.randn(4, 1, 2, 2), groups=2)
    assert c.flops == 288 and c.gemm == (2, 9, 4, 2)


def test_conv1d_and_conv3d():
    # conv1d x (2,3,10), w (5,3,3) -> out (2,5,8): 2 * 2*8 * 3 * 5*3 = 1440
    assert priced("aten.convolution", F.conv1d, torch.randn(2, 3, 10), torch.randn(5, 3, 3))[1].flops == 1440
    # conv3d x (1,2,4,4,4), w (3,2,2,2,2) -> out (1,3,3,3,3): 2 * 27 * 8 * 3*2 = 2592
    _, c = priced("aten.convolution", F.conv3d, torch.randn(1, 2, 4, 4, 4), torch.randn(3, 2, 2, 2, 2))
    assert c.flops == 2592


def test_backend_entry_points_by_hand():
    # cudnn_convolution (no bias arg, no transposed flag): same count as convolution
    x, w, out = meta(2, 3, 10, 10), meta(4, 3, 3, 3), meta(2, 4, 4, 4)
    op = op_of(aten.cudnn_convolution.default, x, w, [0, 0], [2, 2], [1, 1], 1, True, False, True,
               outputs=[out])
    c, ok = cost_of(op)
    assert ok and c.flops == 6912 and c.kernels == 1
    # _slow_conv2d_forward(self, weight, kernel_size, bias, stride, padding): bias fused, 1 kernel
    op = op_of(aten._slow_conv2d_forward.default, x, w, [3, 3], meta(4), [2, 2], [0, 0], outputs=[out])
    c, _ = cost_of(op)
    assert c.flops == 6912 and c.kernels == 1
    # cudnn_convolution_transpose: transposed by name
    op = op_of(aten.cudnn_convolution_transpose.default, meta(1, 4, 5, 5), meta(4, 3, 2, 2),
               [0, 0], [0, 0], [2, 2], [1, 1], 1, False, False, True, outputs=[meta(1, 3, 10, 10)])
    assert cost_of(op)[0].flops == 2400


def test_unbatched_conv2d_whole_op():
    # aten.conv2d kept whole with an unbatched (3,8,8) input, w (4,3,3,3) -> (4,6,6)
    # 2 * 36 * 9 * 4*3 = 7776
    op = op_of(aten.conv2d.default, meta(3, 8, 8), meta(4, 3, 3, 3), outputs=[meta(4, 6, 6)])
    assert cost_of(op)[0].flops == 7776


def test_conv_bias_pass_bytes():
    # conv2d (1, 2, 5, 5) * (4, 2, 3, 3) + bias (4,): output (1, 4, 3, 3), 36 floats = 144 bytes; the bias is a
    # second kernel that reads and writes the output: 2 * 144 = 288 bytes; without a bias, none
    _, c = priced("aten.convolution", F.conv2d, torch.randn(1, 2, 5, 5), torch.randn(4, 2, 3, 3), torch.randn(4))
    assert (c.kernels, c.bias_pass_bytes) == (2, 288)
    _, c = priced("aten.convolution", F.conv2d, torch.randn(1, 2, 5, 5), torch.randn(4, 2, 3, 3))
    assert (c.kernels, c.bias_pass_bytes) == (1, 0)


def test_conv_tbc_batch_and_gemm():
    # conv_tbc: input (T=5, B=2, Cin=3), weight (k=2, 3, Cout=4) -> (4, 2, 4): 2 * 4 * 2 * 4 * 3 * 2 = 384 FLOPs;
    # GEMM rows T' * B = 8, columns Cout 4, K = Cin * k = 6
    _, c = priced("aten.conv_tbc", lambda a, w, b: torch.conv_tbc(a, w, b), torch.randn(5, 2, 3), torch.randn(2, 3, 4), torch.randn(4))
    assert (c.flops, c.gemm) == (384, (1, 8, 4, 6))
