"""Calibrated curves as functions: achieved time or rate at any op's own size.

Peaks alone overestimate small ops by orders of magnitude (a 256^3 matmul runs far below the chip's
peak, a 1 MB copy far below its bandwidth), so prediction reads every ceiling at the op's size:

- matmul: the measured time on the (m, n, k) grid, interpolated linearly in log(time) over
  log(m), log(n), log(k); beyond the grid the rate at the nearest edge is kept (time scales with
  FLOPs), which the peak probes show is where large GEMMs sit;
- bandwidth and pointwise: rate over working-set size, interpolated in log-log, flat beyond the ends;
- convolution: the implicit GEMM's matmul-curve time times the ratio measured at the nearest
  calibrated convolutions of the same kind, input alignment, filter taps and stride;
- host<->device copies: the measured times interpolated linearly in bytes between calibrated
  sizes (a pageable copy into fresh memory jumps where the allocator starts handing out new
  pages), the smallest point's time below them, the largest point's rate beyond;
- fused RNN layer: a fixed cost per call plus, per step, the gate GEMM's matmul-curve time times
  the step-to-GEMM ratio measured at the nearest calibrated layers of the same cell type.
"""

from __future__ import annotations

import bisect
import math
import statistics
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from roofline.costs.conv import conv_gemm
from roofline.costs.rnn import GATES
from roofline.model.host import calibrated_index_s
from roofline.schema.profile import (
    BandwidthCurve,
    ConvCurve,
    MatmulCurve,
    Overheads,
    PointwiseCurve,
    RnnCurve,
    TransferCurve,
)

# fp16 and bf16 run the same kernels at the same speed: a curve of either stands for the other
_TWIN = {"float16": "bfloat16", "bfloat16": "float16"}


def _work_time(t: float, overhead_s: float) -> float:
    """A measured time less the per-call overhead it includes (CPU wall times include dispatch)."""
    return max(t - overhead_s, 0.1 * t)


def _monotone(log_t: np.ndarray) -> np.ndarray:
    """Clip the grid so that no shape takes longer than a shape that is larger in every dimension.

    More work never takes less time; a grid point that does (one slow sample on a busy host, say
    8 ms for a 1x512x512 product next to 0.1 ms for 1x1024x1024) would otherwise poison every
    prediction interpolated near it. A suffix minimum along each axis keeps every genuine point and
    removes such spikes. The bandwidth and op-family curves (one axis, in increasing size; times or
    log times alike) are clipped the same way."""
    out = log_t.copy()
    for axis in range(out.ndim):
        flipped = np.flip(out, axis=axis)
        out = np.flip(np.minimum.accumulate(flipped, axis=axis), axis=axis)
    return out


def _cell(axis: list[float], x: float) -> tuple[int, float]:
    """(i, w): x lies between axis[i] and axis[i + 1], at fraction w of the way (x within the axis)."""
    if len(axis) == 1:
        return 0, 0.0
    i = min(max(bisect.bisect_right(axis, x) - 1, 0), len(axis) - 2)
    return i, (x - axis[i]) / (axis[i + 1] - axis[i])


def _trilinear(axis: list[float], values: list, x: float, y: float, z: float) -> float:
    """Multilinear interpolation of ``values`` on the cube ``axis`` x ``axis`` x ``axis`` at a point
    inside it (what ``scipy.interpolate.RegularGridInterpolator(method='linear')`` computes)."""
    (i, wx), (j, wy), (k, wz) = _cell(axis, x), _cell(axis, y), _cell(axis, z)
    total = 0.0
    for di, fx in ((0, 1.0 - wx), (1, wx)):
        for dj, fy in ((0, 1.0 - wy), (1, wy)):
            for dk, fz in ((0, 1.0 - wz), (1, wz)):
                weight = fx * fy * fz
                if weight:
                    last = len(axis) - 1
                    total += weight * values[min(i + di, last)][min(j + dj, last)][min(k + dk, last)]
    return total


