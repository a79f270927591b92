"""How far apart are the predictions of several CPU profiles of one machine?

Makes N CPU profiles in a row (``roofline calibrate --device cpu``, each in its own process), the last
``--busy`` of them while a busy loop keeps one core of this process's CPUs fully busy, then prices
the CPU cases of ``benchmarks/accuracy.py`` with each profile (pricing only: nothing is timed) and
prints, per case, each profile's prediction and how far apart they are.

    python benchmarks/calibration_stability.py --profiles 3 --busy 1 [--keep DIR] [--json OUT]
    python benchmarks/calibration_stability.py --price A.json B.json ...   (profiles already made)

Spread of a case: (largest - smallest) / smallest prediction over the profiles. Busy against quiet:
the largest |busy / quiet - 1| over cases and pairs of a busy and a quiet profile.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

BUSY_LOOP = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True:\n    pass\n"


def start_busy_loop(core: int) -> subprocess.Popen:
    """A process that keeps ``core`` busy until it is stopped."""
    return subprocess.Popen([sys.executable, "-c", BUSY_LOOP, str(core)])


def make_profile(path: Path, extra: list[str], busy_core: int | None) -> dict:
    """Run one calibration in its own process; returns what the run saw (wall, load)."""
    loop = start_busy_loop(busy_core) if busy_core is not None else None
    try:
        if loop is not None:
            time.sleep(0.5)  # the loop is running before calibration starts
        before = os.getloadavg()[0]
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "roofline", "calibrate", "--device", "cpu", "--no-progress", "--output", str(path), "--name", path.stem, *extra],
            capture_output=True, text=True, cwd=REPO,
        )
        wall = time.perf_counter() - t0
    finally:
        if loop is not None:
            loop.terminate()
            loop.wait()
    saved = path.exists()
    if proc.returncode != 0:
        print(f"  {path.name}: calibrate exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return dict(path=str(path), busy=busy_core is not None, wall_s=wall, loadavg_before=before, exit=proc.returncode, saved=saved)


def price(profile_path: str, cases) -> dict[str, float]:
    """Predicted seconds of every case with one profile."""
    from benchmarks.cases import load_meta, use_example_dtype
    from roofline.pipeline import Analysis, Options
    from roofline.profiles import load_profile_file

    profile = load_profile_file(Path(profile_path))
    out = {}
    for label, file, dtype, sweep_label, _ in cases:
        use_example_dtype(dtype)
        model, args, kwargs = load_meta(file, sweep_label)
        out[label] = Analysis.of(model, args, kwargs, profile, Options(device="cpu", batch_sweep=False), name=label).total_s
    return out


def describe_load(profile_path: str) -> str:
    from roofline.profiles import load_profile_file

    cal = load_profile_file(Path(profile_path)).calibration
    load = getattr(cal, "load", None)
    if load is None:
        return "no load recorded"
    return load.summary()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profiles", type=int, default=3, help="profiles to make (default 3)")
    ap.add_argument("--busy", type=int, default=1, help="how many of them (the last) are made with one core kept busy (default 1)")
    ap.add_argument("--core", type=int, default=None, help="the core the busy loop runs on (default: the last this process may use)")
    ap.add_argument("--calibrate-args", default="", help="more arguments for roofline calibrate, e.g. '--quick'")
    ap.add_argument("--keep", metavar="DIR", help="write the profiles here (default: a temporary folder)")
    ap.add_argument("--price", nargs="+", metavar="PROFILE", help="price these profiles instead of making new ones")
    ap.add_argument("--busy-profiles", nargs="*", default=[], metavar="PROFILE", help="with --price: which of them were made busy")
    ap.add_argument("--json", help="write the runs and predictions here")
    args = ap.parse_args()

    from benchmarks.accuracy import CASES_CPU

    runs = []
    if args.price:
        runs = [dict(path=p, busy=p in args.busy_profiles) for p in args.price]
    else:
        folder = Path(args.keep or tempfile.mkdtemp(prefix="roofline-stability-"))
        folder.mkdir(parents=True, exist_ok=True)
        core = args.core if args.core is not None else max(os.sched_getaffinity(0))
        for i in range(args.profiles):
            busy = i >= args.profiles - args.busy
            path = folder / f"cpu-{i}{'-busy' if busy else ''}.json"
            print(f"calibrating {path.name}" + (f" with core {core} kept busy" if busy else ""), flush=True)
            run = make_profile(path, args.calibrate_args.split(), core if busy else None)
            print(f"  {run['wall_s']:.1f} s, exit {run['exit']}, load average before {run['loadavg_before']:.2f}", flush=True)
            runs.append(run)
    runs = [r for r in runs if Path(r["path"]).exists()]
    if len(runs) < 2:
        print("fewer than two profiles to compare")
        return 1
    for r in runs:
        r["load"] = describe_load(r["path"])
        print(f"{Path(r['path']).name}: {r['load']}")
    predictions = {r["path"]: price(r["path"], CASES_CPU) for r in runs}

    names = [Path(r["path"]).stem for r in runs]
    print()
    print(f"{'case':<24}" + "".join(f"{n:>16}" for n in names) + f"{'spread':>9}")
    spreads, busy_vs_quiet = {}, []
    quiet = [r["path"] for r in runs if not r["busy"]]
    busy = [r["path"] for r in runs if r["busy"]]
    for label, *_ in CASES_CPU:
        values = [predictions[r["path"]][label] for r in runs]
        spread = max(values) / min(values) - 1
        spreads[label] = spread
        print(f"{label:<24}" + "".join(f"{v * 1e3:13.3f} ms" for v in values) + f"{100 * spread:8.1f}%")
        for b in busy:
            for q in quiet:
                busy_vs_quiet.append((abs(predictions[b][label] / predictions[q][label] - 1), label))
    worst = max(spreads, key=spreads.get)
    print(f"spread over {len(runs)} profiles: median {100 * statistics.median(spreads.values()):.1f}%, "
          f"max {100 * spreads[worst]:.1f}% ({worst})")
    if busy_vs_quiet and quiet:
        far, label = max(busy_vs_quiet)
        print(f"busy against quiet profiles: largest |difference| {100 * far:.1f}% ({label})")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(runs=runs, predictions=predictions, spreads=spreads), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
