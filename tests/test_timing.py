"""The timing protocol's statistics and behaviour (CPU clock; the CUDA-event path runs on the GPU)."""

import time

import numpy as np
import pytest

from roofline.timing import SPREAD_WARNING, Timing, summarize, time_fn


def test_median_and_iqr_of_known_samples():
    # samples 1..9 us: median 5, q25 3, q75 7 (numpy linear interpolation) -> IQR 4 us
    t = summarize(np.arange(1, 10) * 1e-6, "known")
    assert t.median_s == pytest.approx(5e-6)
    assert t.q25_s == pytest.approx(3e-6)
    assert t.q75_s == pytest.approx(7e-6)
    assert t.iqr_s == pytest.approx(4e-6)
    assert t.n == 9
    stat = t.stat()
    assert (stat.median_s, stat.iqr_s, stat.samples) == (pytest.approx(5e-6), pytest.approx(4e-6), 9)


def test_median_ignores_one_outlier_that_would_move_the_mean():
    samples = [1e-3] * 20 + [1.0]
    t = summarize(samples)
    assert t.median_s == pytest.approx(1e-3)
    assert np.mean(samples) > 40e-3


def test_warning_only_when_spread_is_large():
    tight = summarize([1.0, 1.01, 0.99, 1.0, 1.005])
    assert tight.relative_spread < SPREAD_WARNING and tight.warning is None
    loose = summarize([1.0, 2.0, 0.5, 1.5, 3.0], label="noisy thing")
    assert loose.relative_spread > SPREAD_WARNING
    assert "noisy thing" in loose.warning and "%" in loose.warning


def test_summarize_rejects_empty():
    with pytest.raises(ValueError):
        summarize([])


def test_time_fn_measures_a_known_sleep():
    # time.sleep(2 ms) takes at least 2 ms; the median must be close above that, not the loop overhead.
    t = time_fn(lambda: time.sleep(2e-3), device="cpu", budget_s=0.05, min_samples=5)
    assert 2e-3 <= t.median_s < 6e-3
    assert t.n >= 5
    assert t.warmup_reps >= 1


def test_time_fn_batches_tiny_calls_and_divides():
    calls = []
    t = time_fn(lambda: calls.append(1), device="cpu", budget_s=0.02, min_samples=7)
    # a list append is ~50 ns: far below one perf_counter reading, so many run per repetition
    assert t.median_s < 5e-6
    assert len(calls) > 7 * 10


def test_device_clock_needs_cuda():
    with pytest.raises(ValueError):
        time_fn(lambda: None, device="cpu", clock="device")


def test_timing_repr_mentions_units():
    assert "us" in repr(Timing(samples_s=np.array([1e-6, 2e-6]), label="x"))


def test_flushing_times_one_call_per_repetition():
    calls = []
    t = time_fn(lambda: calls.append(1), device="cpu", budget_s=0.01, min_samples=5, flush_cache_bytes=1 << 16)
    # one call per repetition: warm-up + timed repetitions (+ one re-measure of up to twice as many
    # if the spread was large), not hundreds of calls per repetition as for an unflushed tiny call
    assert len(calls) <= t.warmup_reps + 3 * t.n + 2


class _FakeCuda:
    """Stands in for torch.cuda on the CPU: events that report ``elapsed_ms`` per repetition, a spin
    kernel that records its cycles, and spin-done events whose ``query`` answers from a script."""

    def __init__(self, caught_up_batches: int, elapsed_ms: float = 0.004):
        self.spins: list[int] = []
        self.caught_up_batches = caught_up_batches  # the first batches, whose spins end before their repetitions are queued
        self.syncs = 0
        self.elapsed_ms = elapsed_ms
        fake = self

        class Event:
            def __init__(self, enable_timing: bool = False):
                self.timing = enable_timing

            def record(self):
                pass

            def query(self):
                return fake.batch <= fake.caught_up_batches

            def elapsed_time(self, end):
                return fake.elapsed_ms

        self.Event = Event

    @property
    def batch(self) -> int:
        """The batch running now, from 1: each synchronizes once before it and once after."""
        return (self.syncs + 1) // 2

    def synchronize(self, device=None):
        self.syncs += 1

    def _sleep(self, cycles):
        self.spins.append(cycles)


def _fake_cuda(monkeypatch, caught_up_batches):
    import torch

    fake = _FakeCuda(caught_up_batches)
    for name in ("Event", "synchronize", "_sleep"):
        monkeypatch.setattr(torch.cuda, name, getattr(fake, name))
    return fake