class MatmulModel:
    """Time of an (m, n, k) product of one dtype, from the calibrated grid.

    ``overhead_s`` is subtracted from each measured time: on the CPU the timings are wall times that
    include the per-op dispatch, which prediction adds back separately.
    """

    def __init__(self, curve: MatmulCurve, overhead_s: float = 0.0):
        self.curve = curve
        grid = sorted(set(curve.grid))
        self.grid = np.array(grid, dtype=np.float64)
        index = {v: i for i, v in enumerate(grid)}
        log_t = np.empty((len(grid),) * 3)
        for p in curve.points:
            log_t[index[p.m], index[p.n], index[p.k]] = math.log(_work_time(p.time.median_s, overhead_s))
        self._log_t = _monotone(log_t).tolist()
        self._log_grid = [math.log(v) for v in grid]
        self.peak_flop_per_s = curve.peak_flop_per_s

    def _inside(self, m: float, n: float, k: float) -> float:
        lo, hi = self.grid[0], self.grid[-1]
        mc, nc, kc = (float(min(max(x, lo), hi)) for x in (m, n, k))
        return math.exp(_trilinear(self._log_grid, self._log_t, math.log(mc), math.log(nc), math.log(kc)))

    def _extended(self, dims: tuple[float, float, float]) -> float:
        """Beyond the grid's top, time is affine in each dimension: the last step's marginal time
        per row (column, reduction element) continues. A product that is still launch-bound at the
        edge (8192 x 16 x 16) stays near its time there, its bytes bounding it (priced apart); one
        that is throughput-bound grows in proportion."""
        top, prev = float(self.grid[-1]), float(self.grid[-2])
        for axis, x in enumerate(dims):
            if x > top:
                at_top = list(dims)
                at_top[axis] = top
                at_prev = list(dims)
                at_prev[axis] = prev
                t_top, t_prev = self._extended(tuple(at_top)), self._extended(tuple(at_prev))
                slope = min(max((t_top - t_prev) / (top - prev), 0.0), t_top / top)
                return t_top + (x - top) * slope
        return self._inside(*dims)

    def time_s(self, m: int, n: int, k: int) -> float:
        dims = (float(max(m, 1)), float(max(n, 1)), float(max(k, 1)))
        t = self._extended(dims) if len(self.grid) > 1 and max(dims) > self.grid[-1] else self._inside(*dims)
        # Never faster than the best rate ever measured for this dtype.
        return max(t, 2.0 * m * n * k / self.peak_flop_per_s)


def _loglog(xs, ys):
    """Piecewise-linear interpolation in log-log space, flat beyond both ends."""
    lx, ly = np.log(np.asarray(xs, dtype=np.float64)), np.log(np.asarray(ys, dtype=np.float64))

    def f(x: float) -> float:
        return float(np.exp(np.interp(math.log(max(x, 1.0)), lx, ly)))

    return f


class BandwidthModel:
    """Achieved bytes/s for a pass over ``working_set`` bytes, by access pattern."""

    def __init__(self, curves: list[BandwidthCurve], overhead_s: float = 0.0):
        self._f = {}
        for c in curves:
            points = sorted(c.points, key=lambda p: p.working_set_bytes)
            times = _monotone(np.array([_work_time(p.time.median_s, overhead_s) for p in points]))
            self._f[c.kind] = _loglog([p.working_set_bytes for p in points], [p.bytes / t for p, t in zip(points, times)])

    def bytes_per_s(self, working_set: int, kind: str = "copy") -> float:
        f = self._f.get(kind) or self._f["copy"]
        return f(working_set)


class PointwiseModel:
    """Throughput of one op family's calibrated kernel (sin, unary, add, mul_broadcast, layer_norm, softmax) over size."""

    def __init__(self, curve: PointwiseCurve | None, overhead_s: float = 0.0):
        self.curve = curve
        if curve:
            times = _monotone(np.array([_work_time(p.time.median_s, overhead_s) for p in curve.points]))
            self._bytes = _loglog([p.bytes for p in curve.points], [p.bytes / t for p, t in zip(curve.points, times)])
        else:
            self._bytes = None

    def bytes_per_s(self, nbytes: int) -> float | None:
        """Bytes moved per second by a kernel of this family that moves ``nbytes``."""
        return self._bytes(nbytes) if self._bytes else None


