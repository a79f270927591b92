"""The timing protocol: one implementation, used by calibration and by ``--measure``.

Why each step (after ``triton.testing.do_bench`` and ``torch.utils.benchmark``):

- synchronize before starting, so earlier queued work is not billed to us;
- warm up until two consecutive batches agree, so lazy initialisation, kernel loading, allocator
  growth and clock ramp-up stay out of the numbers;
- on the GPU, time each repetition with a pair of CUDA events around kernels already queued behind
  a spin kernel (device time, not launch time). The spin lasts the host's measured time to queue the
  repetition, with a margin (``Backlog``), and is checked: a batch in which a spin ended before the
  host had queued its repetition (the device caught up, so a repetition may hold host gaps) is run
  again with twice the margin;
- optionally flush the cache between repetitions, so a kernel is not timed reading from L2 what it
  would read from DRAM in a real run;
- report the median and the inter-quartile range, never the mean, and warn when the spread is large.

``inner`` runs the callable several times per repetition and divides, for operations so short that
one event pair or one ``perf_counter`` reading would dominate them.

On a busy machine (another program, a test run, a browser) the median takes the disturbance in as
truth. ``time_fn`` therefore times in several short rounds and, besides the median of everything,
gives a robust estimate (``Timing.stat``, what calibration saves): samples slower than
``STALL_FACTOR`` times the lower quartile are dropped as stall-shaped; a round during which one of
this process's threads waited for a CPU longer than ``WAIT_SHARE`` of the round (Linux's scheduler
statistics, ``/proc/self/task/*/schedstat``) is dropped as disturbed; the estimate is the fastest
remaining round's median (disturbance only ever adds time). When no round ran undisturbed it is
marked ``contended`` and its fastest sample is kept: an upper bound. On the device clock the timed
phase ends before its budget once ``SETTLED_ROUNDS`` rounds hold an undisturbed one and the median's
standard error is within ``SETTLED_ERROR`` of it: the budget is sized for a noisy host, and a steady
kernel is known to that precision long before it is spent. Host-clock timings keep every round, to
find one that no other program disturbed.

Host timings that are compared with each other (a model against the host-speed index, eager against
torch.compile, one op against a mix of ops) are taken in alternating rounds (``time_rounds``), so
that every callable sees the same host: host speed on a shared machine drifts by tens of percent
within seconds, and two figures timed apart carry that drift into their ratio or difference. Each
round starts each callable with one untimed call, since the first call after other code runs slow
while that code's instructions and branch history leave the caches.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numpy as np

from roofline.schema.profile import Stat

SPREAD_WARNING = 0.10  # IQR / median above which a measurement is flagged as noisy
BACKLOG_CYCLES = 100_000  # ~50 us of spin at 2 GHz before a repetition, until the host's queueing time is measured
BACKLOG_CYCLES_PER_CALL = 40_000  # ~20 us per queued call until then: more than one eager dispatch takes
SPIN_CYCLES_PER_S = 2.0e9  # the spin kernel's clock as assumed (an H100 boosts to 1.98 GHz): a faster GPU's spin ends sooner, which the caught-up check answers with a longer one
BACKLOG_SLACK_S = 10e-6  # spin beyond the host's measured queueing time of a repetition
BACKLOG_MARGIN = 1.5  # the spin over the host's measured queueing time; doubled after a batch the device caught up with ...
BACKLOG_MAX_MARGIN = 16.0  # ... up to this, and halved back towards BACKLOG_MARGIN after each batch it did not
BACKLOG_RETRIES = 2  # runs again of a batch the device caught up with, before its samples are kept as they are
ROUNDS = 8  # the timed phase is split into at most this many rounds (one repetition each, at least)
SETTLED_ROUNDS = 3  # rounds after which a timed phase may end before its budget ...
SETTLED_ERROR = 0.01  # ... when an undisturbed round holds it and the median's standard error is within this share of it
STALL_FACTOR = 1.5  # a sample slower than this times the lower quartile of all samples caught a stall
WAIT_SHARE = 0.02  # a round whose threads waited for a CPU longer than this share of it was disturbed


class RunQueueWaits:
    """Time this process's threads spent ready to run but waiting for a CPU that another program
    held: the second field of Linux's ``/proc/self/task/<tid>/schedstat`` (nanoseconds). Where the
    kernel does not expose it, ``snapshot`` returns None and rounds are judged by their times alone."""

    def __init__(self):
        self._fds: dict[str, int] = {}
        self.available = os.path.isdir("/proc/self/task") and self.snapshot() is not None

    def snapshot(self) -> dict[str, int] | None:
        """Nanoseconds each live thread has waited so far, by thread id."""
        try:
            tids = os.listdir("/proc/self/task")
        except OSError:
            return None
        out = {}
        for tid in tids:
            try:
                fd = self._fds.get(tid)
                if fd is None:
                    fd = self._fds[tid] = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)
                out[tid] = int(os.pread(fd, 128, 0).split()[1])
            except (OSError, ValueError, IndexError):
                self._forget(tid)
        for tid in set(self._fds) - set(tids):
            self._forget(tid)
        return out or None

    def _forget(self, tid: str) -> None:
        fd = self._fds.pop(tid, None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    @staticmethod
    def waited_s(before: dict[str, int] | None, after: dict[str, int] | None) -> float | None:
        """The longest any one thread waited between two snapshots, seconds: a parallel operation
        finishes with its slowest thread, a serial one is its one thread."""
        if before is None or after is None:
            return None
        return max((after[t] - before.get(t, 0) for t in after), default=0) * 1e-9


_RUN_QUEUE = RunQueueWaits()


@dataclass
class Estimate:
    """The robust estimate of one measurement (module docstring) and what it rests on."""

    value_s: float
    iqr_s: float
    kept: int  # samples the estimate rests on
    stalls: int  # samples dropped as stall-shaped
    clean_rounds: int  # rounds without waits for a CPU
    rounds: int
    contended: bool  # no round ran free of waits: value_s is the fastest sample, an upper bound

    @property
    def relative_spread(self) -> float:
        return self.iqr_s / self.value_s if self.value_s > 0 else float("inf")


def robust_estimate(rounds: list[np.ndarray], wait_shares: list[float | None] | None = None) -> Estimate:
    """Samples of several rounds (seconds per call) and, per round, the share of its time this
    process's threads waited for a CPU (None: unknown) -> the estimate of the module docstring."""
    rounds = [np.asarray(r, dtype=np.float64) for r in rounds if len(r)]
    if not rounds:
        raise ValueError("no samples to estimate from")
    shares = list(wait_shares) if wait_shares is not None else [None] * len(rounds)
    every = np.concatenate(rounds)
    floor = float(np.percentile(every, 25))
    kept = [r[r <= STALL_FACTOR * floor] for r in rounds]
    stalls = int(every.size - sum(k.size for k in kept))
    clean = [i for i, k in enumerate(kept) if k.size and (shares[i] is None or shares[i] <= WAIT_SHARE)]
    if clean:
        best = min(clean, key=lambda i: float(np.median(kept[i])))
        pooled = np.concatenate([kept[i] for i in clean])
        iqr = float(np.percentile(pooled, 75) - np.percentile(pooled, 25))
        return Estimate(float(np.median(kept[best])), iqr, int(pooled.size), stalls, len(clean), len(rounds), contended=False)
    # Every round waited. The time a thread waited cannot simply be subtracted (parallel threads
    # wait at once or one after another, and spin at barriers meanwhile), so the estimate is the
    # fastest sample: an upper bound, since waiting only ever adds time.
    iqr = float(np.percentile(every, 75) - np.percentile(every, 25))
    return Estimate(float(every.min()), iqr, int(every.size), stalls, 0, len(rounds), contended=True)


