"""GEMMs with their operands hot in the L2 cache (as calibration times them) against cold (as a model's
layers meet their weights: a whole forward pass since the last touch), on a GPU.

    python3 benchmarks/cold_operands.py --measure OUT.json     # on the GPU machine
    python3 benchmarks/cold_operands.py --show RECORD.json     # anywhere

Calibration calls each shape again and again on the same tensors, so a small GEMM's weight sits in the
L2 cache; in a model each linear layer reads its own weight, last touched a forward pass before. Each
shape (a linear layer's ``addmm``, float32 without TF32 and float16) is timed under the profiler
(per-kernel device time, as the zoo's per-op times are) hot, one weight and input called ``CALLS``
times, and cold, rotating through enough copies of weight and input that each call's operands were
evicted (their bytes over all copies at least ``COLD_BYTES``). The ratio cold / hot says how much of a
GEMM's time in a model its cache misses add.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

CALLS = 60
COLD_BYTES = 400 << 20  # eight times the H100's 50 MB L2
# (rows, in features, out features): BERT/ViT layers at one sequence and at a batch, and larger
SHAPES = [(49, 768, 768), (128, 768, 768), (128, 768, 3072), (128, 3072, 768), (1024, 768, 3072), (1600, 768, 3072),
          (6304, 768, 3072), (6304, 3072, 768), (128, 512, 512), (512, 1024, 4096)]
DTYPES = ("float32", "float16")


def _kernel_us(fn, calls: int) -> float:
    """The median device time of ``fn``'s kernels per call, under the profiler."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(5):
        fn(0)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            fn(i)
        torch.cuda.synchronize()
    times = [e.device_time for e in prof.events() if e.device_type.name == "CUDA" and e.device_time > 0]
    per_call = len(times) // calls or 1
    return statistics.median(sum(times[i:i + per_call]) for i in range(0, per_call * calls, per_call))


def measure(out: Path) -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    points = []
    for dtype_name in DTYPES:
        dtype = getattr(torch, dtype_name)
        for m, k, n in SHAPES:
            size = (m * k + k * n + n) * torch.tensor([], dtype=dtype).element_size()
            copies = max(2, -(-COLD_BYTES // size))
            xs = [torch.randn(m, k, device="cuda", dtype=dtype) for _ in range(copies)]
            ws = [torch.randn(n, k, device="cuda", dtype=dtype) for _ in range(copies)]
            bs = [torch.randn(n, device="cuda", dtype=dtype) for _ in range(copies)]
            hot = _kernel_us(lambda i: torch.nn.functional.linear(xs[0], ws[0], bs[0]), CALLS)
            cold = _kernel_us(lambda i: torch.nn.functional.linear(xs[i % copies], ws[i % copies], bs[i % copies]), CALLS)
            points.append(dict(m=m, k=k, n=n, dtype=dtype_name, hot_us=hot, cold_us=cold, copies=copies))
            print(f"{dtype_name:8s} {m:5d} x {k:4d} -> {n:4d}: hot {hot:8.1f} us  cold {cold:8.1f} us  x{cold / hot:.2f}", flush=True)
            del xs, ws, bs
            torch.cuda.empty_cache()
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
    if not torch.cuda.is_available():
        print("cold_operands.py --measure needs a GPU; --show RECORD prints a recorded run", file=sys.stderr)
        return 2
    measure(args.measure)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
