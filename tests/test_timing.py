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
