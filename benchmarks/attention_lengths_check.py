"""Fused attention priced by a profile against the H100 over sequence lengths between tile multiples.

    python benchmarks/attention_lengths_check.py [--sweep benchmarks/results/h100_attention_lengths.json] [--profile P] [--untiled]

The sweep (``mechanism_sweep.py --only attention_lengths``) times SDPA (no mask, head size 64) at
lengths 128-512 and 96 or 384 batch x heads, in float32 and bfloat16. This prices each the way
``roofline advise`` does, lengths padded to the kernels' whole tiles
(``roofline.model.kernels.ATTENTION_TILE``) or, with ``--untiled``, as they are, and prints every
point and the median |error|.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import roofline.model.kernels as kernels  # noqa: E402
from benchmarks.sweep_checks import DTYPES, check_parser, kernel_s, print_check  # noqa: E402


def predicted_s(profile, p: dict) -> float:
    with torch.device("meta"):
        q = torch.empty(1, p["batch_heads"], p["seq"], p["head_dim"], dtype=DTYPES[p["dtype"]])
    return kernel_s(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), (q, q, q), profile)


def main() -> int:
    ap = check_parser(__doc__, "h100_attention_lengths.json")
    ap.add_argument("--untiled", action="store_true", help="price the lengths as they are, not in whole tiles")
    args = ap.parse_args()
    if args.untiled:
        kernels.ATTENTION_TILE = {}
    return print_check(args, "attention_lengths", predicted_s, lambda p: f"{p['dtype']:<9} {p['batch_heads']:4d} x {p['seq']:4d}")


if __name__ == "__main__":
    raise SystemExit(main())
