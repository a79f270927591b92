"""Batches of small products priced by a profile against the H100's sweep, with and without the
calibrated bmm ratio.

    python benchmarks/bmm_check.py [--sweep benchmarks/results/h100_gemm_sweep.json] [--profile P] [--no-ratio]

The sweep (``mechanism_sweep.py --only gemms``) times torch.bmm at the products of hand-written
attention (scores and values at text, ViT and window lengths, 12-1536 products) and a few larger
ones, with the second operand as stored (``nn``) or transposed (``nt``), in float32, bfloat16 and
float16: another draw than ``calibrate.mechanisms.BMM_SHAPES``. This prices each the way
``roofline advise`` does (the matmul curve at the batch's rows stacked into one GEMM, times the
profile's ``bmm`` ratio) or, with ``--no-ratio``, on the stacked GEMM alone.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.sweep_checks import DTYPES, check_parser, kernel_s, print_check  # noqa: E402
from roofline.model.families import GemmRatioModel  # noqa: E402


def predicted_s(profile, p: dict) -> float:
    dtype = DTYPES[p["dtype"]]
    with torch.device("meta"):
        a = torch.empty(p["batch"], p["m"], p["k"], dtype=dtype)
        b = torch.empty(p["batch"], p["k"], p["n"], dtype=dtype) if p["layout"] == "nn" else \
            torch.empty(p["batch"], p["n"], p["k"], dtype=dtype).transpose(1, 2)
    return kernel_s(torch.bmm, (a, b), profile)


def described(p: dict) -> str:
    return f"{p['dtype']:<8} {p['layout']} {p['batch']:5d} x {p['m']}x{p['k']} @ {p['k']}x{p['n']}"


def main() -> int:
    ap = check_parser(__doc__, "h100_gemm_sweep.json")
    ap.add_argument("--no-ratio", action="store_true", help="price each batch as its stacked GEMM alone")
    args = ap.parse_args()
    if args.no_ratio:
        GemmRatioModel.bmm_ratio = lambda self, *a: 1.0
    return print_check(args, "bmm", predicted_s, described)


if __name__ == "__main__":
    raise SystemExit(main())
