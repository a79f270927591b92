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

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from benchmarks.sweep_checks import error_line, kernel_s, priced_lines  # noqa: E402

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


def measure(path: str) -> None:
    from roofline.timing import time_fn

    points = []
    for rows, k, n, g in SHAPES:
        x, w, offs = _operands(rows, k, n, g, "cuda")
        t = time_fn(lambda: grouped(x, w, offs), device="cuda", budget_s=0.05, label=f"grouped_mm {rows}x{k}x{n} over {g}")
        points.append(dict(rows=rows, k=k, n=n, groups=g, median_s=t.stat().median_s))
        print(f"{rows:6d} rows, K {k:5d}, N {n:5d}, {g:2d} experts: {t.stat().median_s * 1e6:8.1f} us", flush=True)
    Path(path).write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, points=points), indent=1))


def sweep(path: str, profile: str) -> None:
    from roofline.pipeline import resolve_profile

    prof, _ = resolve_profile(profile, "cuda")
    points = json.loads(Path(path).read_text())["points"]

    def predicted(p):
        with torch.device("meta"):
            operands = _operands(p["rows"], p["k"], p["n"], p["groups"], "meta")
        return kernel_s(grouped, operands, prof)

    errors = priced_lines(points, predicted, lambda p: f"{p['rows']:6d} rows, K {p['k']:5d}, N {p['n']:5d}, {p['groups']:2d} experts")
    print("grouped_mm: " + error_line(errors))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measure", metavar="OUT.json")
    ap.add_argument("--sweep", metavar="OUT.json")
    ap.add_argument("--profile", default="nvidia-h100-80gb-hbm3")
    args = ap.parse_args()
    if args.measure:
        measure(args.measure)
    if args.sweep:
        sweep(args.sweep, args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
