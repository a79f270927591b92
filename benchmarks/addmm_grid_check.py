"""addmm's epilogue ratio from calibration's grid, checked on the shapes of a sweep held out of it.

    python benchmarks/addmm_grid_check.py [--sweep benchmarks/results/h100_gemm_sweep.json] [--profile P]

The sweep (``mechanism_sweep.py --only gemms``) times addmm and mm over rows x reduction length x
width. The shapes of ``calibrate.mechanisms.ADDMM_GRID`` among them make a calibration-like ratio
curve; every other shape is held out. For float32 and TF32 this prints the |error| (median, p90) of
addmm priced as the profile's mm curve times the ratio, with the grid and with the profile's own
addmm ratio (the eight scattered shapes of a profile calibrated before the grid), and of the ratio
alone against the measured addmm / mm.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.sweep_checks import error_line, sweep_points  # noqa: E402
from calibrate.mechanisms import ADDMM_GRID  # noqa: E402
from roofline.model.device import DeviceModel  # noqa: E402
from roofline.model.families import GemmRatioModel  # noqa: E402
from roofline.profiles import load_profile_file  # noqa: E402
from roofline.schema.profile import GemmRatioCurve, GemmRatioPoint, Stat  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sweep", default=str(REPO / "benchmarks" / "results" / "h100_gemm_sweep.json"))
    ap.add_argument("--profile", default=str(REPO / "benchmarks" / "results" / "h100_zoo_shipped_profile.json"),
                    help="the mm curves and the scattered addmm ratio to compare with (default: the H100 profile shipped before the grid)")
    args = ap.parse_args()
    points = sweep_points(args.sweep, "addmm_grid")
    profile = load_profile_file(Path(args.profile))
    dev = DeviceModel(profile.gpu, "cuda")
    on_grid = lambda m, k, n: m in ADDMM_GRID["m"] and k in ADDMM_GRID["k"] and n in ADDMM_GRID["n"]  # noqa: E731
    for dtype in ("float32", "tf32"):
        by = {(p["m"], p["k"], p["n"], p["variant"]): p for p in points if p["dtype"] == dtype}
        stat = lambda p: Stat(median_s=p["median_s"], iqr_s=p["iqr_s"], samples=p["samples"])  # noqa: E731
        grid = GemmRatioModel([GemmRatioCurve(kind="addmm", dtype=dtype, points=[
            GemmRatioPoint(m=m, n=n, k=k, time=stat(by[(m, k, n, "addmm")]), reference=stat(by[(m, k, n, "mm")]))
            for m, k, n, v in by if v == "mm" and on_grid(m, k, n)
        ])])
        held = [(m, k, n) for m, k, n, v in by if v == "mm" and not on_grid(m, k, n)]
        curve = dev.matmul_model(dtype)
        print(f"{dtype}: {len(held)} held-out shapes")
        for name, model in (("grid", grid), ("profile's own", dev.gemm_ratios)):
            priced = [curve.time_s(m, n, k) * model.addmm_ratio(dtype, m, n, k) / by[(m, k, n, "addmm")]["median_s"] - 1 for m, k, n in held]
            ratio = [model.addmm_ratio(dtype, m, n, k) * by[(m, k, n, "mm")]["median_s"] / by[(m, k, n, "addmm")]["median_s"] - 1 for m, k, n in held]
            print(f"  {name:<14} addmm priced: {error_line(priced)}; the ratio alone: {error_line(ratio)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
