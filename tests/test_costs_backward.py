"""Backward ops: each formula on the op autograd really runs (worked examples, by hand).

Each case runs a small forward and its backward on real CPU tensors, recorded by tests.opcapture,
and checks the one backward op against the rule in roofline/costs/backward.py.
"""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from roofline.costs import cost_of
from roofline.costs.backward import attention_backward_flops
from tests.opcapture import capture_with_grad, meta, only, op_of

aten = torch.ops.aten
F32 = 4


def backward_op(packet, forward, *shapes, dtype=torch.float32):
    """The single ``packet`` op of ``forward(*inputs).backward(gradient)``, and its cost (a dense
    gradient: that of ``.sum()`` is a broadcast scalar, read at one element)."""
    inputs = [torch.randn(*s, dtype=dtype, requires_grad=True) for s in shapes]

    def step():
        out = forward(*inputs)
        out.backward(torch.randn(out.shape))

    op = only(capture_with_grad(step), packet)
    cost, ok = cost_of(op)
    assert ok, op.name
    return op, cost


@pytest.mark.parametrize("packet, forward, flops, category", [
    ("aten.threshold_backward", torch.relu, 1, "pointwise"),
    ("aten.hardtanh_backward", F.hardtanh, 2, "pointwise"),
    ("aten.leaky_relu_backward", F.leaky_relu, 2, "pointwise"),
    ("aten.hardsigmoid_backward", F.hardsigmoid, 2, "pointwise"),
    ("aten.hardswish_backward", F.hardswish, 4, "pointwise"),
    ("aten.sigmoid_backward", torch.sigmoid, 3, "pointwise"),
    ("aten.tanh_backward", torch.tanh, 3, "pointwise"),
    ("aten.elu_backward", F.elu, 4, "transcendental"),
    ("aten.softplus_backward", F.softplus, 5, "transcendental"),
    ("aten.log_sigmoid_backward", F.logsigmoid, 5, "transcendental"),
    ("aten.silu_backward", F.silu, 6, "transcendental"),
    ("aten.mish_backward", F.mish, 10, "transcendental"),
    ("aten.gelu_backward", F.gelu, 8, "transcendental"),
    ("aten.gelu_backward", lambda x: F.gelu(x, approximate="tanh"), 12, "transcendental"),
])
def test_activation_backward(packet, forward, flops, category):
    # 6 x 10 = 60 elements: reads the gradient and the saved input (or output), writes the gradient;
    # log_sigmoid's backward also reads the buffer its forward saved
    _, c = backward_op(packet, forward, (6, 10))
    reads = 3 if packet == "aten.log_sigmoid_backward" else 2
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels, c.category) == (flops * 60, reads * 60 * F32, 60 * F32, 1, category)


@pytest.mark.parametrize("packet, forward", [
    ("aten._softmax_backward_data", lambda x: torch.softmax(x, -1)),
    ("aten._log_softmax_backward_data", lambda x: torch.log_softmax(x, -1)),
])
def test_softmax_backward(packet, forward):
    _, c = backward_op(packet, forward, (4, 16))
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (4 * 64, 2 * 64 * F32, 64 * F32, 1)


def test_layer_norm_backward():
    # 8 x 32 = 256 elements, all three gradients: 8 + 3 + 1 = 12 per element; 2 kernels
    ln = nn.LayerNorm(32)
    x = torch.randn(8, 32, requires_grad=True)
    op = only(capture_with_grad(lambda: ln(x).backward(torch.randn(8, 32))), "aten.native_layer_norm_backward")
    c, _ = cost_of(op)
    assert (c.flops, c.kernels, c.category) == (12 * 256, 2, "norm")
    # reads grad, input, mean, rstd (8 each), weight, bias; writes the three gradients
    assert c.bytes_read == (256 + 256 + 8 + 8 + 32 + 32) * F32
    assert c.bytes_written == (256 + 32 + 32) * F32


def test_layer_norm_backward_input_only():
    # a frozen LayerNorm without affine: the input's gradient alone, one kernel
    x = torch.randn(8, 32, requires_grad=True)
    op = only(capture_with_grad(lambda: F.layer_norm(x, (32,)).sum().backward()), "aten.native_layer_norm_backward")
    c, _ = cost_of(op)
    assert (c.flops, c.kernels) == (8 * 256, 1)


