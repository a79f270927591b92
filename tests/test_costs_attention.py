"""Attention family: two-GEMM FLOPs (flop_counter's rule), GQA, causal, layouts, bytes."""

import dataclasses

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from roofline.costs import cost_of
from roofline.costs.registry import parts_on
from tests.opcapture import capture_ops, meta, op_of, priced

aten = torch.ops.aten
CPU_SDPA = "aten._scaled_dot_product_flash_attention_for_cpu"


def test_sdpa_cpu():
    # q = k = v (2, 4, 16, 8): 2*(B*H)*Sq*Sk*D twice = 4 * 8 * 16*16*8 = 65536
    # read 3 * 1024*4 = 12288; write out 4096 + logsumexp 2*4*16*4 = 512 -> 4608
    q = torch.randn(2, 4, 16, 8)
    _, c = priced(CPU_SDPA, F.scaled_dot_product_attention, q, q, q)
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (65536, 12288, 4608, 1)
    assert c.gemm == (8, 16, 16, 16) and c.category == "attention"


def test_sdpa_causal_is_not_halved():
    # flop_counter ignores causal masking; so do we (exact agreement): same 65536
    q = torch.randn(2, 4, 16, 8)
    _, c = priced(CPU_SDPA, lambda a: F.scaled_dot_product_attention(a, a, a, is_causal=True), q)
    assert c.flops == 65536


def test_sdpa_gqa_and_different_kv_length():
    # q (2, 4, 16, 8), k/v (2, 2, 32, 8): per QUERY head: 4 * (2*4) * 16 * 32 * 8 = 131072
    # K/V read at their own size: q 4096 + k 4096 + v 4096 bytes
    q, k = torch.randn(2, 4, 16, 8), torch.randn(2, 2, 32, 8)
    _, c = priced(CPU_SDPA, lambda a, b: F.scaled_dot_product_attention(a, b, b, enable_gqa=True), q, k)
    assert c.flops == 131072 and c.bytes_read == 3 * 4096


def test_sdpa_value_dim_differs():
    # Dqk = 8, Dv = 4: 2*8*16*16*8 + 2*8*16*16*4 = 32768 + 16384 = 49152; gemm k = 8 + 4
    q, v = meta(2, 4, 16, 8), meta(2, 4, 16, 4)
    op = op_of(aten._scaled_dot_product_efficient_attention.default, q, q, v, None, False,
               outputs=[meta(2, 4, 16, 4)])
    c, _ = cost_of(op)
    assert c.flops == 49152 and c.gemm == (8, 16, 16, 12)
    # on CPU this shape takes the math path: its two bmm carry the same 49152 FLOPs
    ops = capture_ops(F.scaled_dot_product_attention, torch.randn(2, 4, 16, 8), torch.randn(2, 4, 16, 8),
                      torch.randn(2, 4, 16, 4))
    assert sum(cost_of(o)[0].flops for o in ops if o.packet == "aten.bmm") == 49152


def test_sdpa_mask_is_read():
    # a float mask (16, 16) is read once: 12288 + 1024 bytes
    q = torch.randn(2, 4, 16, 8)
    mask = torch.randn(16, 16)
    _, c = priced(CPU_SDPA, lambda a: F.scaled_dot_product_attention(a, a, a, attn_mask=mask), q)
    assert c.bytes_read == 12288 + 1024 and c.flops == 65536


def test_cuda_backends_by_hand():
    # (B, H, S, D) = (2, 8, 128, 64) fp16: 4 * 16 * 128*128*64 = 67108864
    q = meta(2, 8, 128, 64, dtype=torch.float16, device="cuda")
    out = [meta(2, 8, 128, 64, dtype=torch.float16, device="cuda"), meta(2, 8, 128, device="cuda")]
    for target, args in [
        (aten._scaled_dot_product_flash_attention.default, (q, q, q)),
        (aten._scaled_dot_product_efficient_attention.default, (q, q, q, None, True)),
        (aten._scaled_dot_product_cudnn_attention.default, (q, q, q, None, True)),
    ]:
        c, ok = cost_of(op_of(target, *args, outputs=out))
        assert ok and c.flops == 67108864 and c.kernels == 1 and c.compute_dtype == torch.float16


