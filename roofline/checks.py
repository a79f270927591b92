"""Predictions checked against measurements (``--measure``): measured times, per-op errors and
roofline fractions put into a report, the prediction at the host's speed of the measurement beside
the one as calibrated, and each measured alternative's gain against its predicted gain.

A measurement far outside what a host's drift or the model's error can explain (a host-speed scale of
x1000, a forward 1000x off its prediction) means the profile is not of this machine or the run
stalled: the report says so in a warning, with what to do, and gives no prediction at that host speed.
"""

from __future__ import annotations

from typing import Callable

import torch

from roofline.measure.host_speed import PLAUSIBLE_HOST_SCALE, host_scale_plausible
from roofline.measure.run import Measurement, roofline_time_s
from roofline.model.kernels import matmul_dtype_name
from roofline.pipeline import Analysis, module_rollups
from roofline.schema.report import GainCheck, Report
from roofline.units import seconds

# A host drifts by tens of percent from its calibration; a scale outside PLAUSIBLE_HOST_SCALE is not drift but another
# machine or a stalled run, and a prediction at it means nothing (docs/design.md, "Plausible measurements", has the evidence).
# Predicted over measured end to end: beyond this band the figures describe different machines or a stalled run,
# not the model's error, which stays well inside it.
PLAUSIBLE_PREDICTED_OVER_MEASURED = (0.2, 5.0)
WHAT_TO_DO = (
    "recalibrate on this machine (roofline calibrate, or pick its profile with --profile) and rerun --measure on a quiet machine"
)


def implausible_host_scale(scale: float, profile: str) -> str:
    """The warning for a host-speed scale outside ``PLAUSIBLE_HOST_SCALE``."""
    low, high = PLAUSIBLE_HOST_SCALE
    return (
        f"the host-speed index ran x{scale:.2f} against calibration, outside x{low:g}..x{high:g}: profile '{profile}' is likely "
        f"not of this machine, or the run stalled; no prediction at that host speed is given: {WHAT_TO_DO}"
    )


def _warn_once(report: Report, warning: str) -> None:
    if warning not in report.warnings:
        report.warnings.append(warning)


def _check_end_to_end(report: Report) -> None:
    """Warn when the measured total is beyond any plausible error of the prediction."""
    predicted, measured = report.total.predicted_s, report.total.measured_s
    if not measured or not predicted:
        return
    low, high = PLAUSIBLE_PREDICTED_OVER_MEASURED
    ratio = predicted / measured
    if not low <= ratio <= high:
        _warn_once(report, (
            f"predicted {seconds(predicted)} against {seconds(measured)} measured ({100 * (ratio - 1):+.0f}%), beyond the model's error: "
            f"profile '{report.profile.name}' is likely not of this machine or device, or the measurement stalled; {WHAT_TO_DO}"
        ))


def attach_measurement(report: Report, measurement: Measurement, analysis: Analysis) -> Report:
    """Fill ``measured_s``, per-op errors and roofline fractions from a measurement."""
    dev = analysis.dev
    report.total.measured_s = measurement.total.median_s
    report.total.measured_spread_s = measurement.total.iqr_s
    copy_curve = dev.part.measurements.bandwidth_curve("copy")
    peak_bw = copy_curve.dram_bytes_per_s(dev.cache_bytes) if copy_curve else 0.0
    gpu = report.profile.kind == "cuda"
    for op, measured in zip(report.ops, measurement.op_s):
        op.measured_s = measured
        if measured is None or measured <= 0:
            continue
        predicted = (op.kernels_busy_s or op.kernel_s) if gpu else op.predicted_s
        if predicted > 0 or op.kernels:
            op.error = (predicted - measured) / measured
        if op.kernels:
            if op.category in ("matmul", "conv", "attention"):
                dtype = op.inputs[0].dtype if op.inputs else "float32"
                name = matmul_dtype_name(getattr(torch, dtype, torch.float32), report.allow_tf32)
                peak_flops = dev.matmul_model(name).peak_flop_per_s
            else:
                peak_flops = dev.vector_flop_per_s
            roof = roofline_time_s(op.flops, op.bytes_read + op.bytes_written, peak_flops, peak_bw)
            op.roofline_fraction = roof / measured if roof > 0 else None
    report.modules = module_rollups(report.ops)
    report.warnings += measurement.notes
    _check_end_to_end(report)
    return report


def phase_prediction_s(phase) -> float:
    """A phase's prediction as its measurement times it (alone between synchronizations)."""
    return phase.alone_s if phase.alone_s is not None else phase.predicted_s


