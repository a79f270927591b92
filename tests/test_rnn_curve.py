"""Calibrated fused RNN layers: schema checks, the step-to-GEMM ratio, and its use in prediction."""

from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from calibrate.rnn import measure_rnn
from roofline.pipeline import analyze
from roofline.costs.rnn import GATES, rnn_kind
from roofline.model.curves import RnnModel
from roofline.model.device import DeviceModel
from roofline.schema.profile import RnnCurve, RnnPoint, Stat
from roofline.profiles import load_profile_file
from tests.opcapture import capture_ops

FIXTURE = Path(__file__).parent / "fixtures" / "h100_profile.json"


def _stat(t):
    return Stat(median_s=t, iqr_s=0.0, samples=5)


def _point(kind, batch, hidden, fixed_s, step_s, steps=(16, 64)):
    return RnnPoint(kind=kind, batch=batch, input_size=hidden, hidden=hidden, steps_short=steps[0], steps_long=steps[1],
                    time_short=_stat(fixed_s + steps[0] * step_s), time_long=_stat(fixed_s + steps[1] * step_s))


def _curve_at_ratio(dev, ratio: float, fixed_s: float, dtype="float32") -> RnnCurve:
    """Points whose step takes `ratio` times its gate GEMM on the matmul curve, plus `fixed_s` per call."""
    mm = dev.matmul_model(dtype)
    points = []
    for kind in ("lstm", "gru"):
        for batch, hidden in [(1, 256), (32, 512), (256, 1024)]:
            step = ratio * mm.time_s(batch, GATES[kind] * hidden, 2 * hidden)
            points.append(_point(kind, batch, hidden, fixed_s, step))
    return RnnCurve(dtype=dtype, points=points)


def test_point_separates_step_and_fixed_cost():
    p = _point("lstm", 32, 512, fixed_s=200e-6, step_s=18e-6)
    assert p.step_s == pytest.approx(18e-6) and p.fixed_s == pytest.approx(200e-6)


def test_point_rejects_lengths_out_of_order():
    good = _point("lstm", 1, 256, 1e-4, 1e-5)
    with pytest.raises(ValidationError, match="steps_long"):
        RnnPoint(**{**good.model_dump(), "steps_short": 64, "steps_long": 16})


def test_model_reproduces_calibrated_points_and_scales_with_steps():
    dev = DeviceModel(load_profile_file(FIXTURE).gpu, "cuda")
    model = RnnModel(_curve_at_ratio(dev, 3.0, 150e-6), dev.matmul_model("float32"))
    gemm = dev.matmul_model("float32").time_s(32, 4 * 512, 1024)
    assert model.time_s("lstm", 100, 32, 2048, 1024) == pytest.approx(150e-6 + 100 * 3.0 * gemm, rel=1e-6)
    assert model.time_s("lstm", 200, 32, 2048, 1024) - model.time_s("lstm", 100, 32, 2048, 1024) == pytest.approx(100 * 3.0 * gemm, rel=1e-6)


def test_cell_type_is_read_from_every_fused_op():
    ops = capture_ops(torch.nn.LSTM(8, 16), torch.randn(5, 3, 8))
    assert {rnn_kind(o) for o in ops if o.packet == "aten.mkldnn_rnn_layer"} == {"lstm"}
    assert rnn_kind(next(o for o in ops if o.packet != "aten.mkldnn_rnn_layer")) is None


def test_calibrated_layers_price_an_lstm():
    """The 2-layer LSTM priced from calibrated layers: two calls of fixed + steps x ratio x GEMM."""
    profile = load_profile_file(FIXTURE)
    dev = DeviceModel(profile.gpu, "cuda")
    model = torch.nn.LSTM(256, 256, num_layers=2, batch_first=True)
    inputs = (torch.randn(32, 100, 256),)

    def rnn_kernel_s(p):
        report = analyze(model, inputs, p, device="cuda", batch_sweep=False)
        return sum(o.kernel_s for o in report.ops if o.category == "matmul")

    profile.gpu.measurements.rnn = []
    on_gemm_curve = rnn_kernel_s(profile)
    profile.gpu.measurements.rnn = [_curve_at_ratio(dev, 3.0, 150e-6)]
    calibrated = rnn_kernel_s(profile)
    gemm = dev.matmul_model("float32").time_s(32, 1024, 512)
    assert calibrated == pytest.approx(2 * (150e-6 + 100 * 3.0 * gemm), rel=0.02)
    assert calibrated > on_gemm_curve


