"""The model of time: the two-queue eager timeline, the CPU queue, regimes, curve interpolation."""

import math
from types import SimpleNamespace

import pytest
import torch

from roofline.costs import OpCost, cost_of
from roofline.graph.capture import capture
from roofline.model.device import MathModes
from roofline.model.curves import BandwidthModel, MatmulModel
from roofline.graph.ops import CapturedGraph, CapturedOp, TensorMeta
from roofline.model.timeline import modules_entered, predict_timeline
from roofline.schema.profile import BandwidthCurve, BandwidthPoint, MatmulCurve, MatmulPoint, Stat

US = 1e-6


def _stat(s):
    return Stat(median_s=s, iqr_s=0.0, samples=5)


class StubDevice:
    """A device with round numbers: dispatch 10 us, module call 2 us, sync 5 us, 1 TB/s, 100 TFLOP/s."""

    def __init__(self, kind="cuda", dispatch_us=10.0, floor_us=1.0):
        self.kind = kind
        self.modes = MathModes()
        self.overheads = SimpleNamespace(
            module_call_s=_stat(2 * US), synchronize_s=_stat(5 * US) if kind == "cuda" else None, dispatch_s=_stat(dispatch_us * US)
        )
        self._dispatch = dispatch_us * US
        self.kernel_floor_s = floor_us * US if kind == "cuda" else 0.0
        self.vector_flop_per_s = 100e12
        self.bandwidth = SimpleNamespace(bytes_per_s=lambda ws, kind="copy": 1e12)

    attention = {}
    kernel_table = {}
    foreach = None  # no multi-tensor rates: a foreach op prices as one streaming op
    cache_bytes = None  # no cache size: an op that reads more than it writes takes the read curve

    def family_bytes_per_s(self, family, nbytes, dtype_name="float32"):
        return None  # no op-family curves: the plain bandwidth curve prices memory traffic

    def dispatch_s(self, kind, distinct_kinds=None):
        return self._dispatch

    @property
    def module_call_s(self):
        return self.overheads.module_call_s.median_s

    python_call_s = 0.0  # the model's own Python is priced in tests/test_python_calls.py

    def call_entry_s(self, distinct_kinds=None):
        return 0.0  # a native call's Python entry paid once: test_a_native_call_pays_its_python_entry_once

    def matmul_model(self, dtype):
        return SimpleNamespace(time_s=lambda m, n, k: 2 * m * n * k / 100e12)


def _op(i, module="", category="pointwise"):
    x = TensorMeta.contiguous((4,))
    return CapturedOp(index=i, target=torch.ops.aten.relu.default, args=(x,), kwargs={}, outputs=(x,), module=module)


def _graph(n, modules=None):
    modules = modules or [""] * n
    return CapturedGraph(ops=[_op(i, modules[i]) for i in range(n)], module_calls=0)


def _cost(nbytes=0, flops=0, kernels=1, category="pointwise"):
    return OpCost(flops=flops, bytes_read=nbytes, bytes_written=0, kernels=kernels, category=category)


def test_host_bound_chain_is_overhead():
    # 3 ops, host 10 us each, kernels 1 MB / 1 TB/s = 1 us: device idles between ops.
    # h = 10, 20, 30; e = 11, 21, 31; end = max(30, 31) + 5 us sync = 36 us
    tl = predict_timeline(_graph(3), [_cost(nbytes=1_000_000)] * 3, StubDevice(), is_module=False)
    assert tl.total_s == pytest.approx(36 * US)
    assert [o.regime for o in tl.ops] == ["overhead"] * 3
    # each op adds 10 us except the first, which adds 11 (its issue + its kernel)
    assert [round(o.predicted_s / US, 6) for o in tl.ops] == [11, 10, 10]


def test_device_bound_chain_is_memory():
    # kernels 100 MB / 1 TB/s = 100 us each, host 10 us: the host runs ahead after the first issue.
    # e = 10+100, 210, 310; end = 310 + 5 = 315 us
    tl = predict_timeline(_graph(3), [_cost(nbytes=100_000_000)] * 3, StubDevice(), is_module=False)
    assert tl.total_s == pytest.approx(315 * US)
    assert [o.regime for o in tl.ops] == ["memory"] * 3
    assert tl.ops[1].start_s == pytest.approx(110 * US)  # waits for the device, not the host