def test_backlog_spins_the_hosts_queueing_time_with_margin():
    from roofline.timing import BACKLOG_CYCLES, BACKLOG_CYCLES_PER_CALL, BACKLOG_SLACK_S, SPIN_CYCLES_PER_S, Backlog

    fresh = Backlog()
    assert fresh.cycles(inner=3) == 3 * BACKLOG_CYCLES_PER_CALL + BACKLOG_CYCLES  # the fixed guess until measured
    measured = Backlog(per_rep_s=20e-6, measured_inner=3)
    assert measured.cycles(inner=3) == int((1.5 * 20e-6 + BACKLOG_SLACK_S) * SPIN_CYCLES_PER_S)
    assert measured.cycles(inner=3) < fresh.cycles(inner=3)
    # measured at one call a repetition, a repetition of six queues six calls
    assert Backlog(per_rep_s=20e-6).cycles(inner=6) == int((1.5 * 6 * 20e-6 + BACKLOG_SLACK_S) * SPIN_CYCLES_PER_S)


def test_backlog_margin_doubles_when_caught_up_and_falls_back_after():
    from roofline.timing import BACKLOG_MARGIN, BACKLOG_MAX_MARGIN, Backlog

    b = Backlog()
    b.measured(10e-6, 1, caught_up=True)
    assert b.margin == 2 * BACKLOG_MARGIN
    for _ in range(10):
        b.measured(10e-6, 1, caught_up=True)
    assert b.margin == BACKLOG_MAX_MARGIN
    for _ in range(10):
        b.measured(10e-6, 1, caught_up=False)
    assert b.margin == BACKLOG_MARGIN


def test_device_batch_sizes_its_spin_from_the_batch_before(monkeypatch):
    from roofline.timing import Backlog, _run_batch

    fake = _fake_cuda(monkeypatch, caught_up_batches=0)
    backlog = Backlog()
    out = _run_batch(lambda: None, 4, 2, "cuda:0", "device", None, backlog)
    assert out == pytest.approx([2e-6] * 4)  # 0.004 ms over 2 calls
    assert backlog.per_rep_s is not None and backlog.per_rep_s < 1e-3
    expected = backlog.cycles(2)
    _run_batch(lambda: None, 4, 2, "cuda:0", "device", None, backlog)
    assert fake.spins[4:] == [expected] * 4
    assert expected < fake.spins[0]  # a no-op queues far faster than the 20 us per call guess


def test_device_batch_the_device_caught_up_with_is_run_again_with_twice_the_margin(monkeypatch):
    from roofline.timing import BACKLOG_MARGIN, Backlog, _run_batch

    fake = _fake_cuda(monkeypatch, caught_up_batches=1)
    backlog = Backlog()
    margins = []
    measured = backlog.measured
    monkeypatch.setattr(backlog, "measured", lambda *a: (measured(*a), margins.append(backlog.margin)))
    _run_batch(lambda: None, 3, 1, "cuda:0", "device", None, backlog)
    assert len(fake.spins) == 6  # the caught-up batch and its run again
    assert margins == [2 * BACKLOG_MARGIN, BACKLOG_MARGIN]  # doubled for the run again, back once it was clean


def test_timed_phase_ends_early_once_settled_and_not_before_min_samples(monkeypatch):
    import roofline.timing as T

    batches = []

    def run(samples, reps, min_samples):
        it = iter(samples)
        batches.clear()
        monkeypatch.setattr(T, "_run_batch", lambda fn, n, *a, **k: batches.append(n) or np.array([next(it) for _ in range(n)]))
        return T._timed_rounds(None, reps, 1, "cuda:0", clock, None, "x", 0, None, min_samples)

    clock = "device"

    steady = 1e-3 * (1 + 0.005 * np.random.default_rng(1).uniform(size=1000))  # a kernel's call-to-call jitter
    t = run(steady, 80, 5)
    assert len(batches) == T.SETTLED_ROUNDS and t.n == T.SETTLED_ROUNDS * 10
    run(np.random.default_rng(0).uniform(1e-3, 2e-3, 1000), 80, 5)
    assert len(batches) == T.ROUNDS  # a spread of tens of percent takes every round
    t = run(np.full(100, 1e-3), 8, 8)
    assert len(batches) == T.ROUNDS and t.n == 8  # one sample a round: min_samples holds it to all eight
    clock = "host"
    monkeypatch.setattr(T, "_RUN_QUEUE", T.RunQueueWaits())
    run(steady, 80, 5)
    assert len(batches) == T.ROUNDS  # the host clock keeps every round, to find an undisturbed one
