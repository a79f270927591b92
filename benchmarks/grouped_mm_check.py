"""Grouped GEMMs (a mixture of experts' layers, ``torch._grouped_mm``) timed on the GPU and priced by a profile.

    python benchmarks/grouped_mm_check.py --measure OUT.json        # on the GPU: time the shapes
    python benchmarks/grouped_mm_check.py --sweep OUT.json --profile P   # anywhere: price them

The shapes are MoE layers as transformers runs them in bfloat16 (rows routed to each expert, every
expert's up or down projection): tokens x top-k rows split evenly over 8 or 64 experts, hidden
sizes 1024-4096, from decode-sized (64 rows) to prefill-sized (16384 rows); each timed by the shared
protocol (``roofline.timing``) and priced as ``roofline advise`` prices the op
(``roofline.costs.matmul.grouped_mm_cost`` on the profile's matmul curve).
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from benchmarks.sweep_checks import kernel_s, timed_check_main  # noqa: E402

# (rows, K, N, experts): up projections (K = hidden, N = 2 x intermediate) and down projections
SHAPES = [
    (rows, k, n, g)
    for g in (8, 64)
    for rows in (64, 1024, 16384)
    for k, n in ((1024, 2 * 1408), (1408, 1024), (4096, 2 * 14336 // 8), (14336 // 8, 4096))
]


def _operands(rows: int, k: int, n: int, groups: int, device: str):
    x = torch.randn(rows, k, device=device, dtype=torch.bfloat16)
    w = torch.randn(groups, n, k, device=device, dtype=torch.bfloat16).transpose(1, 2)  # as nn.Linear stores weights
    offs = torch.arange(1, groups + 1, device=device, dtype=torch.int32) * (rows // groups)
    return x, w, offs


def grouped(x, w, offs):
    return torch._grouped_mm(x, w, offs=offs)


def _points() -> list[dict]:
    return [dict(rows=rows, k=k, n=n, groups=g) for rows, k, n, g in SHAPES]


def _timed_call(p: dict):
    operands = _operands(p["rows"], p["k"], p["n"], p["groups"], "cuda")
    return lambda: grouped(*operands)


def predicted_s(profile, p: dict) -> float:
    """The kernel time ``roofline advise`` predicts for one recorded grouped GEMM."""
    with torch.device("meta"):
        operands = _operands(p["rows"], p["k"], p["n"], p["groups"], "meta")
    return kernel_s(grouped, operands, profile)


def _label(p: dict) -> str:
    return f"{p['rows']:6d} rows, K {p['k']:5d}, N {p['n']:5d}, {p['groups']:2d} experts"


if __name__ == "__main__":
    sys.exit(timed_check_main(__doc__, "grouped_mm", _points, _timed_call, predicted_s, _label))