class Tally:
    """Counts what ``time_fn`` measured while it is active (``with Tally() as t:``): how many
    measurements, how many ran contended, and the time threads waited for a CPU."""

    def __init__(self):
        self.measurements = 0
        self.contended = 0
        self.waited_s = 0.0
        self.timed_s = 0.0

    def __enter__(self):
        _TALLIES.append(self)
        return self

    def __exit__(self, *exc):
        _TALLIES.remove(self)

    def add(self, timing: "Timing") -> None:
        self.measurements += 1
        self.contended += bool(timing.robust and timing.robust.contended)
        self.waited_s += timing.waited_s
        self.timed_s += timing.timed_s


_TALLIES: list[Tally] = []


@dataclass
class Timing:
    """Repeated timings of one thing, in seconds per call. ``rounds_s`` and ``wait_shares`` hold
    the timed phase by round when ``time_fn`` made it; ``stat`` then gives the robust estimate."""

    samples_s: np.ndarray
    label: str = ""
    warmup_reps: int = 0
    notes: list[str] = field(default_factory=list)
    rounds_s: list[np.ndarray] | None = None
    wait_shares: list[float | None] | None = None
    waited_s: float = 0.0  # the longest wait of a thread for a CPU, summed over rounds
    timed_s: float = 0.0  # wall time of the timed rounds

    @cached_property
    def robust(self) -> Estimate | None:
        """The robust estimate, when the samples come by round (computed once: the rounds do not change)."""
        return robust_estimate(self.rounds_s, self.wait_shares) if self.rounds_s else None

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
        """A one-line note when the figure cannot be taken at face value: no round ran without
        waiting for a CPU, or the spread (of the samples the estimate rests on) is large."""
        robust = self.robust
        name = self.label or "measurement"
        if robust is not None and robust.contended:
            return (
                f"{name}: every one of {robust.rounds} rounds waited for a CPU another program held; "
                f"the fastest sample is kept"
            )
        spread, n = (robust.relative_spread, robust.kept) if robust is not None else (self.relative_spread, self.n)
        if spread > SPREAD_WARNING:
            return f"{name}: spread (IQR) is {100 * spread:.0f}% of the median over {n} samples; the machine may be busy"
        return None

    def stat(self) -> Stat:
        """The figure calibration saves: the robust estimate where there are rounds, else the median."""
        robust = self.robust
        if robust is None:
            return Stat(median_s=max(self.median_s, 1e-12), iqr_s=max(self.iqr_s, 0.0), samples=self.n)
        return Stat(median_s=max(robust.value_s, 1e-12), iqr_s=max(robust.iqr_s, 0.0), samples=max(robust.kept, 1))

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


