"""Kernel families priced from their own calibrated points, not the dense GEMM curve
(``calibrate.mechanisms`` measures them).

- ``ConvFamilyModel``: depthwise and grouped convolutions. A query takes the calibrated stride-1
  points of its (kind, dtype, layout) with its filter size (the nearest where none match) and, for
  a grouped convolution, the two calibrated group widths around its own. Time is affine in
  multiply-accumulates between and beyond the points of one width (a fixed launch cost plus work
  at the kernel's rate: interpolating in log-log between a launch-bound point and a
  throughput-bound one overprices everything between them), flat below the smallest, and
  interpolated across group widths in log width. A strided convolution is that time times the
  ratio its calibrated strided points show over the stride-1 curve at their own width and work
  (a stride-s convolution reads s^2 times the input per output; cuDNN's grouped kernels run a
  strided one at the rate of a narrower group), the ratio interpolated over work.
  A group width that is not a power of two runs the work of the next one (``padded_group``).
- ``GemmRatioModel``: how much slower than the aligned mm a misaligned GEMM (per alignment in
  bytes, over FLOPs) or an addmm with a bias (its grid, or the nearest calibrated shapes) runs,
  and what a batch of small products costs over the stacked GEMM the kernel path prices (the
  nearest calibrated batches of the same row alignment).
- ``NormFamilyModel``: normalizations whose kernels walk rows. Eval batch norm on an NCHW input
  runs a block over H x W planes: short planes (7 x 7) idle most of each block, so time follows
  the number of planes, not the bytes; it is affine in elements per calibrated plane size and
  interpolated in log(plane size) between them. Group norm reduces each (sample, group) row in a
  block of its own before normalizing: with few rows most SMs idle, so time is affine in the row
  length per calibrated row count, interpolated in log(rows), and beyond the largest count (the
  GPU full) grows in proportion to the rows. Training batch norm on the CPU, and its backward,
  run at a rate per element of their own (statistics, then the normalize pass): affine in
  elements.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import Callable

import numpy as np

from roofline.schema.profile import ConvFamilyCurve, ConvFamilyPoint, GemmRatioCurve, GemmRatioPoint, NormFamilyCurve, NormFamilyPoint

TWIN = {"bfloat16": "float16", "float16": "bfloat16"}


def _affine_time(points: list[tuple[float, float]], x: float) -> float:
    """Time at work ``x`` from (work, time) points: piecewise linear between them, the last
    segment's slope beyond the last (a fixed cost plus work at the kernel's rate), flat below the
    first (launch-bound). One point alone: flat below it, proportional beyond."""
    points = sorted(points)
    if x <= points[0][0]:
        return points[0][1]
    for (x0, t0), (x1, t1) in zip(points, points[1:]):
        if x <= x1:
            return t0 + (t1 - t0) * (x - x0) / (x1 - x0)
    if len(points) == 1:
        return points[0][1] * x / points[0][0]
    (x0, t0), (x1, t1) = points[-2], points[-1]
    return t1 + max((t1 - t0) / (x1 - x0), 0.0) * (x - x1)


def _nearest(values, x: float, log: bool = True):
    return min(values, key=lambda v: abs(math.log(v / max(x, 1e-9))) if log else abs(v - x))


class ConvFamilyModel:
    """Depthwise and grouped convolution times from calibrated points."""

    def __init__(self, curves: list[ConvFamilyCurve]):
        self.curves = {(c.kind, c.dtype, c.layout, c.gradient): c for c in curves}

    def __bool__(self) -> bool:
        return bool(self.curves)

    def _curve(self, kind: str, dtype: str, layout: str, gradient: str = "none") -> ConvFamilyCurve | None:
        """The curve of this kind: its gradient's own if calibrated (a gradient's kernels are not the
        forward's), else the forward's; its dtype, its twin, then float32; its layout, then NCHW,
        except that a half-precision channels-last one takes its twin's channels-last curve before
        its own dtype's NCHW one (cuDNN runs both halves on the same NHWC kernels, where ATen's own
        NCHW kernel is another: ``benchmarks/token_grid_check.py``). A gradient curve of another
        dtype comes before the forward's of this one (a quick profile's float32 gradients price a
        half-precision gradient: its kernel, at float32's bytes)."""
        halves = [d for d in (dtype, TWIN.get(dtype)) if d]
        order = [(d, layout) for d in halves] + [(d, "nchw") for d in halves] + [("float32", layout), ("float32", "nchw")]
        for grad in dict.fromkeys((gradient, "none")):
            for d, lay in order:
                curve = self.curves.get((kind, d, lay, grad))
                if curve is not None:
                    return curve
        return None

    @staticmethod
    def _at_width(points: list[ConvFamilyPoint], width: int, macs: float) -> float:
        """Time of ``macs`` at group width ``width`` from points of one filter size and stride:
        affine in work per calibrated width, log-interpolated between the two widths around it."""
        by_width: dict[int, list[tuple[float, float]]] = {}
        for p in points:
            by_width.setdefault(p.channels // p.groups, []).append((p.macs, p.time.median_s))
        widths = sorted(by_width)
        if len(widths) == 1 or width <= widths[0] or width >= widths[-1]:
            return _affine_time(by_width[_nearest(widths, width)], macs)
        i = bisect_left(widths, width)
        lo, hi = widths[i - 1], widths[i]
        t_lo, t_hi = _affine_time(by_width[lo], macs), _affine_time(by_width[hi], macs)
        f = math.log(width / lo) / math.log(hi / lo)
        return math.exp((1 - f) * math.log(t_lo) + f * math.log(t_hi))

    def _stride_ratio(self, points: list[ConvFamilyPoint], kernel: float, stride: int, macs: float) -> float:
        """How much slower than the stride-1 curve a convolution of this stride runs: the ratio at
        the calibrated points of the nearest stride (of the nearest filter size that has strided
        points), each against the stride-1 curve of its own filter size and width at its own work,
        interpolated in log(work) between them, flat beyond."""
        strided = [p for p in points if p.stride > 1]
        if not strided:
            return 1.0
        k = _nearest({p.kernel for p in strided}, kernel)
        s = _nearest({p.stride for p in strided if p.kernel == k}, stride, log=False)
        base = [p for p in points if p.kernel == k and p.stride == 1]
        if not base:
            return 1.0
        ratios = sorted((p.macs, p.time.median_s / self._at_width(base, p.channels // p.groups, p.macs)) for p in strided if p.kernel == k and p.stride == s)
        xs = [math.log(m) for m, _ in ratios]
        return float(np.interp(math.log(max(macs, 1.0)), xs, [r for _, r in ratios]))

    def time_s(self, kind: str, dtype: str, layout: str, kernel: float, stride: int, width: int, macs: int,
               gradient: str = "none") -> float | None:
        """Seconds for one convolution of ``macs`` multiply-accumulates (or one ``gradient`` of its
        backward, "input" or "weight"); None without a curve."""
        curve = self._curve(kind, dtype, layout, gradient)
        if curve is None or macs <= 0:
            return None
        k_best = _nearest({p.kernel for p in curve.points}, kernel)
        same_k = [p for p in curve.points if p.kernel == k_best]
        base = [p for p in same_k if p.stride == 1]
        width, macs = padded_group(width, macs, {p.channels // p.groups for p in same_k})
        if not base:  # no stride-1 points at this filter size: its nearest stride as it was measured
            s_best = _nearest({p.stride for p in same_k}, stride, log=False)
            return self._at_width([p for p in same_k if p.stride == s_best], width, macs)
        t = self._at_width(base, width, macs)
        return t if stride <= 1 else t * self._stride_ratio(curve.points, kernel, stride, macs)


    def looped_groups_s(self, dtype: str, width: int, side: int, stride: int, outputs: int) -> float | None:
        """Seconds of a convolution of few groups where cuDNN's heuristics run it one group at a time,
        read from the calibrated few-group points (``grouped_few``: two groups over a batch): the
        point nearest in (log width, log input side), at the op's stride, when it ran at least
        ``LOOPED_RATIO`` times the grouped family's price of itself, scaled by output elements (the
        looped FP32 kernels take a near-constant time per output element, whatever the width).
        None where that point ran the grouped kernel, beyond ``LOOPED_REACH`` of the points' span,
        or without points."""
        curve = self.curves.get(("grouped_few", dtype, "nchw", "none"))
        points = [p for p in curve.points if p.stride == stride] if curve else []
        if not points or outputs <= 0:
            return None
        widths, sides = [p.channels // p.groups for p in points], [p.size for p in points]
        if not (min(widths) / LOOPED_REACH <= width <= max(widths) * LOOPED_REACH and min(sides) / LOOPED_REACH <= side <= max(sides) * LOOPED_REACH):
            return None
        near = min(points, key=lambda p: math.log(p.channels // p.groups / width) ** 2 + math.log(p.size / side) ** 2)
        grouped = self.time_s("grouped", dtype, "nchw", near.kernel, near.stride, near.channels // near.groups, near.macs)
        if grouped is None or near.time.median_s < LOOPED_RATIO * grouped:
            return None
        return near.time.median_s * outputs / near.outputs


# A few-group point "ran one group at a time" at this multiple of the grouped family's price: the
# looped FP32 kernels run several times the grouped kernel, the grouped kernel about its own price,
# and 3x lies between them (docs/design.md, "depthwise and grouped", names the check). Its reading
# reaches this factor beyond the points' widths and sides
LOOPED_RATIO = 3.0
LOOPED_REACH = 1.41


def padded_group(width: int, macs: int, calibrated: set[int]) -> tuple[int, int]:
    """The group width and work a grouped convolution runs at: cuDNN's grouped kernels tile a
    group's input and output channels in powers of two, so a group of 24 runs the work of 32 in
    both (RegNet's widths: 20-50% slower than the power-of-two widths around them). A width that
    is calibrated itself, or whose power of two lies past the widest calibrated one, as it is."""
    if width < 1 or width in calibrated or not calibrated:
        return width, macs
    padded = 1 << (width - 1).bit_length()
    if padded == width or padded > max(calibrated):
        return width, macs
    return padded, round(macs * (padded / width) ** 2)


def row_align_bytes(dtype: str, n: int, k: int) -> int:
    """The alignment (up to the 16 bytes cuBLAS's vectorized kernels need) of the rows of a
    contiguous (m x k) @ (k x n) product and its output."""
    itemsize = 2 if dtype in ("float16", "bfloat16") else 4
    return min(math.gcd(16, n * itemsize), math.gcd(16, k * itemsize))


BMM_REACH = 1.0  # log-distance in (m, n, k) within which a calibrated batch's ratio holds whole (a factor e in one dimension)


class GemmRatioModel:
    """Ratios to the plain aligned GEMM: misaligned leading dimensions, addmm's epilogue, and batches
    of small products."""

    def __init__(self, curves: list[GemmRatioCurve], matmul_s: Callable[[str, int, int, int], float] | None = None):
        """``matmul_s(dtype, rows, n, k)``: the matmul curve's time, against which a batch of small
        products is read (without it, batches take no ratio)."""
        self.misaligned: dict[tuple[str, int], list[tuple[float, float]]] = {}
        self.addmm: dict[str, np.ndarray] = {}
        self.addmm_grid: dict[str, tuple[list[np.ndarray], np.ndarray]] = {}
        self.bmm: dict[tuple[str, bool], np.ndarray] = {}  # (dtype, 16-byte rows) -> the class's rows, else all the dtype's
        bmm = []
        for c in curves:
            if c.kind == "bmm":
                bmm.append(c)
            elif c.kind == "addmm":
                self.addmm[c.dtype] = np.array([
                    (math.log(p.m), math.log(p.n), math.log(p.k), math.log(p.time.median_s / p.reference.median_s)) for p in c.points
                ])
                grid = _as_grid(self.addmm[c.dtype])
                if grid is not None:
                    self.addmm_grid[c.dtype] = grid
            else:
                align = int(c.kind.rsplit("_", 1)[1])
                self.misaligned[(c.dtype, align)] = sorted((2.0 * p.m * p.n * p.k, p.time.median_s / p.reference.median_s) for p in c.points)
        for c in bmm if matmul_s else []:  # after the misaligned curves, which the stacked GEMM's price includes
            aligns = [row_align_bytes(c.dtype, p.n, p.k) for p in c.points]
            rows = np.array([(math.log(p.m), math.log(p.n), math.log(p.k), math.log(p.time.median_s / self._stacked_s(matmul_s, c.dtype, p, align)))
                             for p, align in zip(c.points, aligns)])
            for aligned in (True, False):
                same = rows[[(a == 16) == aligned for a in aligns]]
                self.bmm[(c.dtype, aligned)] = same if len(same) else rows

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

    def _stacked_s(self, matmul_s: Callable[[str, int, int, int], float], dtype: str, p: GemmRatioPoint, align: int) -> float:
        """A calibration batch priced as the kernel path prices a contiguous bmm without this ratio:
        its rows stacked into one GEMM on the matmul curve, slowed by the misalignment (``align``
        bytes) of its rows."""
        ratio = self.misaligned_ratio(dtype, align, p.m, p.n, p.k) if align < 16 else 1.0
        return matmul_s(dtype, p.batch * p.m, p.n, p.k) * ratio

    def bmm_ratio(self, dtype: str, m: int, n: int, k: int, aligned: bool) -> float:
        """A batch of (m, n, k) products over what the kernel path prices without this ratio (their
        rows stacked into one GEMM): the geometric mean of the (up to) three calibrated batches of
        the same row alignment nearest in log(m, n, k), weighted by inverse squared distance
        (misaligned products run other kernels than aligned ones of a similar size), faded to 1
        from BMM_REACH to twice it from the nearest (a point's ratio also carries the matmul curve's
        own error there, which says nothing of far shapes); 1 without a curve (TF32 among them:
        calibration times float32 batches on the SIMT path only). The batch's count is not a
        coordinate: the calibrated batches fill the GPU."""
        rows = self.bmm.get((dtype, aligned))
        if rows is None:
            rows = self.bmm.get((TWIN.get(dtype, ""), aligned))
        if rows is None:
            return 1.0
        log_ratio, nearest = _nearest_log_mean(rows, np.log([m, n, k]), 3)
        return math.exp(min(max(2.0 - nearest / BMM_REACH, 0.0), 1.0) * log_ratio)

    def addmm_ratio(self, dtype: str, m: int, n: int, k: int) -> float:
        """addmm (bias in the epilogue) over mm: interpolated in log(m, n, k) over the calibrated
        grid, held at its edges (it moves with all three: mm splits a long k at few rows, the
        epilogue kernel does not); an older profile's scattered shapes give the two nearest; 1
        without a curve."""
        grid = self.addmm_grid.get(dtype) or self.addmm_grid.get(TWIN.get(dtype, ""))
        if grid is not None:
            return math.exp(_grid_value(*grid, np.log([m, n, k])))
        rows = self.addmm.get(dtype)
        if rows is None:
            rows = self.addmm.get(TWIN.get(dtype, ""))
        if rows is None:
            return 1.0
        return math.exp(_nearest_log_mean(rows, np.log([m, n, k]), 2)[0])


def _nearest_log_mean(rows: np.ndarray, point: np.ndarray, count: int) -> tuple[float, float]:
    """(the mean of column 3 over the ``count`` rows nearest ``point`` in columns 0-2, weighted by
    inverse squared distance; the nearest row's distance)."""
    d2 = ((rows[:, :3] - point) ** 2).sum(axis=1)
    pick = np.argsort(d2)[:count]
    w = 1.0 / (d2[pick] + 1e-3)
    return float((w * rows[pick, 3]).sum() / w.sum()), math.sqrt(float(d2[pick[0]]))


def _as_grid(rows: np.ndarray) -> tuple[list[np.ndarray], np.ndarray] | None:
    """(axes, values) when ``rows`` (x0, x1, x2, value) hold one value for every combination of
    their distinct coordinates, each axis with at least two; else None."""
    axes = [np.unique(rows[:, i]) for i in range(3)]
    if any(len(a) < 2 for a in axes) or len(rows) != math.prod(len(a) for a in axes):
        return None
    values = np.full([len(a) for a in axes], np.nan)
    for row in rows:
        values[tuple(int(np.searchsorted(a, row[i])) for i, a in enumerate(axes))] = row[3]
    return (axes, values) if not np.isnan(values).any() else None


def _grid_value(axes: list[np.ndarray], values: np.ndarray, point: np.ndarray) -> float:
    """Multilinear interpolation on a regular grid, ``point`` held inside its bounds."""
    out = values
    for a, x in zip(axes, point):
        x = min(max(float(x), float(a[0])), float(a[-1]))
        i = min(int(np.searchsorted(a, x, side="right")) - 1, len(a) - 2)
        f = (x - a[i]) / (a[i + 1] - a[i])
        out = (1 - f) * out[i] + f * out[i + 1]
    return float(out)


def _log_between(x: float, lo: float, hi: float, t_lo: float, t_hi: float) -> float:
    """Interpolation in log(x) of log(time) between ``(lo, t_lo)`` and ``(hi, t_hi)``."""
    f = math.log(x / lo) / math.log(hi / lo)
    return math.exp((1 - f) * math.log(t_lo) + f * math.log(t_hi))


def _grouped(pairs) -> dict[int, list[tuple[float, float]]]:
    """(x, time) pairs grouped by their key: ``pairs`` yields (key, x, time)."""
    out: dict[int, list[tuple[float, float]]] = {}
    for key, x, t in pairs:
        out.setdefault(key, []).append((float(x), t))
    return out


def plane_time_s(points: list[NormFamilyPoint], planes: int, plane: int) -> float:
    """Eval batch norm over ``planes`` planes of ``plane`` elements. Per calibrated plane size, time
    is affine in elements (a launch cost plus a cost per element that short planes make larger);
    between sizes, interpolated in log(plane size) at the same elements. A plane shorter than the
    shortest calibrated one costs what a plane of that size does (the per-plane cost dominates);
    one longer than the longest streams at its rate."""
    by_plane = _grouped((p.row, p.rows * p.row, p.time.median_s) for p in points)
    sizes = sorted(by_plane)
    if plane <= sizes[0]:
        return _affine_time(by_plane[sizes[0]], planes * sizes[0])
    elements = planes * plane
    if plane >= sizes[-1]:
        return _affine_time(by_plane[sizes[-1]], elements)
    i = bisect_left(sizes, plane)
    lo, hi = sizes[i - 1], sizes[i]
    return _log_between(plane, lo, hi, _affine_time(by_plane[lo], elements), _affine_time(by_plane[hi], elements))


def rows_in_flight_time_s(points: list[NormFamilyPoint], rows: int, row: int) -> float:
    """Group norm over ``rows`` rows of ``row`` elements (or a GPU's training batch norm over
    ``rows`` channels of ``row`` elements). Per calibrated row count, time is affine
    in the row length (each row's block streams its row); between counts, interpolated in
    log(rows) at the same row length. Fewer rows than the smallest count run in the same time
    (each row on an SM of its own); more than the largest run in waves, in proportion."""
    by_rows = _grouped((p.rows, p.row, p.time.median_s) for p in points)
    counts = sorted(by_rows)
    if rows <= counts[0]:
        return _affine_time(by_rows[counts[0]], row)
    if rows >= counts[-1]:
        return _affine_time(by_rows[counts[-1]], row) * rows / counts[-1]
    i = bisect_left(counts, rows)
    lo, hi = counts[i - 1], counts[i]
    return _log_between(rows, lo, hi, _affine_time(by_rows[lo], row), _affine_time(by_rows[hi], row))


def elements_time_s(points: list[NormFamilyPoint], rows: int, row: int) -> float:
    """Training batch norm (or its backward) on the CPU over ``rows`` channels of ``row`` elements: affine in
    elements between the calibrated points (a fixed cost plus a rate per element that drops as
    the tensor leaves the caches), the last segment's slope beyond them. ATen's CPU kernel walks
    each channel's planes for its statistics, then normalizes: neither pass cares how the
    elements split into planes."""
    return _affine_time([(p.rows * p.row, p.time.median_s) for p in points], rows * row)


# the kinds whose kernel is the same on every device; batch norm's training kinds follow ``block_per_row``
NORM_TIME_BY_KIND = {"batch_norm_eval": plane_time_s, "group_norm": rows_in_flight_time_s, "group_norm_backward": rows_in_flight_time_s}


class NormFamilyModel:
    """Batch norm (eval, training and its backward) and group norm times from calibrated points, per
    dtype (fp16 and bf16 stand for each other). ``block_per_row``: a GPU's, whose training batch
    norm gives each channel a block (priced as group norm's rows in flight); the CPU's follows its
    elements."""

    def __init__(self, curves: list[NormFamilyCurve], included_s: float = 0.0, block_per_row: bool = False):
        self.curves = {(c.kind, c.dtype): c for c in curves}
        self.included_s = included_s  # per-call overhead each point's time includes (a CPU call's dispatch)
        self.block_per_row = block_per_row

    def __bool__(self) -> bool:
        return bool(self.curves)

    def time_s(self, kind: str, dtype: str, rows: int, row: int) -> float | None:
        """Seconds of work of one call over ``rows`` rows of ``row`` elements, less the overhead its
        calibrated points include (the timeline adds the op's own dispatch); None without a curve."""
        curve = self.curves.get((kind, dtype)) or self.curves.get((kind, TWIN.get(dtype, "")))
        if curve is None or rows < 1 or row < 1:
            return None
        time = NORM_TIME_BY_KIND.get(kind, rows_in_flight_time_s if self.block_per_row else elements_time_s)
        t = time(curve.points, rows, row)
        return max(t - self.included_s, 0.1 * t)
