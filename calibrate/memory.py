"""Memory bandwidth over working-set size, and the throughput of a transcendental pointwise op.

Three access patterns (copy: read one buffer and write another; read: a full sum; write: a fill)
from cache-resident sizes to many times the last-level cache. No flush here: at small sizes the
point of the curve is the cache's own bandwidth, which is what a small op in a real model sees.
Bytes moved count both reads and writes.
"""

from __future__ import annotations

import torch

from roofline.profile import BandwidthCurve, BandwidthPoint, PointwiseCurve, PointwisePoint
from roofline.timing import time_fn


def _timed(fn, device, budget_s, label, warnings):
    t = time_fn(fn, device=device, budget_s=budget_s, warmup_budget_s=budget_s, min_samples=5, label=label)
    if t.warning:
        warnings.append(t.warning)
    return t.stat()


def measure_bandwidth(kind: str, sizes_bytes: list[int], device: str, *, budget_s: float, warnings: list, progress=None) -> BandwidthCurve:
    points = []
    for ws in sizes_bytes:
        if kind == "copy":
            n = max(ws // 8, 1)  # two float32 buffers make up the working set
            src = torch.rand(n, device=device)
            dst = torch.empty_like(src)
            fn, moved = (lambda: dst.copy_(src)), 8 * n
        elif kind == "read":
            n = max(ws // 4, 1)
            src = torch.rand(n, device=device)
            out = torch.empty((), device=device)
            fn, moved = (lambda: torch.sum(src, dim=0, out=out)), 4 * n + 4
        elif kind == "write":
            n = max(ws // 4, 1)
            dst = torch.empty(n, device=device)
            fn, moved = (lambda: dst.fill_(1.5)), 4 * n
        else:
            raise ValueError(kind)
        stat = _timed(fn, device, budget_s, f"{kind} bandwidth {ws} B", warnings)
        points.append(
            BandwidthPoint(bytes=moved, working_set_bytes=ws, time=stat, bytes_per_s=moved / stat.median_s)
        )
        del fn
        if progress:
            progress()
    return BandwidthCurve(kind=kind, dtype="float32", points=points)


def measure_pointwise(sizes_elements: list[int], device: str, *, op: str = "sin", budget_s: float, warnings: list, progress=None) -> PointwiseCurve:
    fn_op = getattr(torch, op)
    points = []
    for n in sizes_elements:
        x = torch.rand(n, device=device)
        y = torch.empty_like(x)
        stat = _timed(lambda: fn_op(x, out=y), device, budget_s, f"{op} over {n} elements", warnings)
        moved = 8 * n
        points.append(
            PointwisePoint(
                elements=n, bytes=moved, time=stat, elements_per_s=n / stat.median_s, bytes_per_s=moved / stat.median_s
            )
        )
        if progress:
            progress()
    return PointwiseCurve(op=op, dtype="float32", points=points)
