"""How busy the machine is around a calibration, and the scheduling priority it runs at.

Other programs disturb micro-benchmarks, and a profile made on a busy machine should say so. Three
measures, taken before calibration starts and over the whole of it:

- other programs' share of the machine's CPUs: the busy time ``/proc/stat`` counts for all CPUs,
  less this process's own CPU time, over wall time x CPUs (Linux; None elsewhere);
- the 1-minute load average;
- the spread of a fixed pure-Python spin loop, timed many times in a row: on a quiet core its
  repetitions agree within a few percent. The lowest of ``SPIN_TRIES`` tries counts, so that a
  moment's disturbance (GPU work still in flight, a driver thread waking) is not taken for a busy
  machine; other programs that keep the CPUs busy disturb every try.

During calibration the timing protocol also counts the measurements that had no round free of
waits for a CPU (``roofline.timing.Tally``).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from roofline.schema.profile import MachineLoad

PROBE_S = 0.3  # wall time of the probe before calibration
SPIN_ITERATIONS = 2000  # one spin sample: ~50 us of interpreter work
SPIN_SAMPLES = 200
SPIN_TRIES = 3
# the nice value calibration asks for where the OS allows it: the highest, so that a thread of a parallel region
# that wakes on a core another program keeps busy preempts it at once (CFS weighs nice -20 at 87x nice 0, -10
# at 9x, which leaves such wake-ups waiting)
PRIORITY_NICE = -20


@dataclass
class CpuClock:
    """A reading of the machine's and this process's CPU time."""

    wall_s: float
    busy_s: float | None  # all CPUs, all programs (None without /proc/stat)
    own_s: float  # this process, all its threads
    cpus: int


def read_cpu_clock() -> CpuClock:
    busy = None
    cpus = os.cpu_count() or 1
    try:
        with open("/proc/stat") as f:
            lines = f.read().splitlines()
        fields = [int(x) for x in lines[0].split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        busy = (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")  # up to steal; guest time is inside user
        cpus = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit()) or cpus
    except (OSError, ValueError, IndexError):
        pass
    t = os.times()
    return CpuClock(wall_s=time.perf_counter(), busy_s=busy, own_s=t.user + t.system, cpus=cpus)


def others_share(start: CpuClock, end: CpuClock) -> float | None:
    """Share of all CPUs that other programs kept busy between two readings (0..1)."""
    wall = end.wall_s - start.wall_s
    if start.busy_s is None or end.busy_s is None or wall <= 0:
        return None
    others = (end.busy_s - start.busy_s) - (end.own_s - start.own_s)
    return float(min(max(others / (wall * end.cpus), 0.0), 1.0))


def relative_iqr(times) -> float:
    q25, q50, q75 = np.percentile(times, [25, 50, 75])
    return float((q75 - q25) / q50)


def spin_spread(samples: int = SPIN_SAMPLES, tries: int = SPIN_TRIES, clock=time.perf_counter) -> float:
    """The lowest relative inter-quartile range of a fixed spin loop timed ``samples`` times, over ``tries`` tries."""
    best = float("inf")
    for _ in range(tries):
        times = np.empty(samples)
        for i in range(samples):
            t0 = clock()
            for _ in range(SPIN_ITERATIONS):
                pass
            times[i] = clock() - t0
        best = min(best, relative_iqr(times))
    return best


def loadavg() -> float | None:
    try:
        return float(os.getloadavg()[0])
    except (OSError, AttributeError):
        return None


@dataclass
class Before:
    """What the probe before calibration saw."""

    clock: CpuClock
    loadavg: float | None
    others_busy: float | None
    spin_spread: float


def probe_before() -> Before:
    """Other programs' share of the CPUs over ``PROBE_S`` (this process sleeps through most of it,
    so its own share is small), the load average and the spin loop's spread."""
    start = read_cpu_clock()
    time.sleep(PROBE_S)
    spread = spin_spread()
    end = read_cpu_clock()
    return Before(clock=end, loadavg=loadavg(), others_busy=others_share(start, end), spin_spread=spread)