class AttentionModel:
    """Dense-equivalent FLOP/s of fused attention over (sequence length, tokens in flight).

    Points need not form a full grid (at long sequences the smallest token count is one sequence):
    per calibrated sequence length the rate is interpolated over its own token counts, then between
    the two nearest sequence lengths in log space. Above a row's largest token count the rate stays
    flat (the GPU is full). A row whose smallest point is one sequence alone is read in time: that
    grid of one row of query tiles runs in one wave, each tile walking every key, so fewer queries (a
    decoder's 32 tokens against an encoder's 1500) take the same time; from there to the full point
    the time grows in proportion to the tokens added, as tiles fill the multiprocessors and then
    queue in waves. A row without one is interpolated in log-log and flat below its smallest point."""

    def __init__(self, curve):
        self.curve = curve
        by_seq: dict[int, list[tuple[float, float]]] = {}
        single: set[int] = set()
        for p in curve.points:
            by_seq.setdefault(p.seq, []).append((math.log(p.batch_heads * p.seq), math.log(p.flop_per_s)))
            if p.batch_heads == 1:
                single.add(p.seq)
        self._seqs = sorted(by_seq)
        self._rows = {s: sorted(by_seq[s]) for s in self._seqs}
        self._single = single
        self.peak = max(p.flop_per_s for p in curve.points)

    def _at_seq(self, seq: int, log_tokens: float) -> float:
        """log rate of the row at ``seq`` for exp(log_tokens) tokens in flight."""
        row = self._rows[seq]
        if seq not in self._single:
            return float(np.interp(log_tokens, [t for t, _ in row], [r for _, r in row]))
        # in time (tokens / rate: the row's FLOPs per token are one constant), affine in tokens
        tokens = [math.exp(t) for t, _ in row]
        times = [math.exp(t - r) for t, r in row]
        n = math.exp(log_tokens)
        if n >= tokens[-1]:
            return row[-1][1]
        time = float(np.interp(n, tokens, times))  # below the one-sequence point: its time
        return log_tokens - math.log(time)

    def flop_per_s(self, seq: int, tokens: int) -> float:
        lt = math.log(max(tokens, 1))
        seqs = self._seqs
        if seq <= seqs[0]:
            return math.exp(self._at_seq(seqs[0], lt))
        if seq >= seqs[-1]:
            return math.exp(self._at_seq(seqs[-1], lt))
        hi = next(i for i, s in enumerate(seqs) if s >= seq)
        lo_s, hi_s = seqs[hi - 1], seqs[hi]
        w = (math.log(seq) - math.log(lo_s)) / (math.log(hi_s) - math.log(lo_s))
        return math.exp((1 - w) * self._at_seq(lo_s, lt) + w * self._at_seq(hi_s, lt))


def _nearest_log_mean(shapes_log: np.ndarray, values_log: np.ndarray, m: int, n: int, k: int, nearest: int = 3) -> np.ndarray:
    """Geometric mean of calibrated values at the ``nearest`` points closest to (m, n, k) in log
    space, weighted by inverse squared distance. ``shapes_log``: rows of log(m), log(n), log(k);
    ``values_log``: the log of one or more values per row (one column each)."""
    d2 = ((shapes_log - np.log([m, n, k])) ** 2).sum(axis=1)
    pick = np.argsort(d2)[:nearest]
    w = 1.0 / (d2[pick] + 1e-3)
    return np.exp((w[:, None] * values_log[pick]).sum(axis=0) / w.sum())


