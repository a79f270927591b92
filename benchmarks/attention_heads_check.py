"""Fused attention priced by a profile against the H100 at head sizes calibration does not measure.

    python benchmarks/attention_heads_check.py [--sweep benchmarks/results/h100_attention_heads.json] [--profile P] [--proportional]

The sweep (``mechanism_sweep.py --only attention_heads``) times SDPA (no mask) at head sizes 32-112
and three (batch x heads, length) shapes, in float32 and bfloat16; calibration measures head sizes
64 and 128 (bfloat16) and 32 and 64 (float32). This prices each the way ``roofline advise`` does, time
affine in the head size between the calibrated ones (``DeviceModel.attention_head_factor``) or,
with ``--proportional``, the calibrated head size's rate scaled by FLOPs (heads as they are), and prints every point
and the median |error|.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.attention_lengths_check import predicted_s  # noqa: E402
from benchmarks.sweep_checks import check_parser, print_check  # noqa: E402
from roofline.model import kernels  # noqa: E402
from roofline.model.device import DeviceModel  # noqa: E402


def main() -> int:
    ap = check_parser(__doc__, "h100_attention_heads.json")
    ap.add_argument("--proportional", action="store_true", help="price the head size by FLOPs on the calibrated head size's rate")
    args = ap.parse_args()
    if args.proportional:
        DeviceModel.attention_head_factor = lambda self, dtype, causal, head, calibrated, seq_k, tokens: 1.0
        kernels.half_head_dim = lambda head_dim: head_dim
    return print_check(args, "attention_heads", predicted_s, lambda p: f"{p['dtype']:<9} {p['batch_heads']:4d} x {p['seq']:4d} head {p['head_dim']:3d}")


if __name__ == "__main__":
    raise SystemExit(main())
