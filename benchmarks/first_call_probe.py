"""What the first call of each calibrated depthwise convolution forward costs in a fresh process,
made one after another or from a pool of threads (cuDNN builds, and for some kernels compiles, an
execution plan on a shape's first call; ATen releases the GIL inside the op).

    python benchmarks/first_call_probe.py serial|threads [--threads 8]

Run each mode in its own fresh process: the second run in one process finds the plans built.
"""
import argparse
import time
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn.functional as F

from calibrate import mechanisms


def calls() -> list:
    """One closure per (dtype, layout, filter, size) depthwise forward that calibration's
    conv-families stage times (its gradients and grouped convolutions left out)."""
    out = []
    for dtype_name, layout in mechanisms.DEPTHWISE_KINDS:
        dtype = mechanisms.DTYPES[dtype_name]
        for kernel, stride in mechanisms._filters(layout, False):
            for batch, channels, size in mechanisms.DEPTHWISE_SIZES:
                x = torch.randn(batch, channels, size, size, device="cuda", dtype=dtype)
                w = torch.randn(channels, 1, kernel, kernel, device="cuda", dtype=dtype)
                if layout == "channels_last":
                    x, w = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
                out.append(lambda x=x, w=w, s=stride, k=kernel, c=channels: F.conv2d(x, w, None, s, k // 2, 1, c))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("serial", "threads"))
    ap.add_argument("--threads", type=int, default=8)
    args = ap.parse_args()
    torch.zeros(1, device="cuda")
    F.conv2d(torch.randn(1, 8, 8, 8, device="cuda"), torch.randn(8, 8, 3, 3, device="cuda"))  # cuDNN loaded
    torch.cuda.synchronize()
    fns = calls()
    t0 = time.perf_counter()
    if args.mode == "serial":
        for fn in fns:
            fn()
    else:
        with ThreadPoolExecutor(args.threads) as pool:
            list(pool.map(lambda fn: fn(), fns))
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    for fn in fns:
        fn()
    torch.cuda.synchronize()
    print(f"{args.mode}: {len(fns)} first calls {first:.2f} s; the same calls again {time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    main()
