"""Device memory a GPU sum allocates beyond its output, by dtype, shape and reduced dimensions.

    python benchmarks/reduce_staging.py

ATen's reduce kernel stages partial results in device memory when it splits the reduced rows across
blocks. Each line: the sum, ``torch.cuda.max_memory_allocated`` over it less the output, and that per
input element. The figures behind ``roofline.advice.step_memory.REDUCE_STAGING_BYTES`` and
``REDUCE_STAGING_MIN_ROWS`` (``benchmarks/results/h100_reduce_staging.txt``).
"""

import torch

CASES = [((4096, 3072), (0,)), ((4096, 768), (0,)), ((512, 3072), (0,)), ((16384, 1024), (0,)), ((8, 512, 768), (0, 1)),
         ((4096, 3072), (1,)), ((64, 256, 56, 56), (0, 2, 3)), ((1024, 4096), (0,)), ((128, 3072), (0,))]


def main() -> int:
    print(torch.cuda.get_device_name(), torch.__version__)
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        for shape, dims in CASES:
            g = torch.randn(*shape, device="cuda", dtype=dt)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            out = g.sum(dims)
            torch.cuda.synchronize()
            staged = torch.cuda.max_memory_allocated() - before - out.numel() * out.element_size()
            print(f"{str(dt):15s} {str(shape):20s} dims {dims}: staged {staged / 2**20:8.2f} MB = {staged / g.numel():5.2f} B/element "
                  f"(input {g.numel() * g.element_size() / 2**20:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