@dataclass(frozen=True)
class ConvKey:
    """What picks a dense convolution's cuDNN kernel besides its GEMM size: the kind of
    convolution (``1d``, ``2d``, ``3d``, ``transposed``), the filter taps, whether it is strided, and
    whether a pixel's input channels fill whole 16-byte vectors (``in_channels x itemsize % 16``:
    3-channel images and odd widths do not, and run on slower kernels, as misaligned GEMMs do), and
    for a half-precision NCHW 1x1 of stride 1 whether its output plane does (``conv_plane_aligned``)
    and, over a plane of at most 16x16, whether its output channels are a multiple of 64
    (``conv_out_aligned``), and whether a strided 2-d one is channels-last (``conv_channels_last_key``):
    cuDNN runs NHWC kernels on it directly, where its NCHW twin pays layout transforms around the same
    kernels; and whether an NCHW 1x1 of stride 1 runs over a large plane whose bytes are not a multiple
    of 16 (``conv_narrow_plane``); and whether it is a patch filter (``conv_patch``: a wide filter of its own
    stride, which reduces long rows into a small output in few tiles). A channels-last convolution of stride 1 is keyed as NCHW: its NCHW twin's points price
    it closely enough (docs/design.md, "The model of time", dense convolutions, has the evidence)."""

    kind: str
    taps: int
    strided: bool
    aligned: bool
    plane_aligned: bool = True
    out_aligned: bool = True
    channels_last: bool = False
    narrow_plane: bool = False
    patch: bool = False


# the narrowest patch filter (``conv_patch``): ViT's 16x16 and 32x32 embeddings, the 8x8 spatial
# reductions of pyramid vision transformers; a 2x2 or 4x4 downsampler of its own stride prices as the
# 3x3 strided points do
PATCH_MIN = 8


def conv_patch(kernel: Sequence[int], stride: Sequence[int]) -> bool:
    """Whether a convolution's filter is a patch filter: as wide as its stride in every spatial
    dimension (windows that do not overlap) and at least ``PATCH_MIN`` wide."""
    return len(kernel) == len(stride) and all(int(k) == int(s) >= PATCH_MIN for k, s in zip(kernel, stride))


def conv_patch_key(kind: str, forward: bool, kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int] = (1,)) -> bool:
    """Whether a convolution (or a calibrated point) takes the patch key: a 2-d forward of unit
    dilation with a patch filter (``conv_patch``); a gradient's stand-in runs other kernels."""
    return kind == "2d" and forward and all(int(d) == 1 for d in dilation) and conv_patch(kernel, stride)


def conv_aligned(in_channels: int, itemsize: int) -> bool:
    """A pixel's input channels fill whole 16-byte vectors."""
    return in_channels * itemsize % 16 == 0


def _nchw_1x1(kind: str, taps: int, strided: bool, channels_last: bool) -> bool:
    """An NCHW 2-d 1x1 convolution of stride 1: a GEMM whose rows are its output plane."""
    return kind == "2d" and taps == 1 and not strided and not channels_last


def _plane_filled(out_positions: int, itemsize: int) -> bool:
    """The output plane fills whole 16-byte vectors."""
    return out_positions * itemsize % 16 == 0


def _half_nchw_1x1(kind: str, taps: int, strided: bool, itemsize: int, channels_last: bool) -> bool:
    """A half-precision NCHW 2-d 1x1 convolution of stride 1: the convolutions whose kernel cuDNN
    picks by their GEMM's alignment (``conv_plane_aligned``, ``conv_out_aligned``)."""
    return _nchw_1x1(kind, taps, strided, channels_last) and itemsize == 2


def conv_plane_aligned(kind: str, taps: int, strided: bool, out_positions: int, itemsize: int, channels_last: bool = False) -> bool:
    """An NCHW 1x1 convolution of stride 1 is a batched GEMM whose leading dimension is the output
    plane (H x W positions); in half precision cuDNN hands one whose plane fills whole 16-byte
    vectors to cuBLAS and runs the others (a 14x14 or 7x7 plane) on its own kernels (float32 runs
    its own GEMM kernels either way). True for every other convolution, a channels-last one too
    (its GEMM's rows are its channels)."""
    return not _half_nchw_1x1(kind, taps, strided, itemsize, channels_last) or _plane_filled(out_positions, itemsize)


# cuDNN's tiles over a half-precision 1x1 convolution's output channels, and the largest output
# plane (positions) it runs on its own kernels whatever the plane's alignment
OUT_CHANNEL_TILE = 64
OWN_KERNEL_PLANE_MAX = 16 * 16


