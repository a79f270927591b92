"""Matmul family: FLOPs 2*b*m*n*k, bytes = operands + output, GEMM shape and dtype."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from roofline.costs import cost_of
from tests.opcapture import capture_ops, meta, op_of, priced

aten = torch.ops.aten


def test_mm():
    # mm 64x32 @ 32x16: 2*64*32*16 = 65536 FLOPs; read (64*32+32*16)*4 = 10240; write 64*16*4 = 4096
    _, c = priced("aten.mm", torch.mm, torch.randn(64, 32), torch.randn(32, 16))
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (65536, 10240, 4096, 1)
    assert c.category == "matmul" and c.gemm == (1, 64, 16, 32) and c.compute_dtype == torch.float32


def test_linear_with_bias_is_addmm_bias_not_counted():
    # linear 4x8 -> 5 with bias: addmm 2*4*5*8 = 320 FLOPs (bias add not counted, as flop_counter)
    # read x 4*8*4=128 + W 5*8*4=160 + b 5*4=20 = 308; write 4*5*4 = 80; cuBLASLt bias epilogue: 1 kernel
    _, c = priced("aten.addmm", F.linear, torch.randn(4, 8), torch.randn(5, 8), torch.randn(5))
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (320, 308, 80, 1)
    assert c.gemm == (1, 4, 5, 8)


def test_linear_at_batch_1_copies_the_bias_only_before_torch_2_10(monkeypatch):
    # a single-row product: one gemv with the bias fused from torch 2.10; before, bias copy + gemv
    from roofline.costs import matmul

    for takes_one_row, kernels in ((True, 1), (False, 2)):
        monkeypatch.setattr(matmul, "BIAS_EPILOGUE_TAKES_ONE_ROW", takes_one_row)
        _, c = priced("aten.addmm", F.linear, torch.randn(1, 8), torch.randn(5, 8), torch.randn(5))
        assert c.kernels == kernels and c.flops == 2 * 1 * 5 * 8
    monkeypatch.setattr(matmul, "BIAS_EPILOGUE_TAKES_ONE_ROW", False)
    _, c = priced("aten.addmm", F.linear, torch.randn(4, 8), torch.randn(5, 8), torch.randn(5))
    assert c.kernels == 1  # several rows always took the epilogue


def test_addmm_with_2d_self_copies_first():
    # addmm(C 4x5, A 4x8, B 8x5): C is copied into the result, then the GEMM: 2 kernels
    _, c = priced("aten.addmm", torch.addmm, torch.randn(4, 5), torch.randn(4, 8), torch.randn(8, 5))
    assert c.kernels == 2 and c.flops == 2 * 4 * 5 * 8


def test_addmm_beta_zero_does_not_read_self():
    # beta=0: self ignored; read A 4*8*4=128 + B 8*5*4=160 = 288
    _, c = priced("aten.addmm", lambda c_, a, b: torch.addmm(c_, a, b, beta=0),
                  torch.randn(4, 5), torch.randn(4, 8), torch.randn(8, 5))
    assert c.bytes_read == 288 and c.kernels == 1


def test_addmm_bias_is_a_pass_over_the_result_on_the_cpu_only():
    # F.linear (4x8 @ 8x5 + bias): the CPU copies the bias into the 4x5 result and the GEMM reads it
    # back, 2 * 20 * 4 = 160 bytes; beta=0 has no such pass. The GPU's addmm has a bias epilogue and
    # makes no such pass.
    from roofline.pipeline import analyze
    from roofline.profiles import load_profile_file
    from tests.conftest import REPO

    _, c = priced("aten.addmm", F.linear, torch.randn(4, 8), torch.randn(5, 8), torch.randn(5))
    assert c.bias_pass_bytes == 160
    _, c0 = priced("aten.addmm", lambda c_, a, b: torch.addmm(c_, a, b, beta=0), torch.randn(4, 5), torch.randn(4, 8), torch.randn(8, 5))
    assert c0.bias_pass_bytes == 0

    profile = load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json")
    x = torch.randn(512, 128)

    def addmm_s(bias: bool, device: str) -> float:
        report = analyze(torch.nn.Linear(128, 128, bias=bias), (x,), profile, device=device, batch_sweep=False)
        (op,) = [o for o in report.ops if o.category == "matmul"]
        return op.kernel_s if device == "cuda" else op.predicted_s

    assert addmm_s(True, "cpu") > addmm_s(False, "cpu") * 1.1  # a 256 KB pass on a ~25 us GEMM
    assert addmm_s(True, "cuda") == pytest.approx(addmm_s(False, "cuda"), rel=0.05)


def test_bmm():
    # bmm (3, 4, 8) @ (3, 8, 5): 2*3*4*5*8 = 960; read (96+120)*4 = 864; write 60*4 = 240
    _, c = priced("aten.bmm", torch.bmm, torch.randn(3, 4, 8), torch.randn(3, 8, 5))
    assert (c.flops, c.bytes_read, c.bytes_written) == (960, 864, 240)
    assert c.gemm == (3, 4, 5, 8)


def test_baddbmm():
    # baddbmm: 2*3*4*5*8 = 960 FLOPs (the beta*self term is not counted); copy + GEMM = 2 kernels
    _, c = priced("aten.baddbmm", torch.baddbmm, torch.randn(3, 4, 5), torch.randn(3, 4, 8),
                  torch.randn(3, 8, 5))
    assert c.flops == 960 and c.kernels == 2


def test_batched_matmul_broadcast_decomposes_to_bmm():
    # (2,1,4,8) @ (3,8,5) -> broadcast batch 2*3 = 6: expand + clone copies, then bmm 2*6*4*5*8 = 1920
    ops = capture_ops(torch.matmul, torch.randn(2, 1, 4, 8), torch.randn(3, 8, 5))
    bmm = [cost_of(o)[0] for o in ops if o.packet == "aten.bmm"]
    assert [c.flops for c in bmm] == [1920]
    # the clone of the expanded (2,1,4,8) input reads its own 2*4*8*4 = 256 bytes, writes 6*4*8*4 = 768
    clones = [cost_of(o)[0] for o in ops if o.packet == "aten.clone"]
    assert (clones[0].bytes_read, clones[0].bytes_written) == (256, 768)


def test_matmul_whole_op_broadcast():
    # aten.matmul kept whole: (2,1,4,8) @ (3,8,5): batch 6, 2*6*4*5*8 = 1920
    op = op_of(aten.matmul.default, meta(2, 1, 4, 8), meta(3, 8, 5), outputs=[meta(2, 3, 4, 5)])
    c, ok = cost_of(op)
    assert ok and c.flops == 1920 and c.gemm == (6, 4, 5, 8)
    # 1-D @ 2-D: (8,) @ (8, 5): 2*1*5*8 = 80
    op = op_of(aten.matmul.default, meta(8), meta(8, 5), outputs=[meta(5)])
    assert cost_of(op)[0].flops == 80


def test_linear_whole_op():
    # aten.linear kept whole: (2, 3, 8) x W(5, 8): rows 6, 2*6*5*8 = 480
    op = op_of(aten.linear.default, meta(2, 3, 8), meta(5, 8), meta(5), outputs=[meta(2, 3, 5)])
    c, _ = cost_of(op)
    assert c.flops == 480 and c.gemm == (1, 6, 5, 8)
    assert c.bytes_read == (48 + 40 + 5) * 4


def test_mv_dot_addr():
    # mv (6, 8) @ (8,): 2*6*8 = 96; dot 8 . 8: 16; addr outer 4x5: 2*4*5 = 40
    assert priced("aten.mv", torch.mv, torch.randn(6, 8), torch.randn(8))[1].flops == 96
    assert priced("aten.dot", torch.dot, torch.randn(8), torch.randn(8))[1].flops == 16
    _, c = priced("aten.addr", torch.addr, torch.randn(4, 5), torch.randn(4), torch.randn(5))
    assert c.flops == 40


def test_half_precision_compute_dtype_and_bytes():
    # bf16 mm 16x16 @ 16x16: 2*16^3 = 8192 FLOPs; read 2*256*2 = 1024 bytes
    _, c = priced("aten.mm", torch.mm, torch.randn(16, 16, dtype=torch.bfloat16),
                  torch.randn(16, 16, dtype=torch.bfloat16))
    assert c.flops == 8192 and c.bytes_read == 1024 and c.compute_dtype == torch.bfloat16


def test_scaled_mm_fp8():
    # _scaled_mm fp8 (16, 32) @ (32, 16): 2*16*16*32 = 16384 FLOPs; reads 1-byte operands
    a = meta(16, 32, dtype=torch.float8_e4m3fn)
    b = meta(32, 16, dtype=torch.float8_e4m3fn)
    op = op_of(aten._scaled_mm.default, a, b, meta(), meta(), out_dtype=torch.bfloat16,
               outputs=[meta(16, 16, dtype=torch.bfloat16)])
    c, _ = cost_of(op)
    assert c.flops == 16384 and c.compute_dtype == torch.float8_e4m3fn
    assert c.bytes_read == 16 * 32 + 32 * 16 + 4 + 4 and c.bytes_written == 16 * 16 * 2


def test_bilinear_trilinear():
    # nn.Bilinear(4, 5, 6) on B=3: _trilinear product space (3, 6, 4, 5) = 360, 2 FLOPs each = 720
    import torch.nn as nn
    _, c = priced("aten._trilinear", nn.Bilinear(4, 5, 6), torch.randn(3, 4), torch.randn(3, 5))
    assert c.flops == 720 and c.gemm == (1, 3, 6, 20)


def test_cdist():
    # cdist p=2 between (1, 4, 3) and (1, 5, 3): 20 pairs * (3 * (2 + 1) + 1) = 200
    _, c = priced("aten._cdist_forward", torch.cdist, torch.randn(1, 4, 3), torch.randn(1, 5, 3))
    assert c.flops == 200 and c.gemm == (1, 4, 5, 3)


def test_affine_grid():
    # theta (2, 2, 3) -> grid (2, 8, 8, 2) = 256 values, 2*3 FLOPs each = 1536
    _, c = priced("aten.affine_grid_generator",
                  lambda t: F.affine_grid(t, (2, 3, 8, 8), align_corners=False), torch.randn(2, 2, 3))
    assert c.flops == 1536


def test_addbmm_is_one_gemm_over_the_batches():
    # addbmm(self (4, 6), batch1 (3, 4, 5), batch2 (3, 5, 6)): 2*3*4*6*5 = 720 FLOPs; the batch sum is the
    # K reduction, so one GEMM (1, M=4, N=6, K=3*5=15); beta = 1: the GEMM and the add of self, 2 kernels
    _, c = priced("aten.addbmm", torch.addbmm, torch.randn(4, 6), torch.randn(3, 4, 5), torch.randn(3, 5, 6))
    assert (c.flops, c.gemm, c.kernels) == (720, (1, 4, 6, 15), 2)


def test_bilinear_trilinear_gemm_shape():
    # nn.Bilinear(3, 4, 5) on B=2: _trilinear over the (B, out, in1, in2) = (2, 5, 3, 4) space: 2 * 120 = 240
    # FLOPs; its GEMM: M = 2 output rows, N = 5 output columns, K = 120 / 10 = 12 summed products
    torch.manual_seed(0)
    _, c = priced("aten._trilinear", nn.Bilinear(3, 4, 5, bias=False), torch.randn(2, 3), torch.randn(2, 4))
    assert (c.flops, c.gemm) == (240, (1, 2, 5, 12))


def test_affine_grid_gemm_shape():
    # affine_grid of theta (2, 2, 3) to (2, 1, 4, 5): grid (2, 4, 5, 2), 80 numbers, 2*3 FLOPs each = 480;
    # per batch the base coordinates (4*5 = 20, 3) @ theta^T (3, 2): gemm (2, 20, 2, 3)
    fn = lambda t: F.affine_grid(t, [2, 1, 4, 5], align_corners=False)  # noqa: E731
    _, c = priced("aten.affine_grid_generator", fn, torch.randn(2, 2, 3))
    assert (c.flops, c.gemm) == (480, (2, 20, 2, 3))


def test_grouped_mm_counts_each_groups_products():
    # a mixture of experts: 128 rows split over 4 experts, each (K=64) -> N=32: 2*128*64*32 FLOPs;
    # read the rows 128*64*2 + every expert's weight 4*64*32*2 + offs 4*4 = 32784 bytes, write 128*32*2
    bf = torch.bfloat16
    offs = torch.tensor([32, 64, 96, 128], dtype=torch.int32)
    _, c = priced("aten._grouped_mm", lambda a, b, o: torch._grouped_mm(a, b, offs=o), torch.randn(128, 64, dtype=bf), torch.randn(4, 64, 32, dtype=bf), offs)
    assert (c.flops, c.bytes_read, c.bytes_written, c.category) == (2 * 128 * 64 * 32, 32784, 8192, "matmul")
    assert tuple(c.gemm) == (4, 32, 32, 64)  # priced as 4 products of a group's 32 rows
    # (G, M, K) @ (G, K, N): as bmm
    _, c = priced("aten._grouped_mm", torch._grouped_mm, torch.randn(4, 16, 64, dtype=bf), torch.randn(4, 64, 32, dtype=bf))
    assert c.flops == 2 * 4 * 16 * 64 * 32 and tuple(c.gemm) == (4, 16, 32, 64)
    # the experts' weight gradients: (M, S) @ (S, N) with the reduction S split among 4 groups
    _, c = priced("aten._grouped_mm", lambda a, b, o: torch._grouped_mm(a, b, offs=o), torch.randn(64, 128, dtype=bf), torch.randn(128, 32, dtype=bf), offs)
    assert c.flops == 2 * 64 * 128 * 32 and tuple(c.gemm) == (4, 64, 32, 32) and c.bytes_written == 4 * 64 * 32 * 2
