"""What fresh host memory costs: first-touch page faults on CPU op outputs and on device->host copies.

    python benchmarks/host_memory_probe.py [--device cuda]

For each size, prints the median time and the minor page faults per call of:
- a CPU ``sin`` that allocates its output, the same into a reused ``out=`` buffer, and four nested
  ``sin`` (seed 000) per op;
- on a GPU: a pageable device->host copy into a fresh tensor (``.to("cpu")``, as user code does) and
  into a reused one (``copy_``), and a pageable host->device copy.
The allocator decides which allocations come back as fresh pages (glibc serves large ones with
mmap), so the same op can cost 1x or 4x depending on its size and what was freed before it.
"""

from __future__ import annotations

import argparse
import platform
import resource
import statistics
import time

import torch


def timed(fn, n: int = 15) -> tuple[float, float]:
    """(median ms, minor faults per call) over n calls after 3 warm-up calls."""
    for _ in range(3):
        fn()
    xs = []
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(n):
        s = time.perf_counter()
        fn()
        xs.append(time.perf_counter() - s)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / n
    return statistics.median(xs) * 1e3, faults


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    print(f"libc {platform.libc_ver()}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    for p in (20, 22, 23, 24, 26):
        n = 2**p
        x, out = torch.rand(n), torch.empty(n)

        def nested():
            y = torch.sin(x)
            y = torch.sin(y)
            y = torch.sin(y)
            return torch.sin(y)

        a, fa = timed(lambda: torch.sin(x))
        b, fb = timed(lambda: torch.sin(x, out=out))
        c, fc = timed(nested)
        e, fe = timed(lambda: torch.empty(n).fill_(1.0))
        g, fg = timed(lambda: out.fill_(1.0))
        print(f"cpu 2^{p} ({4 * n >> 20} MiB): sin {a:.3f} ms ({fa:.0f} faults), sin out= {b:.3f} ({fb:.0f}),"
              f" nested per op {c / 4:.3f} ({fc / 4:.0f}), fresh fill {e:.3f} ({fe:.0f}), reused fill {g:.3f} ({fg:.0f})", flush=True)
    if args.device.startswith("cuda"):
        for mib in (1, 4, 16, 32, 64, 256):
            n = mib << 20
            dev = torch.empty(n, dtype=torch.uint8, device=args.device).fill_(3)
            host = torch.empty(n, dtype=torch.uint8).fill_(1)

            def fresh():
                dev.to("cpu")
                torch.cuda.synchronize()

            def reused():
                host.copy_(dev)
                torch.cuda.synchronize()

            def h2d():
                dev.copy_(host)
                torch.cuda.synchronize()

            a, fa = timed(fresh)
            b, fb = timed(reused)
            c, fc = timed(h2d)
            print(f"pageable {mib} MiB: d2h fresh {a:.3f} ms ({fa:.0f} faults) {n / a / 1e6:.2f} GB/s,"
                  f" d2h reused {b:.3f} ({fb:.0f}) {n / b / 1e6:.2f} GB/s, h2d {c:.3f} ({fc:.0f}) {n / c / 1e6:.2f} GB/s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
