"""Calibration puts the GPU's eager host costs at the host's median speed over the whole run."""

import pytest

from calibrate.runner import at_host_phase, at_run_host_speed, host_phase
from roofline.profiles import load_profile_file
from tests.conftest import REPO


def _overheads():
    return load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json").gpu.measurements.overheads


def test_level_is_the_runs_median_of_the_ops_alone_over_the_stages():
    ov = _overheads()
    stage_alone = sum(s.median_s * (2 if name == "view" else 1) for name, s in ov.dispatch_by_op_s.items())
    # after five stages the ops alone at 0.7-2.0x the stage's sum: the median, 0.8x, stands
    alone = [0.8 * stage_alone, 0.7 * stage_alone, 0.8 * stage_alone, 2.0 * stage_alone, 0.9 * stage_alone]
    assert host_phase({"run": [3 * a for a in alone], "run_alone": alone, "overheads": [1.0] * 6}, ov) == pytest.approx(0.8)
    # too few samples: nothing to stand on
    assert host_phase({"run_alone": alone[:4]}, ov) is None and host_phase({}, ov) is None


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
    """A run level outside HOST_PHASE_BAND of the overheads stage's keeps the measured host costs and
    warns; a swing within the band moves them, one of x1.53 too (an H100 run whose zoo then ran at
    x1.37 of the stage's index, ``h100_fourth_s44d.json``)."""
    from calibrate.runner import HOST_COSTS_KEPT, HOST_PHASE_BAND

    ov = load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json").gpu.measurements.overheads
    warnings: list[str] = []
    for factor in (1.15, 1.53, 0.62):
        inside = at_run_host_speed(ov, factor, warnings)
        assert inside.dispatch_s.median_s == pytest.approx(factor * ov.dispatch_s.median_s) and not warnings
        assert inside.interleave_factor == ov.interleave_factor
    for factor in (2.5, 0.4, HOST_PHASE_BAND[1] * 1.01):
        kept = at_run_host_speed(ov, factor, warnings)
        assert kept.dispatch_s.median_s == ov.dispatch_s.median_s and kept.host_phase_factor == ov.host_phase_factor
    assert len(warnings) == 3 and "x2.50" in warnings[0] and warnings[0].endswith(HOST_COSTS_KEPT)


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
    from calibrate.runner import summary_rows

    profile = load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json")
    assert not [r for r in summary_rows(profile) if "kept at the overheads stage" in r[1]]
    at_run_host_speed(profile.gpu.measurements.overheads, 2.5, profile.calibration.warnings)
    assert [r[2] for r in summary_rows(profile) if "kept at the overheads stage" in r[1]] == ["x2.50"]


def test_an_index_sample_after_a_stage_warms_the_mix_first():
    """Calibration's samples between stages run the mix untimed first (``INDEX_WARM_PASSES``), as
    ``--measure`` does before reading it beside a model: the first passes after other code run slower
    than the host's speed."""
    from roofline.measure.host_speed import INDEX_CALLS, INDEX_WARM_PASSES, index_sample_s, read_host_speed

    calls = []
    assert index_sample_s(lambda: calls.append(1), warm_passes=INDEX_WARM_PASSES) > 0
    assert len(calls) == INDEX_WARM_PASSES + 1 + INDEX_CALLS  # the warm-up, time_rounds' untimed pass, the sample
    # --measure's reading warms the same mix as much before its first sample
    import roofline.measure.host_speed as host_speed

    passes = []
    original = host_speed.index_call
    try:
        host_speed.index_call = lambda device, kinds=None: (lambda: passes.append(1))
        read_host_speed("cpu", _overheads(), budget_s=0.0)
    finally:
        host_speed.index_call = original
    assert len(passes) >= INDEX_WARM_PASSES + host_speed.MIN_ROUNDS * (1 + INDEX_CALLS)


def test_a_profile_keeps_its_calibrations_index_samples():
    """The samples the factor came from are kept, so an estimator of the host's level can be judged on
    recorded calibrations later."""
    from roofline.schema.profile import Overheads

    ov = load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json").gpu.measurements.overheads
    assert ov.host_index_s == {}  # a profile calibrated before them
    kept = ov.model_copy(update=dict(host_index_s={"run": [3.1e-4, 2.9e-4], "overheads": [3.0e-4] * 6}))
    again = Overheads.model_validate_json(kept.model_dump_json())
    assert again.host_index_s == kept.host_index_s
    assert again.host_index_s["run"] == [3.1e-4, 2.9e-4]


def test_an_alone_sample_times_each_representative_op_alone():
    from roofline.measure.host_speed import ALONE_CALLS, alone_sample_s

    calls = {"add": [], "view": []}
    ops = {name: (lambda log=log: log.append(1)) for name, log in calls.items()}
    assert alone_sample_s(ops) > 0
    assert all(len(log) == 1 + ALONE_CALLS for log in calls.values())  # one untimed call each, then the timed ones


