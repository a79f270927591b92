"""How much of the GPU convolution stages' time is each shape's first call, and whether threads cut it.

    python benchmarks/plan_warmup_probe.py serial            # the stages as calibration runs them
    python benchmarks/plan_warmup_probe.py threads 8         # each stage's first calls on 8 threads first

Run each mode in a fresh process (cuDNN keeps the plans it built for the process's life). Prints the
wall time of each stage (the dense convolutions of calibration's three dtypes, then the depthwise and
grouped families) and, with threads, of the warm-up before it. The H100's answer (four fresh processes, code
3900259): the families' first calls take 6.4 s one after another and 5.6-6.2 s on 8 or 16 threads, so cuDNN
builds their plans one at a time (``benchmarks/results/h100_plan_warmup_probe.txt``).
"""

from __future__ import annotations

import argparse
import time
import types
from concurrent.futures import ThreadPoolExecutor

import torch

from calibrate import conv, mechanisms, runner
from roofline.schema.profile import Stat


class _Collected:
    warning = None

    def stat(self):
        return Stat(median_s=1e-5, iqr_s=0.0, samples=1)


def _snapshot(fn):
    """The call with its closure's current values (the stages rebind their loop variables)."""
    if not fn.__closure__:
        return fn
    cells = tuple(types.CellType(c.cell_contents) for c in fn.__closure__)
    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, cells)


def _calls_of(stage) -> list:
    """Every call ``stage`` would time, collected without timing them (and without calling them)."""
    calls = []

    def collect(fn, **_):
        calls.append(_snapshot(fn))
        return _Collected()

    saved = conv.time_fn, mechanisms.time_fn
    conv.time_fn = mechanisms.time_fn = collect
    try:
        stage()
    finally:
        conv.time_fn, mechanisms.time_fn = saved
    return calls


def _first_calls(calls: list, threads: int) -> float:
    def run(fn):
        with torch.no_grad():
            fn()

    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(run, calls))
    torch.cuda.synchronize()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["serial", "threads"])
    ap.add_argument("threads", type=int, nargs="?", default=8, help="with threads: how many (default 8)")
    args = ap.parse_args()
    mode, threads = args.mode, args.threads
    plan = runner.gpu_plan(False, torch.cuda.get_device_properties(0).total_memory)
    torch.zeros(1, device="cuda")
    stages = {
        f"conv {d}": (lambda d=d: conv.measure_conv(d, plan.conv_shapes_for(d), "cuda", budget_s=plan.point_budget_s, warnings=[], keyed=True))
        for d in plan.conv_dtypes
    }
    stages["conv families"] = lambda: mechanisms.measure_conv_families("cuda", budget_s=plan.point_budget_s / 2, warnings=[])
    for name, stage in stages.items():
        warm = 0.0
        if mode == "threads":
            calls = _calls_of(stage)
            warm = _first_calls(calls, threads)
            del calls
        start = time.perf_counter()
        stage()
        torch.cuda.synchronize()
        print(f"{name:<16} warm-up {warm:6.2f} s  stage {time.perf_counter() - start:6.2f} s", flush=True)


if __name__ == "__main__":
    main()
