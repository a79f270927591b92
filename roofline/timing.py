"""The timing protocol: one implementation, used by calibration and by ``--measure``.

Why each step (after ``triton.testing.do_bench`` and ``torch.utils.benchmark``):

- synchronize before starting, so earlier queued work is not billed to us;
- warm up until two consecutive batches agree, so lazy initialisation, kernel loading, allocator
  growth and clock ramp-up stay out of the numbers;
- on the GPU, time each repetition with a pair of CUDA events around kernels already queued behind
  a spin kernel (device time, not launch time);
- optionally flush the cache between repetitions, so a kernel is not timed reading from L2 what it
  would read from DRAM in a real run;
- report the median and the inter-quartile range, never the mean, and warn when the spread is large.

``inner`` runs the callable several times per repetition and divides, for operations so short that
one event pair or one ``perf_counter`` reading would dominate them.

Host timings that are compared with each other (a model against the host-speed index, eager against
torch.compile, one op against a mix of ops) are taken in alternating rounds (``time_rounds``), so
that every callable sees the same host: host speed on a shared machine drifts by tens of percent
within seconds, and two figures timed apart carry that drift into their ratio or difference. Each
round starts each callable with one untimed call, since the first call after other code runs slow
while that code's instructions and branch history leave the caches.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from roofline.schema.profile import Stat

SPREAD_WARNING = 0.10  # IQR / median above which a measurement is flagged as noisy
BACKLOG_CYCLES = 100_000  # ~50 us of spin at 2 GHz before each timed repetition on the GPU
BACKLOG_CYCLES_PER_CALL = 40_000  # ~20 us per queued call: more than one eager dispatch takes


@dataclass
class Timing:
    """Repeated timings of one thing, in seconds per call."""

    samples_s: np.ndarray
    label: str = ""
    warmup_reps: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return int(self.samples_s.size)

    @property
    def median_s(self) -> float:
        return float(np.median(self.samples_s))

    @property
    def q25_s(self) -> float:
        return float(np.percentile(self.samples_s, 25))

    @property
    def q75_s(self) -> float:
        return float(np.percentile(self.samples_s, 75))

    @property
    def iqr_s(self) -> float:
        return self.q75_s - self.q25_s

    @property
    def min_s(self) -> float:
        return float(np.min(self.samples_s))

    @property
    def relative_spread(self) -> float:
        return self.iqr_s / self.median_s if self.median_s > 0 else float("inf")

    @property
    def warning(self) -> str | None:
        """A one-line note when the spread is large enough to distrust the median."""
        if self.relative_spread > SPREAD_WARNING:
            return (
                f"{self.label or 'measurement'}: spread (IQR) is {100 * self.relative_spread:.0f}% of the median "
                f"over {self.n} samples; the machine may be busy"
            )
        return None

    def stat(self) -> Stat:
        return Stat(median_s=max(self.median_s, 1e-12), iqr_s=max(self.iqr_s, 0.0), samples=self.n)

    def __repr__(self) -> str:
        return f"Timing({self.label!r}: median {self.median_s * 1e6:.2f} us, IQR {self.iqr_s * 1e6:.2f} us, n={self.n})"


def summarize(samples_s, label: str = "") -> Timing:
    """A ``Timing`` from raw samples (seconds); used when samples come from elsewhere (a profiler)."""
    arr = np.asarray(samples_s, dtype=np.float64)
    if arr.size == 0:
        raise ValueError("no samples to summarize")
    return Timing(samples_s=arr, label=label)


class _CacheFlusher:
    """Overwrites a buffer larger than the last-level cache, so the next kernel reads from DRAM."""

    def __init__(self, device: str, nbytes: int):
        import torch

        self.buffer = torch.empty(max(nbytes // 4, 1), dtype=torch.int32, device=device)

    def __call__(self):
        self.buffer.zero_()


def sync(device: str) -> None:
    """Wait for the device's queued work (nothing to wait for on the CPU)."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)


def _run_batch(fn, reps: int, inner: int, device: str, clock: str, flush) -> np.ndarray:
    """Time ``reps`` repetitions of ``inner`` calls each; returns seconds per call."""
    out = np.empty(reps)
    if clock == "device":
        import torch

        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        sync(device)
        for r in range(reps):
            if flush is not None:
                flush()
            # Back the stream up behind a spin kernel so that the timed kernels are already queued
            # when the start event fires: the events then bracket device execution only, not the
            # host's launch latency (which the model of time prices separately).
            torch.cuda._sleep(int(BACKLOG_CYCLES_PER_CALL * inner + BACKLOG_CYCLES))
            starts[r].record()
            for _ in range(inner):
                fn()
            ends[r].record()
        sync(device)
        for r in range(reps):
            out[r] = starts[r].elapsed_time(ends[r]) * 1e-3 / inner
        return out
    # host clock: wall time of the calls themselves (on a GPU: issue time, unless fn synchronizes)
    sync(device)
    for r in range(reps):
        if flush is not None:
            flush()
            sync(device)
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        out[r] = (time.perf_counter() - t0) / inner
    sync(device)
    return out


MIN_REP_S = 20e-6  # shortest repetition worth timing: ~100x perf_counter's cost, ~40x event resolution


def _auto_inner(fn, device: str, clock: str) -> int:
    """Calls per repetition so that one repetition lasts at least MIN_REP_S."""
    fn()
    sync(device)
    one = float(np.median(_run_batch(fn, 3, 1, device, clock, None)))
    if one >= MIN_REP_S:
        return 1
    return int(min(1000, np.ceil(MIN_REP_S / max(one, 1e-8))))


