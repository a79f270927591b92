"""Cats of contiguous inputs priced by a profile against the H100: how time follows the inputs' count.

    python benchmarks/cat_inputs_check.py [--sweep benchmarks/results/h100_cat_inputs.json] [--profile P] [--ungridded]

The sweep (``mechanism_sweep.py --only cat_inputs``) times torch.cat over DenseNet's block inputs (a
large input and 1-24 of 32 channels, at four plane sizes and two batches), feature-pyramid and U-Net
joins, a key cache grown by one step and 64 equal small inputs, in float32 and float16. This prices
each the way ``roofline advise`` does, every input at least the grid ATen's batched kernel sizes for
the largest (``roofline.model.kernels._batched_cat_s``, the calibrated ``cat_grid`` curve) or, with
``--ungridded``, on the bytes alone, and prints every point and the median |error|.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import roofline.model.kernels as kernels  # noqa: E402
from benchmarks.sweep_checks import DTYPES, check_parser, kernel_s, print_check  # noqa: E402


def predicted_s(profile, p: dict) -> float:
    with torch.device("meta"):
        xs = [torch.empty(*shape, dtype=DTYPES[p["dtype"]]) for shape in p["shapes"]]
    return kernel_s(lambda *xs: torch.cat(xs, p["dim"]), tuple(xs), profile)


def described(p: dict) -> str:
    shapes = " ".join("x".join(map(str, s)) for s in p["shapes"][:3]) + (f" +{len(p['shapes']) - 3}" if len(p["shapes"]) > 3 else "")
    return f"{p['dtype']:<8} dim {p['dim']} {shapes:<44}"


def main() -> int:
    ap = check_parser(__doc__, "h100_cat_inputs.json")
    ap.add_argument("--ungridded", action="store_true", help="price every cat on its bytes alone")
    args = ap.parse_args()
    if args.ungridded:
        kernels._batched_cat_s = lambda *a: None
    return print_check(args, "cat_inputs", predicted_s, described)


if __name__ == "__main__":
    raise SystemExit(main())