def conv_narrow_plane(kind: str, taps: int, strided: bool, out_positions: int, itemsize: int, channels_last: bool = False) -> bool:
    """Whether an NCHW 2-d 1x1 convolution of stride 1 runs over more than ``OWN_KERNEL_PLANE_MAX``
    positions whose bytes are not a multiple of 16 (Inception's 35x35 and 17x17, SqueezeNet's 55x55
    and 27x27). The plane is the rows of its GEMM: cuDNN leaves cuBLAS's vectorized kernels for
    CUTLASS GEMMs of narrower loads (or NHWC kernels behind layout transforms), in half precision and
    float32 alike, slower than an aligned neighbour by less than a misaligned matmul is
    (``benchmarks/conv1x1_kernels.py --planes``); calibration times such points
    (``calibrate.conv.GPU_NARROW_PLANE_SHAPES``)."""
    return _nchw_1x1(kind, taps, strided, channels_last) and out_positions > OWN_KERNEL_PLANE_MAX and not _plane_filled(out_positions, itemsize)


def conv_out_aligned(kind: str, taps: int, strided: bool, out_channels: int, out_positions: int, itemsize: int,
                     channels_last: bool = False) -> bool:
    """Whether an NCHW half-precision 1x1 convolution of stride 1 over a small output plane (at most
    ``OWN_KERNEL_PLANE_MAX`` positions) has a whole number of ``OUT_CHANNEL_TILE``-channel tiles.
    cuDNN's heuristics send one that has not to other kernels than its neighbours: over 14x14 and
    16x16 planes its legacy SIMT ``implicit_convolve_sgemm``, several times slower than the
    channels-last or aligned GEMM, over 7x7 NHWC kernels behind layout transforms; over 28x28 and
    larger planes cuBLAS runs them (docs/design.md). True for every other convolution."""
    if not _half_nchw_1x1(kind, taps, strided, itemsize, channels_last) or out_positions > OWN_KERNEL_PLANE_MAX:
        return True
    return out_channels % OUT_CHANNEL_TILE == 0


def conv_channels_last_key(kind: str, strided: bool, channels_last: bool) -> bool:
    """Whether a convolution prices from channels-last points: a strided 2-d one in channels-last."""
    return kind == "2d" and strided and channels_last


def conv_kind(dims: int, transposed: bool) -> str:
    return "transposed" if transposed else f"{dims}d"


def _keyed_rows(rows: list, key: ConvKey) -> list:
    """The calibrated rows (``(ConvKey, values)``) that share the convolution's keys, most important
    first, each narrowing only when some rows match: its kind (else the 2-d points), a narrow plane
    (``conv_narrow_plane``), its output channels' alignment, its input alignment, the filter taps nearest in log, its stride (strided or
    not), its layout (a profile without channels-last points prices channels-last convolutions on
    NCHW ones), its plane's alignment."""
    same = [r for r in rows if r[0].kind == key.kind] or [r for r in rows if r[0].kind == "2d"] or rows
    # a narrow plane's GEMMs are their own class (a profile without such points prices it as before)
    same = [r for r in same if r[0].narrow_plane == key.narrow_plane] or same
    # before the input's alignment: the legacy kernel runs whatever the input channels (an odd 117 too)
    same = [r for r in same if r[0].out_aligned == key.out_aligned] or same
    same = [r for r in same if r[0].aligned == key.aligned] or same
    # a patch filter's few long-row tiles are their own class, and no other filter reads their points
    same = [r for r in same if r[0].patch == key.patch] or same
    # a 1x1 filter is a plain GEMM (cuBLAS runs many): a filter of several taps, which cuDNN's implicit
    # GEMMs gather, takes the points of other multi-tap filters where there are any
    gathered = [r for r in same if (r[0].taps > 1) == (key.taps > 1)]
    same = gathered or same
    gap = {r[0].taps: abs(math.log(r[0].taps / key.taps)) for r in same}
    nearest = min(gap.values())
    same = [r for r in same if gap[r[0].taps] == nearest]
    same = [r for r in same if r[0].strided == key.strided] or same
    # after taps and stride: a channels-last stem or patch filter without points of its own takes
    # its NCHW twin's, not the channels-last points of other filters
    same = [r for r in same if r[0].channels_last == key.channels_last] or same
    return [r for r in same if r[0].plane_aligned == key.plane_aligned] or same


