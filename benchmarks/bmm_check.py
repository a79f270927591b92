"""Batches of small products priced by a profile against the H100's sweep, with and without the
calibrated bmm ratio.

    python benchmarks/bmm_check.py [--sweep benchmarks/results/h100_gemm_sweep.json] [--profile P] [--no-ratio]

The sweep (``mechanism_sweep.py --only gemms``) times torch.bmm at the products of hand-written
attention (scores and values at text, ViT and window lengths, 12-1536 products) and a few larger
ones, with the second operand as stored (``nn``) or transposed (``nt``), in float32, bfloat16 and
float16. 54 of its 78 points are products of ``calibrate.mechanisms.BMM_SHAPES`` at other batch
counts or transposed; the 24 of 128-long products are shapes of their own, and get a line of their
own. Each is priced the way ``roofline advise`` prices it (the matmul curve at the batch's rows
stacked into one GEMM, times the misalignment ratio of its rows and the profile's ``bmm`` ratio)
or, with ``--no-ratio``, without the bmm ratio (the profile's bmm curves left out).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.sweep_checks import DTYPES, check_parser, error_line, kernel_s, priced_lines, sweep_points  # noqa: E402
from roofline.model.families import row_align_bytes  # noqa: E402
from roofline.profiles import load_profile_file  # noqa: E402


def predicted_s(profile, p: dict) -> float:
    dtype = DTYPES[p["dtype"]]
    with torch.device("meta"):
        a = torch.empty(p["batch"], p["m"], p["k"], dtype=dtype)
        b = torch.empty(p["batch"], p["k"], p["n"], dtype=dtype) if p["layout"] == "nn" else \
            torch.empty(p["batch"], p["n"], p["k"], dtype=dtype).transpose(1, 2)
    return kernel_s(torch.bmm, (a, b), profile)


def aligned_rows(p: dict) -> bool:
    """Whether the point's products have 16-byte rows (``roofline.model.families.row_align_bytes``)."""
    return row_align_bytes(p["dtype"], p["n"], p["k"]) == 16


def described(p: dict) -> str:
    return f"{p['dtype']:<8} {p['layout']} {p['batch']:5d} x {p['m']}x{p['k']} @ {p['k']}x{p['n']}"


def main() -> int:
    ap = check_parser(__doc__, "h100_gemm_sweep.json")
    ap.add_argument("--no-ratio", action="store_true", help="price each batch without the profile's bmm curves")
    args = ap.parse_args()
    profile = load_profile_file(Path(args.profile))
    if args.no_ratio:
        profile.gpu.measurements.gemm_ratios = [c for c in profile.gpu.measurements.gemm_ratios if c.kind != "bmm"]
    points = sweep_points(args.sweep, "bmm")
    errors = priced_lines(points, lambda p: predicted_s(profile, p), described)
    print("all points:", error_line(errors))
    print("misaligned rows:", error_line([e for p, e in zip(points, errors) if not aligned_rows(p)]))
    print("128-long products (shapes of their own):", error_line([e for p, e in zip(points, errors) if p["m"] == 128]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
