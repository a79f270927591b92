"""Host<->device copies over size, pinned and pageable, both directions.

Each copy is timed as a user pays for it: issue, copy and synchronize, on the host clock; a pageable
device-to-host copy goes into a new tensor each time, as ``.cpu()`` does. Prediction reads the
measured points (``roofline.model.curves.transfer_s``). A straight line fitted to time over bytes
(weighted by relative error) summarizes each curve as a fixed latency (intercept) and an asymptotic
bandwidth (inverse slope) for the calibration table and the reports.
"""

from __future__ import annotations

import numpy as np
import torch

from roofline.schema.profile import TransferCurve, TransferPoint
from roofline.timing import time_fn


def fit_latency_bandwidth(sizes_bytes, times_s) -> tuple[float, float]:
    """Least squares of t = latency + bytes / bandwidth, each point weighted by 1/t."""
    x = np.asarray(sizes_bytes, dtype=np.float64)
    t = np.asarray(times_s, dtype=np.float64)
    a = np.stack([1.0 / t, x / t], axis=1)
    (latency, inv_bw), *_ = np.linalg.lstsq(a, np.ones_like(t), rcond=None)
    if inv_bw <= 0:  # degenerate (all points latency-bound): use the largest point's rate
        inv_bw = t[-1] / x[-1]
    return max(float(latency), 0.0), 1.0 / float(inv_bw)


def measure_transfer(direction: str, host_memory: str, sizes_bytes: list[int], device: str, *, budget_s: float, warnings: list, progress=None) -> TransferCurve:
    points = []
    pinned = host_memory == "pinned"
    fresh = direction == "d2h" and not pinned
    if not pinned:
        # Pageable copies run at a fraction of the link's speed and vary run to run; sizes past
        # 256 MiB add seconds of calibration and no information the largest point does not have.
        # 32 MiB is glibc's largest mmap threshold: from there on every fresh tensor is new pages,
        # so a full plan measures that size too.
        kept = [n for n in sizes_bytes if n <= (256 << 20)] or sizes_bytes[:1]
        if max(sizes_bytes) >= (64 << 20):
            kept = sorted(set(kept) | {32 << 20})
        sizes_bytes = kept
    for n in sizes_bytes:
        host = torch.empty(n, dtype=torch.uint8, pin_memory=pinned)
        host.fill_(7)
        dev = torch.empty(n, dtype=torch.uint8, device=device)
        if direction == "h2d":
            def fn():
                dev.copy_(host, non_blocking=pinned)
                torch.cuda.synchronize(device)
        elif fresh:
            # as user code brings results back (.cpu(), .to("cpu")): into a new tensor each time.
            # On the H100 host a 32 MiB or larger one ran at 1.4-1.7 GB/s against 14-17 GB/s into
            # a reused buffer: every page faulted in during the copy.
            def fn():
                dev.to("cpu")
                torch.cuda.synchronize(device)
        else:
            def fn():
                host.copy_(dev, non_blocking=pinned)
                torch.cuda.synchronize(device)
        # Pageable copies go through a staging buffer and the OS's page tables: their speed settles
        # only after several large copies, so large pageable sizes get a longer warm-up and more samples.
        slow = not pinned and n >= (16 << 20)
        t = time_fn(
            fn, device=device, clock="host", budget_s=budget_s * (6 if slow else 1), warmup_budget_s=budget_s * (10 if slow else 1),
            min_samples=5, label=f"{direction} {host_memory} {n} B",
        )
        if t.warning:
            warnings.append(t.warning)
        stat = t.stat()
        points.append(TransferPoint(bytes=n, time=stat, bytes_per_s=n / stat.median_s))
        if progress:
            progress()
    latency, bandwidth = fit_latency_bandwidth([p.bytes for p in points], [p.time.median_s for p in points])
    return TransferCurve(
        direction=direction, host_memory=host_memory, points=points, latency_s=latency, bandwidth_bytes_per_s=bandwidth,
        fresh_destination=fresh,
    )