# a point whose kernels' summed time exceeds its call's by more than this ran otherwise when profiled
BUSY_SHARE_MAX = 1.05


def _busy_share(point) -> float:
    """The share of a calibrated point's call time its kernels run (``ConvPoint.kernels_s``), at
    most 1; NaN where not measured or not like the timed call (``BUSY_SHARE_MAX``)."""
    if not point.kernels_s or point.kernels_s > BUSY_SHARE_MAX * point.time.median_s:
        return math.nan
    return min(point.kernels_s / point.time.median_s, 1.0)


class ConvModel:
    """How much slower (>1) or faster (<1) than its roofline a dense convolution runs, from calibrated
    convolutions of one dtype: the roofline being the larger of its implicit GEMM on the matmul
    curve and its compulsory bytes at the calibrated bandwidth.

    Each calibrated point gives a ratio (measured time / that roofline). A convolution takes the
    geometric mean of the ratios of the (up to) three points nearest in log(m), log(n), log(k),
    weighted by inverse squared distance, among the points that share its kernel's keys
    (``ConvKey``, ``_keyed_rows``) on a keyed curve; on an older curve among points with its filter
    size (all points when none has it). Against the roofline, not the GEMM alone, a ratio learnt on
    a memory-bound point does not inflate the GEMM of a compute-bound one, nor the other way round."""

    def __init__(self, curve: ConvCurve, matmul: MatmulModel, overhead_s: float = 0.0, bandwidth: "BandwidthModel | None" = None):
        self.curve = curve
        self.keyed = curve.keyed
        itemsize = 4 if curve.dtype == "float32" else 2
        rows, keyed_rows = [], []
        for p in curve.points:
            x_shape, w_shape, out_shape = p.shapes()
            _, m, n, k = conv_gemm(x_shape, w_shape, out_shape, transposed=p.transposed)
            roof = matmul.time_s(m, n, k)
            if bandwidth is not None:
                nbytes = itemsize * (math.prod(x_shape) + math.prod(w_shape) + math.prod(out_shape))
                roof = max(roof, nbytes / bandwidth.bytes_per_s(nbytes, "copy"))
            ratio = _work_time(p.time.median_s, overhead_s) / roof
            taps = p.taps
            values = (math.log(m), math.log(n), math.log(k), math.log(ratio), math.log(_busy_share(p)))
            if self.keyed:
                kind = conv_kind(p.dims, p.transposed)
                last = p.layout == "channels_last"
                plane = conv_plane_aligned(kind, taps, p.strided, p.out_positions, itemsize, channels_last=last)
                out = conv_out_aligned(kind, taps, p.strided, p.out_channels, p.out_positions, itemsize, channels_last=last)
                # a point keeps its own layout: a channels-last point of stride 1 prices no convolution
                # (those are keyed NCHW, ``conv_channels_last_key``) rather than blend into the NCHW ones
                narrow = conv_narrow_plane(kind, taps, p.strided, p.out_positions, itemsize, channels_last=last)
                patch = conv_patch_key(kind, p.gradient == "none", [p.kernel] * p.dims, [p.stride] * p.dims)
                keyed_rows.append((ConvKey(kind, taps, p.strided, conv_aligned(p.in_channels, itemsize), plane, out, last, narrow, patch), values))
            else:
                rows.append((taps, *values))
        self._rows = np.array(rows, dtype=np.float64)
        self._keyed_rows = keyed_rows

    def _rows_for(self, taps: int, key: ConvKey | None) -> np.ndarray:
        """The points a convolution prices from: log(m), log(n), log(k), log(ratio), log(busy share)."""
        if self.keyed:
            return np.array([values for _, values in _keyed_rows(self._keyed_rows, key)], dtype=np.float64)
        rows = self._rows
        same = rows[rows[:, 0] == taps]
        return (same if len(same) else rows)[:, 1:]

    def ratio(self, m: int, n: int, k: int, taps: int, key: ConvKey | None = None) -> float:
        """The ratio at a convolution's implicit GEMM; ``key`` is used by a keyed curve (required there)."""
        rows = self._rows_for(taps, key)
        return float(_nearest_log_mean(rows[:, 0:3], rows[:, 3:4], m, n, k)[0])

    def busy_share(self, m: int, n: int, k: int, taps: int, key: ConvKey | None = None) -> float:
        """The share of a call's time its kernels run, from the nearest of the same points as ``ratio``
        that measured it (1 where none did): cuDNN runs an NCHW convolution as several kernels
        (layout transforms around its GEMM), and the call's time holds the gaps between them; the
        profiler's per-op time does not."""
        rows = self._rows_for(taps, key)
        rows = rows[np.isfinite(rows[:, 4])]
        return float(_nearest_log_mean(rows[:, 0:3], rows[:, 4:5], m, n, k)[0]) if len(rows) else 1.0


