"""Does a dense convolution's time depend on what calibration feeds it? Kernel time per call of the
same convolution with random normal input (as calibration times it), with the input through a ReLU
(half zeros, as between a network's layers), and with a memory-bound copy between calls (as in a
network, where the GPU does not run the convolution back to back).

    python benchmarks/conv_data_probe.py

Summed kernel time per call from the profiler (what the zoo's per-op figure compares with), and
``roofline.timing.time_fn``'s span (what calibration records).
"""
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.conv1x1_kernels import kernels  # noqa: E402
from roofline.timing import time_fn  # noqa: E402

SHAPES = [(32, 128, 128, 28, 3), (32, 256, 256, 14, 3), (32, 64, 64, 56, 3), (32, 512, 512, 14, 3), (32, 64, 256, 56, 1)]


def kernel_us(fn, reps: int = 30) -> float:
    """Summed kernel time of one call of ``fn``, us, leaving out the copies between calls."""
    _, names = kernels(fn, reps)
    copies = ("copy", "elementwise", "memcpy")
    return sum(calls * us for name, (calls, us) in names.items() if not any(c in name.lower() for c in copies))


def main() -> None:
    torch.backends.cudnn.benchmark = False
    big = torch.empty(64 << 20, device="cuda")
    other = torch.empty_like(big)
    for dt in (torch.float32, torch.float16):
        for b, cin, cout, size, k in SHAPES:
            x = torch.randn(b, cin, size, size, device="cuda", dtype=dt)
            xr = torch.relu(x)
            w = torch.randn(cout, cin, k, k, device="cuda", dtype=dt) / (cin * k * k) ** 0.5
            run = lambda inp: F.conv2d(inp, w, None, 1, k // 2)  # noqa: E731

            def interleaved():
                run(x)
                other.copy_(big)

            span = time_fn(lambda: run(x), device="cuda", budget_s=0.05).stat().median_s * 1e6
            span_r = time_fn(lambda: run(xr), device="cuda", budget_s=0.05).stat().median_s * 1e6
            print(f"{str(dt).split('.')[-1]:8s} b{b} {cin}->{cout} {size}^2 k{k}: kernels randn {kernel_us(lambda: run(x)):6.1f} us, "
                  f"relu {kernel_us(lambda: run(xr)):6.1f} us, randn between copies {kernel_us(interleaved):6.1f} us; "
                  f"time_fn span randn {span:6.1f} us, relu {span_r:6.1f} us", flush=True)


if __name__ == "__main__":
    main()
