"""Calibration on a busy machine: the timing protocol's robust estimate (stall-shaped samples dropped, rounds that
waited for a CPU dropped, the fastest round kept), the record of the machine's load, and `roofline calibrate`
re-measuring what fails its sanity checks and refusing to save what still fails (exit 2, one line, no file)."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

import calibrate.memory
import calibrate.runner
from calibrate import load
from roofline.cli import main
from roofline.profile_checks import check_part, profile_caveats
from roofline.profiles import load_profile_file
from roofline.schema.profile import BandwidthCurve, BandwidthPoint, Stat
from roofline.timing import STALL_FACTOR, WAIT_SHARE, RunQueueWaits, Tally, robust_estimate, time_fn
from tests.conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "h100_profile.json"


def test_a_stall_shaped_sample_is_dropped():
    # one round: two calls at 1 ms, three that caught a 2 ms stall (the median would be 3 ms)
    est = robust_estimate([np.array([1e-3, 1e-3, 3e-3, 3e-3, 3e-3])])
    assert est.value_s == pytest.approx(1e-3)
    assert est.stalls == 3 and est.kept == 2 and not est.contended
    assert 3e-3 > STALL_FACTOR * 1e-3


def test_the_fastest_rounds_median_is_kept():
    rounds = [np.full(5, 1.2e-3), np.full(5, 1.0e-3), np.full(5, 1.1e-3)]
    est = robust_estimate(rounds)
    assert est.value_s == pytest.approx(1.0e-3)  # the minimum over rounds, not the pooled median (1.1 ms)
    assert float(np.median(np.concatenate(rounds))) == pytest.approx(1.1e-3)
    assert est.clean_rounds == 3 and est.kept == 15


def test_a_round_that_waited_for_a_cpu_is_not_used():
    rounds = [np.full(4, 0.9e-3), np.full(4, 1.0e-3)]
    est = robust_estimate(rounds, [0.3, 0.0])
    assert est.value_s == pytest.approx(1.0e-3) and est.clean_rounds == 1
    # a wait below the threshold leaves the round in
    assert robust_estimate(rounds, [WAIT_SHARE / 2, 0.0]).value_s == pytest.approx(0.9e-3)


def test_when_every_round_waited_the_fastest_sample_is_kept_and_marked():
    est = robust_estimate([np.array([5e-3, 6e-3]), np.array([4e-3, 7e-3])], [0.5, 0.4])
    assert est.contended and est.value_s == pytest.approx(4e-3) and est.clean_rounds == 0


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_time_fn_saves_the_quiet_rounds_of_a_slowed_run():
    """Every other stretch of 10 calls runs 1.3x slow (another program's bursts; not slow enough to be dropped as
    a stall): the saved figure is a quiet round's, while the median of everything takes the slow calls in."""
    calls = [0]

    def fn():
        calls[0] += 1
        _spin(260e-6 if (calls[0] // 10) % 2 else 200e-6)

    t = time_fn(fn, device="cpu", inner=1, budget_s=0.02, warmup_budget_s=0.0, min_samples=40, max_samples=40)
    assert t.rounds_s is not None and len(t.rounds_s) == 8
    assert t.stat().median_s == pytest.approx(200e-6, rel=0.1)
    assert t.median_s > 215e-6


def test_waits_are_the_longest_of_any_thread():
    assert RunQueueWaits.waited_s({"1": 0, "2": 100}, {"1": 5_000_000, "2": 2_000_100, "3": 1_000_000}) == pytest.approx(5e-3)
    assert RunQueueWaits.waited_s(None, {"1": 5}) is None


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="Linux scheduler statistics")
def test_this_process_waits_are_read():
    snap = RunQueueWaits().snapshot()
    assert snap and str(os.getpid()) in snap and all(v >= 0 for v in snap.values())


def test_the_tally_counts_measurements():
    with Tally() as tally:
        time_fn(lambda: None, device="cpu", budget_s=0.002, warmup_budget_s=0.001)
        time_fn(lambda: None, device="cpu", budget_s=0.002, warmup_budget_s=0.001)
    time_fn(lambda: None, device="cpu", budget_s=0.002, warmup_budget_s=0.001)
    assert tally.measurements == 2 and tally.timed_s > 0


def test_other_programs_share_of_the_cpus():
    a = load.CpuClock(wall_s=0.0, busy_s=10.0, own_s=1.0, cpus=2)
    b = load.CpuClock(wall_s=1.0, busy_s=11.5, own_s=1.5, cpus=2)  # 1.5 CPU-s busy, 0.5 of them ours
    assert load.others_share(a, b) == pytest.approx(0.5)
    assert load.others_share(a, load.CpuClock(wall_s=1.0, busy_s=None, own_s=1.5, cpus=2)) is None


def _before(others: float) -> load.Before:
    return load.Before(clock=load.read_cpu_clock(), loadavg=1.0, others_busy=others, spin_spread=0.01)


def test_a_busy_machine_is_recorded_with_its_reason():
    quiet = load.machine_load(_before(0.0), Tally(), priority_raised=False)
    busy = load.machine_load(_before(0.6), Tally(), priority_raised=False)
    assert busy.busy and "60%" in busy.busy_reasons[0] and "before" in busy.busy_reasons[0]
    assert busy.summary().startswith("busy: ")
    # the spin loop's spread after the run, or other programs during it, may make the quiet one busy on a
    # loaded test machine; the reason is then one of those, never the probe before
    assert not quiet.busy or not any("before" in r for r in quiet.busy_reasons)


def test_a_spin_loops_spread_alone_is_the_hosts_drift_not_other_programs():
    """Calibration puts its host costs at the run's host level unless other programs took the CPUs
    (``calibrate.runner``): a virtual host's drift spreads the spin loop (52% before one H100 run,
    ``benchmarks/results/h100_fourth_s44b_profile.json.gz``) with nobody else on the machine."""
    from roofline.schema.profile import MachineLoad

    drift = MachineLoad(cpus=16, others_busy_before=0.0, others_busy_during=0.0, spin_spread_before=0.52, measurements=2969,
                        busy=True, busy_reasons=["a fixed spin loop varied by 52%"])
    assert drift.busy and not load.others_disturbed(drift)
    assert load.others_disturbed(drift.model_copy(update=dict(others_busy_during=load.BUSY_OTHERS_SHARE)))
    assert load.others_disturbed(drift.model_copy(update=dict(others_busy_before=0.6)))
    assert load.others_disturbed(drift.model_copy(update=dict(contended_measurements=200)))
    assert not load.others_disturbed(drift.model_copy(update=dict(contended_measurements=100)))  # 3.4% of them


def test_raised_priority_is_put_back():
    before = os.getpriority(os.PRIO_PROCESS, 0)
    with load.RaisedPriority() as priority:
        inside = os.getpriority(os.PRIO_PROCESS, 0)
    assert os.getpriority(os.PRIO_PROCESS, 0) == before
    if priority.raised:
        assert inside == load.PRIORITY_NICE
    else:
        assert inside == before
    with load.RaisedPriority(enabled=False) as off:
        assert os.getpriority(os.PRIO_PROCESS, 0) == before
    assert not off.raised


# `roofline calibrate` with the measurements replaced: the fixture's host part (which passes every check on this
# machine's cache) stands in for the stages, and the copy-bandwidth stage measures an 8 ms stall on every point.


def _stalled_curve(kind, sizes, *args, **kwargs) -> BandwidthCurve:
    stall = Stat(median_s=8e-3, iqr_s=0.0, samples=5)
    points = [BandwidthPoint(bytes=2 * ws, working_set_bytes=ws, time=stall, bytes_per_s=2 * ws / 8e-3) for ws in sizes]
    return BandwidthCurve(kind=kind, dtype="float32", points=points)


@pytest.fixture
def fake_stages(monkeypatch):
    fixture = load_profile_file(FIXTURE)
    sizes = [p.working_set_bytes for p in fixture.host.measurements.bandwidth_curve("copy").points]
    measured = fixture.host.measurements.model_copy(deep=True)
    measured.bandwidth = [_stalled_curve("copy", sizes) if c.kind == "copy" else c for c in measured.bandwidth]
    # the fixture's own outliers (prediction caps them) would be re-measured too: keep them out of this test
    measured.bandwidth = [c for c in measured.bandwidth if c.kind != "read"]
    measured.pointwise = [c for c in measured.pointwise if c.op not in ("add", "softmax")]
    monkeypatch.setattr(calibrate.runner, "_measure_part", lambda *a, **k: measured.model_copy(deep=True))
    monkeypatch.setattr(calibrate.runner, "REMEASURE_PAUSES_S", (0.0, 0.0))
    monkeypatch.setattr(load, "PROBE_S", 0.01)
    calls = []

    def remeasured(kind, sizes, *args, **kwargs):
        calls.append((kind, list(sizes)))
        return _stalled_curve(kind, sizes)

    monkeypatch.setattr(calibrate.memory, "measure_bandwidth", remeasured)
    return calls


def test_a_profile_that_still_fails_its_checks_is_refused(fake_stages, tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["calibrate", "--device", "cpu", "--no-progress", "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "stall (cpu bandwidth copy)" in err and "--force" in err and "rerun" in err
    assert not out.exists()
    assert fake_stages and fake_stages[0][0] == "copy"  # re-measured before refusing


def test_force_saves_it_marked_and_reports_say_so(fake_stages, tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["calibrate", "--device", "cpu", "--no-progress", "--force", "--output", str(out)]) == 0
    profile = load_profile_file(out)
    assert profile.calibration.forced and profile.calibration.checks_failed
    assert profile.calibration.load is not None and profile.calibration.load.measurements >= 0
    assert any("--force" in c and "stall" in c for c in profile_caveats(profile))


def test_a_failure_the_re_measurement_fixes_is_saved(fake_stages, monkeypatch, tmp_path):
    healthy = {p.working_set_bytes: p for p in load_profile_file(FIXTURE).host.measurements.bandwidth_curve("copy").points}
    monkeypatch.setattr(
        calibrate.memory, "measure_bandwidth",
        lambda kind, sizes, *a, **k: BandwidthCurve(kind=kind, dtype="float32", points=[healthy[s] for s in sizes]),
    )
    out = tmp_path / "p.json"
    assert main(["calibrate", "--device", "cpu", "--no-progress", "--output", str(out)]) == 0
    profile = load_profile_file(out)
    assert not profile.calibration.forced and not profile.calibration.checks_failed
    assert any(line.startswith("stall (cpu bandwidth copy)") for line in profile.calibration.remeasured)
    assert not [p for p in check_part(profile.host, "cpu") if p.blocking]


def test_profiles_lists_what_a_profile_fails(fake_stages, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ROOFLINE_PROFILE_DIR", str(tmp_path))
    assert main(["calibrate", "--device", "cpu", "--no-progress", "--force", "--name", "stalled"]) == 0
    capsys.readouterr()
    assert main(["profiles"]) == 0
    (row,) = [line for line in capsys.readouterr().out.splitlines() if "stalled" in line]
    assert "fails stall" in row and "forced" in row


def test_spin_spread_is_the_quietest_try():
    """A disturbance that lasts one try (every other sample 30% slow) is not a busy machine; one in
    every try is."""

    def clock_with(disturbed_tries: set[int], samples: int):
        state = {"t": 0.0, "n": 0}

        def clock():
            i = state["n"]  # two readings per sample
            sample, tr = (i // 2) % samples, i // (2 * samples)
            state["n"] += 1
            if i % 2 == 0:
                return state["t"]
            slow = tr in disturbed_tries and sample % 2 == 0
            state["t"] += 1.3 if slow else 1.0
            return state["t"]

        return clock

    assert load.spin_spread(samples=20, tries=3, clock=clock_with({0}, 20)) == pytest.approx(0.0)
    assert load.spin_spread(samples=20, tries=3, clock=clock_with({0, 1, 2}, 20)) == pytest.approx(0.3 / 1.15)  # IQR 0.3 over the median 1.15


def test_spin_spread_marks_busy_past_a_quarter():
    """16% is what a quiet virtualized host shows with GPU work in flight; 30% is a busy machine."""
    jittery = load.Before(clock=load.read_cpu_clock(), loadavg=0.1, others_busy=0.0, spin_spread=0.16)
    loaded = load.Before(clock=load.read_cpu_clock(), loadavg=0.1, others_busy=0.0, spin_spread=0.30)
    assert not any("16%" in r for r in load.machine_load(jittery, Tally(), priority_raised=False).busy_reasons)
    assert any("30%" in r for r in load.machine_load(loaded, Tally(), priority_raised=False).busy_reasons)