def test_flash_attention_forward_bshd_layout():
    # _flash_attention_forward takes (B, S, H, D) = (2, 128, 8, 64): same 67108864 as above
    q = meta(2, 128, 8, 64, dtype=torch.float16)
    op = op_of(aten._flash_attention_forward.default, q, q, q, None, None, 128, 128, 0.0, False, False,
               outputs=[q])
    assert cost_of(op)[0].flops == 67108864


def test_efficient_attention_forward_packed_varlen():
    # packed (1, total, H, D) with cu_seqlens of 3 sequences, max 50: counted as 3 x (50, 50)
    # 4 * (3*4) * 50*50 * 16 = 1920000
    q = meta(1, 120, 4, 16)
    cu = meta(4, dtype=torch.int32)
    op = op_of(aten._efficient_attention_forward.default, q, q, q, None, cu, cu, 50, 50, 0.0, 0,
               outputs=[q])
    assert cost_of(op)[0].flops == 1920000


def _gemm_part_flops(c) -> int:
    return sum(p.flops for _, p in c.parts if p.category in ("matmul", "attention"))


def test_native_multi_head_attention_fast_path():
    # nn.MultiheadAttention(8, 2), eval + no_grad, B=2, L=S=5, E=8: one fused op run as its kernels:
    # the QKV projection 2*10*8*24 = 3840, Q @ K^T and P @ V 2 * 2*4*5*5*4 = 1600 (the weights are
    # returned: bmm, softmax, bmm, their mean over heads), the output projection 2*10*8*8 = 1280
    m = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = torch.randn(2, 5, 8)
    _, c = priced("aten._native_multi_head_attention", lambda t: m(t, t, t), x)
    names = [op.name for op, _ in c.parts]
    # the bias, scale and head split is one pass that streams like a copy (ATen's _transform_bias_rescale_qkv)
    assert names == ["aten.mm.default", "aten.clone.default", "aten.bmm.default", "aten._softmax.default", "aten.bmm.default",
                     "aten.mean.dim", "aten.clone.default", "aten.addmm.default"]
    assert _gemm_part_flops(c) == 3840 + 1600 + 1280 and c.category == "attention"
    assert c.flops == sum(p.flops for _, p in c.parts) and c.kernels == sum(p.kernels for _, p in c.parts)
    # without the weights: one fused attention kernel instead of bmm, softmax, bmm and the mean
    _, fused = priced("aten._native_multi_head_attention", lambda t: m(t, t, t, need_weights=False), x)
    assert "aten.scaled_dot_product_attention.default" in [op.name for op, _ in fused.parts]
    assert _gemm_part_flops(fused) == 3840 + 1600 + 1280


def test_transformer_encoder_layer_fast_path():
    # E=8, heads 2, F=16, B=2, L=5: self-attention GEMMs 3840 + 1600 + 1280, FFN 2 * 2*10*8*16 = 5120,
    # plus 2 residual adds, 2 layer norms and the ReLU as kernels of their own
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).eval()
    _, c = priced("aten._transformer_encoder_layer_fwd", layer, torch.randn(2, 5, 8))
    assert _gemm_part_flops(c) == 3840 + 1600 + 1280 + 5120
    names = [op.name for op, _ in c.parts]
    assert names.count("aten.native_layer_norm.default") == 2 and names.count("aten.relu.default") == 1
    assert names.index("aten.native_layer_norm.default") > names.index("aten.scaled_dot_product_attention.default")
    assert names.count("aten.mm.default") == 1  # self-attention: one projection to Q, K and V together
    first = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=True, activation="gelu").eval()
    _, c = priced("aten._transformer_encoder_layer_fwd", first, torch.randn(2, 5, 8))
    names = [op.name for op, _ in c.parts]
    assert names[0] == "aten.native_layer_norm.default" and "aten.gelu.default" in names


