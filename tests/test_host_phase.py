"""Calibration puts the GPU's eager host costs at the host's median speed over the whole run."""

import pytest

from calibrate.runner import at_host_phase, host_phase_factor
from roofline.profiles import load_profile_file
from tests.conftest import REPO


def test_factor_is_the_runs_median_index_over_the_overheads_stages():
    # the host ran slow (1.3 ms per index pass) around the overheads stage, at 1.0 ms over the run
    assert host_phase_factor({"run": [1.0, 0.9, 1.0, 1.4, 1.1], "overheads": [1.3, 1.2, 1.4]}) == pytest.approx(1.0 / 1.3)
    assert host_phase_factor({"run": [1.0]}) is None and host_phase_factor({}) is None


def test_only_the_overheads_stages_host_costs_move():
    ov = load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json").gpu.measurements.overheads
    moved = at_host_phase(ov, 0.8)
    assert moved.host_phase_factor == 0.8
    assert moved.dispatch_s.median_s == pytest.approx(0.8 * ov.dispatch_s.median_s)
    assert moved.module_call_s.median_s == pytest.approx(0.8 * ov.module_call_s.median_s)
    for name, stat in ov.dispatch_by_op_s.items():
        assert moved.dispatch_by_op_s[name].median_s == pytest.approx(0.8 * stat.median_s)
    # device-side and other stages' figures stay as measured
    assert moved.kernel_min_s == ov.kernel_min_s and moved.interleave_factor == ov.interleave_factor
    assert moved.compiled_call_s == ov.compiled_call_s and moved.training == ov.training


def test_a_replay_can_undo_the_factor():
    """``accuracy.py --zoo --replay R --drop host_phase`` prices a record with the host costs as the
    overheads stage measured them: the profile's factor divided back out."""
    from benchmarks.zoo.run import without_stages

    profile = load_profile_file(REPO / "benchmarks" / "results" / "h100_zoo_earlier_profile.json")
    ov = profile.gpu.measurements.overheads
    assert ov.host_phase_factor != 1.0
    undone = without_stages(profile, "cuda", ["host_phase"]).gpu.measurements.overheads
    assert undone.host_phase_factor == 1.0
    assert undone.dispatch_s.median_s == pytest.approx(ov.dispatch_s.median_s / ov.host_phase_factor)


def test_a_swing_beyond_a_hosts_drift_is_not_applied_and_is_said():
    """A run whose median index sits outside HOST_PHASE_BAND of the overheads stage's (x1.82 in one
    H100 session, whose zoo then ran at the overheads stage's speed) keeps the measured host costs and
    warns; a swing within the band moves them."""
    from calibrate.runner import HOST_COSTS_KEPT, HOST_PHASE_BAND, at_run_host_speed

    ov = load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json").gpu.measurements.overheads
    warnings: list[str] = []
    inside = at_run_host_speed(ov, 1.15, warnings)
    assert inside.dispatch_s.median_s == pytest.approx(1.15 * ov.dispatch_s.median_s) and not warnings
    for factor in (1.82, 0.57, HOST_PHASE_BAND[1] * 1.01):
        kept = at_run_host_speed(ov, factor, warnings)
        assert kept.dispatch_s.median_s == ov.dispatch_s.median_s and kept.host_phase_factor == ov.host_phase_factor
    assert len(warnings) == 3 and "x1.82" in warnings[0] and warnings[0].endswith(HOST_COSTS_KEPT)


def test_a_replay_without_the_factor_reads_the_host_scales_against_the_undone_costs():
    """Undoing the factor moves the calibrated index by it: a recorded run's host scales are read
    against the undone costs' index (``with_stages_dropped``, as ``--replay R --drop host_phase`` runs),
    so that the host-scale predictions stay where they were; other stages leave them."""
    from benchmarks.zoo.run import with_stages_dropped

    profile = load_profile_file(REPO / "benchmarks" / "results" / "h100_zoo_earlier_profile.json")
    factor = profile.gpu.measurements.overheads.host_phase_factor
    record = {"rows": [{"host_scale": 1.0, "host_read_scale": 2.0}, {"host_scale": None}]}
    moved, undone = with_stages_dropped(record, profile, "cuda", ["host_phase"])
    assert undone.gpu.measurements.overheads.host_phase_factor == 1.0
    assert moved["rows"][0]["host_scale"] == pytest.approx(factor, rel=1e-6)
    assert moved["rows"][0]["host_read_scale"] == pytest.approx(2 * factor, rel=1e-6) and moved["rows"][1]["host_scale"] is None
    kept, _ = with_stages_dropped(record, profile, "cuda", ["attention"])
    assert kept["rows"][0]["host_scale"] == 1.0


def test_the_calibration_summary_says_when_the_host_costs_were_kept():
    from calibrate.runner import at_run_host_speed, summary_rows

    profile = load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json")
    assert not [r for r in summary_rows(profile) if "kept at the overheads stage" in r[1]]
    at_run_host_speed(profile.gpu.measurements.overheads, 1.82, profile.calibration.warnings)
    assert [r[2] for r in summary_rows(profile) if "kept at the overheads stage" in r[1]] == ["x1.82"]


def test_an_index_sample_after_a_stage_warms_the_mix_first():
    """Calibration's samples between stages (``calibrate.runner.INDEX_WARM_PASSES``) run the mix untimed
    first, as ``--measure`` does before reading it beside a model: the first passes after other code
    run slower than the host's speed."""
    from calibrate.runner import INDEX_WARM_PASSES
    from roofline.measure.host_speed import INDEX_CALLS, index_sample_s

    calls = []
    assert index_sample_s(lambda: calls.append(1), warm_passes=INDEX_WARM_PASSES) > 0
    assert len(calls) == INDEX_WARM_PASSES + 1 + INDEX_CALLS  # the warm-up, time_rounds' untimed pass, the sample
    assert INDEX_WARM_PASSES >= INDEX_CALLS


def test_a_profile_keeps_its_calibrations_index_samples():
    """The samples the factor came from are kept, so an estimator of the host's level can be judged on
    recorded calibrations later."""
    from roofline.schema.profile import Overheads

    ov = load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json").gpu.measurements.overheads
    assert ov.host_index_s == {}  # a profile calibrated before them
    kept = ov.model_copy(update=dict(host_index_s={"run": [3.1e-4, 2.9e-4], "overheads": [3.0e-4] * 6}))
    again = Overheads.model_validate_json(kept.model_dump_json())
    assert again.host_index_s == kept.host_index_s
    assert host_phase_factor(again.host_index_s) == pytest.approx(3.0e-4 / 3.0e-4)
