"""Advice: fusion groups, fused bytes, placement arithmetic, streams, crossover, batch sweep, compile."""

import pytest
import torch

from roofline.advice.fusion import fuse_program, fused_cost, fusion_groups
from roofline.advice.placement import crossover, placement, transfer_time_s
from roofline.advice.streams import stream_pipeline
from roofline.costs import cost_of
from roofline.graph.capture import capture
from roofline.graph.rebatch import Rebatcher, leading_batch, with_batch
from roofline.model.device import DeviceModel
from roofline.model.timeline import predict_timeline
from roofline.pipeline import Analysis, Options, analyze
from roofline.profiles import load_profile_file
from roofline.units import seconds
from tests.conftest import REPO

PROFILE = REPO / "tests" / "fixtures" / "h100_profile.json"


@pytest.fixture(scope="module")
def h100():
    return load_profile_file(PROFILE)


def _priced(fn, *inputs):
    g = capture(fn, inputs)
    return g, [cost_of(op)[0] for op in g.ops]


def test_nested_sin_is_one_group_moving_only_its_ends():
    # four sins on 1M float32: unfused 4 x (4 MB in + 4 MB out) = 32 MB; fused 4 MB in + 4 MB out = 8 MB
    g, costs = _priced(lambda x: x.sin().sin().sin().sin(), torch.randn(1 << 20))
    groups = fusion_groups(g, costs)
    assert [grp.ops for grp in groups] == [[0, 1, 2, 3]]
    fused = fused_cost(g, costs, groups[0].ops)
    assert (fused.bytes_read, fused.bytes_written, fused.kernels) == (4 << 20, 4 << 20, 1)
    assert sum(c.bytes for c in costs) == 32 << 20


def test_value_with_another_consumer_ends_the_group():
    # y = sin(x) feeds both cos(y) and the output: y must be written, so sin cannot fuse into cos
    def f(x):
        y = x.sin()
        return y.cos(), y

    g, costs = _priced(f, torch.randn(1024))
    assert fusion_groups(g, costs) == []


def test_linear_relu_is_a_matmul_epilogue():
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU()).eval()
    g, costs = _priced(model, torch.randn(8, 64))
    kinds = [grp.kind for grp in fusion_groups(g, costs)]
    assert kinds == ["matmul epilogue"]


def test_fused_program_is_predicted_faster(h100):
    g, costs = _priced(lambda x: x.sin().sin().sin().sin(), torch.randn(1 << 24))
    dev = DeviceModel(h100.gpu, "cuda")
    before = predict_timeline(g, costs, dev, is_module=False).total_s
    fused = fuse_program(g, costs, fusion_groups(g, costs))
    after = predict_timeline(fused.graph, fused.costs, dev, is_module=False).total_s
    # memory-bound: a quarter of the traffic, so well under half the time
    assert after < 0.5 * before


def test_placement_counts_copies_per_call_or_once(h100):
    g, costs = _priced(lambda x: x.sin(), torch.randn(1 << 22))
    gpu, cpu = DeviceModel(h100.gpu, "cuda"), DeviceModel(h100.host, "cpu")
    gtl, ctl = predict_timeline(g, costs, gpu, is_module=False), predict_timeline(g, costs, cpu, is_module=False)
    copy = transfer_time_s(gpu, 16 << 20, "h2d", "pageable") + transfer_time_s(gpu, 16 << 20, "d2h", "pageable")
    one = placement(g, gtl, ctl, gpu)
    assert one.transfer_s == pytest.approx(copy)
    assert one.gpu_s == pytest.approx(gtl.total_s) and one.cpu_s == pytest.approx(ctl.total_s)
    loop = placement(g, gtl, ctl, gpu, calls=1000, copies_per_call=False)
    assert loop.transfer_s == pytest.approx(copy / 1000)
    assert one.reason and "CPU" in one.reason
    # the GPU wins the loop; the reason's figures are per call, the loop's one copy spread over its calls
    assert loop.recommended == "cuda" and f"plus {seconds(copy / 1000)} of copies" in loop.reason