def test_measure_rnn_on_the_cpu_gives_a_valid_curve():
    curve = measure_rnn("float32", [(2, 16)], "cpu", steps=(2, 6), budget_s=0.01, warnings=[])
    assert curve.dtype == "float32" and [p.kind for p in curve.points] == ["lstm", "gru"]
    assert all(p.time_long.median_s > 0 for p in curve.points)


def test_a_point_whose_short_run_was_slower_is_skipped():
    """Run 19: a 16-step call at 4.3 ms beside a 64-step call at 1.4 ms (a first-call outlier)."""
    dev = DeviceModel(load_profile_file(FIXTURE).gpu, "cuda")
    good = _curve_at_ratio(dev, 3.0, 150e-6)
    bad = RnnPoint(kind="lstm", batch=32, input_size=512, hidden=512, steps_short=16, steps_long=64,
                   time_short=_stat(4.3e-3), time_long=_stat(1.4e-3))
    with_bad = RnnCurve(dtype="float32", points=good.points + [bad])
    a = RnnModel(good, dev.matmul_model("float32")).time_s("lstm", 100, 32, 2048, 1024)
    b = RnnModel(with_bad, dev.matmul_model("float32")).time_s("lstm", 100, 32, 2048, 1024)
    assert b == pytest.approx(a)


def test_the_rnn_stage_is_put_at_the_profiles_host_speed_by_its_median_index():
    # a stage whose index ran at half the profile's index time was timed on a host twice as fast:
    # at the profile's host speed its layers take twice as long; a host scale moves them again
    from roofline.model.host import calibrated_index_s, with_host_scale

    profile = load_profile_file(FIXTURE)
    dev = DeviceModel(profile.gpu, "cuda")
    index_s = calibrated_index_s(profile.gpu.measurements.overheads)
    curve = _curve_at_ratio(dev, 3.0, 150e-6)
    plain = RnnModel(curve, dev.matmul_model("float32"))
    # one point's index is an outlier: the stage's median decides
    stage = [index_s / 2] * (len(curve.points) - 1) + [index_s * 5]
    fast_host = RnnCurve(dtype="float32", points=[p.model_copy(update=dict(host_index_s=i)) for p, i in zip(curve.points, stage)])
    profile.gpu.measurements.rnn = [fast_host]
    at_calibration = DeviceModel(profile.gpu, "cuda").rnn_model("float32").time_s("lstm", 100, 32, 2048, 1024)
    assert at_calibration == pytest.approx(2 * plain.time_s("lstm", 100, 32, 2048, 1024), rel=1e-6)
    scaled = with_host_scale(profile, "cuda", 1.5)
    at_scale = DeviceModel(scaled.gpu, "cuda").rnn_model("float32").time_s("lstm", 100, 32, 2048, 1024)
    assert at_scale == pytest.approx(1.5 * at_calibration, rel=1e-6)


def test_measure_rnn_times_the_host_index_beside_each_point():
    curve = measure_rnn("float32", [(1, 8)], "cpu", steps=(2, 6), budget_s=0.003, warnings=[])
    assert curve.points and all(p.host_index_s and p.host_index_s > 0 for p in curve.points)


