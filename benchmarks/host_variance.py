"""How the host's speed moves over time, and whether the core a process runs on explains it.

The host-speed index (calibration's op mix, ``roofline.measure.host_speed``) and a pure-Python
loop are sampled every ~50 ms for a few seconds, first with the scheduler free to move the
process, then pinned to single cores. Prints per-phase min / median / max of both, as ratios to
the first phase's median, and the core each sample ran on.

    python benchmarks/host_variance.py [--seconds S] [--cores 0 3 7] [--device cuda|cpu]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from roofline.measure.host_speed import INDEX_CALLS, index_call
from roofline.timing import sync


def python_loop() -> None:
    total = 0
    for i in range(2000):
        total += i * i % 7


def current_cpu() -> int:
    """The CPU this thread last ran on (field 39 of /proc/thread-self/stat)."""
    try:
        with open("/proc/thread-self/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[36])
    except (OSError, ValueError, IndexError):
        return -1


def sample(mix, device: str) -> tuple[float, float, int]:
    """(index pass s, python loop s, cpu) of one sample."""
    sync(device)
    t0 = time.perf_counter()
    for _ in range(INDEX_CALLS):
        mix()
    t1 = time.perf_counter()
    sync(device)
    t2 = time.perf_counter()
    python_loop()
    t3 = time.perf_counter()
    return (t1 - t0) / INDEX_CALLS, t3 - t2, current_cpu()


def phase(mix, device: str, seconds: float) -> list[tuple[float, float, int]]:
    out, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        out.append(sample(mix, device))
        time.sleep(0.05)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--cores", type=int, nargs="*", default=None)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    allowed = sorted(os.sched_getaffinity(0))
    cores = args.cores if args.cores is not None else allowed[:: max(1, len(allowed) // 4)]
    mix = index_call(args.device)
    with torch.no_grad():
        for _ in range(50):
            mix()
        phases = [("free", allowed)] + [(f"core {c}", [c]) for c in cores] + [("free again", allowed)]
        ref = None
        for name, cpus in phases:
            os.sched_setaffinity(0, cpus)
            got = phase(mix, args.device, args.seconds)
            idx = [g[0] for g in got]
            py = [g[1] for g in got]
            if ref is None:
                ref = (statistics.median(idx), statistics.median(py))
            seen = sorted({g[2] for g in got})
            print(f"{name:>11}: n={len(got):4d} index min/med/max {min(idx) / ref[0]:.2f}/{statistics.median(idx) / ref[0]:.2f}/{max(idx) / ref[0]:.2f}"
                  f"  python {min(py) / ref[1]:.2f}/{statistics.median(py) / ref[1]:.2f}/{max(py) / ref[1]:.2f}  cpus {seen[:8]}{'...' if len(seen) > 8 else ''}"
                  f"  (index median {statistics.median(idx) * 1e6:.1f} us)")
        os.sched_setaffinity(0, allowed)


if __name__ == "__main__":
    main()
