"""Grouped convolutions of few groups and depthwise ones with channel multipliers: which cuDNN runs
group by group on slow kernels, how far the calibrated families' price is from them, and whether
the report flags them (``roofline.model.kernels.cudnn_may_loop_groups``).

    python benchmarks/grouped_kernels_check.py [--sweep benchmarks/results/h100_grouped_kernels.json] [--profile P]

The sweep (``mechanism_sweep.py --only grouped_kernels`` on the GPU) times 3x3 NCHW convolutions of
2, 3, 4 and 8 groups of 16-48 channels over 28-112 pixels at stride 1 and 2, and depthwise ones with
multipliers 1, 2 and 4, in float32 (TF32) and float16, with the kernels each call ran. A call ran
"per group" when its main kernel launched once per group (FP32 ``f32f32_f32f32`` implicit GEMMs
between transposes, FFT or legacy ``implicit_convolve_sgemm`` kernels). For each kind of shape this
prints how many ran per group, the measured time over the price, and how many the report flags.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.sweep_checks import DTYPES, check_parser, sweep_points  # noqa: E402
from roofline.pipeline import Analysis, Options  # noqa: E402
from roofline.profiles import load_profile_file  # noqa: E402

SLOW_KERNELS = ("f32f32_f32f32", "fft2d_c2r", "implicit_convolve_sgemm")
MAIN_KERNELS = ("xmma", "cutlass", "Kernel2", "fft2d_c2r", "implicit_convolve_sgemm", "conv2d_grouped_direct", "conv_depthwise", "conv2d_c1")


def shapes(p: dict) -> tuple[tuple, tuple, int, int]:
    """(input shape, weight shape, stride, groups) of a sweep point."""
    if p["family"] == "grouped_few":
        c = p["groups"] * p["width"]
        return (p["batch"], c, p["side"], p["side"]), (c, p["width"], 3, 3), p["stride"], p["groups"]
    c = p["channels"]
    return (p["batch"], c, p["side"], p["side"]), (p["multiplier"] * c, 1, 3, 3), p["stride"], c


def per_group(p: dict) -> bool:
    """Whether the call ran a slow kernel once per group: FP32 implicit GEMMs (``f32f32_f32f32``),
    FFTs or the legacy ``implicit_convolve_sgemm``, launched as many times as groups or a multiple.
    (cuDNN also loops CUTLASS kernels over groups at full speed: those are not counted.)"""
    groups = shapes(p)[3]
    main = [k for k in p["kernels"] if any(m in k for m in MAIN_KERNELS)]
    slow = any(s in k for k in main for s in SLOW_KERNELS)
    return slow and len(main) >= groups > 1 and len(main) % groups == 0


def priced(profile, p: dict) -> tuple[float, bool]:
    """The profile's kernel time for the point (as ``roofline advise`` prices it) and whether the
    report flags it."""
    x_shape, w_shape, stride, groups = shapes(p)
    with torch.device("meta"):
        x = torch.empty(x_shape, dtype=DTYPES[p["dtype"]])
        w = torch.empty(w_shape, dtype=DTYPES[p["dtype"]])
    fn = lambda x, w: F.conv2d(x, w, None, stride, 1, 1, groups)  # noqa: E731
    a = Analysis.of(fn, (x, w), None, profile, Options(device="cuda", capture_device="cpu", batch_sweep=False))
    return sum(k[0] for k in a.kernels()), any(a.uncertain)


def main() -> int:
    args = check_parser(__doc__, "h100_grouped_kernels.json").parse_args()
    profile = load_profile_file(Path(args.profile))
    kinds: dict[str, list] = {}
    for family in ("grouped_few", "depthwise_multiplier"):
        for p in sweep_points(args.sweep, family):
            t, flag = priced(profile, p)
            if family == "grouped_few":
                kind = f"grouped {p['dtype']} {'2-3' if p['groups'] <= 3 else '4-8'} groups"
            else:
                kind = f"depthwise {p['dtype']} multiplier {'1' if p['multiplier'] == 1 else '2-4'}"
            kinds.setdefault(kind, []).append((per_group(p), p["median_s"] / t, flag))
    for kind, rows in kinds.items():
        looped = [r for r in rows if r[0]]
        ratio = f"measured / priced {statistics.median(r[1] for r in looped):.1f}x median, {min(r[1] for r in looped):.1f}-{max(r[1] for r in looped):.1f}x" if looped else ""
        print(f"{kind:<36} {len(rows):3d} shapes, {len(looped):2d} ran per group {ratio:<44} flagged {sum(r[2] for r in rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
