"""Grouped convolutions on the GPU: the kernels one call runs, their summed kernel time, and the span
of one call on the device clock (``roofline.timing.time_fn``, what calibration records).

    python benchmarks/grouped_span.py

cuDNN runs a grouped convolution of NCHW tensors as 4-5 kernels (a memset, layout transforms around an
NHWC implicit GEMM), so its span holds the gaps between them; the zoo's per-op figure sums the
kernels' durations (``benchmarks/results/h100_grouped_span.txt``).
"""
import torch, torch.nn.functional as F
from roofline.timing import time_fn
torch.backends.cudnn.benchmark = False
for dt in (torch.float32, torch.float16):
    for c, size, width, stride in ((256, 28, 8, 1), (512, 14, 16, 1), (128, 56, 4, 1), (128, 28, 16, 1), (1024, 14, 32, 2)):
        x = torch.randn(32, c, size, size, device="cuda", dtype=dt); w = torch.randn(c, width, 3, 3, device="cuda", dtype=dt)
        fn = lambda: F.conv2d(x, w, None, stride, 1, 1, c // width)
        span = time_fn(fn, device="cuda", budget_s=0.02).stat().median_s
        fn(); torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
            for _ in range(20): fn()
            torch.cuda.synchronize()
        ks = [e for e in p.events() if e.device_type.name == "CUDA"]
        names = sorted({e.name[:60] for e in ks})
        ksum = sum(e.device_time for e in ks) / 20 * 1e-6 if hasattr(ks[0], "device_time") else sum(e.cuda_time for e in ks) / 20 * 1e-6
        print(f"{str(dt):14s} c{c} {size}^2 width {width} s{stride}: span {span*1e6:7.1f} us, kernels {ksum*1e6:7.1f} us ({len(ks)/20:.0f}/call) {names}", flush=True)
