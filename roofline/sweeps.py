"""Sweeps that re-run the whole prediction at other sizes.

- Batch size: time per sample over batch size, where the model leaves the overhead regime and
  where it turns compute-bound (seed 001's doubling test, made quantitative).
- Placement over problem size: CPU against GPU plus copies for each entry of a model file's
  ``sweep()``, and the size from which the GPU wins (seed 000's crossover).

Each point is a fresh capture under fake tensors, so a sweep costs one capture per point.
"""

from __future__ import annotations

import time
from collections import Counter

import torch
from torch.utils import _pytree as pytree

from roofline.advice import placement
from roofline.capture import capture
from roofline.costs import cost_of
from roofline.curves import DeviceModel
from roofline.predict import predict_timeline
from roofline.profile import DeviceProfile
from roofline.report import BatchPoint, BatchSweep, PlacementPoint, PlacementSweep
from roofline.units import seconds


def _dominant(regime_s: dict) -> str:
    if not any(regime_s.get(r, 0.0) > 0 for r in ("compute", "memory", "overhead")):
        return "none"
    return max(("compute", "memory", "overhead"), key=lambda r: regime_s.get(r, 0.0))


def _predict(model, inputs, dev: DeviceModel, allow_tf32: bool):
    graph = capture(model, inputs)
    costs = [cost_of(op)[0] for op in graph.ops]
    tl = predict_timeline(graph, costs, dev, allow_tf32=allow_tf32, is_module=isinstance(model, torch.nn.Module))
    regime_s = Counter()
    for t in tl.ops:
        regime_s[t.regime] += t.predicted_s
    return graph, costs, tl, dict(regime_s)


def leading_batch(example_inputs) -> int | None:
    """The batch size: the common leading dimension of every tensor input, or None."""
    tensors = [t for t in pytree.tree_leaves(example_inputs) if isinstance(t, torch.Tensor)]
    if not tensors or any(t.ndim < 2 for t in tensors):
        return None  # a 1-D input's length is a problem size, not a batch
    dims = {t.shape[0] for t in tensors}
    return dims.pop() if len(dims) == 1 else None


def with_batch(example_inputs, batch: int):
    """Meta tensors shaped like the inputs with the leading dimension replaced."""

    def resize(t):
        if isinstance(t, torch.Tensor) and t.ndim > 0:
            return torch.empty((batch, *t.shape[1:]), dtype=t.dtype, device="meta")
        return t

    return pytree.tree_map(resize, tuple(example_inputs))


def batch_sweep(model, example_inputs, dev: DeviceModel, *, allow_tf32: bool = False, max_batch: int | None = None, budget_s: float = 8.0) -> BatchSweep | None:
    """Predicted time per sample at batch sizes 1, 2, 4, ... (and the model's own), within a time budget."""
    b0 = leading_batch(example_inputs)
    if b0 is None or b0 < 1:
        return None
    top = max_batch or min(max(256, 16 * b0), 4096)
    sizes = sorted({1 << i for i in range(0, top.bit_length()) if (1 << i) <= top} | {b0, 2 * b0})
    points = []
    started = time.perf_counter()
    for b in sizes:
        if time.perf_counter() - started > budget_s and b > 2 * b0:
            break
        try:
            _, _, tl, regime_s = _predict(model, with_batch(example_inputs, b), dev, allow_tf32)
        except Exception:  # a model whose shapes do not follow its batch (hard-coded reshapes)
            continue
        points.append(
            BatchPoint(batch=b, predicted_s=tl.total_s, per_sample_s=tl.total_s / b, regime=_dominant(regime_s), regime_s=regime_s)
        )
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
    return BatchSweep(device=dev.kind, points=points, leaves_overhead_at=leaves, compute_bound_at=compute, doubling_ratio=ratio)


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
    return "batch size (the inputs' leading dimension): " + "; ".join(parts)


def placement_sweep(entries, profile: DeviceProfile, *, allow_tf32: bool = False, parameter: str = "size", host_memory: str = "pageable") -> PlacementSweep | None:
    """CPU vs GPU plus copies for each ``(label, model, inputs)`` of a model file's sweep()."""
    if profile.gpu is None:
        return None
    gpu, cpu = DeviceModel(profile.gpu, "cuda"), DeviceModel(profile.host, "cpu")
    points = []
    for label, model, inputs in entries:
        graph, costs, gtl, _ = _predict(model, inputs, gpu, allow_tf32)
        ctl = predict_timeline(graph, costs, cpu, allow_tf32=allow_tf32, is_module=isinstance(model, torch.nn.Module))
        place = placement(graph, gtl, ctl, gpu, host_memory=host_memory)
        size = _size_of(label)
        points.append(
            PlacementPoint(size=size, label=label, cpu_s=place.cpu_s, gpu_s=place.gpu_s, transfer_s=place.transfer_s, recommended=place.recommended)
        )
    if parameter == "size" and points and "=" in points[0].label:
        parameter = points[0].label.split("=", 1)[0].strip()
    return PlacementSweep(parameter=parameter, points=points, crossover=crossover([(p.size, p.recommended) for p in points]))


def crossover(decisions: list[tuple[int, str]]) -> int | None:
    """Smallest size from which every larger size prefers the GPU."""
    found = None
    for size, rec in sorted(decisions):
        if rec == "cuda":
            found = size if found is None else found
        else:
            found = None
    return found


def _size_of(label: str) -> int:
    """The number in a sweep label such as 'dim=4096' or 'numel=2**20'."""
    import re

    m = re.search(r"=\s*(\d+)\s*\*\*\s*(\d+)", label)
    if m:
        return int(m.group(1)) ** int(m.group(2))
    m = re.search(r"=\s*(\d+)", label)
    return int(m.group(1)) if m else 0