PASSES = ("none", "input", "weight")


def onednn_elements(gradient: str, x_shape, out_shape, stride: int) -> int:
    """Elements of the NCHW tensors oneDNN reorders to its blocked layout and back (or copies) for
    one pass of a dense 2-d convolution on the CPU (ONEDNN_VERBOSE shows them):

    - forward: the output back to NCHW, and the input into the blocked layout unless it has fewer
      than 16 channels (oneDNN's direct kernel reads such a stem's NCHW input as it is);
    - input gradient: the output's gradient in, the input's gradient out; at a stride > 1 oneDNN
      runs a channels-last kernel whose input gradient is copied within oneDNN and then by ATen
      back to NCHW: two more passes over the input's elements;
    - weight gradient: the input and the output's gradient in (the weight is small)."""
    x, y = math.prod(x_shape), math.prod(out_shape)
    if gradient == "none":
        return y + (x if x_shape[1] >= 16 else 0)
    if gradient == "input":
        return y + x + (2 * x if stride > 1 else 0)
    return x + y


class CpuConvPassModel:
    """oneDNN's dense 2-d NCHW float32 convolutions on the CPU, each pass (forward, input gradient,
    weight gradient) priced as its efficiency times the implicit GEMM's time on the matmul curve
    plus a time per element of the tensors it reorders (``onednn_elements``). The three
    efficiencies and the one rate are fit (non-negative least squares on relative error) to the
    calibrated points of every pass; a stem's input gradient (fewer than 16 input channels, which
    training rarely asks for) is left out of the fit."""

    def __init__(self, curve: ConvCurve, matmul: MatmulModel, overhead_s: float = 0.0):
        from scipy.optimize import nnls

        rows, targets = [], []
        for p in curve.points:
            if p.dims != 2 or p.transposed or (p.gradient == "input" and p.in_channels < 16):
                continue
            x_shape, w_shape, out_shape = p.shapes()
            _, m, n, k = conv_gemm(x_shape, w_shape, out_shape, transposed=False)
            t = _work_time(p.time.median_s, overhead_s)
            row = [0.0, 0.0, 0.0, float(onednn_elements(p.gradient, x_shape, out_shape, p.stride))]
            row[PASSES.index(p.gradient)] = matmul.time_s(m, n, k)
            rows.append([v / t for v in row])
            targets.append(1.0)
        coef = nnls(np.array(rows), np.array(targets))[0] if rows else np.zeros(4)
        self.efficiency = dict(zip(PASSES, (float(c) for c in coef[:3])))
        self.element_s = float(coef[3])
        self.ok = bool(rows) and all(v > 0 for v in self.efficiency.values())

    def time_s(self, gradient: str, gemm_s: float, x_shape, out_shape, stride: int) -> float:
        """One pass's time, given its implicit GEMM's time on the matmul curve."""
        return self.efficiency[gradient] * gemm_s + self.element_s * onednn_elements(gradient, x_shape, out_shape, stride)


