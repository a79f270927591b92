"""Matmul FLOP/s over a grid of (m, n, k): the compute ceiling as a curve, not a single peak.

A 256x256 product runs far below the chip's peak; prediction interpolates this grid at each op's
own shape. A dtype that runs as its twin does (float16 as bfloat16) is measured at a dozen check
shapes and its cube derived from the twin's (``twin_curve``). Operands are random (never zeros, which run faster than real data), and the cache is
flushed between repetitions on the GPU so that operands come from DRAM as in a real forward pass.
"""

from __future__ import annotations

import math
import statistics

import torch

from roofline.schema.profile import MatmulCurve, MatmulPoint
from roofline.timing import time_fn

DTYPES = {"float32": torch.float32, "tf32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class _tf32:
    """Context manager that sets TF32 matmuls on or off and restores the previous setting."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __enter__(self):
        self.prev = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = self.enabled

    def __exit__(self, *exc):
        torch.backends.cuda.matmul.allow_tf32 = self.prev


def measure_point(m: int, n: int, k: int, dtype_name: str, device: str, flush_bytes: int, budget_s: float, warnings: list) -> MatmulPoint:
    dtype = DTYPES[dtype_name]
    # Operands are drawn on the device: drawing an 8192^2 matrix on the host costs more than timing it.
    gen = torch.Generator(device=device).manual_seed(m * 7919 + n * 31 + k)
    # The right operand is a transposed (n, k) weight, as nn.Linear issues it (x @ W.T). The plain
    # row-major layout hits a path that took a flat 8 ms at some M=1 shapes on a 16-thread host,
    # which no model's Linear layer pays.
    a = torch.randn(m, k, generator=gen, device=device, dtype=dtype)
    b = torch.randn(n, k, generator=gen, device=device, dtype=dtype).t()
    out = torch.empty(m, n, device=device, dtype=dtype)
    with _tf32(dtype_name == "tf32"):
        t = time_fn(
            lambda: torch.mm(a, b, out=out),
            device=device,
            budget_s=budget_s,
            warmup_budget_s=budget_s,
            min_samples=5,
            flush_cache_bytes=flush_bytes,
            label=f"matmul {dtype_name} {m}x{n}x{k}",
        )
    if t.warning:
        warnings.append(t.warning)
    stat = t.stat()
    return MatmulPoint(m=m, n=n, k=k, time=stat, flop_per_s=2 * m * n * k / stat.median_s)


SPIKE = 1.5  # a point slower than this times a point larger in every dimension is re-measured


def _remeasure_spikes(points: list[MatmulPoint], dtype_name: str, device: str, flush_bytes: int, budget_s: float, warnings: list) -> list[MatmulPoint]:
    """Re-measure points that take longer than a shape larger in every dimension.

    More work never takes less time, so such a point caught a disturbance: on a loaded host, small
    multithreaded CPU GEMMs sometimes lose a whole scheduler tick (~8 ms flat, seen on 2- and
    16-core machines). Up to two re-measurements; the fastest median is kept, and a point that stays
    slow is reported in the warnings (prediction also clips the grid monotone)."""
    by_shape = {(p.m, p.n, p.k): p for p in points}

    def bound(p):
        larger = [q.time.median_s for q in points if q is not p and q.m >= p.m and q.n >= p.n and q.k >= p.k]
        return min(larger) if larger else None

    for shape, p in list(by_shape.items()):
        for _ in range(2):
            limit = bound(p)
            if limit is None or p.time.median_s <= SPIKE * limit:
                break
            again = measure_point(*shape, dtype_name, device, flush_bytes, 2 * budget_s, [])
            if again.time.median_s < p.time.median_s:
                p = again
        by_shape[shape] = p
        limit = bound(p)
        if limit is not None and p.time.median_s > SPIKE * limit:
            warnings.append(f"matmul {dtype_name} {shape[0]}x{shape[1]}x{shape[2]}: {p.time.median_s * 1e6:.0f} us, slower than a larger shape ({limit * 1e6:.0f} us) after re-measuring")
    return [by_shape[(p.m, p.n, p.k)] for p in points]


def measure_curve(
    dtype_name: str,
    grid: list[int],
    device: str,
    *,
    peak_probes: list[tuple[int, int, int]] = (),
    flush_bytes: int = 0,
    budget_s: float = 0.02,
    warnings: list,
    progress=None,
) -> MatmulCurve:
    points = []
    for m in grid:
        for n in grid:
            for k in grid:
                points.append(measure_point(m, n, k, dtype_name, device, flush_bytes, budget_s, warnings))
                if progress:
                    progress()
    points = _remeasure_spikes(points, dtype_name, device, flush_bytes, budget_s, warnings)
    probes = []
    for m, n, k in peak_probes:
        probes.append(measure_point(m, n, k, dtype_name, device, flush_bytes, budget_s, warnings))
        if progress:
            progress()
    return MatmulCurve(dtype=dtype_name, grid=list(grid), points=points, peak_probes=probes)


# Shapes measured in a dtype whose cube may be derived from its twin's (float16 from bfloat16: the
# same tensor-core kernels at the same rate; docs/design.md, "Calibration"). They span the cube, the
# degenerate k=1 products whose kernels differ, and mid shapes where cuBLAS's picks might.
TWIN_CHECKS = [
    (1, 1024, 1024), (1, 8192, 8192), (64, 64, 64), (64, 1024, 1024), (256, 4096, 4096), (1024, 1024, 1024),
    (1024, 1024, 1), (4096, 1, 1), (1024, 8192, 4096), (4096, 256, 1024), (4096, 4096, 4096), (8192, 8192, 8192),
]
TWIN_TOLERANCE = 0.10  # a check point within this of the median ratio agrees
TWIN_AGREEING = 2 / 3  # the share of check points that must agree, and the median ratio must be within tolerance of 1


def _scaled(p: MatmulPoint, ratio: float) -> MatmulPoint:
    time = p.time.model_copy(update=dict(median_s=p.time.median_s * ratio, iqr_s=p.time.iqr_s * ratio))
    return p.model_copy(update=dict(time=time, flop_per_s=p.flop_per_s / ratio))


def twin_curve(dtype_name: str, twin: MatmulCurve, device: str, *, budget_s: float, warnings: list, progress=None) -> MatmulCurve | None:
    """``dtype_name``'s curve from ``twin``'s cube, where the two run alike: the check shapes
    (``TWIN_CHECKS`` on the twin's grid) measured in this dtype, the twin's points scaled by the
    median ratio, the measured check points kept as measured. None when they do not agree (then the
    cube is measured: a GPU without tensor cores for one of the two)."""
    grid = set(twin.grid)
    shapes = [s for s in TWIN_CHECKS if set(s) <= grid]
    if len(shapes) < 3:
        return None
    checks = []
    for shape in shapes:
        checks.append(measure_point(*shape, dtype_name, device, 0, budget_s, warnings))
        if progress:
            progress()
    theirs = {(p.m, p.n, p.k): p for p in twin.points}
    ratios = [c.time.median_s / theirs[(c.m, c.n, c.k)].time.median_s for c in checks]
    ratio = statistics.median(ratios)
    agreeing = sum(abs(math.log(r / ratio)) <= math.log1p(TWIN_TOLERANCE) for r in ratios)
    if abs(math.log(ratio)) > math.log1p(TWIN_TOLERANCE) or agreeing < TWIN_AGREEING * len(ratios):
        return None
    return derived(twin, dtype_name, ratio, checks)


def derived(twin: MatmulCurve, dtype_name: str, ratio: float, checks: list[MatmulPoint]) -> MatmulCurve:
    """``dtype_name``'s cube from ``twin``'s points, each scaled by ``ratio``, its own ``checks`` kept
    as measured. Calibration calls it again when it re-measures points of the twin."""
    own = {(c.m, c.n, c.k): c for c in checks}
    return MatmulCurve(
        dtype=dtype_name, grid=list(twin.grid), points=[own.get((p.m, p.n, p.k)) or _scaled(p, ratio) for p in twin.points],
        peak_probes=[_scaled(p, ratio) for p in twin.peak_probes], derived_from=twin.dtype, derived_ratio=ratio, check_points=checks,
    )