def test_a_prediction_at_another_host_speed_moves_the_rnn_layers_too():
    # Analysis.at_host_scale reuses the device's kernel times, except a fused RNN's: its layers are
    # launched step by step from the host, so at twice the host time they take twice as long
    from roofline.pipeline import Analysis, Options
    from roofline.model.host import calibrated_index_s

    profile = load_profile_file(FIXTURE)
    index_s = calibrated_index_s(profile.gpu.measurements.overheads)
    dev = DeviceModel(profile.gpu, "cuda")
    curve = _curve_at_ratio(dev, 3.0, 150e-6)
    profile.gpu.measurements.rnn = [RnnCurve(dtype="float32", points=[p.model_copy(update=dict(host_index_s=index_s)) for p in curve.points])]
    rnn = torch.nn.LSTM(64, 128, batch_first=True).eval()
    analysis = Analysis.of(rnn, (torch.randn(4, 50, 64),), None, profile, Options(device="cuda", batch_sweep=False))
    (layer,) = [k for (k, *_), c in zip(analysis.kernels(), analysis.costs) if c.recurrence is not None]
    (twice,) = [k for (k, *_), c in zip(analysis.at_host_scale(2.0).kernels(), analysis.costs) if c.recurrence is not None]
    assert layer > 0 and twice == pytest.approx(2 * layer, rel=1e-6)
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU())
    plain = Analysis.of(mlp, (torch.randn(4, 64),), None, profile, Options(device="cuda", batch_sweep=False))
    kernels = plain.kernels()
    assert plain.at_host_scale(2.0).kernels() is kernels  # device time, shared


def test_a_synchronized_stage_leaves_out_the_calls_own_dispatch_and_synchronize_once_per_op():
    # each synchronized point's call holds its dispatch and a synchronize, which a fused op makes once
    # and the timeline prices apart: each of its layers comes without them; an older stage's as they are
    profile = load_profile_file(FIXTURE)
    dev = DeviceModel(profile.gpu, "cuda")
    curve = _curve_at_ratio(dev, 3.0, 150e-6)
    call_s = 20e-6
    old = RnnModel(curve, dev.matmul_model("float32"), call_s=call_s)
    synced = RnnModel(curve.model_copy(update=dict(synchronized=True)), dev.matmul_model("float32"), call_s=call_s)
    layer = old.time_s("lstm", 100, 32, 2048, 1024)
    assert synced.time_s("lstm", 100, 32, 2048, 1024) == pytest.approx(layer)
    assert old.stack_s("lstm", 2, 100, 32, 2048, 1024) == pytest.approx(2 * layer)
    assert synced.stack_s("lstm", 2, 100, 32, 2048, 1024) == pytest.approx(2 * (layer - call_s))
    # the device model takes the call from the profile's synchronize and a GEMM call's dispatch
    from roofline.model.host import dispatch_s

    profile.gpu.measurements.rnn = [curve.model_copy(update=dict(synchronized=True))]
    o = profile.gpu.measurements.overheads
    assert DeviceModel(profile.gpu, "cuda").rnn_model("float32").call_s == pytest.approx(o.synchronize_s.median_s + dispatch_s(o, "addmm"))


def test_measure_rnn_marks_its_curve_synchronized_and_the_shipped_h100_stage_is():
    curve = measure_rnn("float32", [(1, 8)], "cpu", steps=(2, 6), budget_s=0.003, warnings=[])
    assert curve.synchronized
    shipped = load_profile_file(Path(__file__).parent.parent / "device_profiles" / "nvidia-h100-80gb-hbm3.json")
    assert shipped.gpu.measurements.rnn and all(c.synchronized for c in shipped.gpu.measurements.rnn)


def test_refresh_measures_the_rnn_stage_under_the_runners_seconds_key():
    # the key a whole calibration's runner wrote (a recorded H100 calibration), not one refresh wrote
    from calibrate.refresh import STAGES

    stage = STAGES["rnn"]
    assert stage.field == "rnn" and stage.merge is None
    calibrated = load_profile_file(Path(__file__).parent.parent / "benchmarks" / "results" / "h100_heldout_s41_profile.json")
    assert not calibrated.calibration.refreshed and stage.seconds_key in calibrated.calibration.stage_seconds
