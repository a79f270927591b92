"""The profile's sanity checks (roofline.profile_checks): each passes real profiles and fails a doctored copy of
one, and the caveats they give every report (a quick profile, failed checks, a busy machine)."""

from __future__ import annotations

import io

import pytest
import torch
from rich.console import Console

from roofline.pipeline import Analysis, Options
from roofline.profile_checks import check_part, check_profile, profile_caveats
from roofline.profiles import load_profile_file
from roofline.report.terminal import render
from roofline.schema.profile import BandwidthPoint, MachineLoad, MatmulPoint, PointwisePoint, Stat
from tests.conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "h100_profile.json"
SHIPPED = REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json"


@pytest.fixture(scope="module")
def real():
    return load_profile_file(FIXTURE)


def real_profile_host():
    return load_profile_file(FIXTURE).host


@pytest.fixture
def profile(real):
    return real.model_copy(deep=True)


def failing(problems, check: str, stage: str | None = None):
    return [p for p in problems if p.check == check and stage in (None, p.stage)]


def timed(point, time_s: float):
    """The point with another time and the rates that time gives."""
    stat = Stat(median_s=time_s, iqr_s=0.0, samples=point.time.samples)
    if isinstance(point, MatmulPoint):
        return point.model_copy(update=dict(time=stat, flop_per_s=2 * point.m * point.n * point.k / time_s))
    if isinstance(point, BandwidthPoint):
        return point.model_copy(update=dict(time=stat, bytes_per_s=point.bytes / time_s))
    assert isinstance(point, PointwisePoint)
    return point.model_copy(update=dict(time=stat, bytes_per_s=point.bytes / time_s, elements_per_s=point.elements / time_s))


@pytest.mark.parametrize("path", [FIXTURE, SHIPPED])
def test_real_profiles_pass_every_check_prediction_does_not_repair(path):
    problems = check_profile(load_profile_file(path))
    assert [str(p) for p in problems if not p.repaired_at_prediction] == []
    assert profile_caveats(load_profile_file(path)) == []


def test_a_stall_on_the_smallest_point_fails(profile):
    curve = profile.host.measurements.bandwidth_curve("copy")
    assert not failing(check_part(profile.host, "cpu"), "stall", "bandwidth copy")
    curve.points = [timed(p, p.time.median_s + 8e-3) for p in curve.points]  # a constant 8 ms per call
    (problem,) = failing(check_part(profile.host, "cpu"), "stall", "bandwidth copy")
    assert problem.points == tuple(p.working_set_bytes for p in curve.points)  # re-measured whole
    assert "8" in problem.detail and problem.blocking and not problem.repaired_at_prediction


def test_a_plateau_of_stalls_inside_the_cache_fails(profile):
    """Calls of microsecond ops each waiting for a scheduler tick: milliseconds from one size on, a plateau no
    larger point undercuts (so it is monotone, and prediction's cap does not repair it)."""
    curve = profile.host.measurements.pointwise_curve("unary")
    assert not failing(check_part(profile.host, "cpu"), "stall", "pointwise unary float32")
    small = [i for i, p in enumerate(curve.points) if p.bytes <= 8 << 20]
    curve.points = [timed(p, 8e-3) if i in small[3:] else p for i, p in enumerate(curve.points)]
    (problem,) = failing(check_part(profile.host, "cpu"), "stall", "pointwise unary float32")
    assert f"{curve.points[small[3]].elements} elements took 8000 us" in problem.detail
    assert not problem.repaired_at_prediction and problem.blocking
    assert any("stall" in c for c in profile_caveats(profile, "cpu"))


def test_a_stalled_dispatch_fails(profile):
    ov = profile.host.measurements.overheads
    profile.host.measurements.overheads = ov.model_copy(update=dict(dispatch_s=Stat(median_s=8e-3, iqr_s=0.0, samples=5)))
    assert not failing(check_part(real_profile_host(), "cpu"), "stall", "overheads")
    (problem,) = failing(check_part(profile.host, "cpu"), "stall", "overheads")


def test_a_point_slower_than_a_larger_one_fails_and_prediction_repairs_it(profile):
    curve = profile.gpu.measurements.bandwidth_curve("copy")
    assert not failing(check_part(profile.gpu, "gpu"), "monotone") or all(p.stage != "bandwidth copy" for p in check_part(profile.gpu, "gpu"))
    i = len(curve.points) // 2
    curve.points = [timed(p, 10 * p.time.median_s) if j == i else p for j, p in enumerate(curve.points)]
    problems = [p for p in failing(check_part(profile.gpu, "gpu"), "monotone") if p.stage == "bandwidth copy"]
    assert len(problems) == 1 and problems[0].points == (curve.points[i].working_set_bytes,)
    assert problems[0].repaired_at_prediction and problems[0].blocking  # 10x: stall-shaped
    assert profile_caveats(profile) == []


def test_a_slow_point_below_the_stall_factor_does_not_block(profile):
    curve = profile.gpu.measurements.bandwidth_curve("write")
    i = len(curve.points) - 3  # a large point: microseconds of difference are well above the slack
    bound = min(p.time.median_s for p in curve.points[i + 1:])
    curve.points = [timed(p, 2 * bound) if j == i else p for j, p in enumerate(curve.points)]
    (problem,) = [p for p in failing(check_part(profile.gpu, "gpu"), "monotone") if p.stage == "bandwidth write"]
    assert not problem.blocking


def test_dram_slower_than_any_memory_fails(profile):
    """A quick CPU profile once saved DRAM at 0.35 GB/s."""
    cache = profile.host.identity.l3_cache_bytes
    curve = profile.host.measurements.bandwidth_curve("read")
    assert not failing(check_part(profile.host, "cpu"), "dram_range")
    curve.points = [timed(p, p.bytes / 0.35e9) if p.working_set_bytes > cache else p for p in curve.points]
    (problem,) = failing(check_part(profile.host, "cpu"), "dram_range")
    assert problem.stage == "bandwidth read" and "0.35 GB/s" in problem.detail and not problem.too_fast