def test_lone_big_kernel_is_compute_not_overhead():
    # one matmul of 2e12 FLOP at 100 TFLOP/s = 20 ms; the 10 us issue does not make it overhead-bound
    cost = OpCost(flops=2 * 10_000**3, bytes_read=0, bytes_written=0, kernels=1, category="matmul", gemm=(1, 10_000, 10_000, 10_000))
    tl = predict_timeline(_graph(1), [cost], StubDevice(), is_module=False)
    assert tl.ops[0].regime == "compute"
    assert tl.total_s == pytest.approx(10 * US + 20e-3 + 5 * US)


def test_time_by_regime_counts_the_devices_wait_for_the_host_as_overhead():
    # kernels 8 MB / 1 TB/s = 8 us, host 10 us: the first op waits 10 us (longer than its kernel:
    # an overhead-bound op), the next two 2 us each, less than their kernels (memory-bound ops); the
    # device idles 14 us of the 38 us the ops add and works 24 us, and time by regime says so
    tl = predict_timeline(_graph(3), [_cost(nbytes=8_000_000)] * 3, StubDevice(), is_module=False)
    assert [o.regime for o in tl.ops] == ["overhead", "memory", "memory"]
    assert [round(o.waited_s / US, 6) for o in tl.ops] == [10, 2, 2]
    regimes = tl.regime_s()
    assert regimes["overhead"] == pytest.approx(14 * US) and regimes["memory"] == pytest.approx(24 * US)
    assert sum(o.predicted_s for o in tl.ops) == pytest.approx(regimes["overhead"] + regimes["memory"])
    # a device-bound chain waits only for the first issue
    tl = predict_timeline(_graph(3), [_cost(nbytes=100_000_000)] * 3, StubDevice(), is_module=False)
    assert tl.regime_s()["overhead"] == pytest.approx(10 * US)


def test_floor_makes_tiny_kernels_overhead():
    # 1 kB at 1 TB/s = 1 ns, below the 1 us floor: kernel time is the floor
    dev = StubDevice(dispatch_us=0.1)
    tl = predict_timeline(_graph(2), [_cost(nbytes=1000)] * 2, dev, is_module=False)
    assert tl.ops[1].kernel_s == pytest.approx(1 * US)
    assert tl.ops[1].bound_by == "floor" and tl.ops[1].regime == "overhead"


def test_views_take_no_device_time():
    costs = [_cost(nbytes=100_000_000), _cost(kernels=0, category="view")]
    tl = predict_timeline(_graph(2), costs, StubDevice(), is_module=False)
    assert tl.ops[1].kernel_s == 0 and tl.ops[1].regime == "none" and tl.ops[1].predicted_s == 0


def test_cpu_is_one_queue():
    # CPU: each op = dispatch 10 us + 100 MB at 1 TB/s = 100 us -> 110 us each, no sync
    tl = predict_timeline(_graph(2), [_cost(nbytes=100_000_000)] * 2, StubDevice("cpu"), is_module=False)
    assert tl.total_s == pytest.approx(220 * US)
    assert [o.regime for o in tl.ops] == ["memory", "memory"]
    tl = predict_timeline(_graph(2), [_cost(nbytes=1000)] * 2, StubDevice("cpu"), is_module=False)
    assert [o.regime for o in tl.ops] == ["overhead", "overhead"]


def test_module_calls_cost_host_time():
    # Sequential(Linear, ReLU): root + "0" before op 0, "1" before op 1 -> host 10+2+2, 10+2
    assert modules_entered("", "0") == 1
    assert modules_entered("0", "1") == 1
    assert modules_entered("layers.0.fc", "layers.0.act") == 1
    assert modules_entered("layers.0.fc", "layers.1.fc") == 2
    assert modules_entered("a.b", "a.b") == 0
    tl = predict_timeline(_graph(2, ["0", "1"]), [_cost(nbytes=1000)] * 2, StubDevice(), is_module=True)
    assert tl.ops[0].host_s == pytest.approx(14 * US)
    assert tl.ops[1].host_s == pytest.approx(12 * US)


def _matmul_curve():
    # times: 1 us at 1x1x1 ... grid [1, 1024]; 2*1024^3 FLOP in 10 us = 214.7 TFLOP/s at the top corner
    pts = []
    for m in (1, 1024):
        for n in (1, 1024):
            for k in (1, 1024):
                t = 1e-6 * (10 if (m, n, k) == (1024, 1024, 1024) else 1 + (m * n * k) / 1024**3)
                pts.append(MatmulPoint(m=m, n=n, k=k, time=_stat(t), flop_per_s=2 * m * n * k / t))
    return MatmulCurve(dtype="bfloat16", grid=[1, 1024], points=pts)