def test_batch_norm_backward():
    bn = nn.BatchNorm2d(4)
    x = torch.randn(2, 4, 3, 3, requires_grad=True)  # 72 elements
    op = only(capture_with_grad(lambda: bn(x).sum().backward()), "aten.native_batch_norm_backward")
    c, _ = cost_of(op)
    assert (c.flops, c.kernels) == (12 * 72, 2)


def test_group_norm_backward():
    gn = nn.GroupNorm(2, 4)
    x = torch.randn(2, 4, 3, 3, requires_grad=True)
    op = only(capture_with_grad(lambda: gn(x).sum().backward()), "aten.native_group_norm_backward")
    c, _ = cost_of(op)
    assert (c.flops, c.kernels) == (12 * 72, 3)


@pytest.mark.skipif(not hasattr(aten, "_fused_rms_norm_backward"), reason="no fused RMS norm in this torch")
def test_rms_norm_backward():
    x, w, rstd = meta(8, 32), meta(32), meta(8, 1)
    op = op_of(aten._fused_rms_norm_backward.default, x, x, [32], rstd, w, [True, True], outputs=[x, w])
    c, ok = cost_of(op)
    assert ok and (c.flops, c.kernels) == ((6 + 2) * 256, 2)


def test_nll_loss_backward():
    logits = torch.randn(5, 7, requires_grad=True)
    target = torch.tensor([0, 1, 2, 3, 4])
    op = only(capture_with_grad(lambda: F.cross_entropy(logits, target).backward()), "aten.nll_loss_backward")
    c, _ = cost_of(op)
    # one value per row into a zeroed (5, 7) gradient; 2 kernels
    assert (c.flops, c.bytes_written, c.kernels, c.category) == (5, 35 * F32, 2, "data_movement")


def test_mse_loss_backward():
    x = torch.randn(4, 6, requires_grad=True)
    y = torch.randn(4, 6)
    op = only(capture_with_grad(lambda: F.mse_loss(x, y).backward()), "aten.mse_loss_backward")
    c, _ = cost_of(op)
    assert c.flops == 3 * 24 and c.bytes_written == 24 * F32


def test_dropout_backward():
    x, mask = meta(4, 8), meta(4, 8, dtype=torch.bool)
    c, ok = cost_of(op_of(aten.native_dropout_backward.default, x, mask, 2.0, outputs=[x]))
    assert ok and (c.flops, c.bytes_read, c.bytes_written) == (64, 128 + 32, 128)


def test_max_pool_backward():
    x = torch.randn(1, 2, 8, 8, requires_grad=True)
    op = only(capture_with_grad(lambda: F.max_pool2d(x, 2).sum().backward()), "aten.max_pool2d_with_indices_backward")
    c, _ = cost_of(op)
    assert (c.flops, c.bytes_written, c.kernels) == (32, 128 * F32, 2)  # one add per output


def test_avg_pool_backward():
    x = torch.randn(1, 2, 8, 8, requires_grad=True)
    op = only(capture_with_grad(lambda: F.avg_pool2d(x, 2).sum().backward()), "aten.avg_pool2d_backward")
    c, _ = cost_of(op)
    assert c.flops == 32 * 4  # 32 outputs x 4 taps


def test_adaptive_avg_pool_backward():
    x = torch.randn(1, 2, 8, 8, requires_grad=True)
    op = only(capture_with_grad(lambda: F.adaptive_avg_pool2d(x, 2).sum().backward()), "aten._adaptive_avg_pool2d_backward")
    c, _ = cost_of(op)
    assert c.flops == 128


def test_embedding_backward():
    emb = nn.Embedding(100, 16)
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]])
    op = only(capture_with_grad(lambda: emb(ids).sum().backward()), "aten.embedding_dense_backward")
    c, _ = cost_of(op)
    # 6 rows of 16 added into a zeroed (100, 16) gradient: written 1600 + 96 elements
    assert (c.flops, c.bytes_written, c.kernels) == (96, (1600 + 96) * F32, 2)