@dataclass
class Backlog:
    """How long the spin kernel ahead of each timed repetition on the GPU lasts: the host's time to
    queue one repetition (measured in the batch before) times ``margin``, plus a fixed slack; the
    conservative fixed guess until a batch has measured it."""

    per_rep_s: float | None = None
    measured_inner: int = 1  # calls per repetition when per_rep_s was measured
    margin: float = BACKLOG_MARGIN

    def cycles(self, inner: int) -> int:
        if self.per_rep_s is None:
            return int(BACKLOG_CYCLES_PER_CALL * inner + BACKLOG_CYCLES)
        per_rep_s = self.per_rep_s * max(inner / self.measured_inner, 1.0)
        return int((self.margin * per_rep_s + BACKLOG_SLACK_S) * SPIN_CYCLES_PER_S)

    def measured(self, per_rep_s: float, inner: int, caught_up: bool) -> None:
        self.per_rep_s, self.measured_inner = per_rep_s, inner
        self.margin = min(2 * self.margin, BACKLOG_MAX_MARGIN) if caught_up else max(self.margin / 2, BACKLOG_MARGIN)


def _device_batch(fn, reps: int, inner: int, device: str, flush, backlog: Backlog) -> tuple[np.ndarray, bool]:
    """One batch on the device clock: seconds per call of each repetition, and whether the device
    caught up with the host in it (a spin ended before its repetition was queued)."""
    import torch

    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    spun = [torch.cuda.Event() for _ in range(reps)]
    queued_s = np.empty(reps)
    caught_up = False
    sync(device)
    for r in range(reps):
        t0 = time.perf_counter()
        if flush is not None:
            flush()
        # Back the stream up behind a spin kernel so that the timed kernels are already queued
        # when the start event fires: the events then bracket device execution only, not the
        # host's launch latency (which the model of time prices separately).
        torch.cuda._sleep(backlog.cycles(inner))
        spun[r].record()
        starts[r].record()
        for _ in range(inner):
            fn()
        ends[r].record()
        caught_up = caught_up or spun[r].query()
        queued_s[r] = time.perf_counter() - t0
    sync(device)
    # the median repetition: one that waited for room in a full launch queue does not size the spin
    backlog.measured(float(np.median(queued_s)), inner, caught_up)
    out = np.array([starts[r].elapsed_time(ends[r]) * 1e-3 / inner for r in range(reps)])
    return out, caught_up


def _run_batch(fn, reps: int, inner: int, device: str, clock: str, flush, backlog: Backlog | None = None) -> np.ndarray:
    """Time ``reps`` repetitions of ``inner`` calls each; returns seconds per call."""
    if clock == "device":
        backlog = backlog if backlog is not None else Backlog()
        for _ in range(BACKLOG_RETRIES):
            out, caught_up = _device_batch(fn, reps, inner, device, flush, backlog)
            if not caught_up:
                return out
        return _device_batch(fn, reps, inner, device, flush, backlog)[0]
    # host clock: wall time of the calls themselves (on a GPU: issue time, unless fn synchronizes)
    out = np.empty(reps)
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