def test_dram_faster_than_the_datasheet_fails(profile):
    curve = profile.gpu.measurements.bandwidth_curve("copy")
    curve.points = [timed(p, p.time.median_s / 3) for p in curve.points]  # 9 TB/s on a 3.35 TB/s part
    (problem,) = failing(check_part(profile.gpu, "gpu"), "dram_range")
    assert problem.too_fast


def test_a_dram_figure_read_in_the_cache_fails(profile):
    """The plan's sizes ended inside the last-level cache: the "DRAM" figure is a cache rate."""
    cache = profile.host.identity.l3_cache_bytes
    curve = profile.host.measurements.bandwidth_curve("copy")
    curve.points = [p for p in curve.points if p.working_set_bytes <= 4 << 20]
    assert max(p.working_set_bytes for p in curve.points) < cache
    problems = check_part(profile.host, "cpu")
    assert [p.stage for p in failing(problems, "dram_beyond_cache")] == ["bandwidth copy"]
    assert [p.stage for p in failing(problems, "reaches_dram")] == ["bandwidth copy"]


def test_a_dram_figure_faster_than_the_points_beyond_the_cache_fails(profile):
    cache = profile.host.identity.l3_cache_bytes
    curve = profile.host.measurements.bandwidth_curve("write")
    beyond = [p for p in curve.points if p.working_set_bytes > cache]
    assert len(beyond) >= 2 and not failing(check_part(profile.host, "cpu"), "dram_beyond_cache")
    # the largest point inside the cache and the first beyond it stay at cache speed
    inside = max((p for p in curve.points if p.working_set_bytes <= cache), key=lambda p: p.working_set_bytes)
    fast = {inside.working_set_bytes, beyond[0].working_set_bytes}
    curve.points = [timed(p, p.bytes / 400e9) if p.working_set_bytes in fast else p for p in curve.points]
    (problem,) = failing(check_part(profile.host, "cpu"), "dram_beyond_cache")
    assert problem.stage == "bandwidth write"


def test_an_op_family_curve_that_ends_in_the_cache_fails(profile):
    """A quick CPU profile's sin curve ended at 32 MiB moved, at its cache rate: a 2^24 sin was predicted 69% fast."""
    curve = profile.host.measurements.pointwise_curve("sin")
    best = max(curve.points, key=lambda p: p.bytes_per_s)
    curve.points = [p for p in curve.points if p.bytes <= best.bytes]
    (problem,) = failing(check_part(profile.host, "cpu"), "reaches_dram")
    assert problem.stage == "pointwise sin float32"


def test_disturbed_large_products_fail(profile):
    """Busy profiles predicted a 1024^3 GEMM at +199% to +420%: the top corner of the grid ran far below the rest."""
    curve = profile.host.measurements.matmul_curve("float32")
    top = max(curve.grid)
    assert not failing(check_part(profile.host, "cpu"), "matmul_rate")
    curve.points = [timed(p, 4 * p.time.median_s) if (p.m, p.n, p.k) == (top, top, top) else p for p in curve.points]
    (problem,) = failing(check_part(profile.host, "cpu"), "matmul_rate")
    assert problem.points == ((top, top, top),) and not problem.too_fast


def test_a_matmul_faster_than_the_datasheet_fails(profile):
    curve = profile.gpu.measurements.matmul_curve("bfloat16")
    best = max(curve.points, key=lambda p: p.flop_per_s)
    curve.points = [timed(p, p.time.median_s / 2) if p is best else p for p in curve.points]
    (problem,) = [p for p in failing(check_part(profile.gpu, "gpu"), "matmul_rate") if p.too_fast]
    assert problem.stage == "matmul bfloat16"


def test_caveats_name_a_quick_profile_failed_checks_and_a_busy_machine(profile):
    assert profile_caveats(profile) == []
    profile.calibration.quick = True
    assert any("quick" in c for c in profile_caveats(profile))
    profile.calibration.load = MachineLoad(cpus=2, others_busy_during=0.5, busy=True, busy_reasons=["other programs used 50% of the CPUs during calibration"])
    assert any("busy machine" in c and "50%" in c for c in profile_caveats(profile))
    profile.host.measurements.overheads = profile.host.measurements.overheads.model_copy(
        update=dict(dispatch_s=Stat(median_s=8e-3, iqr_s=0.0, samples=5)),
    )
    assert any("fails its sanity checks" in c and "stall" in c for c in profile_caveats(profile))
    # a report on the GPU part does not carry the CPU part's failure
    assert not any("sanity" in c for c in profile_caveats(profile, "cuda"))
    assert any("sanity" in c for c in profile_caveats(profile, "cpu"))


def test_a_forced_profile_says_so(profile):
    profile.calibration.forced = True
    profile.calibration.checks_failed = ["stall (cpu overheads): dispatch of one op took 8000 us"]
    (caveat,) = profile_caveats(profile)
    assert "--force" in caveat and "stall" in caveat


def test_every_report_of_a_quick_profile_says_it(profile):
    profile.calibration.quick = True
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU()).eval()
    report = Analysis.of(model, (torch.randn(2, 16),), None, profile, Options(device="cpu", batch_sweep=False)).report()
    (caveat,) = [w for w in report.warnings if "quick" in w]
    assert f"'{profile.name}'" in caveat
    assert "is a quick one" in report.model_dump_json()
    console = Console(file=io.StringIO(), width=400, color_system=None)
    render(report, console)
    assert "is a quick one" in console.file.getvalue()
