"""A dense GPU convolution's kernels without the gaps between them: the shipped H100 profile's points
record both the call's time and its kernels' summed time (``ConvPoint.kernels_s``, torch.profiler on
the H100); the timeline keeps the call's time, the per-op report and its error under --measure take
the kernels' time, as the profiler measures an op."""

import numpy as np
import pytest
import torch

from roofline.checks import attach_measurement
from roofline.measure.run import Measurement
from roofline.timing import Timing
from roofline.pipeline import Analysis, Options
from roofline.profiles import load_profile_file
from tests.conftest import REPO

H100 = REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json"


def _conv_report(profile, dtype=torch.float16):
    conv = torch.nn.Conv2d(128, 128, 3, 1, 1, bias=False, dtype=dtype, device="meta")
    x = torch.empty(32, 128, 28, 28, dtype=dtype, device="meta")
    a = Analysis.of(conv, (x,), None, profile, Options(device="cuda", capture_device="cpu", batch_sweep=False))
    return a, next(op for op in a.report().ops if op.category == "conv")


def _without_kernel_times(profile):
    stripped = profile.model_copy(deep=True)
    for curve in stripped.gpu.measurements.conv:
        curve.points = [p.model_copy(update=dict(kernels_s=None)) for p in curve.points]
    return stripped


def test_the_shipped_points_hold_their_kernels_time_below_the_calls():
    profile = load_profile_file(H100)
    shares = [p.kernels_s / p.time.median_s for c in profile.gpu.measurements.conv for p in c.points if p.kernels_s]
    assert len(shares) > 500
    shares.sort()
    assert 0.75 < shares[len(shares) // 2] < 0.95 and shares[len(shares) // 10] < 0.85 and shares[-2] <= 1.05


def test_a_convolution_reports_its_kernels_without_the_gaps_and_the_timeline_keeps_them():
    profile = load_profile_file(H100)
    a, op = _conv_report(profile)
    assert op.kernels_busy_s is not None and 0.6 * op.kernel_s < op.kernels_busy_s < op.kernel_s
    b, plain = _conv_report(_without_kernel_times(profile))
    assert plain.kernels_busy_s is None
    assert plain.kernel_s == op.kernel_s and b.total_s == a.total_s  # the device time is the call's, gaps included


def test_the_per_op_error_is_against_the_kernels_time():
    profile = load_profile_file(H100)
    a, op = _conv_report(profile)
    report = a.report()
    i = next(k for k, o in enumerate(report.ops) if o.category == "conv")
    measured = [None] * len(report.ops)
    measured[i] = op.kernels_busy_s
    m = Measurement(total=Timing(samples_s=np.full(5, a.total_s)), op_s=measured, profiled_runs=5)
    attached = attach_measurement(report, m, a)
    assert abs(attached.ops[i].error) < 1e-9


def test_other_ops_report_no_separate_kernels_time():
    profile = load_profile_file(H100)
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU())
    a = Analysis.of(mlp, (torch.empty(8, 64, device="meta"),), None, profile, Options(device="cuda", capture_device="cpu", batch_sweep=False))
    assert all(op.kernels_busy_s is None for op in a.report().ops)


def test_the_measured_chart_and_the_error_agree():
    from roofline.report.charts.measured import measured_pairs

    profile = load_profile_file(H100)
    a, op = _conv_report(profile)
    report = a.report()
    i = next(k for k, o in enumerate(report.ops) if o.category == "conv")
    report.ops[i].measured_s = op.kernels_busy_s
    ((_, predicted, measured),) = measured_pairs(report)
    assert predicted == measured == op.kernels_busy_s


def test_a_channels_last_convolution_reports_no_separate_kernels_time():
    # its stride-1 points are its NCHW twin's, whose layout transforms it does not run
    profile = load_profile_file(H100)
    conv = torch.nn.Conv2d(128, 128, 3, 1, 1, bias=False, dtype=torch.float16, device="meta")
    x = torch.empty(32, 128, 28, 28, dtype=torch.float16, device="meta").contiguous(memory_format=torch.channels_last)
    a = Analysis.of(conv, (x,), None, profile, Options(device="cuda", capture_device="cpu", batch_sweep=False))
    assert next(op for op in a.report().ops if op.category == "conv").kernels_busy_s is None
    # a channels-last weight (model.to(memory_format=channels_last)) under an NCHW input runs NHWC too
    conv = conv.to(memory_format=torch.channels_last)
    b = Analysis.of(conv, (x.contiguous(),), None, profile, Options(device="cuda", capture_device="cpu", batch_sweep=False))
    assert next(op for op in b.report().ops if op.category == "conv").kernels_busy_s is None


def test_the_share_takes_the_measured_points_alone_and_prices_the_larger_term():
    import math

    from roofline.model.curves import BUSY_SHARE_MAX, ConvKey, ConvModel, _keyed_rows
    from roofline.model.device import DeviceModel

    profile = load_profile_file(H100)
    a, op = _conv_report(profile)
    gap_share = (op.kernel_s - op.kernels_busy_s) / max(op.compute_s, op.memory_s)
    assert 0.0 < gap_share < 0.5  # busy = kernel - (1 - share) x the larger term
    curve = next(c for c in profile.gpu.measurements.conv if c.dtype == "float16")
    matmul = DeviceModel(profile.gpu, "cuda").matmul_model("float16")
    model, key, gemm = ConvModel(curve, matmul), ConvKey("2d", 9, False, True), (25088, 128, 1152)
    # the three points nearest this 3x3 (the model's rows follow the curve's points)
    rows = {id(r) for r in _keyed_rows(model._keyed_rows, key)}
    candidates = [i for i, r in enumerate(model._keyed_rows) if id(r) in rows]
    target = [math.log(v) for v in gemm]
    nearest = sorted(candidates, key=lambda i: sum((a - b) ** 2 for a, b in zip(model._keyed_rows[i][1][:3], target)))[:3]

    def with_nearest(kernels_s):
        points = [p.model_copy(update=dict(kernels_s=kernels_s(p))) if i in nearest else p for i, p in enumerate(curve.points)]
        return ConvModel(curve.model_copy(update=dict(points=points)), matmul).busy_share(*gemm, 9, key)

    unmeasured = with_nearest(lambda p: None)
    slow = with_nearest(lambda p: BUSY_SHARE_MAX * 1.1 * p.time.median_s)
    assert slow == unmeasured < 0.99  # left out, not counted as 1, and the next nearest measured points price it
    assert unmeasured != model.busy_share(*gemm, 9, key)


def test_kernel_times_land_on_their_own_points_across_profiler_sessions(monkeypatch):
    import calibrate.conv as conv

    curve = conv.measure_conv("float32", conv.CPU_SHAPES, "cpu", budget_s=0.001, warnings=[])
    seen = []

    def fake(calls):
        seen.append(len(calls))
        return [(len(seen) * 100 + i) * 1e-6 for i in range(len(calls))]

    monkeypatch.setattr(conv, "summed_kernels_s", fake)
    monkeypatch.setattr(conv, "PROFILED_AT_ONCE", 3)
    (out,) = conv.with_kernel_times([curve], "cpu", [])
    assert seen == [3, 1] and [p.kernels_s for p in out.points] == pytest.approx([100e-6, 101e-6, 102e-6, 200e-6])
    assert [p.time for p in out.points] == [p.time for p in curve.points]