def test_math_path_decomposes_into_priced_ops():
    # with dropout in training, the CPU math path: bmm, _safe_softmax, dropout ops, bmm
    q = torch.randn(2, 4, 16, 8)
    ops = capture_ops(lambda a: F.scaled_dot_product_attention(a, a, a, dropout_p=0.5), q)
    assert all(cost_of(o)[1] for o in ops)
    bmm = sum(cost_of(o)[0].flops for o in ops if o.packet == "aten.bmm")
    assert bmm == 65536  # the same two GEMMs


def test_native_multi_head_attention_cross_attention_weights_per_head():
    # _native_multi_head_attention(q (1, 4, 8), k = v (1, 6, 8)), E=8, 2 heads (dh 4), weights returned
    # per head (average_attn_weights=False): K/V differ from Q, so three projections without bias
    #   q mm (4, 8) @ (8, 8)      2*4*8*8 = 512   read (32 + 64) * 4 = 384   write 32 * 4 = 128
    #   k, v mm (6, 8) @ (8, 8)   2*6*8*8 = 768   read (48 + 64) * 4 = 448   write 48 * 4 = 192   (each)
    #   bias add over (4 + 2*6 = 16, 8) + (8,): 128, read 128 * 4 + 32 = 544, write 512
    #   bmm (2, 4, 4) @ (2, 4, 6)  2*2*4*6*4 = 384  read (32 + 48) * 4 = 320  write 48 * 4 = 192
    #   softmax (2, 4, 6)          5 * 48 = 240     read 192                  write 192
    #   bmm (2, 4, 6) @ (2, 6, 4)  384              read (48 + 48) * 4 = 384  write 128
    #   no mean over heads; merge heads (clone) 0, read 128, write 128
    #   out addmm (4, 8) @ (8, 8) + (8,): 512, read (8 + 32 + 64) * 4 = 416, write 128
    from tests.opcapture import meta, op_of

    w = (meta(24, 8), meta(24), meta(8, 8), meta(8))
    op = op_of(aten._native_multi_head_attention.default, meta(1, 4, 8), meta(1, 6, 8), meta(1, 6, 8), 8, 2, *w,
               None, True, False, outputs=[meta(1, 4, 8), meta(1, 2, 4, 6)])
    c, ok = cost_of(op)
    assert ok and [o.name for o, _ in c.parts] == [
        "aten.mm.default", "aten.mm.default", "aten.mm.default", "aten.clone.default", "aten.bmm.default",
        "aten._softmax.default", "aten.bmm.default", "aten.clone.default", "aten.addmm.default"]
    assert [p.flops for _, p in c.parts] == [512, 768, 768, 128, 384, 240, 384, 0, 512]
    assert c.flops == 512 + 2 * 768 + 128 + 384 + 240 + 384 + 0 + 512
    assert c.bytes_read == 384 + 2 * 448 + 544 + 320 + 192 + 384 + 128 + 416
    assert c.bytes_written == 128 + 2 * 192 + 512 + 192 + 192 + 128 + 128 + 128 and c.kernels == 9


def test_native_multi_head_attention_unbatched_input():
    # unbatched (L, E) = (4, 8) self-attention, weights averaged: batch 1, the same kernels as (1, 4, 8):
    # qkv mm 2*4*24*8 = 1536, bias add 96, bmm 256, softmax 5 * 32 = 160, bmm 256, mean over heads 32 + 16 = 48,
    # merge 0, out addmm 512
    from tests.opcapture import meta, op_of

    w = (meta(24, 8), meta(24), meta(8, 8), meta(8))
    op = op_of(aten._native_multi_head_attention.default, meta(4, 8), meta(4, 8), meta(4, 8), 8, 2, *w,
               outputs=[meta(4, 8), meta(4, 4)])
    c, ok = cost_of(op)
    assert ok and [p.flops for _, p in c.parts] == [1536, 96, 256, 160, 256, 48, 0, 512]