def test_matmul_interpolation_hits_grid_points_and_scales_beyond():
    mm = MatmulModel(_matmul_curve())
    assert mm.time_s(1024, 1024, 1024) == pytest.approx(10e-6)
    assert mm.time_s(1, 1, 1) == pytest.approx(1e-6)
    # beyond the grid the edge's rate holds: twice the m, twice the time
    assert mm.time_s(2048, 1024, 1024) == pytest.approx(20e-6)
    # inside: log-linear between 1 and 10 us along a line where the other corners are ~1-2 us
    t = mm.time_s(32, 1024, 1024)
    assert 1e-6 < t < 10e-6


def test_bandwidth_loglog_interpolation_and_flat_ends():
    pts = [
        BandwidthPoint(bytes=b, working_set_bytes=b, time=_stat(b / r), bytes_per_s=r)
        for b, r in ((1_000, 1e9), (1_000_000, 1e12))
    ]
    bw = BandwidthModel([BandwidthCurve(kind="copy", points=pts)])
    # geometric midpoint of size -> geometric midpoint of rate (log-log line)
    assert bw.bytes_per_s(math.sqrt(1e3 * 1e6)) == pytest.approx(math.sqrt(1e9 * 1e12), rel=1e-6)
    assert bw.bytes_per_s(10) == pytest.approx(1e9)
    assert bw.bytes_per_s(1e12) == pytest.approx(1e12)


def test_a_bandwidth_point_slower_than_a_larger_one_is_capped_at_the_larger_ones_time():
    # 256 KB timed at 2 ms (a host stall) next to 1 MB at 17 us: 256 KB can take no longer than 17 us
    sizes_times = ((65_536, 4.5e-6), (262_144, 2.1e-3), (1_048_576, 17e-6))
    pts = [BandwidthPoint(bytes=b, working_set_bytes=b, time=_stat(t), bytes_per_s=b / t) for b, t in sizes_times]
    bw = BandwidthModel([BandwidthCurve(kind="read", points=pts)])
    assert 262_144 / bw.bytes_per_s(262_144, "read") == pytest.approx(17e-6)
    assert 65_536 / bw.bytes_per_s(65_536, "read") == pytest.approx(4.5e-6)  # faster smaller points stay


def test_attention_curve_on_a_partial_grid_predicts_its_points_back():
    from roofline.model.curves import AttentionModel
    from roofline.schema.profile import AttentionCurve, AttentionPoint

    def pt(bh, seq, rate):
        t = 4 * bh * seq * seq * 64 / rate
        return AttentionPoint(batch_heads=bh, seq=seq, time=_stat(t), flop_per_s=rate)

    # at seq 8192 the smaller token count is one sequence (8192 tokens): no full grid
    curve = AttentionCurve(dtype="bfloat16", head_dim=64, causal=True, points=[
        pt(32, 128, 2e13), pt(512, 128, 1.5e14), pt(1, 8192, 2.2e14), pt(8, 8192, 7e14),
    ])
    model = AttentionModel(curve)
    for p in curve.points:
        assert model.flop_per_s(p.seq, p.batch_heads * p.seq) == pytest.approx(p.flop_per_s)
    # between calibrated lengths: between their rates (log-linear in both directions)
    mid = model.flop_per_s(1024, 65536)
    assert 1.5e14 < mid < 7e14


def test_attention_runs_whole_tiles_of_queries_and_keys():
    """SDPA's kernels run the last query and key tile whole (float32's memory-efficient kernel in
    64s, half precision's flash kernels in 128s; H100: benchmarks/results/h100_attention_lengths.json):
    197 tokens (a ViT's) take as long as 256, 192 less in float32 and the same in bfloat16."""
    import torch.nn.functional as F

    from roofline.pipeline import Analysis, Options
    from roofline.profiles import load_profile_file
    from tests.conftest import REPO

    profile = load_profile_file(REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json")  # float32 attention too

    def time_s(seq, dtype):
        with torch.device("meta"):
            q = torch.empty(1, 96, seq, 64, dtype=dtype)
        a = Analysis.of(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), (q, q, q), None, profile,
                        Options(device="cuda", capture_device="cpu", batch_sweep=False))
        return sum(k[0] for k in a.kernels())

    assert time_s(197, torch.float32) == pytest.approx(time_s(256, torch.float32))
    assert time_s(192, torch.float32) < 0.9 * time_s(197, torch.float32)
    assert time_s(136, torch.bfloat16) == pytest.approx(time_s(256, torch.bfloat16))
    assert time_s(128, torch.bfloat16) < 0.9 * time_s(136, torch.bfloat16)


