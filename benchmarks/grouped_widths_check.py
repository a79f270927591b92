"""Grouped convolutions priced by a profile against the H100 at group widths off calibration's.

    python benchmarks/grouped_widths_check.py [--sweep benchmarks/results/h100_grouped_widths.json] [--profile P] [--unpadded]

The sweep (``mechanism_sweep.py --only grouped_widths``) times 3x3 grouped convolutions (stride 1,
NCHW) at widths 8-120 channels a group, 3 or 12 groups, a batch of 32 and one image, in float32 and
float16. This prices each the way ``roofline advise`` does (the calibrated grouped family,
``roofline.model.families.ConvFamilyModel``) and prints every point and the median |error|, then the
same over the widths that are not powers of two, which the model prices at the next power of two's
work (``families.padded_group``); ``--unpadded`` prices them as they are.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.sweep_checks import DTYPES, check_parser, error_line, kernel_s, print_check, sweep_points  # noqa: E402
from roofline.model import families  # noqa: E402
from roofline.profiles import load_profile_file  # noqa: E402


def predicted_s(profile, p: dict) -> float:
    c = p["groups"] * p["width"]
    with torch.device("meta"):
        x = torch.empty(p["batch"], c, p["side"], p["side"], dtype=DTYPES[p["dtype"]])
        w = torch.empty(c, p["width"], 3, 3, dtype=DTYPES[p["dtype"]])
    return kernel_s(lambda x, w: F.conv2d(x, w, None, 1, 1, 1, p["groups"]), (x, w), profile)


def main() -> int:
    ap = check_parser(__doc__, "h100_grouped_widths.json")
    ap.add_argument("--unpadded", action="store_true", help="price every group width as it is")
    args = ap.parse_args()
    if args.unpadded:
        families.padded_group = lambda width, macs, calibrated: (width, macs)
    print_check(args, "grouped_widths", predicted_s,
                lambda p: f"{p['dtype']:<8} batch {p['batch']:2d} {p['groups']:2d} groups of {p['width']:3d} at {p['side']}x{p['side']}")
    profile = load_profile_file(Path(args.profile))
    odd = [p for p in sweep_points(args.sweep, "grouped_widths") if p["width"] & (p["width"] - 1)]
    print("widths off powers of two: " + error_line([predicted_s(profile, p) / p["median_s"] - 1 for p in odd]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