def test_native_multi_head_attention_self_or_separate_by_source():
    # in a captured graph, the fast path's query, key and value are told apart by where they come from, not by
    # their shapes: m(t, t, t) is self-attention (one (10, 8) @ (8, 24) projection, 2*10*8*24 = 3840);
    # the native op called on two different (2, 5, 8) tensors projects q, k and v apart (3 x 2*10*8*8 = 3 x 1280)
    from roofline.graph.capture import capture

    m = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x, y = torch.randn(2, 5, 8), torch.randn(2, 5, 8)

    def mha_parts(fn, *inputs):
        with torch.no_grad():
            graph = capture(fn, inputs)
        (op,) = [o for o in graph.ops if o.packet == "aten._native_multi_head_attention"]
        c, ok = cost_of(op)
        assert ok
        return [(o.name, p.flops) for o, p in c.parts if o.name == "aten.mm.default"]

    assert mha_parts(lambda t: m(t, t, t), x) == [("aten.mm.default", 3840)]
    # its bias add runs over the 3 * B * L = 30 projected rows of 8: 240 FLOPs
    with torch.no_grad():
        graph = capture(lambda t: m(t, t, t), (x,))
    (op,) = [o for o in graph.ops if o.packet == "aten._native_multi_head_attention"]
    assert [p.flops for o, p in cost_of(op)[0].parts if o.name == "aten.clone.default"][0] == 240
    w = (m.in_proj_weight, m.in_proj_bias, m.out_proj.weight, m.out_proj.bias)
    cross = lambda q, kv: aten._native_multi_head_attention(q, kv, kv, 8, 2, *w, None, False)  # noqa: E731
    assert mha_parts(cross, x, y) == [("aten.mm.default", 1280)] * 3


def test_sdpa_three_dimensional_inputs():
    # scaled_dot_product_attention on (N=3, Sq=4, D=8) x (3, Sk=6, 8) x (3, 6, Dv=2): batch 3 (the dims before
    # the last two), Q @ K^T 2*3*4*6*8 = 1152, P @ V 2*3*4*6*2 = 288: 1440
    op = op_of(aten.scaled_dot_product_attention.default, meta(3, 4, 8), meta(3, 6, 8), meta(3, 6, 2), outputs=[meta(3, 4, 2)])
    c, ok = cost_of(op)
    assert ok and c.flops == 1152 + 288 and c.gemm == (3, 4, 6, 8 + 2)


def test_native_attention_takes_the_sdpa_path_for_heads_of_eight():
    # nn.MultiheadAttention(16, 2): heads of 8, self-attention, no weights, no mask: ATen's SDPA path, three
    # kernels: the input projection with its bias (2 * 10*16*48 = 15360 + the bias 480), the fused attention
    # (2 * 2*2*5*5*8 * 2 = 3200) and the output projection with its bias (2 * 10*16*16 = 5120 + 160)
    m = nn.MultiheadAttention(16, 2, batch_first=True).eval()
    x = torch.randn(2, 5, 16)
    _, c = priced("aten._native_multi_head_attention", lambda t: m(t, t, t, need_weights=False), x)
    assert [op.name for op, c in c.parts if c.kernels] == ["aten.addmm.default", "aten.scaled_dot_product_attention.default", "aten.addmm.default"]
    assert _gemm_part_flops(c) == 15360 + 3200 + 5120 and c.kernels == 3
    # between the launches, the path's own C++ work (the head views, SDPA's backend choice): parts that launch nothing
    assert [op.name for op, c in c.parts if not c.kernels] == ["aten._fused_sdp_choice.default"] * 2
    # the weights returned, a mask, heads of 4 or float64 (SDPA's math backend): the path of separate passes
    # (the bias and head split, the merge); and on a CPU, always
    narrow = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    for fn, inputs in ((lambda t: m(t, t, t), (x,)), (lambda t: m(t, t, t, need_weights=False, attn_mask=torch.zeros(5, 5, dtype=torch.bool)), (x,)),
                       (lambda t: narrow(t, t, t, need_weights=False), (torch.randn(2, 5, 8),)),
                       (lambda t: m.double()(t, t, t, need_weights=False), (x.double(),))):
        _, other = priced("aten._native_multi_head_attention", fn, *inputs)
        assert [op.name for op, _ in other.parts].count("aten.clone.default") == 2 and not other.cpu_parts
    m.float()
    assert [op.name for op, _ in parts_on(c, "cpu")].count("aten.clone.default") == 2 and parts_on(c, "cuda") == c.parts
    layer = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True).eval()
    _, c = priced("aten._transformer_encoder_layer_fwd", layer, torch.randn(2, 5, 16))
    assert "aten.clone.default" not in [op.name for op, _ in c.parts]


