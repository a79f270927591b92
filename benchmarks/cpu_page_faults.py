"""CPU training steps and the page faults they take: glibc's malloc hands large tensors fresh pages
(mmap, or heap memory trimmed back to the system) that fault in on first touch, every step.

    OMP_NUM_THREADS=1 python benchmarks/cpu_page_faults.py [CASE ...]   (cases of benchmarks/train_check.py' CPU subset)

Each case runs in a fresh process of its own (what faults depends on the allocator's history: the
same step after another model's steps may fault far less). For each case: the median step time and the minor page faults per step as the process runs by
default, then again after ``mallopt`` raises glibc's mmap and trim thresholds to 1 GiB (the heap then
keeps what a step frees and the next step reuses it). The difference is what first touches cost the
step; the model of time does not price them (benchmarks/RESULTS.md, known gaps).
"""

from __future__ import annotations

import ctypes
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from benchmarks.train_check import all_cases  # noqa: E402
from roofline.graph.training import TrainStep  # noqa: E402
from roofline.measure.host_speed import warm_up  # noqa: E402
from roofline.measure.train import RealStep  # noqa: E402

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


def timed(real: RealStep, steps: int = 50) -> tuple[float, float]:
    """(median step seconds, minor page faults per step) over ``steps`` steps."""
    faults0, times = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, []
    for _ in range(steps):
        t0 = time.perf_counter()
        real()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0) / steps


def measure(name: str) -> str:
    """One case's line, measured in this process."""
    case = next(c for c in all_cases() if c.name == name)
    model, args, kwargs = case.build()
    real = RealStep(model, args, kwargs, TrainStep(optimizer="adamw", implementation="for-loop"), "cpu")
    warm_up(real, seconds=0.5, at_least=5)
    t, f = timed(real)
    libc = ctypes.CDLL("libc.so.6")
    libc.mallopt(M_MMAP_THRESHOLD, 1 << 30)
    libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)
    warm_up(real, seconds=0.2, at_least=5)
    t_kept, f_kept = timed(real)
    return (f"{name:<12} default {t * 1e3:7.3f} ms, {f:7.1f} faults/step | pages kept {t_kept * 1e3:7.3f} ms, {f_kept:6.1f} faults/step"
            f" | faults cost {100 * (t - t_kept) / t:+5.1f}% of the step")


def main() -> int:
    if sys.argv[1:2] == ["--one"]:
        print(measure(sys.argv[2]))
        return 0
    names = sys.argv[1:] or [c.name for c in all_cases() if c.cpu]
    print(f"{torch.__version__}, {torch.get_num_threads()} thread(s); AdamW for-loop steps, one fresh process a case", flush=True)
    for name in names:
        subprocess.run([sys.executable, __file__, "--one", name], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