def test_attention_below_one_sequence_takes_one_waves_time():
    """A row whose smallest point is one sequence alone (one wave of query tiles): fewer query
    tokens at that key length take the same time; a row whose smallest point fills the GPU keeps
    its rate (nothing says where the wave ends)."""
    from roofline.model.curves import AttentionModel
    from roofline.schema.profile import AttentionCurve, AttentionPoint

    def pt(bh, seq, rate):
        return AttentionPoint(batch_heads=bh, seq=seq, time=_stat(4 * bh * seq * seq * 64 / rate), flop_per_s=rate)

    model = AttentionModel(AttentionCurve(dtype="float32", head_dim=64, causal=False, points=[
        pt(256, 1024, 3e13), pt(1, 1024, 4e12), pt(2048, 128, 2e13),
    ]))
    one_sequence_s = 4 * 1024 * 1024 * 64 / 4e12
    # 192 query tokens against 1024 keys: the one-sequence time, not its rate
    assert 4 * 192 * 1024 * 64 / model.flop_per_s(1024, 192) == pytest.approx(one_sequence_s)
    assert model.flop_per_s(128, 1000) == pytest.approx(2e13)  # smallest point is 2048 sequences: flat


def test_cross_attention_is_priced_at_its_key_length():
    """Whisper's decoder: 32 queries against 1500 keys walk 1500 keys per query tile; the curve is
    read at the key length and the query tokens in flight."""
    from roofline.costs import cost_of
    from roofline.model.device import DeviceModel
    from roofline.model.kernels import kernel_terms
    from roofline.schema.profile import AttentionCurve, AttentionPoint

    def pt(bh, seq, rate):
        return AttentionPoint(batch_heads=bh, seq=seq, time=_stat(4 * bh * seq * seq * 64 / rate), flop_per_s=rate)

    from roofline.profiles import load_profile_file
    from tests.conftest import REPO

    part = load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json").gpu.model_copy(deep=True)
    part.measurements.attention = [AttentionCurve(dtype="bfloat16", head_dim=64, causal=False, points=[
        pt(1, 128, 1e12), pt(2048, 128, 1e14), pt(1, 2048, 1e13), pt(128, 2048, 4e14),
    ])]
    dev = DeviceModel(part, "cuda")
    q = torch.empty(1, 6, 32, 64, dtype=torch.bfloat16, device="meta")
    kv = torch.empty(1, 6, 1500, 64, dtype=torch.bfloat16, device="meta")
    graph = capture(lambda q, k, v: torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, None, False), (q, kv, kv))
    op = graph.ops[0]
    cost, = cost_of(op)[:1]
    compute_s = kernel_terms(op, cost, dev)[0]
    # in whole tiles of 128 (bfloat16): 32 queries run as 128, 1500 keys as 1536
    rate = dev.attention_model("bfloat16", 64, False).flop_per_s(1536, 6 * 128)
    assert compute_s == pytest.approx(cost.flops * (128 * 1536) / (32 * 1500) / rate)
    # read at the query length instead, the same op would be priced a quarter faster or more
    assert compute_s > 1.25 * cost.flops / dev.attention_model("bfloat16", 64, False).flop_per_s(32, 6 * 32)


def test_empty_module_still_pays_its_call():
    dev = StubDevice()
    tl = predict_timeline(CapturedGraph(ops=[], module_calls=1), [], dev, is_module=True)
    # one nn.Module call (2 us) and the synchronize (5 us)
    assert tl.total_s == pytest.approx(7 * US)


