"""GEMMs with their operands hot in the L2 cache (as calibration times them) against cold (as a model's
layers meet their weights: a whole forward pass since the last touch), on a GPU.

    python3 benchmarks/cold_operands.py --measure OUT.json     # on the GPU machine
    python3 benchmarks/cold_operands.py --show RECORD.json     # anywhere

Calibration calls each shape again and again on the same tensors, so a small GEMM's weight sits in the
L2 cache; in a model each linear layer reads its own weight, last touched a forward pass before. Each
shape (a linear layer's ``addmm``, float32 without TF32 and float16) is timed under the profiler
(summed kernel time a call, as the zoo's per-op times are: ``conv1x1_kernels.kernels``) hot, one weight and input called ``CALLS``
times, and cold, rotating through enough copies of weight and input that each call's operands were
evicted (their bytes over all copies at least ``COLD_BYTES``). The ratio cold / hot says how much of a
GEMM's time in a model its cache misses add.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CALLS = 60
COLD_BYTES = 400 << 20  # eight times the H100's 50 MB L2
# (rows, in features, out features): BERT/ViT layers at one sequence and at a batch, and larger
SHAPES = [(49, 768, 768), (128, 768, 768), (128, 768, 3072), (128, 3072, 768), (1024, 768, 3072), (1600, 768, 3072),
          (6304, 768, 3072), (6304, 3072, 768), (128, 512, 512), (512, 1024, 4096)]
DTYPES = ("float32", "float16")


def measure(out: Path) -> None:
    from benchmarks.conv1x1_kernels import kernels

    torch.backends.cuda.matmul.allow_tf32 = False
    points = []
    for dtype_name in DTYPES:
        dtype = getattr(torch, dtype_name)
        for m, k, n in SHAPES:
            size = (m * k + k * n + n) * dtype.itemsize
            copies = max(2, -(-COLD_BYTES // size))
            xs = [torch.randn(m, k, device="cuda", dtype=dtype) for _ in range(copies)]
            ws = [torch.randn(n, k, device="cuda", dtype=dtype) for _ in range(copies)]
            bs = [torch.randn(n, device="cuda", dtype=dtype) for _ in range(copies)]
            turn = itertools.count()
            hot = kernels(lambda: torch.nn.functional.linear(xs[0], ws[0], bs[0]), CALLS)[0]
            cold = kernels(lambda: torch.nn.functional.linear(*(t[next(turn) % copies] for t in (xs, ws, bs))), CALLS)[0]
            points.append(dict(m=m, k=k, n=n, dtype=dtype_name, hot_us=hot, cold_us=cold, copies=copies))
            print(f"{dtype_name:8s} {m:5d} x {k:4d} -> {n:4d}: hot {hot:8.1f} us  cold {cold:8.1f} us  x{cold / hot:.2f}", flush=True)
    out.write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, points=points), indent=1))


def show(path: Path) -> None:
    record = json.loads(path.read_text())
    print(f"{record['device']}, torch {record['torch']}: per-call kernel time, operands hot in L2 and cold")
    for p in record["points"]:
        print(f"  {p['dtype']:8s} {p['m']:5d} x {p['k']:4d} -> {p['n']:4d}: hot {p['hot_us']:8.1f} us  cold {p['cold_us']:8.1f} us  x{p['cold_us'] / p['hot_us']:.2f}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--measure", type=Path)
    group.add_argument("--show", type=Path)
    args = ap.parse_args(argv)
    if args.show:
        show(args.show)
        return 0
    from benchmarks.sweep_checks import refused_without_cuda

    if refused_without_cuda("cold_operands.py"):
        return 2
    measure(args.measure)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
