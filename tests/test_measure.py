"""--measure on the CPU: the protocol's total, per-op times mapped back to the ops, and refusals."""

import pytest
import torch

from roofline.checks import attach_measurement
from roofline.errors import DeviceNotAvailable, ProfileError
from roofline.measure.device import device_for
from roofline.measure.run import measure
from roofline.pipeline import Analysis, Options
from roofline.profiles import load_profile_file
from tests.conftest import REPO


def test_cpu_measure_fills_every_op(cpu_quick_profile_path):
    profile = load_profile_file(cpu_quick_profile_path)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).eval()
    x = torch.randn(4, 64)
    analysis = Analysis.of(model, (x,), None, profile, Options(device="cpu", batch_sweep=False))
    report = analysis.report()
    m = measure(analysis.graph, model, (x,), {}, device_for(profile, "cpu"), budget_s=0.1, runs=3)
    attach_measurement(report, m, analysis)
    assert report.total.measured_s > 0 and report.total.measured_spread_s >= 0
    kernel_ops = [op for op in report.ops if op.kernels]
    assert kernel_ops and all(op.measured_s is not None and op.measured_s > 0 for op in kernel_ops)
    assert all(op.error is not None for op in kernel_ops)
    assert any(m.measured_s is not None for m in report.modules)


def test_gpu_profile_without_gpu_is_refused():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    profile = load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json")
    with pytest.raises(DeviceNotAvailable, match="no CUDA device"):
        device_for(profile, "cuda")


def test_cpu_part_of_another_machine_is_refused(cpu_quick_profile_path):
    profile = load_profile_file(cpu_quick_profile_path)
    profile.host.identity.model = "Some Other CPU 9000"
    with pytest.raises(ProfileError, match="Some Other CPU 9000"):
        device_for(profile, "cpu")


def _recording(calls: list, name: str, seconds: float):
    """A callable that records its name in ``calls`` and sleeps ``seconds``."""
    import time

    def fn():
        calls.append(name)
        time.sleep(seconds)

    return fn


def test_paired_times_alternate_rounds_within_the_budget():
    # eager and the alternative take turns, round by round; a slow call is made once per round
    # (not the timing protocol's minimum samples), and the medians come from each side's own calls
    from roofline.measure.alternatives import paired_times

    calls = []
    eager_s, alt_s, index_s = paired_times(_recording(calls, "eager", 0.004), _recording(calls, "alt", 0.001), budget_s=0.01, rounds=3)
    assert calls[:3] == ["eager", "alt", "eager"]  # warm-up of each, then one eager call to size the rounds
    # 0.01 s / 6 per side per round < one call: one timed call each, after one untimed call
    assert calls[3:] == ["eager", "eager", "alt", "alt"] * 3
    assert eager_s > alt_s >= 0.001 and index_s == {}


def test_paired_times_time_the_index_in_the_same_rounds():
    # the host-speed index takes its turn in every round, and its figure is per pass
    from roofline.measure.alternatives import INDEX_SAMPLES_PER_ROUND, paired_times
    from roofline.measure.host_speed import INDEX_CALLS

    calls = []
    _, _, index_s = paired_times(
        _recording(calls, "eager", 0.002), _recording(calls, "alt", 0.001), budget_s=0.001, rounds=2,
        indexes={"cuda": _recording(calls, "index", 0.0005), "cpu": _recording(calls, "cpu index", 0.0005)},
    )
    # one untimed pass, then INDEX_SAMPLES_PER_ROUND samples of INDEX_CALLS timed passes
    passes = 1 + INDEX_SAMPLES_PER_ROUND * INDEX_CALLS
    per_round = ["eager", "eager", "alt", "alt"] + ["index"] * passes + ["cpu index"] * passes
    assert calls[3:] == per_round * 2
    assert set(index_s) == {"cuda", "cpu"}
    assert all(0.0005 <= v < 0.002 for v in index_s.values())  # one pass, not the sample of INDEX_CALLS passes


def test_measure_placement_times_both_sides_beside_the_host_index():
    # CPU and GPU sides alternate; with a profile, the host CPU's index is timed in the same rounds
    # and its scale against calibration comes back (no GPU here: the "GPU" side runs on the CPU)
    from roofline.measure.alternatives import measure_placement

    profile = load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json")
    model = torch.nn.Linear(64, 64)
    m = measure_placement(model, (torch.randn(8, 64),), {}, "cpu", budget_s=0.01, profile=profile)
    assert m["cpu_s"] > 0 and m["gpu_with_copies_s"] > 0
    assert set(m["host_scales"]) == {"cpu"} and m["host_scales"]["cpu"] > 0
    assert next(model.parameters()).device.type == "cpu"  # the caller's module is not moved away
    assert measure_placement(model, (torch.randn(8, 64),), {}, "cpu", budget_s=0.01)["host_scales"] == {}