def test_the_native_attention_kernels_the_h100_ran():
    """The H100's kernels of nn.MultiheadAttention's fast path (torchvision's ViT-B/16 and /32 shapes, a 512-wide
    layer; ``benchmarks/fastpath_kernels.py``): three kernels. Against their summed times, on the shipped
    profile (whose GEMM ratios price a projection's bias epilogue), float32 within 5% and half precision
    within 35% (SDPA's part the most over); priced as five parts, half precision was 43-66% over."""
    import json

    from benchmarks.fastpath_kernels import priced_s
    from roofline.profiles import load_profile_file
    from tests.conftest import REPO

    fixtures = REPO / "tests" / "fixtures"
    record = json.loads((fixtures / "h100_fastpath_kernels.json").read_text())
    profile = load_profile_file(REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json")
    rows = [r for r in record["rows"] if r["case"].startswith("native MHA")]
    assert len(rows) == 6 and all(len([k for k in r["kernels"] if "Memset" not in k[0]]) == 3 for r in rows)
    for r in rows:
        kernels_s = sum(d for _, d in r["kernels"])
        assert abs(priced_s(r["case"], profile) / kernels_s - 1) < (0.05 if "float32" in r["case"] else 0.35), r["case"]


def test_a_part_that_launches_nothing_costs_the_host_an_elementwise_dispatch():
    """The native attention's C++ work between its launches (``costs.registry.cpp_work``) pays an elementwise
    op's dispatch less the Python entry, folded into the next launching part's host time; the device sees
    only the three kernels."""
    from roofline.model.device import DeviceModel
    from roofline.model.timeline import op_dispatch_s, part_pieces, parts_host_s
    from roofline.profiles import load_profile_file
    from tests.conftest import REPO

    dev = DeviceModel(load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json").gpu, "cuda")
    m = nn.MultiheadAttention(16, 2, batch_first=True).eval()
    _, c = priced("aten._native_multi_head_attention", lambda t: m(t, t, t, need_weights=False), torch.randn(2, 5, 16))
    launching = dataclasses.replace(c, parts=tuple(p for p in c.parts if p[1].kernels))
    elementwise = op_dispatch_s(dev.dispatch_s("add", 4), dev.call_entry_s(4), True, True)
    assert parts_host_s(c, dev, 4) == pytest.approx(parts_host_s(launching, dev, 4) + 2 * elementwise)
    pieces = part_pieces(c, 1e-3, dev, 4)
    assert len(pieces) == 3 and sum(k for _, k in pieces) == pytest.approx(1e-3)
    # a CPU runs the path of separate passes: five launching parts, no C++ work part
    cpu = DeviceModel(load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json").host, "cpu")
    assert len(part_pieces(c, 1e-3, cpu, 4)) == 5
    assert pieces[1][0] == pytest.approx(part_pieces(launching, 1e-3, dev, 4)[1][0] + 2 * elementwise)