# Verdict thresholds: a profile made past any of them is marked as made on a busy machine.
BUSY_OTHERS_SHARE = 0.25  # other programs used a quarter of all CPUs (half a core of two)
# the spin loop's repetitions disagree by 25%: a virtualized host jitters by some percent when idle, and
# more with GPU work in flight, so a lower bar marks quiet machines busy (docs/design.md, "Calibration")
BUSY_SPIN_SPREAD = 0.25
BUSY_CONTENDED_SHARE = 0.05  # 5% of the measurements had no round free of waits for a CPU


def others_disturbed(load: MachineLoad) -> bool:
    """Whether other programs took the CPUs (before or during) or measurements waited for one: a busy
    machine for another reason than a spin loop's spread, which on a virtual host is its own drift."""
    shares = [v for v in (load.others_busy_before, load.others_busy_during) if v is not None]
    contended = load.contended_measurements / load.measurements if load.measurements else 0.0
    return any(v >= BUSY_OTHERS_SHARE for v in shares) or contended >= BUSY_CONTENDED_SHARE


def machine_load(before: Before, tally, priority_raised: bool) -> MachineLoad:
    """The record of how busy the machine was, from the probe before and the calibration's tally."""
    end = read_cpu_clock()
    during = others_share(before.clock, end)
    after_spread = spin_spread()
    contended_share = tally.contended / tally.measurements if tally.measurements else 0.0
    reasons = []
    for label, value in (("before", before.others_busy), ("during calibration", during)):
        if value is not None and value >= BUSY_OTHERS_SHARE:
            reasons.append(f"other programs used {100 * value:.0f}% of the CPUs {label}")
    spreads = [s for s in (before.spin_spread, after_spread) if s >= BUSY_SPIN_SPREAD]
    if spreads:
        reasons.append(f"a fixed spin loop varied by {100 * max(spreads):.0f}%")
    if contended_share >= BUSY_CONTENDED_SHARE:
        reasons.append(f"{tally.contended} of {tally.measurements} measurements waited for a CPU in every round")
    return MachineLoad(
        cpus=end.cpus, loadavg_before=before.loadavg, loadavg_after=loadavg(),
        others_busy_before=before.others_busy, others_busy_during=during,
        spin_spread_before=before.spin_spread, spin_spread_after=after_spread,
        measurements=tally.measurements, contended_measurements=tally.contended,
        waited_share=tally.waited_s / tally.timed_s if tally.timed_s > 0 else None,
        priority_raised=priority_raised, busy=bool(reasons), busy_reasons=reasons,
    )


class RaisedPriority:
    """Runs a block at a higher scheduling priority (nice ``PRIORITY_NICE``) for every thread of
    this process, where the OS allows it (Linux, with the privilege to lower nice values), and puts
    the old values back after. Other programs then take less of the CPUs from the measurements;
    without the privilege nothing changes and ``raised`` is False."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.raised = False
        self._old: dict[int, int] = {}
        self._main_old = 0

    def __enter__(self):
        if not self.enabled or not hasattr(os, "setpriority") or not os.path.isdir("/proc/self/task"):
            return self
        self._main_old = os.getpriority(os.PRIO_PROCESS, 0)  # on Linux: the calling thread
        for tid in map(int, os.listdir("/proc/self/task")):
            try:
                old = os.getpriority(os.PRIO_PROCESS, tid)
                if old > PRIORITY_NICE:
                    os.setpriority(os.PRIO_PROCESS, tid, PRIORITY_NICE)
                    self._old[tid] = old
            except PermissionError:  # no privilege: leave every thread as it is
                break
            except OSError:  # the thread ended
                continue
        self.raised = bool(self._old)
        return self

    def __exit__(self, *exc):
        if not self.raised:
            return
        # threads started inside the block (a thread pool) inherited the raised value
        for tid in map(int, os.listdir("/proc/self/task")):
            try:
                if os.getpriority(os.PRIO_PROCESS, tid) == PRIORITY_NICE:
                    os.setpriority(os.PRIO_PROCESS, tid, self._old.get(tid, self._main_old))
            except OSError:
                continue
        self._old.clear()
