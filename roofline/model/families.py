"""Kernel families priced from their own calibrated points, not the dense GEMM curve
(``calibrate.mechanisms`` measures them).

- ``ConvFamilyModel``: depthwise and grouped convolutions. A query takes the calibrated points of
  its (kind, dtype, layout) with its filter size and stride (the nearest where none match) and, for
  a grouped convolution, the two calibrated group widths around its own; time is interpolated in
  log-log over multiply-accumulates: flat below the smallest point (a launch-bound floor), linear in
  work beyond the largest (throughput-bound), and across group widths in log width.
- ``GemmRatioModel``: how much slower than the aligned mm a misaligned GEMM (per alignment in
  bytes, over FLOPs) or an addmm with a bias (nearest calibrated shapes) runs.
"""

from __future__ import annotations

import math
from bisect import bisect_left

import numpy as np

from roofline.schema.profile import ConvFamilyCurve, GemmRatioCurve

TWIN = {"bfloat16": "float16", "float16": "bfloat16"}


def _loglog_time(points: list[tuple[float, float]], x: float) -> float:
    """Time at work ``x`` from (work, time) points: log-log interpolation, flat below the first,
    proportional to work beyond the last."""
    points = sorted(points)
    xs = [math.log(p[0]) for p in points]
    ys = [math.log(p[1]) for p in points]
    lx = math.log(max(x, 1.0))
    if lx <= xs[0]:
        return math.exp(ys[0])
    if lx >= xs[-1]:
        return math.exp(ys[-1]) * x / points[-1][0]
    return math.exp(float(np.interp(lx, xs, ys)))


class ConvFamilyModel:
    """Depthwise and grouped convolution times from calibrated points."""

    def __init__(self, curves: list[ConvFamilyCurve]):
        self.curves = {(c.kind, c.dtype, c.layout): c for c in curves}

    def __bool__(self) -> bool:
        return bool(self.curves)

    def _curve(self, kind: str, dtype: str, layout: str) -> ConvFamilyCurve | None:
        for d in (dtype, TWIN.get(dtype), "float32"):
            for lay in (layout, "nchw"):
                curve = self.curves.get((kind, d, lay))
                if curve is not None:
                    return curve
        return None

    def time_s(self, kind: str, dtype: str, layout: str, kernel: float, stride: int, width: int, macs: int) -> float | None:
        """Seconds for one convolution of ``macs`` multiply-accumulates; None without a curve."""
        curve = self._curve(kind, dtype, layout)
        if curve is None or macs <= 0:
            return None
        pts = curve.points
        k_best = min({p.kernel for p in pts}, key=lambda k: abs(math.log(k / kernel)))
        pts = [p for p in pts if p.kernel == k_best]
        s_best = min({p.stride for p in pts}, key=lambda s: abs(s - stride))
        pts = [p for p in pts if p.stride == s_best]
        by_width: dict[int, list[tuple[float, float]]] = {}
        for p in pts:
            by_width.setdefault(p.channels // p.groups, []).append((p.macs, p.time.median_s))
        widths = sorted(by_width)
        if len(widths) == 1 or width <= widths[0] or width >= widths[-1]:
            nearest = min(widths, key=lambda w: abs(math.log(w / max(width, 1))))
            return _loglog_time(by_width[nearest], macs)
        i = bisect_left(widths, width)
        lo, hi = widths[i - 1], widths[i]
        t_lo, t_hi = _loglog_time(by_width[lo], macs), _loglog_time(by_width[hi], macs)
        f = math.log(width / lo) / math.log(hi / lo)
        return math.exp((1 - f) * math.log(t_lo) + f * math.log(t_hi))


class GemmRatioModel:
    """Ratios to the plain aligned GEMM: misaligned leading dimensions and addmm's epilogue."""

    def __init__(self, curves: list[GemmRatioCurve]):
        self.misaligned: dict[tuple[str, int], list[tuple[float, float]]] = {}
        self.addmm: dict[str, np.ndarray] = {}
        for c in curves:
            if c.kind == "addmm":
                self.addmm[c.dtype] = np.array([
                    (math.log(p.m), math.log(p.n), math.log(p.k), math.log(p.time.median_s / p.reference.median_s)) for p in c.points
                ])
            else:
                align = int(c.kind.rsplit("_", 1)[1])
                self.misaligned[(c.dtype, align)] = sorted((2.0 * p.m * p.n * p.k, p.time.median_s / p.reference.median_s) for p in c.points)

    def misaligned_ratio(self, dtype: str, align_bytes: int, m: int, n: int, k: int) -> float:
        """How much slower a product with rows aligned to ``align_bytes`` (2, 4 or 8) runs; 1 when
        the profile has no curve for the dtype (float32 without TF32 does not care)."""
        for d in (dtype, TWIN.get(dtype)):
            have = sorted(a for dd, a in self.misaligned if dd == d)
            if not have:
                continue
            align = max([a for a in have if a <= align_bytes] or [have[0]])
            pts = self.misaligned[(d, align)]
            flops = 2.0 * m * n * k
            xs = [math.log(f) for f, _ in pts]
            ys = [math.log(max(r, 1.0)) for _, r in pts]
            return math.exp(float(np.interp(math.log(max(flops, 1.0)), xs, ys)))
        return 1.0

    def addmm_ratio(self, dtype: str, m: int, n: int, k: int) -> float:
        """addmm (bias in the epilogue) over mm at the nearest calibrated shapes; 1 without a curve."""
        rows = self.addmm.get(dtype)
        if rows is None:
            rows = self.addmm.get(TWIN.get(dtype, ""))
        if rows is None:
            return 1.0
        d2 = ((rows[:, :3] - np.log([m, n, k])) ** 2).sum(axis=1)
        pick = np.argsort(d2)[:2]
        w = 1.0 / (d2[pick] + 1e-3)
        return float(np.exp((w * rows[pick, 3]).sum() / w.sum()))