def attach_step_measurement(report: Report, measured) -> Report:
    """Put real training steps (``roofline.measure.train.StepMeasurement``) beside the predicted step:
    the step, each phase, and the peak of memory."""
    step = report.training
    report.total.measured_s = measured.total.median_s
    report.total.measured_spread_s = measured.total.iqr_s
    step.measured_s = measured.total.median_s
    for phase in step.phases:
        phase.measured_s = measured.phases_s.get(phase.phase)
    step.memory.measured_peak_bytes = measured.peak_bytes
    def err(p, m):
        return f"{100 * (p - m) / m:+.0f}%" if m else "-"
    line = f"checked: training step measured {seconds(measured.total.median_s)} against {seconds(step.predicted_s)} predicted ({err(step.predicted_s, measured.total.median_s)}); " + ", ".join(
        f"{p.phase} {seconds(p.measured_s)} against {seconds(phase_prediction_s(p))} ({err(phase_prediction_s(p), p.measured_s)})" for p in step.phases if p.measured_s
    )
    if measured.peak_bytes:
        from roofline.units import count

        line += f"; peak memory {count(measured.peak_bytes, 'B')} against {count(step.memory.peak_bytes, 'B')} predicted ({err(step.memory.peak_bytes, measured.peak_bytes)})"
    report.advice.append(line)
    report.warnings += measured.notes
    _check_end_to_end(report)
    return report


def attach_host_speed(report: Report, analysis: Analysis, scale: float) -> Report:
    """Put the prediction at the host's speed of the measurement beside the one as calibrated: the
    same graph and costs predicted with every host cost times the host-speed index's scale. Host
    speed drifts by tens of percent on a shared machine; this separates that drift from the model's
    own error. A scale outside ``PLAUSIBLE_HOST_SCALE`` is kept and warned about, with no prediction at it."""
    report.total.host_scale = scale
    if not host_scale_plausible(scale):
        report.total.predicted_at_host_now_s = None
        _warn_once(report, implausible_host_scale(scale, report.profile.name))
        return report
    report.total.predicted_at_host_now_s = analysis.at_host_scale(scale).total_s
    return report


def attach_decode_host_speed(report: Report, decode, scale: float) -> Report:
    """The decode loop (``roofline.decode.DecodeAnalysis``) predicted again at the host scale timed beside
    it, when that scale is plausible."""
    d = report.decode
    d.host_scale = scale
    if not host_scale_plausible(scale):
        d.per_token_now_s = d.total_now_s = None
        _warn_once(report, implausible_host_scale(scale, report.profile.name))
        return report
    now = decode.report(host_scale=scale)
    d.per_token_now_s, d.total_now_s = now.per_token_s, now.total_s
    return report


def attach_alternatives(
    report: Report, measured: dict, notes: list[str], eager_beside: dict | None = None, scale_beside: dict | None = None,
    predict_at: Callable[[float], Analysis] | None = None,
) -> Report:
    """Put measured CUDA-graph and torch.compile times beside the predicted ones, with the gains.

    A measured gain is the eager time timed beside the alternative (``eager_beside``, from
    ``measure.alternatives.measure_alternatives``) less the alternative's; without it, the report's
    own eager time. With the host scales timed beside each alternative (``scale_beside``) and
    ``predict_at(scale)`` (the analysis at that host scale), each check also carries the gain
    predicted at the host's speed of its own measurement."""
    predicted = report.alternatives.by_name() if report.alternatives else {}
    report.measured_alternatives_s = dict(measured)
    checks = []
    for key, value in measured.items():
        pred = predicted.get(key)
        eager_measured = (eager_beside or {}).get(key) or report.total.measured_s
        if pred is None or not eager_measured:
            continue
        pred_gain = report.total.predicted_s - pred
        meas_gain = eager_measured - value
        err = (pred_gain - meas_gain) / abs(meas_gain) if meas_gain else None
        check = GainCheck(alternative=key, predicted_s=pred, measured_s=value, measured_eager_s=eager_measured,
                          predicted_gain_s=pred_gain, measured_gain_s=meas_gain, gain_error=err)
        now = ""
        scale = (scale_beside or {}).get(key)
        if scale is not None and not host_scale_plausible(scale):
            _warn_once(report, implausible_host_scale(scale, report.profile.name))
        elif scale is not None and predict_at is not None:
            at = predict_at(scale)
            alt_now = at.alternatives.by_name().get(key)
            if alt_now is not None:
                gain_now = at.total_s - alt_now
                err_now = (gain_now - meas_gain) / abs(meas_gain) if meas_gain else None
                check = check.model_copy(update=dict(host_scale=scale, predicted_eager_now_s=at.total_s, predicted_now_s=alt_now,
                                                     predicted_gain_now_s=gain_now, gain_error_now=err_now))
                now = f"; at the host's speed beside it (x{scale:.2f}) {seconds(gain_now)}" + (f", {100 * err_now:+.0f}%" if err_now is not None else "")
        checks.append(check)
        report.advice.append(
            f"checked: {key.replace('_', ' ')} measured {seconds(value)} against eager {seconds(eager_measured)} "
            f"(gain {seconds(meas_gain)}; predicted {seconds(pred_gain)}" + (f", {100 * err:+.0f}%" if err is not None else "") + now + ")"
        )
    report.gain_checks = checks
    report.warnings += notes
    return report
