"""GEMM time by operand layout: the layouts a training step's matmuls run against the one calibration times.

    python benchmarks/gemm_layouts.py --json OUT.json      # on the GPU
    python benchmarks/gemm_layouts.py --show OUT.json      # anywhere: the table

Calibration times ``a @ b`` with ``b`` a transposed (n, k) weight, as ``nn.Linear``'s forward issues it
(``calibrate.matmul.measure_point``: "NT" here, ``a`` row-major, ``b`` transposed). A backward pass issues the
other layouts: the input's gradient ``grad @ W`` with both operands row-major ("NN"), the weight's gradient
``grad.T @ x`` with the left one transposed ("TN"). Each (m, k, n) below, from the backward matmuls of the
training records (``benchmarks/results/h100_train_own.json``), is timed in the four layouts, float32 (no TF32)
and bfloat16, with the cache flushed between repetitions as calibration does and without.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# (m, k, n) of backward matmuls in the training records: BERT, GPT-2, DeiT-S, ConvNeXt-T, Llama-small, T5-small
SHAPES = [
    (1024, 768, 768), (3072, 1024, 768), (1024, 768, 3072), (768, 1024, 768), (512, 768, 3072), (768, 512, 3072),
    (512, 2304, 768), (6304, 1536, 384), (6304, 384, 1536), (384, 6304, 1536), (768, 25088, 192), (6272, 1536, 384),
    (512, 1024, 1024), (1024, 512, 2048), (256, 2048, 512), (512, 1024, 512),
]
LAYOUTS = ("NT", "NN", "TN", "TT")
FLUSH_BYTES = 64 << 20


def _operands(m: int, k: int, n: int, layout: str, dtype, device: str):
    import torch

    a = torch.randn(k, m, device=device, dtype=dtype).t() if layout[0] == "T" else torch.randn(m, k, device=device, dtype=dtype)
    b = torch.randn(n, k, device=device, dtype=dtype).t() if layout[1] == "T" else torch.randn(k, n, device=device, dtype=dtype)
    return a, b


def measure(device: str = "cuda") -> list[dict]:
    import torch

    from roofline.timing import time_fn

    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for dtype_name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
        for m, k, n in SHAPES:
            for layout in LAYOUTS:
                a, b = _operands(m, k, n, layout, dtype, device)
                out = torch.empty(m, n, device=device, dtype=dtype)
                for flush in (True, False):
                    t = time_fn(lambda: torch.mm(a, b, out=out), device=device, budget_s=0.01, warmup_budget_s=0.01, min_samples=5,
                                flush_cache_bytes=FLUSH_BYTES if flush else 0, label=f"mm {dtype_name} {m}x{k}x{n} {layout}")
                    rows.append(dict(dtype=dtype_name, m=m, k=k, n=n, layout=layout, flushed=flush, median_s=t.stat().median_s))
    return rows


def show(rows: list[dict]) -> None:
    at = {(r["dtype"], r["m"], r["k"], r["n"], r["layout"], r["flushed"]): r["median_s"] for r in rows}
    for dtype in ("float32", "bfloat16"):
        ratios = {layout: [] for layout in LAYOUTS[1:]}
        print(f"{dtype}: time against NT (calibration's layout), cache flushed; and NT unflushed against flushed")
        for m, k, n in SHAPES:
            nt = at[(dtype, m, k, n, "NT", True)]
            parts = []
            for layout in LAYOUTS[1:]:
                r = at[(dtype, m, k, n, layout, True)] / nt
                ratios[layout].append(r)
                parts.append(f"{layout} {r:4.2f}")
            warm = at[(dtype, m, k, n, "NT", False)] / nt
            print(f"  {m:>5} x {k:>5} x {n:>5}: NT {nt * 1e6:8.1f} us  " + "  ".join(parts) + f"  | unflushed {warm:4.2f}")
        print("  median: " + "  ".join(f"{layout} {statistics.median(v):4.2f}" for layout, v in ratios.items()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path, help="measure on the GPU and write the rows here")
    ap.add_argument("--show", type=Path, help="print the table of a recorded run")
    args = ap.parse_args()
    if args.json:
        import torch

        rows = measure()
        args.json.write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows)))
        show(rows)
    elif args.show:
        show(json.loads(args.show.read_text())["rows"])
    else:
        ap.error("give --json OUT (on the GPU) or --show RECORD")
    return 0


if __name__ == "__main__":
    sys.exit(main())