@pytest.mark.parametrize("packet, forward", [
    ("aten.select_backward", lambda x: x[1]),
    ("aten.slice_backward", lambda x: x[1:3]),
])
def test_view_backward(packet, forward):
    _, c = backward_op(packet, lambda x: forward(x) * 2, (4, 5))
    assert c.flops == 0 and c.kernels == 2 and c.bytes_written > 20 * F32


def test_convolution_backward_dense():
    # x (2, 3, 8, 8), w (4, 3, 3, 3), out (2, 4, 6, 6): forward 2*2*36*27*4 = 15552 FLOPs;
    # input and weight gradients 15552 each, the bias gradient a sum over 288 elements
    conv = nn.Conv2d(3, 4, 3)
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    op = only(capture_with_grad(lambda: conv(x).sum().backward()), "aten.convolution_backward")
    c, _ = cost_of(op)
    assert c.category == "conv" and len(c.parts) == 3
    forward = 2 * 2 * 36 * 27 * 4
    assert c.flops == 2 * forward and c.parts[2][1].flops == 288  # the bias's sum: priced, not counted


def test_convolution_backward_weight_only_grouped():
    # a frozen input: the weight's gradient only; groups=2: (2, 4/2, 72) @ (72, 2*9) -> 2*2*2*72*18
    conv = nn.Conv2d(4, 4, 3, groups=2, bias=False)
    x = torch.randn(2, 4, 8, 8)
    op = only(capture_with_grad(lambda: conv(x).sum().backward()), "aten.convolution_backward")
    c, _ = cost_of(op)
    assert len(c.parts) == 1 and c.flops == 2 * 2 * 2 * 72 * 18