def _rnn_host_factor(curves: list[RnnCurve], overheads: Overheads) -> float:
    """What puts the calibrated RNN layers at the host speed these overheads stand for (as
    calibrated, or times a measured host scale): the host-speed index those overheads imply over
    the median index timed beside the RNN stage. cuDNN launches every step from the host. The
    stage's median, not each point's own index: a point's own index is one short sample, noisier
    than the layer it stands beside (``benchmarks/calibration_sweep.py --compare`` prints how two
    calibrations' layers agree). 1.0 for profiles without the index."""
    stage = [p.host_index_s for c in curves for p in c.points if p.host_index_s]
    if not stage or not overheads.dispatch_by_op_s:
        return 1.0
    return calibrated_index_s(overheads) / statistics.median(stage)


class RnnModel:
    """Time of one fused RNN layer (one direction) from calibrated layers of one dtype.

    Each calibrated point gives a fixed cost per call and a ratio (time per step / matmul-curve
    time of the step's gate GEMM, batch x gates*hidden x (input + hidden)). A layer takes the
    geometric means of both over the (up to) three points nearest in log(m), log(n), log(k),
    weighted by inverse squared distance, among points of its cell type (all points when none is).
    cuDNN launches every step from the host, so every point's times are first multiplied by
    ``host_factor`` (``_rnn_host_factor``: the calibration's RNN stage put at the profile's host speed).
    A synchronized curve's calls each hold their own dispatch and a synchronize, which a fused op of
    several layers makes once and the timeline prices apart: ``call_s`` (their host time at the
    profile's speed) comes off each layer."""

    def __init__(self, curve: RnnCurve, matmul: MatmulModel, overhead_s: float = 0.0, host_factor: float = 1.0, call_s: float = 0.0):
        self.matmul = matmul
        self.call_s = call_s if curve.synchronized else 0.0
        rows = []
        # a point whose shorter run was not faster (a first-call outlier that survived calibration's
        # re-measure) says nothing about the step; all points are kept only if every one is like that
        usable = [p for p in curve.points if p.time_long.median_s > p.time_short.median_s] or curve.points
        host = host_factor  # the stage at the profile's host speed (_rnn_host_factor)
        for p in usable:
            m, n, k = p.batch, GATES[p.kind] * p.hidden, p.input_size + p.hidden
            ratio = host * p.step_s / matmul.time_s(m, n, k)
            fixed = max(host * p.fixed_s - overhead_s, 1e-9)
            rows.append((p.kind, (math.log(m), math.log(n), math.log(k), math.log(ratio), math.log(fixed))))
        # per cell type, and all points together for a type that was not calibrated
        self._tables = {kind: np.array([r for c, r in rows if c == kind]) for kind in {c for c, _ in rows}}
        self._all = np.array([r for _, r in rows])

    def time_s(self, kind: str, steps: int, m: int, n: int, k: int) -> float:
        """One layer of ``steps`` steps whose gate GEMM is (m, n, k)."""
        table = self._tables.get(kind, self._all)
        ratio, fixed = _nearest_log_mean(table[:, 0:3], table[:, 3:5], m, n, k)
        return float(fixed + steps * ratio * self.matmul.time_s(m, n, k))

    def stack_s(self, kind: str, layers: int, steps: int, m: int, n: int, k: int) -> float:
        """A whole fused op of ``layers`` (layer, direction) groups, each as ``time_s`` less the call's
        own dispatch and synchronize a synchronized curve's layer holds (``call_s``; a layer keeps at
        least half its time should a call's host cost ever rival a layer's launches)."""
        one = self.time_s(kind, steps, m, n, k)
        return layers * max(one - self.call_s, 0.5 * one)


def transfer_s(curve: TransferCurve, nbytes: int) -> float:
    """Time of one host<->device copy of ``nbytes``, read off the calibrated points."""
    points = sorted(curve.points, key=lambda p: p.bytes)
    sizes = [p.bytes for p in points]
    times = [p.time.median_s for p in points]
    if nbytes <= sizes[0]:
        return times[0]
    if nbytes >= sizes[-1]:
        return times[-1] * nbytes / sizes[-1]
    return float(np.interp(nbytes, sizes, times))