def test_interleaving_grows_with_the_number_of_different_dispatch_kinds():
    # 1 kind repeated: factor 1 (what each dispatch was measured on); the calibration mix's 10
    # kinds and more: the calibrated factor; linear in between.
    from roofline.model.device import DeviceModel
    from roofline.model.host import INTERLEAVE_MIX_KINDS
    from roofline.profiles import load_profile_file
    from tests.conftest import REPO

    dev = DeviceModel(load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json").gpu, "cuda")
    f = dev.overheads.interleave_factor
    assert f > 1.0
    assert dev.interleave_for(1) == 1.0 and dev.interleave_for(None) == f
    assert dev.interleave_for(INTERLEAVE_MIX_KINDS) == pytest.approx(f) and dev.interleave_for(40) == pytest.approx(f)
    assert dev.interleave_for((INTERLEAVE_MIX_KINDS + 1) / 2) == pytest.approx(1 + (f - 1) / 2)
    add = dev.overheads.dispatch_by_op_s["add"].median_s * dev.program_factor
    # a chain of one op repeated pays its repeated-op dispatch cost, nothing more
    tl = predict_timeline(_graph(4), [_cost(nbytes=4)] * 4, dev, is_module=False)
    assert tl.ops[-1].host_s == pytest.approx(add)
    x = TensorMeta.contiguous((4,))

    def alternating(targets, costs):
        ops = [CapturedOp(index=i, target=targets[i % 2], args=(x,), kwargs={}, outputs=(x,), module="") for i in range(4)]
        return predict_timeline(CapturedGraph(ops=ops, module_calls=0), [costs[i % 2] for i in range(4)], dev, is_module=False)

    # relu and sin alternating: two aten ops of one kind (elementwise), which share a code path
    tl = alternating((torch.ops.aten.relu.default, torch.ops.aten.sin.default), (_cost(nbytes=4), _cost(nbytes=4)))
    assert tl.ops[-1].host_s == pytest.approx(add)
    # relu and a row sum alternating: two kinds, each op at the factor for 2
    tl = alternating((torch.ops.aten.relu.default, torch.ops.aten.sum.dim_IntList), (_cost(nbytes=4), _cost(nbytes=4, category="reduction")))
    assert dev.interleave_for(2) > 1.0
    assert tl.ops[-2].host_s == pytest.approx(add * dev.interleave_for(2))
    assert tl.ops[-1].host_s == pytest.approx(dev.overheads.dispatch_by_op_s["sum"].median_s * dev.program_factor * dev.interleave_for(2))


def test_interleave_mix_kind_count_matches_the_calibration_mix():
    from roofline.measure.host_speed import index_call
    from roofline.graph.capture import capture
    from roofline.costs import cost_of
    from roofline.model.host import INTERLEAVE_MIX_KINDS
    from roofline.model.timeline import dispatch_kind

    g = capture(index_call("cpu"), ())  # the mix calibration times, and the host-speed index with it
    assert len({dispatch_kind(op, cost_of(op)[0]) for op in g.ops}) == INTERLEAVE_MIX_KINDS


def test_a_linears_weight_transpose_is_priced_inside_its_call():
    # The addmm representative is a whole F.linear call (t + addmm in C++): the t made inside the same
    # native call as the addmm it feeds pays nothing of its own. On a 3-d input the call's views
    # (input to 2-d and back) still pay (less the call's entry after its first op), and a t the user
    # wrote as its own call pays as a view.
    from roofline.graph.capture import capture
    from roofline.costs import cost_of
    from roofline.model.device import DeviceModel
    from roofline.profiles import load_profile_file
    from tests.conftest import REPO

    dev = DeviceModel(load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json").gpu, "cuda")

    def hosts(fn, *inputs):
        """(captured graph, host time of each op) of one call of ``fn``."""
        g = capture(fn, inputs)
        tl = predict_timeline(g, [cost_of(op)[0] for op in g.ops], dev, is_module=False)
        return g, [ot.host_s for ot in tl.ops]

    w, b = torch.randn(16, 8), torch.randn(16)
    g, host = hosts(lambda x: torch.nn.functional.linear(x, w, b), torch.randn(4, 8))
    assert [op.name for op in g.ops] == ["aten.t.default", "aten.addmm.default"]
    assert g.ops[0].torch_call is not None and g.ops[0].torch_call == g.ops[1].torch_call
    # the t pays no dispatch of its own, only the Python of the lambda that makes the call
    assert host[0] == pytest.approx(g.ops[0].python_calls * dev.python_call_s) and g.ops[0].python_calls == 1
    assert host[1] == pytest.approx(dev.dispatch_s("addmm", 1))  # one kind: the t is not a second one

    g, host = hosts(lambda x: torch.nn.functional.linear(x, w, b), torch.randn(2, 4, 8))
    views = [h for op, h in zip(g.ops, host) if op.name == "aten.view.default"]
    assert len(views) == 2 and all(h > 0 for h in views)

    g, host = hosts(lambda x: x @ w.t(), torch.randn(4, 8))
    assert g.ops[0].name == "aten.t.default" and g.ops[0].torch_call != g.ops[1].torch_call
    assert host[0] > 0


def test_a_native_call_pays_its_python_entry_once():
    # torch.matmul on 4-d inputs runs expand, view, expand, view, bmm and _unsafe_view in C++: the
    # first op pays its kind's dispatch, each op after it that kind's less the call's Python entry
    # (CALL_ENTRY_SHARE of a view's dispatch); the same ops called one by one from Python each pay all.
    from roofline.graph.capture import capture
    from roofline.costs import cost_of
    from roofline.model.device import DeviceModel
    from roofline.model.host import CALL_ENTRY_SHARE
    from roofline.model.timeline import dispatch_kind, dispatch_payers, inner_ops
    from roofline.profiles import load_profile_file
    from tests.conftest import REPO

    dev = DeviceModel(load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json").gpu, "cuda")
    g = capture(lambda a, c: torch.matmul(a, c), (torch.randn(2, 3, 5, 4), torch.randn(2, 3, 4, 5)))
    assert [op.name.split(".")[1] for op in g.ops] == ["expand", "view", "expand", "view", "bmm", "_unsafe_view"]
    costs = [cost_of(op)[0] for op in g.ops]
    kinds = [dispatch_kind(op, c) for op, c in zip(g.ops, costs)]
    assert inner_ops(g.ops, dispatch_payers(g.ops, kinds)) == [False] + [True] * 5
    tl = predict_timeline(g, costs, dev, is_module=False)
    entry = CALL_ENTRY_SHARE * dev.dispatch_s("view", 2)
    assert entry == pytest.approx(dev.call_entry_s(2)) and entry > 0
    assert tl.ops[0].host_s == pytest.approx(dev.dispatch_s("view", 2) + dev.python_call_s)
    assert tl.ops[1].host_s == pytest.approx(dev.dispatch_s("view", 2) - entry)
    assert tl.ops[4].host_s == pytest.approx(dev.dispatch_s("addmm", 2) - entry)
    # separate calls from Python: every op pays its whole dispatch
    g2 = capture(lambda a, c: torch.bmm(a.view(6, 5, 4), c.view(6, 4, 5)), (torch.randn(2, 3, 5, 4), torch.randn(2, 3, 4, 5)))
    tl2 = predict_timeline(g2, [cost_of(op)[0] for op in g2.ops], dev, is_module=False)
    bmm = next(t for op, t in zip(g2.ops, tl2.ops) if op.name == "aten.bmm.default")
    assert bmm.host_s == pytest.approx(dev.dispatch_s("addmm", 2))


def test_a_python_function_of_torchs_is_one_call():
    # torch.einsum is Python that makes one native call running a dozen aten ops: they share a number,
    # so they pay one Python entry between them; F.multi_head_attention_forward makes a native call
    # per step and stays unnumbered; a model's own function is not a torch call at all.
    from roofline.graph.capture import capture
    from roofline.graph.provenance import numbered_call

    g = capture(lambda a, c: torch.einsum("bhqd,bhkd->bhqk", a, c), (torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)))
    assert len(g.ops) > 5 and "aten.bmm.default" in [op.name for op in g.ops]
    assert len({op.torch_call for op in g.ops}) == 1 and g.ops[0].torch_call is not None
    assert numbered_call(torch.einsum) and numbered_call(torch.nn.functional.normalize)
    assert not numbered_call(torch.nn.functional.multi_head_attention_forward)
    assert not numbered_call(torch.Tensor.backward)  # the autograd engine's host costs are calibrated apart
    assert not numbered_call(test_a_python_function_of_torchs_is_one_call)


def test_an_allocation_inside_a_native_call_is_priced_as_a_view():
    # F.batch_norm captured on a CPU allocates its output (empty), then runs native_batch_norm, in one
    # call: the allocation launches nothing and pays a view's dispatch; a torch.empty of the model's own
    # is a call of its own and keeps the elementwise price.
    from roofline.graph.capture import capture
    from roofline.costs import cost_of
    from roofline.model.timeline import dispatch_kinds

    mean, var, w, b = torch.zeros(3), torch.ones(3), torch.ones(3), torch.zeros(3)
    g = capture(lambda x: torch.nn.functional.batch_norm(x, mean, var, w, b) + torch.empty(2, 3, 4, 4), (torch.randn(2, 3, 4, 4),))
    names = [op.name for op in g.ops]
    assert names[:2] == ["aten.empty.memory_format", "aten.native_batch_norm.default"] and g.ops[0].torch_call == g.ops[1].torch_call
    kinds = dispatch_kinds(g.ops, [cost_of(op)[0] for op in g.ops])
    assert kinds[:2] == ["view", "batch_norm"]
    alone = names.index("aten.empty.memory_format", 1)
    assert kinds[alone] == "add"


def test_each_torch_call_gets_its_own_number_even_in_a_loop():
    # The same line run twice is two calls; F.relu (torch's Python) is a call of its own.
    from roofline.graph.capture import capture

    def f(x):
        for _ in range(2):
            x = torch.sin(x)
        return torch.nn.functional.relu(x)

    g = capture(f, (torch.randn(4),))
    calls = [op.torch_call for op in g.ops]
    assert [op.name for op in g.ops] == ["aten.sin.default", "aten.sin.default", "aten.relu.default"]
    assert calls[0] is not None and calls[1] is not None and calls[0] != calls[1]
    assert calls[2] is not None and calls[2] not in calls[:2]


@pytest.mark.parametrize("kind", ["cuda", "cpu"])
def test_a_group_fused_in_place_is_predicted_as_the_whole_program_would_be(kind):
    # Schedule.total_with recomputes only a fused group's stretch of the timeline; it must agree
    # with predicting the whole fused program, group by group
    from roofline.advice.fusion import fuse_program, fused_cost, fusion_groups
    from roofline.model.device import DeviceModel
    from roofline.model.timeline import Schedule, price_kernels
    from roofline.profiles import load_profile_file
    from tests.conftest import REPO

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln, self.up, self.down = torch.nn.LayerNorm(64), torch.nn.Linear(64, 256), torch.nn.Linear(256, 64)

        def forward(self, x):
            return x + self.down(torch.nn.functional.gelu(self.up(self.ln(x))) * 0.5).sin()

    profile = load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json")
    model = torch.nn.Sequential(Block(), Block()).eval()
    g = capture(model, (torch.randn(4, 16, 64),))
    costs = [cost_of(op)[0] for op in g.ops]
    dev = DeviceModel(profile.part(kind), kind)
    kernels = price_kernels(g.ops, costs, dev)
    schedule = Schedule(g, costs, dev, kernels)
    assert schedule.total_s() == pytest.approx(predict_timeline(g, costs, dev, kernels=kernels).total_s, rel=1e-12)
    groups = fusion_groups(g, costs)
    checked = 0
    for group in groups:
        fast = schedule.total_with(group.ops, fused_cost(g, costs, group.ops))
        prog = fuse_program(g, costs, [group])
        full = predict_timeline(prog.graph, prog.costs, dev, kernels=prog.kernels(kernels, dev)).total_s
        if fast is not None:
            assert fast == pytest.approx(full, rel=1e-12)
            checked += 1
    assert checked >= 2


def test_depthwise_bias_pass_only_where_cudnn_runs_it():
    """ATen runs float32 and bfloat16 NCHW depthwise convolutions with its own kernel, which adds the
    bias as it writes; cuDNN (most float16 ones, and channels-last) convolves without it and ATen
    adds it after."""
    from roofline.model.device import DeviceModel
    from roofline.model.kernels import bias_pass_s
    from roofline.profiles import load_profile_file
    from tests.conftest import REPO

    dev = DeviceModel(load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json").gpu, "cuda")

    def bias_s(dtype, channels_last=False, groups=32, channels=32):
        groups = min(groups, channels)
        x = torch.empty(8, channels, 28, 28, dtype=dtype, device="meta")
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        w = torch.empty(channels, channels // groups, 3, 3, dtype=dtype, device="meta")
        b = torch.empty(channels, dtype=dtype, device="meta")
        op = capture(lambda x, w, b: torch.nn.functional.conv2d(x, w, b, padding=1, groups=groups), (x, w, b)).ops[0]
        return bias_pass_s(op, cost_of(op)[0], dev)

    assert bias_s(torch.float32) == 0.0 and bias_s(torch.bfloat16) == 0.0
    assert bias_s(torch.float16) > 0.0 and bias_s(torch.float32, channels_last=True) > 0.0
    assert bias_s(torch.float32, groups=1) > 0.0  # a dense convolution is cuDNN's
    assert bias_s(torch.float16, channels=16) == 0.0  # under 32 channels ATen keeps a float16 one


def test_an_eval_batch_norm_atens_own_kernels_pay_their_launches():
    # Half-precision weights or a bfloat16 input send a GPU eval batch norm to ATen's own path: two
    # per-channel kernels launched from C++ before the normalize pass, each an elementwise op's
    # dispatch less the Python entry over the cuDNN batch norm the representative op times. The lent
    # H100 recorded the host time of issuing each (benchmarks/conv_host_cost.py): ATen's 3 kernels
    # against cuDNN's 1, and half batch norms over float32 ones by about what the two launches cost.
    import json
    import statistics

    from roofline.model.device import DeviceModel
    from roofline.model.host import CALL_ENTRY_SHARE
    from roofline.model.kernels import ATEN_BATCH_NORM_KERNELS
    from roofline.model.timeline import native_launches
    from roofline.profiles import load_profile_file
    from tests.conftest import REPO

    profile = load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json")
    gpu, cpu = DeviceModel(profile.gpu, "cuda"), DeviceModel(profile.host, "cpu")

    def bn_host_s(dtype, dev):
        m = torch.nn.BatchNorm2d(8).eval().to(dtype)
        g = capture(m, (torch.randn(2, 8, 4, 4, dtype=dtype),))
        i = next(i for i, op in enumerate(g.ops) if "batch_norm" in op.name)
        assert native_launches(g.ops[i], dev) == (ATEN_BATCH_NORM_KERNELS - 1 if dtype != torch.float32 and dev.kind == "cuda" else 0)
        return predict_timeline(g, [cost_of(op)[0] for op in g.ops], dev).ops[i].host_s

    kinds = 2  # the capture's allocation (a view) and the batch norm
    launch = gpu.dispatch_s("add", kinds) - gpu.call_entry_s(kinds)
    assert launch > 0
    for dtype in (torch.float16, torch.bfloat16):
        assert bn_host_s(dtype, gpu) == pytest.approx(bn_host_s(torch.float32, gpu) + 2 * launch)
        assert bn_host_s(dtype, cpu) == pytest.approx(bn_host_s(torch.float32, cpu))

    # against the record, in units of the tiny float32 conv2d's host time (the record's median
    # reference; the profile's calibrated figure): each half dtype and layout's extra over the
    # float32 NCHW batch norm of the same shape, in the median over 3 shapes
    record = json.loads((REPO / "benchmarks" / "results" / "h100_conv_host_cost.json").read_text())
    reference = statistics.median(r["conv2d"] for r in record["references"])
    norms = {(c["dtype"], c["layout"], tuple(c["shape"])): c for c in record["cases"] if c["op"] == "batch_norm"}
    measured = []
    for dtype in ("float16", "bfloat16"):
        for layout in ("nchw", "channels_last"):
            shapes = [s for d, lay, s in norms if (d, lay) == (dtype, layout)]
            assert all(len(norms[(dtype, layout, s)]["kernels"]) == ATEN_BATCH_NORM_KERNELS for s in shapes)
            measured.append(statistics.median((norms[(dtype, layout, s)]["host_s"] - norms[("float32", "nchw", s)]["host_s"]) / reference
                                              for s in shapes))
    assert all(len(c["kernels"]) == 1 for (d, _, _), c in norms.items() if d == "float32")
    ov = profile.gpu.measurements.overheads.dispatch_by_op_s
    priced = 2 * (ov["add"].median_s - CALL_ENTRY_SHARE * ov["view"].median_s) / ov["conv2d"].median_s
    assert all(priced / 2 < m < 2 * priced for m in measured), (priced, measured)
    assert statistics.mean(measured) == pytest.approx(priced, rel=0.25), (priced, measured)


def test_which_gpu_batch_norm_runs_cudnn_follows_atens_choice_on_the_h100():
    # ATen's backend choice for 30 batch norms (dtype x weights' dtype x 2-d/4-d x eval/train, and an
    # eval batch past cuDNN's limit), recorded on the lent H100 (benchmarks/batch_norm_backends.py):
    # cuDNN for float32, or float16 with float32 weights; ATen's own for half weights, any bfloat16,
    # a 2-d input, an eval batch over 65535. The rule reads them from a capture made here.
    import json

    from benchmarks.batch_norm_backends import rule_says_cudnn
    from tests.conftest import REPO

    record = json.loads((REPO / "benchmarks" / "results" / "h100_batch_norm_backends.json").read_text())
    assert len(record["cases"]) == 30 and {c["backend"] for c in record["cases"]} == {"Cudnn", "Native"}
    for case in record["cases"]:
        assert rule_says_cudnn(case) == (case["backend"] == "Cudnn"), case