def test_each_convolution_gradient_is_priced_as_the_layers_forward():
    """cuDNN's input- and weight-gradient kernels each take about their layer's forward time (H100:
    0.9-1.6x in the median, benchmarks/results/h100_conv_backward.json), so each part is the
    forward convolution itself, with the gradient's own bytes."""
    from roofline.model.device import DeviceModel
    from roofline.model.kernels import kernel_s
    from roofline.profiles import load_profile_file
    from tests.conftest import REPO

    conv = nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False)
    x = torch.randn(2, 16, 12, 12, requires_grad=True)
    op = only(capture_with_grad(lambda: conv(x).sum().backward()), "aten.convolution_backward")
    forward = only(capture_with_grad(lambda: conv(x)), "aten.convolution")
    c, _ = cost_of(op)
    (dx_op, dx), (dw_op, dw) = c.parts
    for stand_in in (dx_op, dw_op):  # the layer's own convolution: input, weight, stride 2, not transposed
        assert stand_in.packet == "aten.convolution" and [list(t.shape) for t in stand_in.tensor_inputs()] == [[2, 16, 12, 12], [32, 16, 3, 3]]
        assert list(stand_in.args[3]) == [2, 2] and stand_in.args[6] is False
    g, w = 2 * 32 * 6 * 6 * F32, 32 * 16 * 9 * F32
    assert (dx.conv_gradient, dw.conv_gradient) == ("input", "weight"), "a family with gradient curves prices each on its own"
    assert (dx.bytes_read, dx.bytes_written) == (g + w, 2 * 16 * 12 * 12 * F32)
    assert (dw.bytes_read, dw.bytes_written) == (g + 2 * 16 * 12 * 12 * F32, w)
    assert c.flops == 2 * cost_of(forward)[0].flops
    dev = DeviceModel(load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json").gpu, "cuda")
    big = nn.Conv2d(256, 256, 3, padding=1, bias=False)
    xb = torch.randn(8, 256, 28, 28, requires_grad=True)
    bop = only(capture_with_grad(lambda: big(xb).sum().backward()), "aten.convolution_backward")
    fop = only(capture_with_grad(lambda: big(xb)), "aten.convolution")
    bc, _ = cost_of(bop)
    forward_s = kernel_s(fop, cost_of(fop)[0], dev)[0]
    assert kernel_s(bop, bc, dev)[0] == pytest.approx(2 * forward_s, rel=0.05), "compute-bound: each gradient its forward's time"


def test_a_gradients_stand_in_does_not_take_the_forwards_timed_kernel():
    """The kernel table times the forward convolution at its exact signature; a gradient priced as
    that forward (same signature) is another kernel and keeps its own price."""
    from roofline.model.device import DeviceModel
    from roofline.model.kernel_table import kernel_key
    from roofline.model.kernels import kernel_s, kernel_source
    from roofline.profiles import load_profile_file
    from roofline.schema.profile import KernelEntry, Stat
    from tests.conftest import REPO

    conv = nn.Conv2d(64, 64, 3, padding=1, bias=False)
    x = torch.randn(4, 64, 28, 28, requires_grad=True)
    forward = only(capture_with_grad(lambda: conv(x)), "aten.convolution")
    backward = only(capture_with_grad(lambda: conv(x).sum().backward()), "aten.convolution_backward")
    profile = load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json")
    profile.gpu.measurements.kernels.append(KernelEntry(key=kernel_key(forward), op=forward.name, time=Stat(median_s=1.0, iqr_s=0.0, samples=5)))
    dev = DeviceModel(profile.gpu, "cuda")
    assert kernel_s(forward, cost_of(forward)[0], dev)[0] == 1.0 and kernel_source(forward, cost_of(forward)[0], dev) == "table"
    cost, _ = cost_of(backward)
    stand_in, part_cost = cost.parts[0]
    assert kernel_key(stand_in) == kernel_key(forward)  # the same signature ...
    assert kernel_s(backward, cost, dev)[0] < 1e-3 and kernel_source(stand_in, part_cost, dev) == "curve"  # ... not the same kernel


def test_attention_backward():
    q = torch.randn(2, 3, 16, 8, requires_grad=True)
    k = torch.randn(2, 3, 16, 8, requires_grad=True)
    v = torch.randn(2, 3, 16, 8, requires_grad=True)
    ops = capture_with_grad(lambda: F.scaled_dot_product_attention(q, k, v).sum().backward())
    op = next(o for o in ops if "attention" in o.packet and o.packet.endswith("backward"))
    c, ok = cost_of(op)
    # 2 * 6 * 16 * 16 * (3*8 + 2*8) = 122880: 2.5x the forward's 4 * 6 * 16 * 16 * 8
    assert ok and c.flops == 122880 == attention_backward_flops(6, 16, 16, 8, 8)
    assert c.flops * 2 == 5 * (4 * 6 * 16 * 16 * 8) and c.category == "attention"


def test_attention_kernel_backward_bshd():
    q, lse = meta(2, 16, 3, 8), meta(2, 3, 16)
    op = op_of(aten._efficient_attention_backward.default, q, q, q, q, None, q, None, None, 16, 16, lse, 0.0,
               meta(2), meta(2), 0, False, outputs=[q, q, q])
    c, ok = cost_of(op)
    assert ok and c.flops == attention_backward_flops(6, 16, 16, 8, 8)


def test_attention_backward_batch_heads_and_key_length():
    # efficient attention backward, q (B=2, H=3, Sq=4, D=8), k = v (2, 3, Sk=6, 8): five GEMMs,
    # 2 * (2*3) * 4 * 6 * (3*8 + 2*8) = 2 * 6 * 24 * 40 = 11520; gemm (B*H, Sq, Sk, 3 Dqk + 2 Dv) = (6, 4, 6, 40)
    q, kv = meta(2, 3, 4, 8), meta(2, 3, 6, 8)
    op = op_of(aten._scaled_dot_product_efficient_attention_backward.default, q, q, kv, kv, None, q, meta(2, 3, 4), None, None,
               0.0, [True, True, True, False], outputs=[q, kv, kv])
    c, _ = cost_of(op)
    assert (c.flops, c.gemm, c.kernels) == (11520, (6, 4, 6, 40), 1)
    # unbatched (H=3, Sq=4, D=8) with (3, Sk=6, 8): batch 1, heads 3 -> 2 * 3 * 4 * 6 * 40 = 5760, gemm (3, 4, 6, 40)
    q, kv = meta(3, 4, 8), meta(3, 6, 8)
    op = op_of(aten._scaled_dot_product_efficient_attention_backward.default, q, q, kv, kv, None, q, meta(3, 4), None, None,
               0.0, [True, True, True, False], outputs=[q, kv, kv])
    c, _ = cost_of(op)
    assert (c.flops, c.gemm) == (5760, (3, 4, 6, 40))


def test_layer_norm_backward_reads_its_inputs_twice_from_rows_of_256(monkeypatch):
    """CUDA layer norm's backward runs an input-gradient kernel and GammaBetaBackward, each streaming
    the output's gradient and the input: from rows of 256 the recorded H100 rows
    (benchmarks/results/h100_layer_norm_backward_rows.json) are within 15% in the median priced so,
    over 30% under as one pass."""
    import json
    import statistics
    from pathlib import Path

    import roofline.model.kernels as kernels
    from benchmarks.row_kernels import predicted_s
    from roofline.profiles import load_profile_file

    repo = Path(__file__).parent.parent
    profile = load_profile_file(repo / "device_profiles" / "nvidia-h100-80gb-hbm3.json")
    points = [p for p in json.loads((repo / "benchmarks" / "results" / "h100_layer_norm_backward_rows.json").read_text())["points"]
              if p["row"] >= kernels.LAYER_NORM_REREAD_ROW]
    assert len(points) == 24

    def median_error() -> float:
        return statistics.median(abs(predicted_s(profile, p) / p["median_s"] - 1) for p in points)

    assert median_error() < 0.15
    monkeypatch.setattr(kernels, "LAYER_NORM_REREAD_ROW", 1 << 40)
    assert median_error() > 0.3


def test_layer_norm_backward_rereads_on_the_gpu_only():
    """The second read is GammaBetaBackward's, a CUDA kernel: the CPU's layer norm backward keeps one
    pass, and a backward without the weight's or bias's gradient runs one kernel."""
    from pathlib import Path

    from roofline.graph.ops import CapturedOp, TensorMeta
    from roofline.model.device import DeviceModel
    from roofline.model.kernels import rereads_bytes
    from roofline.profiles import load_profile_file

    fixture = load_profile_file(Path(__file__).parent / "fixtures" / "h100_profile.json")
    x = TensorMeta.contiguous((64, 768), torch.float32, "cuda")
    stats = TensorMeta.contiguous((64, 1), torch.float32, "cuda")
    w = TensorMeta.contiguous((768,), torch.float32, "cuda")

    def op(mask):
        return CapturedOp(index=0, target=torch.ops.aten.native_layer_norm_backward.default,
                          args=(x, x, [768], stats, stats, w, w, mask), kwargs={}, outputs=(x, w, w))

    gpu, cpu = DeviceModel(fixture.part("cuda"), "cuda"), DeviceModel(fixture.part("cpu"), "cpu")
    full = op([True, True, True])
    assert rereads_bytes(full, cost_of(full)[0], gpu) == 2 * 64 * 768 * 4
    assert rereads_bytes(full, cost_of(full)[0], cpu) == 0
    input_only = op([True, False, False])
    assert rereads_bytes(input_only, cost_of(input_only)[0], gpu) == 0
    # under rows of 256 GammaBetaBackward runs other strategies: one pass; without weight or bias, no second kernel
    short = TensorMeta.contiguous((64, 128), torch.float32, "cuda")
    w128 = TensorMeta.contiguous((128,), torch.float32, "cuda")
    short_op = CapturedOp(index=0, target=torch.ops.aten.native_layer_norm_backward.default,
                          args=(short, short, [128], stats, stats, w128, w128, [True, True, True]), kwargs={}, outputs=(short, w128, w128))
    assert rereads_bytes(short_op, cost_of(short_op)[0], gpu) == 0
    plain = CapturedOp(index=0, target=torch.ops.aten.native_layer_norm_backward.default,
                       args=(x, x, [768], stats, stats, None, None, [True, True, True]), kwargs={}, outputs=(x,))
    assert rereads_bytes(plain, cost_of(plain)[0], gpu) == 0