def test_pinned_and_streams_pipeline(h100):
    dev = DeviceModel(h100.gpu, "cuda")
    s = stream_pipeline(dev, compute_s=1e-3, in_bytes=4 << 20, out_bytes=4 << 20, batches=16)
    stages = (s.h2d_pinned_s, s.compute_s, s.d2h_pinned_s)
    # pipelined: fill + drain once, then one slowest stage per batch
    assert s.streams_pinned_s == pytest.approx(sum(stages) + 15 * max(stages))
    assert s.sequential_pinned_s == pytest.approx(16 * sum(stages))
    assert s.sequential_pageable_s > s.sequential_pinned_s > s.streams_pinned_s


def test_crossover_is_where_the_gpu_wins_for_good():
    assert crossover([(1, "cpu"), (2, "cuda"), (4, "cpu"), (8, "cuda"), (16, "cuda")]) == 8
    assert crossover([(1, "cpu"), (2, "cpu")]) is None
    assert crossover([(1, "cuda"), (2, "cuda")]) == 1


def test_batch_sweep_on_an_overhead_bound_mlp(h100):
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(128, 128), torch.nn.ReLU()]
    with torch.device("meta"):
        model = torch.nn.Sequential(*layers)
        x = torch.randn(1, 128)
    assert leading_batch((x,)) == 1 and leading_batch((torch.randn(5),)) is None
    sweep = Analysis.of(model, (x,), None, h100, Options(device="cuda")).batch_sweep
    assert sweep is not None and [p.batch for p in sweep.points][:3] == [1, 2, 4]
    assert sweep.points[0].regime == "overhead"
    # overhead-bound: doubling the batch barely changes the time; per-sample time falls with the batch
    assert sweep.doubling_ratio < 1.3
    assert sweep.points[-1].per_sample_s < sweep.points[0].per_sample_s / 10


def test_report_alternatives_and_recommendation(h100):
    model = torch.nn.Sequential(*[torch.nn.Linear(128, 128) for _ in range(8)]).eval()
    r = analyze(model, (torch.randn(1, 128),), profile=h100, batch_sweep=False)
    alts = r.alternatives.by_name()
    assert {"eager", "cuda_graphs", "torch_compile"} <= set(alts)
    # overhead-bound on the GPU: a CUDA graph removes most of the host time
    assert alts["cuda_graphs"] < 0.5 * alts["eager"]
    plan = r.recommended_plan
    assert (plan.device, plan.execution) == ("cuda", "cuda_graphs")
    assert r.advice[0].startswith("plan: GPU, a CUDA graph")


def test_batch_sweep_guards(h100):
    with torch.device("meta"):
        model = torch.nn.Linear(16, 16)
    options = Options(device="cuda", batch_sweep=True)
    assert Analysis.of(model, (torch.empty(0, 16, device="meta"),), None, h100, options).batch_sweep is None  # batch 0: nothing to sweep
    sweep = Analysis.of(torch.nn.Identity(), (torch.empty(4, 16, device="meta"),), None, h100, options).batch_sweep
    assert sweep is None or all(p.regime in ("overhead", "none") for p in sweep.points)


