"""Dense convolutions priced by a profile against a held-out sweep over channel counts.

    python benchmarks/conv_channels_check.py [--sweep benchmarks/results/h100_conv_channels.json] [--profile P ...]

The sweep (``mechanism_sweep.py --only conv_channels``) times 240 NCHW convolutions drawn from
``calibrate.conv``'s grid of channel counts and plane sizes with another seed than calibration's
own sample, each in float32 (TF32, cuDNN's default) and float16, with the kernels cuDNN ran. For
each profile this prints the |error| of the predicted kernel time (median, p90) in all and by the
kernel cuDNN picked: cuBLAS (``nvjet``), CUTLASS GEMMs, NHWC kernels behind layout transforms
(``xmma+T``), NCHW xmma kernels, and the slow legacy ``implicit_convolve_sgemm``; then the share
of a calibrated point's time its kernels run (``ConvPoint.kernels_s``; the rest is gaps between
them), which the report's per-op ``kernels_busy_s`` takes.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.sweep_checks import error_line, sweep_points  # noqa: E402
from calibrate.conv import channel_shapes  # noqa: E402
from roofline.pipeline import analyze  # noqa: E402
from roofline.profiles import load_profile_file  # noqa: E402

DTYPES = {"float32": torch.float32, "float16": torch.float16}


def kernel_class(names: list[str]) -> str:
    """The kind of kernel cuDNN ran for one convolution, from the profiler's kernel names."""
    if any("implicit_convolve_sgemm" in k for k in names):
        return "legacy"
    if any("nvjet" in k for k in names):
        return "cuBLAS"
    if any("cutlass" in k and "gemm" in k for k in names):
        return "CUTLASS GEMM"
    if any("nchwToNhwc" in k or "nhwcToNchw" in k for k in names):
        return "NHWC + transforms"
    if any("xmma" in k for k in names):
        return "xmma"
    return "other"


def predicted_s(profile, p: dict) -> float:
    """The profile's kernel time for one sweep point, through the capture and pricing users get."""
    dtype = DTYPES[p["dtype"]]
    with torch.device("meta"):
        conv = torch.nn.Conv2d(p["cin"], p["cout"], p["kernel"], p["stride"], p["padding"], bias=False, dtype=dtype)
        x = torch.randn(p["batch"], p["cin"], p["size"], p["size"], dtype=dtype)
    (op,) = [o for o in analyze(conv, (x,), profile, device="cuda", batch_sweep=False).ops if o.category == "conv"]
    return op.kernel_s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sweep", default=str(REPO / "benchmarks" / "results" / "h100_conv_channels.json"))
    ap.add_argument("--profile", nargs="+", default=[str(REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json")])
    args = ap.parse_args()
    calibrated = {(s.batch, s.in_channels, s.out_channels, s.size, s.kernel, s.stride) for s in channel_shapes()}
    # the two seeds' samples of the grid share a shape or two: those are not held out
    points = [p for p in sweep_points(args.sweep, "conv_channels")
              if (p["batch"], p["cin"], p["cout"], p["size"], p["kernel"], p["stride"]) not in calibrated]
    for path in args.profile:
        profile = load_profile_file(Path(path))
        errors: dict[str, list[float]] = defaultdict(list)
        for p in points:
            e = predicted_s(profile, p) / p["median_s"] - 1
            errors["all"].append(e)
            errors[f"{p['dtype']} {kernel_class(p['kernels'])}"].append(e)
        print(f"{Path(path).name}: {error_line(errors.pop('all'))}")
        for key in sorted(errors):
            print(f"  {key:<28} {error_line(errors[key])}")
        shares = sorted(min(q.kernels_s / q.time.median_s, 1.0) for c in profile.gpu.measurements.conv for q in c.points if q.kernels_s)
        if shares:
            print(f"  calibrated points' kernels over the call's time: n={len(shares)} median {shares[len(shares) // 2]:.2f}, "
                  f"p10 {shares[len(shares) // 10]:.2f}, min {shares[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
