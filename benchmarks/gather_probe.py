"""Advanced-indexing gathers on a GPU: what their kernels take against their bytes.

    python3 benchmarks/gather_probe.py --measure OUT.json   # on the GPU machine
    python3 benchmarks/gather_probe.py --show RECORD.json [--profile P]   # anywhere: with P, each gather priced

``table[index]`` (``aten.index.Tensor``: BEiT's and Swin's relative position bias, hand-written token
embeddings) gathers whole rows of a table by a 1-d index. For tables of R rows and C columns, N
indices and each dtype, the probe times the kernels of ``table[index]`` and of
``table.index_select(0, index)`` under torch.profiler (``REPEATS`` calls, the kernels' median), and
names the kernels. The bytes a gather must move are its output and its index; ``--show`` prints the
rate those bytes came at, and with ``--profile P`` the time the model of time gives each gather on P.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

REPEATS = 20
SHAPES = [  # (rows R, columns C, indices N)
    (732, 12, 38809), (732, 12, 2401), (732, 12, 150000), (3000, 12, 38809), (732, 1, 38809), (732, 4, 38809),
    (732, 16, 38809), (732, 32, 38809), (732, 64, 38809), (732, 128, 38809), (2000, 768, 2401), (50257, 768, 2048),
    (50257, 768, 16384), (732, 12, 600000), (169, 4, 2401), (225, 32, 9216),
]
DTYPES = ("float32", "bfloat16")


def kernel_times_us(fn) -> tuple[float, list[str]]:
    """The median over ``REPEATS`` calls of the summed kernel time of one call, and the kernels' names."""
    import torch.profiler as tp

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with tp.profile(activities=[tp.ProfilerActivity.CUDA]) as prof:
        for _ in range(REPEATS):
            fn()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    names = sorted({e.name[:90] for e in kernels})
    per_call = len(kernels) // REPEATS or 1
    times = [sum(e.time_range.elapsed_us() for e in kernels[i:i + per_call])
             for i in range(0, per_call * REPEATS, per_call)]
    return statistics.median(times), names


def measure() -> dict:
    rows = []
    for dtype in DTYPES:
        for r, c, n in SHAPES:
            table = torch.randn(r, c, device="cuda", dtype=getattr(torch, dtype))
            index = torch.randint(0, r, (n,), device="cuda")
            for how, fn in (("index", lambda: table[index]), ("index_select", lambda: table.index_select(0, index))):
                us, names = kernel_times_us(fn)
                rows.append(dict(how=how, dtype=dtype, rows=r, columns=c, indices=n, kernel_us=us, kernels=names))
                print(f"{how:12s} {dtype:9s} R={r:6d} C={c:4d} N={n:7d}: {us:8.1f} us  {names}", flush=True)
    return dict(device=torch.cuda.get_device_name(), torch=torch.__version__, date=time.strftime("%Y-%m-%d"), rows=rows)


def predicted_s(profile, row: dict) -> float:
    """The model of time's device time of one recorded gather on ``profile``'s GPU, captured on meta tensors."""
    from benchmarks.sweep_checks import kernel_s

    with torch.device("meta"):
        table = torch.empty(row["rows"], row["columns"], dtype=getattr(torch, row["dtype"]))
        index = torch.empty(row["indices"], dtype=torch.int64)
    fn = (lambda t, i: t[i]) if row["how"] == "index" else (lambda t, i: t.index_select(0, i))
    return kernel_s(fn, (table, index), profile)


def show(record: dict, profile=None) -> None:
    print(f"gathers on {record['device']} (torch {record['torch']}, {record['date']}): kernel time, and the rate of output + index bytes"
          + (f"; predicted on profile '{profile.name}'" if profile else ""))
    errors = []
    for row in record["rows"]:
        size = torch.empty((), dtype=getattr(torch, row["dtype"])).element_size()
        moved = row["indices"] * (row["columns"] * size + 8)
        line = (f"  {row['how']:12s} {row['dtype']:9s} R={row['rows']:6d} C={row['columns']:4d} N={row['indices']:7d}: "
                f"{row['kernel_us']:8.1f} us, {moved / row['kernel_us'] / 1e3:7.1f} GB/s, "
                f"{row['indices'] * row['columns'] / row['kernel_us'] / 1e3:6.2f} G elements/s")
        if profile is not None:
            p_us = 1e6 * predicted_s(profile, row)
            errors.append(abs(p_us / row["kernel_us"] - 1))
            line += f"; predicted {p_us:8.1f} us ({100 * (p_us / row['kernel_us'] - 1):+.0f}%)"
        print(line)
    if errors:
        print(f"median |error| {100 * statistics.median(errors):.1f}%, max {100 * max(errors):.1f}% (n={len(errors)})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--measure", metavar="OUT.json")
    ap.add_argument("--show", metavar="RECORD.json")
    ap.add_argument("--profile", help="with --show: price each gather on this profile")
    args = ap.parse_args(argv)
    if args.show:
        profile = None
        if args.profile:
            from roofline.pipeline import resolve_profile

            profile, _ = resolve_profile(args.profile, "cuda")
        show(json.loads(Path(args.show).read_text()), profile)
        return 0
    if not args.measure:
        ap.error("--measure OUT.json or --show RECORD.json")
    from benchmarks.sweep_checks import refused_without_cuda

    if refused_without_cuda("gather_probe.py"):
        return 2
    record = measure()
    Path(args.measure).write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