class _Attention(torch.nn.Module):
    """Batch folded into rows (B*T) and into heads (B*H): every shape affine in the batch."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.qkv, self.out, self.heads = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d), heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = (q @ k.transpose(-1, -2)).softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(b * t, d)).view(b, t, d)


def _graph_numbers(graph):
    return [(op.name, op.args, op.kwargs, op.outputs) for op in graph.ops]


def test_derived_graphs_equal_captured_ones():
    with torch.device("meta"):
        model = _Attention()
    args = (torch.empty(8, 16, 32, device="meta"),)
    calls = []

    def capture_at(b):
        calls.append(b)
        a, k = with_batch(args, {}, b)
        return capture(model, a, k)

    rb = Rebatcher(capture_at, 8, capture(model, args))
    assert rb.derive is not None and calls == [16, 32]
    for b in (2, 4, 64, 512):
        assert _graph_numbers(rb.at(b)) == _graph_numbers(capture_at(b))
    assert calls.count(1) == 0
    rb.at(1)  # batch 1 is captured: a size-1 dimension changes what torch runs
    assert calls.count(1) == 1


def test_a_shape_that_grows_faster_than_the_batch_is_captured():
    def pairwise(x):
        return (x @ x.t()).flatten()  # B * B elements in one dimension: quadratic in the batch

    args = (torch.empty(4, 8, device="meta"),)
    calls = []

    def capture_at(b):
        calls.append(b)
        return capture(pairwise, with_batch(args, {}, b)[0])

    rb = Rebatcher(capture_at, 4, capture(pairwise, args))
    assert rb.derive is None
    assert rb.at(64).ops[-1].outputs[0].shape == (64 * 64,) and 64 in calls


def test_calibration_remeasures_a_spike(monkeypatch):
    # a 1x64x64 point at 8 ms next to a larger 64x64x64 point at 10 us is re-measured
    from calibrate import matmul
    from roofline.schema.profile import MatmulPoint, Stat

    def point(m, n, k, t):
        return MatmulPoint(m=m, n=n, k=k, time=Stat(median_s=t, iqr_s=0, samples=5), flop_per_s=2 * m * n * k / t)

    points = [point(1, 64, 64, 8e-3), point(64, 64, 64, 10e-6)]
    monkeypatch.setattr(matmul, "measure_point", lambda m, n, k, *a, **kw: point(m, n, k, 3e-6))
    fixed = matmul._remeasure_spikes(points, "float32", "cpu", 0, 0.01, warnings := [])
    assert fixed[0].time.median_s == pytest.approx(3e-6) and fixed[1].time.median_s == pytest.approx(10e-6)
    assert warnings == []


def test_a_value_read_twice_by_a_group_is_read_once():
    # sin(x * x + x) on 1M float32: the fused kernel reads x once (4 MB) and writes once (4 MB)
    g, costs = _priced(lambda x: torch.sin(x * x + x), torch.randn(1 << 20))
    groups = fusion_groups(g, costs)
    assert [len(grp.ops) for grp in groups] == [3]
    fused = fused_cost(g, costs, groups[0].ops)
    assert (fused.bytes_read, fused.bytes_written) == (4 << 20, 4 << 20)


def test_fusing_an_epilogue_saves_its_dispatch_and_leaves_the_next_linear_alone(h100):
    # host-bound Linear + ReLU stack: fusing a ReLU into its GEMM removes the ReLU's dispatch; the
    # next Linear's weight transpose still runs inside its F.linear call and pays nothing of its own
    model = torch.nn.Sequential(*[m for _ in range(3) for m in (torch.nn.Linear(128, 128), torch.nn.ReLU())]).eval()
    r = analyze(model, (torch.randn(1, 128),), profile=h100, batch_sweep=False)
    assert [f.kind for f in r.fusion] == ["matmul epilogue"] * 3
    relu_dispatch = h100.gpu.measurements.overheads.dispatch_by_op_s["relu"].median_s
    # the last group's gain is smaller: the device's tail after the host's last issue is in the way
    assert all(0.5 * relu_dispatch < f.predicted_gain_s < 2 * relu_dispatch for f in r.fusion[:2])
    assert r.fusion[2].predicted_gain_s > 0


def test_a_depthwise_conv_epilogue_is_priced_as_its_convolution():
    # depthwise conv + GELU + batch norm (ConvMixer's block): the fused group ends at the batch norm,
    # whose second input is a 1-d weight; the group's kernel is the convolution's with an epilogue,
    # on the shipped profile's depthwise family
    dim = 64
    model = torch.nn.Sequential(torch.nn.Conv2d(dim, dim, 9, groups=dim, padding="same"), torch.nn.GELU(), torch.nn.BatchNorm2d(dim)).eval()
    r = analyze(model, (torch.randn(8, dim, 32, 32),), profile="nvidia-h100-80gb-hbm3", batch_sweep=False)
    (group,) = r.fusion
    assert group.kind == "conv epilogue" and r.ops[group.ops[0]].target.startswith("aten.convolution")
    conv = r.ops[group.ops[0]]
    assert group.predicted_gain_s < sum(r.ops[i].predicted_s for i in group.ops[1:]) + 1e-12  # never more than the epilogue's ops
    assert conv.kernel_s > 0
