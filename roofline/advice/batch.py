"""Batch size: predicted time per sample over batch sizes, where the model leaves the overhead
regime and where it turns compute-bound (seed 001's doubling test, made quantitative)."""

from __future__ import annotations

import time
from typing import Callable

from roofline.model.timeline import Timeline
from roofline.schema.report import BatchPoint, BatchSweep
from roofline.units import seconds


def dominant(regime_s: dict) -> str:
    """The regime with the largest share of the time ('none' when no time is in any)."""
    if not any(regime_s.get(r, 0.0) > 0 for r in ("compute", "memory", "overhead")):
        return "none"
    return max(("compute", "memory", "overhead"), key=lambda r: regime_s.get(r, 0.0))


def sweep_sizes(b0: int, max_batch: int | None = None) -> list[int]:
    """Batch sizes 1, 2, 4, ... up to the top (at least 256, 16x the model's own, at most 4096),
    with the model's own and twice it."""
    top = max_batch or min(max(256, 16 * b0), 4096)
    return sorted({1 << i for i in range(0, top.bit_length()) if (1 << i) <= top} | {b0, 2 * b0})


def batch_sweep(
    b0: int, timeline_at: Callable[[int], Timeline | None], device: str, *, max_batch: int | None = None, budget_s: float = 8.0,
) -> BatchSweep | None:
    """Predicted time per sample at batch sizes 1, 2, 4, ... (and the model's own ``b0``), within a
    time budget; ``timeline_at(b)`` predicts the model at batch ``b`` (None where it cannot)."""
    points = []
    started = time.perf_counter()
    for b in sweep_sizes(b0, max_batch):
        if time.perf_counter() - started > budget_s and b > 2 * b0:
            break
        tl = timeline_at(b)
        if tl is None:
            continue
        regime_s = tl.regime_s(every=False)
        points.append(BatchPoint(batch=b, predicted_s=tl.total_s, per_sample_s=tl.total_s / b, regime=dominant(regime_s), regime_s=regime_s))
    if len(points) < 2:
        return None
    by_b = {p.batch: p for p in points}
    ratio = (
        by_b[2 * b0].predicted_s / by_b[b0].predicted_s
        if b0 in by_b and 2 * b0 in by_b and by_b[b0].predicted_s > 0
        else None
    )
    leaves = next((p.batch for p in points if p.regime != "overhead"), None) if points[0].regime == "overhead" else None
    compute = next((p.batch for p in points if p.regime == "compute"), None)
    return BatchSweep(device=device, points=points, leaves_overhead_at=leaves, compute_bound_at=compute, doubling_ratio=ratio)


def describe_batch_sweep(sweep: BatchSweep, b0: int) -> str:
    """One sentence for the advice list."""
    parts = []
    if sweep.doubling_ratio is not None:
        kind = "overhead-bound: a larger batch is nearly free" if sweep.doubling_ratio < 1.3 else (
            "throughput-bound: time grows with the batch" if sweep.doubling_ratio > 1.7 else "partly overhead-bound")
        parts.append(f"doubling the batch from {b0} to {2 * b0} multiplies the time by {sweep.doubling_ratio:.2f} ({kind})")
    if sweep.leaves_overhead_at:
        parts.append(f"it leaves the overhead regime at batch {sweep.leaves_overhead_at}")
    if sweep.compute_bound_at:
        parts.append(f"turns compute-bound at batch {sweep.compute_bound_at}")
    best = min(sweep.points, key=lambda p: p.per_sample_s)
    if best.predicted_s <= 0:
        return "batch size: the model does no device work at any batch size"
    parts.append(f"time per sample is lowest at batch {best.batch} ({seconds(best.per_sample_s)})")
    where = "GPU" if sweep.device == "cuda" else "CPU"
    return f"batch size (the inputs' leading dimension; {where}, eager): " + "; ".join(parts)
