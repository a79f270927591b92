"""A dense GPU convolution's kernels without the gaps between them: the shipped H100 profile's points
record both the call's time and its kernels' summed time (``ConvPoint.kernels_s``, torch.profiler on
the H100); the timeline keeps the call's time, the per-op report and its error under --measure take
the kernels' time, as the profiler measures an op."""

import numpy as np
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
    assert 0.85 < shares[len(shares) // 2] < 1.0 and shares[len(shares) // 10] < 0.9


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