def time_fn(
    fn: Callable[[], object],
    *,
    device: str = "cpu",
    clock: str | None = None,
    inner: int | None = None,
    budget_s: float = 0.25,
    min_samples: int = 7,
    max_samples: int = 200,
    warmup_budget_s: float = 0.25,
    flush_cache_bytes: int = 0,
    label: str = "",
) -> Timing:
    """Time ``fn`` by the protocol above and return per-call times.

    ``device`` is 'cpu' or 'cuda[:N]'; ``clock`` is 'device' (CUDA events; the default on a GPU) or
    'host' (``perf_counter``; the default on the CPU, and what host-overhead measurements use).
    ``inner`` calls per repetition; None chooses it so one repetition lasts at least ``MIN_REP_S``
    (short calls are otherwise lost in the clock's resolution). ``budget_s`` bounds the timed phase and ``warmup_budget_s`` the warm-up; at least
    ``min_samples`` are always taken. ``flush_cache_bytes`` > 0 overwrites a buffer of that size
    before each repetition.
    """
    if clock is None:
        clock = "device" if device.startswith("cuda") else "host"
    if clock == "device" and not device.startswith("cuda"):
        raise ValueError("clock='device' needs a CUDA device")
    flush = _CacheFlusher(device, flush_cache_bytes) if flush_cache_bytes > 0 else None
    if flush is not None:
        inner = 1  # a flush before each repetition only holds for that repetition's one call
    elif inner is None:
        inner = _auto_inner(fn, device, clock)

    # Warm-up: batches of increasing size until two consecutive batch medians agree within 5%.
    fn()
    sync(device)
    warm_reps, previous, batch = 1, None, 2
    t_start = time.perf_counter()
    per_call = None
    while True:
        samples = _run_batch(fn, batch, inner, device, clock, flush)
        warm_reps += batch
        current = float(np.median(samples))
        per_call = current
        elapsed = time.perf_counter() - t_start
        if previous is not None and abs(current - previous) <= 0.05 * max(previous, 1e-12):
            break
        if elapsed > warmup_budget_s:
            break
        previous = current
        batch = min(batch * 2, 64)

    # Size the timed phase from the warm-up estimate (wall time per repetition includes overheads).
    wall_per_rep = max((time.perf_counter() - t_start) / max(warm_reps, 1), per_call * inner, 1e-7)
    reps = int(min(max_samples, max(min_samples, budget_s / wall_per_rep)))
    samples = _run_batch(fn, reps, inner, device, clock, flush)
    result = Timing(samples_s=samples, label=label, warmup_reps=warm_reps)
    if result.relative_spread > SPREAD_WARNING:
        # One retry with twice the samples: a single disturbance (another process, a clock change)
        # should not decide the number; keep whichever run is tighter and say so.
        retry = Timing(samples_s=_run_batch(fn, min(2 * reps, 2 * max_samples), inner, device, clock, flush), label=label, warmup_reps=warm_reps)
        if retry.relative_spread < result.relative_spread:
            retry.notes.append(f"re-measured: first run's spread was {100 * result.relative_spread:.0f}%")
            result = retry
    return result


@dataclass
class Slot:
    """One callable timed in each round of ``time_rounds``: ``calls`` calls per sample, and per
    round ``samples`` samples, or as many as fit in ``seconds`` (at least one)."""

    fn: Callable[[], object]
    calls: int = 1
    samples: int | None = None
    seconds: float | None = None


def _host_sample(fn: Callable[[], object], calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def time_rounds(
    slots: dict[str, Slot], *, rounds: int = 5, budget_s: float | None = None, warmup_rounds: int = 0, device: str = "cpu",
) -> dict[str, list[np.ndarray]]:
    """Several callables timed on the host clock in alternating rounds (module docstring).

    Each round, for each slot in order: synchronize ``device``, one untimed call, then the slot's
    samples (seconds per call). Runs ``warmup_rounds`` untimed rounds, then ``rounds`` rounds, and
    more while ``budget_s`` (when given) is not spent. A callable that should include the device's
    work synchronizes itself. Returns each slot's samples, one array per round."""
    out: dict[str, list[np.ndarray]] = {name: [] for name in slots}

    def one_round(record: bool) -> None:
        for name, slot in slots.items():
            sync(device)
            slot.fn()
            samples = []
            slot_start = time.perf_counter()
            while True:
                samples.append(_host_sample(slot.fn, slot.calls))
                if slot.samples is not None:
                    if len(samples) >= slot.samples:
                        break
                elif time.perf_counter() - slot_start >= (slot.seconds or 0.0):
                    break
            if record:
                out[name].append(np.asarray(samples))

    for _ in range(warmup_rounds):
        one_round(record=False)
    started, done = time.perf_counter(), 0
    while done < rounds or (budget_s is not None and time.perf_counter() - started < budget_s):
        one_round(record=True)
        done += 1
    return out


def pooled(rounds: list[np.ndarray], label: str = "") -> Timing:
    """Every round's samples as one ``Timing``."""
    return summarize(np.concatenate(rounds), label)


def median_round(rounds: list[np.ndarray], label: str = "") -> Timing:
    """The samples of the round whose median is the median of the rounds' medians: one slow moment
    of the host moves no figure."""
    ordered = sorted(rounds, key=lambda r: float(np.median(r)))
    return summarize(ordered[len(ordered) // 2], label)
