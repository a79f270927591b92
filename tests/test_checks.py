"""--measure's checks against measurements no model error explains: a host-speed index at x1168 against calibration
(the profile is of another machine, or the run stalled) and a forward a thousand times off its prediction are warned
about, with the likely cause and what to do, and no prediction at such a host speed is given or printed. The
measurements are doctored: no GPU needed."""

from __future__ import annotations

import io
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from rich.console import Console

from roofline.checks import attach_alternatives, attach_decode_host_speed, attach_host_speed, attach_measurement
from roofline.measure.host_speed import HostSpeed
from roofline.measure.run import Measurement
from roofline.pipeline import Analysis, Options
from roofline.report.terminal import render
from roofline.schema.report import DecodeReport
from roofline.timing import Timing

PROFILE = "nvidia-h100-80gb-hbm3"
AT_HOST_SPEED = "at the host's speed during the measurement"


@pytest.fixture(scope="module")
def analysis():
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).eval()
    return Analysis.of(model, (torch.randn(4, 64),), None, PROFILE, Options(device="cuda", capture_device="cpu", batch_sweep=False))


def measured(analysis: Analysis, over_predicted: float, host_scale: float):
    """The report with a doctored measurement: the forward took ``over_predicted`` times its prediction and the
    host-speed index ran ``host_scale`` times its calibrated time."""
    report = analysis.report()
    m = Measurement(
        total=Timing(np.full(5, over_predicted * report.total.predicted_s), label="forward"),
        op_s=[None] * len(analysis.graph.ops), profiled_runs=0,
        host_speed=HostSpeed(index_now_s=host_scale * 1e-4, index_calibrated_s=1e-4, blocks=7),
    )
    attach_measurement(report, m, analysis)
    attach_host_speed(report, analysis, m.host_speed.scale)
    return report


def printed(report) -> str:
    console = Console(file=io.StringIO(), width=1000, color_system=None)
    render(report, console)
    return console.file.getvalue()


def host_warnings(report) -> list[str]:
    return [w for w in report.warnings if "host-speed index" in w]


def test_a_drifting_host_gets_its_prediction(analysis):
    report = measured(analysis, 1.2, 1.3)
    assert report.total.host_scale == pytest.approx(1.3)
    assert report.total.predicted_at_host_now_s > report.total.predicted_s
    assert not report.warnings
    out = printed(report)
    assert AT_HOST_SPEED in out and "host x1.30" in out and "implausible" not in out


def test_an_absurd_host_scale_is_warned_about_and_not_predicted(analysis):
    report = measured(analysis, 1.2, 1168.75)
    assert report.total.host_scale == pytest.approx(1168.75), "the measurement itself is kept"
    assert report.total.predicted_at_host_now_s is None
    (warning,) = host_warnings(report)
    for words in ("x1168.75", "not of this machine", "stalled", "recalibrate", "roofline calibrate", "quiet machine"):
        assert words in warning
    out = printed(report)
    assert AT_HOST_SPEED not in out, "no prediction printed at that host speed"
    assert "host x1168.75 against calibration: implausible" in out and f"warning: {warning}" in out
    assert report.model_validate_json(report.model_dump_json()).total.host_scale == pytest.approx(1168.75)


@pytest.mark.parametrize("scale, plausible", [(0.01, False), (0.19, False), (0.2, True), (4.9, True), (5.1, False)])
def test_the_plausible_band(analysis, scale, plausible):
    report = measured(analysis, 1.0, scale)
    assert (report.total.predicted_at_host_now_s is not None) == plausible
    assert len(host_warnings(report)) == (0 if plausible else 1)


@pytest.mark.parametrize("over_predicted, absurd", [(1e-3, True), (0.1, True), (0.3, False), (1.0, False), (3.0, False), (6.0, True)])
def test_an_absurd_end_to_end_error_is_warned_about(analysis, over_predicted, absurd):
    report = measured(analysis, over_predicted, 1.0)
    warnings = [w for w in report.warnings if "beyond the model's error" in w]
    assert len(warnings) == (1 if absurd else 0)
    if absurd:
        assert f"'{PROFILE}' is likely not of this machine" in warnings[0] and "recalibrate" in warnings[0]
        assert f"{100 * (1 / over_predicted - 1):+.0f}%" in warnings[0]


def test_a_measured_alternative_at_an_absurd_host_scale(analysis):
    report = measured(analysis, 1.0, 1.0)
    eager = report.total.measured_s
    attach_alternatives(report, {"cuda_graphs": eager / 2}, [], {"cuda_graphs": eager}, {"cuda_graphs": 1168.75}, predict_at=analysis.at_host_scale)
    (check,) = report.gain_checks
    assert check.host_scale is None and check.predicted_gain_now_s is None
    assert check.measured_gain_s == pytest.approx(eager / 2), "the measured gain itself is kept"
    assert "beside it" not in report.advice[-1]
    assert len(host_warnings(report)) == 1

    sane = measured(analysis, 1.0, 1.0)
    attach_alternatives(sane, {"cuda_graphs": eager / 2}, [], {"cuda_graphs": eager}, {"cuda_graphs": 1.2}, predict_at=analysis.at_host_scale)
    assert sane.gain_checks[0].host_scale == pytest.approx(1.2) and "beside it (x1.20)" in sane.advice[-1]
    assert not host_warnings(sane)


def test_a_decode_loop_at_an_absurd_host_scale(analysis):
    class Decode:
        def report(self, host_scale):
            assert 0.2 <= host_scale <= 5, "never predicted at an implausible host speed"
            return SimpleNamespace(per_token_s=host_scale * 1e-3, total_s=host_scale * 1e-2)

    for scale, kept in ((1.5, True), (1168.75, False)):
        report = analysis.report()
        report.decode = DecodeReport.model_construct(host_scale=None, per_token_now_s=None, total_now_s=None)
        attach_decode_host_speed(report, Decode(), scale)
        assert report.decode.host_scale == scale
        assert (report.decode.per_token_now_s == pytest.approx(1.5e-3)) if kept else report.decode.per_token_now_s is None
        assert len(host_warnings(report)) == (0 if kept else 1)