def _inner_for(one_call_s: float) -> int:
    """Calls per repetition so that one repetition lasts at least MIN_REP_S."""
    if one_call_s >= MIN_REP_S:
        return 1
    return int(min(1000, np.ceil(MIN_REP_S / max(one_call_s, 1e-8))))


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
    backlog = Backlog() if clock == "device" else None

    # Warm-up: batches of increasing size until two consecutive batch medians agree within 5%. The
    # first, of single calls, also sizes ``inner`` when it is not given; at one call per repetition
    # it counts as the warm-up's first batch.
    fn()
    sync(device)
    warm_reps, previous, batch = 1, None, 2
    t_start = time.perf_counter()
    per_call = None
    if inner is None:
        one = float(np.median(_run_batch(fn, 3, 1, device, clock, None, backlog)))
        warm_reps += 3
        inner = _inner_for(one)
        if inner == 1:
            previous = one
    while True:
        samples = _run_batch(fn, batch, inner, device, clock, flush, backlog)
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
    result = _timed_rounds(fn, reps, inner, device, clock, flush, label, warm_reps, backlog, min_samples)
    first = result.robust
    if first.contended or first.relative_spread > SPREAD_WARNING:
        # One retry with twice the samples: a single disturbance (another process, a clock change)
        # should not decide the number; keep the run that had undisturbed rounds, else the tighter.
        retry = _timed_rounds(fn, min(2 * reps, 2 * max_samples), inner, device, clock, flush, label, warm_reps, backlog, min_samples)
        second = retry.robust
        if (first.contended, first.relative_spread) > (second.contended, second.relative_spread):
            why = "every round waited for a CPU" if first.contended else f"spread was {100 * first.relative_spread:.0f}%"
            retry.notes.append(f"re-measured: in the first run {why}")
            result = retry
    for tally in _TALLIES:
        tally.add(result)
    return result


def _timed_rounds(fn, reps: int, inner: int, device: str, clock: str, flush, label: str, warm_reps: int,
                  backlog: Backlog | None = None, min_samples: int = 0) -> Timing:
    """``reps`` repetitions in up to ``ROUNDS`` rounds, each with the threads' waits for a CPU; on the
    device clock, fewer when the estimate has settled (``_settled``) on at least ``min_samples`` samples."""
    n_rounds = min(ROUNDS, reps)
    per_round = math.ceil(reps / n_rounds)
    rounds, shares, waited_total, timed = [], [], 0.0, 0.0
    # Device time does not stop while the host waits (the queue runs ahead of it): rounds of the
    # device clock are judged by their times alone, and their waits are not read.
    host = clock != "device"
    for i in range(n_rounds):
        before = _RUN_QUEUE.snapshot() if host else None
        t0 = time.perf_counter()
        rounds.append(_run_batch(fn, per_round, inner, device, clock, flush, backlog))
        wall = time.perf_counter() - t0
        waited = RunQueueWaits.waited_s(before, _RUN_QUEUE.snapshot()) if host else None
        shares.append(None if waited is None else waited / max(wall, 1e-9))
        waited_total += waited or 0.0
        timed += wall
        done = i + 1
        if not host and SETTLED_ROUNDS <= done < n_rounds and done * per_round >= min_samples and _settled(rounds, shares):
            break
    return Timing(
        samples_s=np.concatenate(rounds), label=label, warmup_reps=warm_reps, rounds_s=rounds, wait_shares=shares,
        waited_s=waited_total, timed_s=timed,
    )


def _settled(rounds: list[np.ndarray], shares: list[float | None]) -> bool:
    """Whether the rounds so far pin the estimate down, so that more would only confirm it: the
    standard error of a median of n samples is about 1.25 sigma / sqrt(n), sigma about IQR / 1.35
    (a GPU kernel's calls spread by a few percent at most; a budget sized for a noisy host's
    timings would spend most of a calibration confirming them)."""
    estimate = robust_estimate(rounds, shares)
    error = 1.2533 * (estimate.relative_spread / 1.349) / math.sqrt(max(estimate.kept, 1))
    return not estimate.contended and error <= SETTLED_ERROR


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