def test_calibration_applies_the_run_level_unless_other_programs_disturbed_it():
    """``calibrate.runner.with_host_phase``, which calibration and ``--rephase`` both call, on a recorded
    H100 calibration's samples (level x0.89): applied where the machine was busy by a spin loop's
    spread alone (as this one was), withheld where other programs took the CPUs, measurements waited
    for one; the samples stay in every case. Overheads the checks measured again are levelled too: the
    level is against the costs the profile holds."""
    from calibrate.runner import with_host_phase

    recorded = load_profile_file(REPO / "benchmarks" / "results" / "h100_fourth_s44b_profile.json.gz")
    ov, info = recorded.gpu.measurements.overheads, recorded.calibration
    assert info.load.busy and info.load.busy_reasons == ["a fixed spin loop varied by 52%"]
    applied = with_host_phase(ov, info, [])
    assert applied.host_phase_factor == pytest.approx(host_phase(ov.host_index_s, ov)) and applied.host_phase_factor != 1.0
    others = info.model_copy(update=dict(load=info.load.model_copy(update=dict(others_busy_during=0.5))))
    waited = info.model_copy(update=dict(load=info.load.model_copy(update=dict(contended_measurements=info.load.measurements // 10))))
    for withheld in (others, waited):
        assert with_host_phase(ov, withheld, []) is ov
    remeasured = info.model_copy(update=dict(remeasured=["stall (gpu overheads): dispatch add took 2 ms"]))
    assert with_host_phase(ov, remeasured, []).host_phase_factor == applied.host_phase_factor
    assert applied.host_index_s == ov.host_index_s


def test_a_replay_can_put_a_recorded_calibrations_host_costs_at_its_samples():
    """``accuracy.py --zoo --replay R --rephase``: a recorded H100 calibration that kept its samples
    (``h100_fourth_s44b_profile.json.gz``: its stage's costs were kept, the host marked busy by a spin
    loop's spread alone) priced at the run's level; one without them as it is."""
    from benchmarks.zoo.run import rephased

    results = REPO / "benchmarks" / "results"
    recorded = load_profile_file(results / "h100_fourth_s44b_profile.json.gz")
    ov = recorded.gpu.measurements.overheads
    assert ov.host_phase_factor == 1.0 and len(ov.host_index_s["run_alone"]) >= 40
    now = rephased(recorded, "cuda").gpu.measurements.overheads
    level = host_phase(ov.host_index_s, ov)
    assert 0.85 < level < 0.92
    assert now.host_phase_factor == pytest.approx(level) and now.interleave_factor == ov.interleave_factor
    assert now.dispatch_s.median_s == pytest.approx(level * ov.dispatch_s.median_s)
    older = load_profile_file(results / "h100_fourth_s44_profile.json.gz")
    assert rephased(older, "cuda") is older  # index samples only, no ops alone beside them


def test_a_slower_reading_of_the_overheads_is_not_recorded_as_remeasured(monkeypatch):
    """The checks measure a stalled overheads stage again and keep the new reading only when it is
    faster; a kept old reading is not listed in the profile's ``remeasured``."""
    import calibrate.runner as runner
    from roofline.profile_checks import Problem

    profile = load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json")
    part = profile.gpu
    stall = Problem(check="stall", part="gpu", stage="overheads", detail="dispatch add took 2 ms", blocking=False)
    checks = iter([[stall], []])
    monkeypatch.setattr(runner, "check_part", lambda p, kind: next(checks))
    monkeypatch.setattr(runner.time, "sleep", lambda s: None)
    old = part.measurements.overheads
    slower = old.model_copy(update=dict(dispatch_s=old.dispatch_s.model_copy(update=dict(median_s=2 * old.dispatch_s.median_s))))
    monkeypatch.setattr(runner.overhead, "measure_overheads", lambda device, budget_s, warnings: slower)
    remeasured: list[str] = []
    runner.check_and_remeasure(part, "gpu", "cuda", runner.gpu_plan(False, 80 << 30), [], remeasured)
    assert remeasured == [] and part.measurements.overheads is old
    # a faster one replaces it and is listed
    faster = old.model_copy(update=dict(dispatch_s=old.dispatch_s.model_copy(update=dict(median_s=0.5 * old.dispatch_s.median_s))))
    checks = iter([[stall], []])
    monkeypatch.setattr(runner, "check_part", lambda p, kind: next(checks))
    monkeypatch.setattr(runner.overhead, "measure_overheads", lambda device, budget_s, warnings: faster)
    runner.check_and_remeasure(part, "gpu", "cuda", runner.gpu_plan(False, 80 << 30), [], remeasured)
    assert len(remeasured) == 1 and part.measurements.overheads.dispatch_s.median_s == faster.dispatch_s.median_s
