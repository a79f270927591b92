"""Where a calibration's wall time goes, point by point: each timed call's wall time by its label.

    python benchmarks/calibration_trace.py [--device cuda] [--runs 2] [--quick] [--json OUT]

Runs ``roofline calibrate``'s measurement (``calibrate.runner.run_calibration``, nothing saved)
``--runs`` times in one process, each timed call of the protocol (``roofline.timing.time_fn``) wrapped
to record its wall time, warm-up included, under its label. The first run on a fresh machine pays
what the driver and cuDNN build on first use; a later run shows the steady cost. Prints per run the
stages, the slowest points, and the wall time outside any timed call (tensors drawn, models built).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import calibrate.conv  # noqa: E402
import calibrate.kernels  # noqa: E402
import calibrate.matmul  # noqa: E402
import calibrate.mechanisms  # noqa: E402
import calibrate.memory  # noqa: E402
import calibrate.overhead  # noqa: E402
import calibrate.rnn  # noqa: E402
import calibrate.transfer  # noqa: E402
from calibrate.runner import run_calibration  # noqa: E402
from roofline import timing  # noqa: E402

MODULES = [calibrate.conv, calibrate.kernels, calibrate.matmul, calibrate.mechanisms, calibrate.memory, calibrate.overhead, calibrate.rnn, calibrate.transfer]
SLOWEST = 25


def traced(calls: list):
    """``time_fn`` that appends (label, wall seconds) to ``calls``."""
    original = timing.time_fn

    def time_fn(fn, **kwargs):
        t0 = time.perf_counter()
        try:
            return original(fn, **kwargs)
        finally:
            calls.append((kwargs.get("label", ""), time.perf_counter() - t0))

    return time_fn


def one_run(device: str, quick: bool = False) -> dict:
    calls: list = []
    wrapper = traced(calls)
    saved = {m: m.time_fn for m in MODULES if hasattr(m, "time_fn")}
    for m in saved:
        m.time_fn = wrapper
    try:
        t0 = time.perf_counter()
        profile = run_calibration(device, quick=quick, show_progress=False)
        wall = time.perf_counter() - t0
    finally:
        for m, f in saved.items():
            m.time_fn = f
    return dict(wall_s=wall, stages=profile.calibration.stage_seconds, calls=calls)


def report(run: dict, index: int) -> list[str]:
    timed = sum(s for _, s in run["calls"])
    lines = [f"run {index + 1}: {run['wall_s']:.1f} s, {len(run['calls'])} timed calls taking {timed:.1f} s, {run['wall_s'] - timed:.1f} s outside them"]
    lines.append("  stages (s): " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(run["stages"].items(), key=lambda kv: -kv[1])[:20]))
    lines.append(f"  the {SLOWEST} slowest calls:")
    for label, s in sorted(run["calls"], key=lambda c: -c[1])[:SLOWEST]:
        lines.append(f"    {1e3 * s:8.1f} ms  {label}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="the quick plan (a check of this script)")
    ap.add_argument("--json", help="write every run's stages and calls here")
    args = ap.parse_args()
    runs = [one_run(args.device, args.quick) for _ in range(args.runs)]
    for i, run in enumerate(runs):
        print("\n".join(report(run, i)))
    if args.json:
        Path(args.json).write_text(json.dumps(dict(device=args.device, runs=runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
