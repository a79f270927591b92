"""Calibrated curves as functions: achieved time or rate at any op's own size.

Peaks alone overestimate small ops by orders of magnitude (a 256^3 matmul runs far below the chip's
peak, a 1 MB copy far below its bandwidth), so prediction reads every ceiling at the op's size:

- matmul: the measured time on the (m, n, k) grid, interpolated linearly in log(time) over
  log(m), log(n), log(k); beyond the grid the rate at the nearest edge is kept (time scales with
  FLOPs), which the peak probes show is where large GEMMs sit;
- bandwidth and pointwise: rate over working-set size, interpolated in log-log, flat beyond the ends;
- convolution: the implicit GEMM's matmul-curve time times the ratio measured at the nearest
  calibrated convolutions of the same filter size;
- host<->device copies: the measured times interpolated linearly in bytes between calibrated
  sizes (a pageable copy into fresh memory jumps where the allocator starts handing out new
  pages), the smallest point's time below them, the largest point's rate beyond;
- fused RNN layer: a fixed cost per call plus, per step, the gate GEMM's matmul-curve time times
  the step-to-GEMM ratio measured at the nearest calibrated layers of the same cell type.
"""

from __future__ import annotations

import math
import statistics
from functools import cached_property

import numpy as np
from scipy.interpolate import RegularGridInterpolator

from roofline.profile import (
    BandwidthCurve,
    ConvCurve,
    CpuPart,
    GpuPart,
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

    More work never takes less time; a grid point that does (one slow sample on a busy host: one
    16-thread CPU profile had 8 ms at a 1x512x512 product next to 0.1 ms at 1x1024x1024) would
    otherwise poison every prediction interpolated near it. A suffix minimum along each axis keeps
    every genuine point and removes such spikes. The bandwidth and op-family curves (one axis, in
    increasing size; times or log times alike) are clipped the same way: run 32's host-CPU read pass
    over 256 KB took 2.1 ms, against 17 us over 1 MB, and priced a 256 x 256 CPU GEMV at 2 ms."""
    out = log_t.copy()
    for axis in range(out.ndim):
        flipped = np.flip(out, axis=axis)
        out = np.flip(np.minimum.accumulate(flipped, axis=axis), axis=axis)
    return out


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
        log_t = _monotone(log_t)
        axes = (np.log(self.grid),) * 3
        self._interp = RegularGridInterpolator(axes, log_t, method="linear") if len(grid) > 1 else None
        self._single = math.exp(log_t.flat[0]) if len(grid) == 1 else None
        self.peak_flop_per_s = curve.peak_flop_per_s

    def time_s(self, m: int, n: int, k: int) -> float:
        lo, hi = self.grid[0], self.grid[-1]
        mc, nc, kc = (float(min(max(x, lo), hi)) for x in (m, n, k))
        if self._interp is None:
            t = self._single
        else:
            t = math.exp(float(self._interp([[math.log(mc), math.log(nc), math.log(kc)]])[0]))
        # Outside the grid, keep the edge's rate: time scales with the FLOPs ratio.
        scale = (max(m, 1) * max(n, 1) * max(k, 1)) / (mc * nc * kc)
        t *= scale
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
    per calibrated sequence length the rate is interpolated over its own token counts in log-log
    (flat beyond them), then between the two nearest sequence lengths in log space."""

    def __init__(self, curve):
        self.curve = curve
        by_seq: dict[int, list[tuple[float, float]]] = {}
        for p in curve.points:
            by_seq.setdefault(p.seq, []).append((math.log(p.batch_heads * p.seq), math.log(p.flop_per_s)))
        self._seqs = sorted(by_seq)
        self._rows = {s: sorted(by_seq[s]) for s in self._seqs}
        self.peak = max(p.flop_per_s for p in curve.points)

    def _at_seq(self, seq: int, log_tokens: float) -> float:
        row = self._rows[seq]
        return float(np.interp(log_tokens, [t for t, _ in row], [r for _, r in row]))

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


class ConvModel:
    """How much slower (>1) or faster (<1) than its implicit GEMM on the matmul curve a 2-D
    convolution runs, from calibrated convolutions of one dtype.

    Each calibrated point gives a ratio (measured time / matmul-curve time of the same implicit
    GEMM). A convolution takes the geometric mean of the ratios of the (up to) three points nearest
    in log(m), log(n), log(k), weighted by inverse squared distance, among points with its filter
    size (all points when none has it)."""

    def __init__(self, curve: ConvCurve, matmul: MatmulModel, overhead_s: float = 0.0):
        from roofline.costs.conv import conv_gemm

        self.curve = curve
        rows = []
        for p in curve.points:
            x_shape = (p.batch, p.in_channels, p.size, p.size)
            w_shape = (p.out_channels, p.in_channels, p.kernel, p.kernel)
            out_shape = (p.batch, p.out_channels, p.out_size, p.out_size)
            _, m, n, k = conv_gemm(x_shape, w_shape, out_shape, transposed=False)
            ratio = _work_time(p.time.median_s, overhead_s) / matmul.time_s(m, n, k)
            rows.append((p.kernel * p.kernel, math.log(m), math.log(n), math.log(k), math.log(ratio)))
        self._rows = np.array(rows, dtype=np.float64)

    def ratio(self, m: int, n: int, k: int, taps: int) -> float:
        rows = self._rows
        same = rows[rows[:, 0] == taps]
        if len(same):
            rows = same
        return float(_nearest_log_mean(rows[:, 1:4], rows[:, 4:5], m, n, k)[0])


def _rnn_host_factor(curves: list[RnnCurve], overheads: Overheads) -> float:
    """What puts the calibrated RNN layers at the host speed these overheads stand for (as
    calibrated, or times a measured host scale): the host-speed index those overheads imply over
    the median index timed beside the RNN stage. cuDNN launches every step from the host. The
    stage's median, not each point's own index: two back-to-back calibrations (run 37) repeated
    100-step layers within 1.14x (median; max 1.33x) that way, 1.17x / 1.50x raw and 1.33x / 1.58x
    point by point (`benchmarks/calibration_sweep.py --compare` on run 37's two profiles). 1.0 for
    profiles without the index."""
    stage = [p.host_index_s for c in curves for p in c.points if p.host_index_s]
    if not stage or not overheads.dispatch_by_op_s:
        return 1.0
    from roofline.host_speed import calibrated_index_s

    return calibrated_index_s(overheads) / statistics.median(stage)


class RnnModel:
    """Time of one fused RNN layer (one direction) from calibrated layers of one dtype.

    Each calibrated point gives a fixed cost per call and a ratio (time per step / matmul-curve
    time of the step's gate GEMM, batch x gates*hidden x (input + hidden)). A layer takes the
    geometric means of both over the (up to) three points nearest in log(m), log(n), log(k),
    weighted by inverse squared distance, among points of its cell type (all points when none is).
    cuDNN launches every step from the host, so every point's times are first multiplied by
    ``host_factor`` (``_rnn_host_factor``: the calibration's RNN stage put at the profile's host speed)."""

    def __init__(self, curve: RnnCurve, matmul: MatmulModel, overhead_s: float = 0.0, host_factor: float = 1.0):
        from roofline.costs.rnn import GATES

        self.matmul = matmul
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


# Different dispatch kinds (``roofline.predict.dispatch_kind``: the calibrated representative op
# that prices an op's host cost) in calibrate.overhead's interleaved mix of representative ops, as
# captured (tests/test_predict.py checks it against the mix).
INTERLEAVE_MIX_KINDS = 10


def eager_chain_kernel_s(overheads: Overheads) -> float:
    """Eager host cost per kernel of a GEMM + ReLU chain, as prediction prices it: the mean of the
    addmm and relu dispatch, times the interleaving factor of a sequence of 2 dispatch kinds
    (``DeviceModel.interleave_for``). torch.compile's host costs are calibrated as ratios to the
    chain's measured eager cost and stored times this, so that prediction prices compiled and eager
    code on one scale, and both move together when host overheads are re-measured."""
    return (dispatch_s(overheads, "addmm", 2) + dispatch_s(overheads, "relu", 2)) / 2


def dispatch_s(overheads: Overheads, kind: str, distinct_kinds: int | None = None) -> float:
    """Host time to dispatch one op of a representative kind ('add', 'view', 'addmm', ...; the plain
    dispatch cost for a kind not calibrated) in a sequence that interleaves ``distinct_kinds``
    different kinds."""
    stat = overheads.dispatch_by_op_s.get(kind) or overheads.dispatch_s
    return stat.median_s * interleave_for(overheads.interleave_factor, distinct_kinds)


def interleave_for(factor: float, distinct_kinds: int | None) -> float:
    """The interleaving factor for a sequence of ops of ``distinct_kinds`` different dispatch kinds
    (None: the calibrated ``factor``).

    Each dispatch cost is measured on one op repeated, which is a factor of 1 by construction;
    the calibrated factor is that of the mix of ``INTERLEAVE_MIX_KINDS`` kinds (elementwise, views,
    cuBLAS, cuDNN convolution, batch and layer norm, reductions, softmax, cat: different code
    paths through the dispatcher and the libraries). Between the two, the factor is interpolated
    linearly in the number of kinds. Kinds, not aten ops: 16 different elementwise ops share one
    TensorIterator path, and a chain of them issued at 7.1 us per op against 6.7-7.8 us for add,
    sin and a scalar mul each repeated (run 28, benchmarks/host_overhead_probe.py), where pricing
    its 14 aten ops at the mix's factor over-predicted the chain by 20-40% in every run; a Linear
    + ReLU stack ran at 0.8-1.0x its dispatch sum (runs 21-22)."""
    if distinct_kinds is None:
        return factor
    share = min(max(distinct_kinds - 1, 0) / (INTERLEAVE_MIX_KINDS - 1), 1.0)
    return 1.0 + (factor - 1.0) * share


class DeviceModel:
    """Everything prediction needs from one part (GPU or CPU) of a profile."""

    def __init__(self, part: GpuPart | CpuPart, kind: str):
        self.part = part
        self.kind = kind  # "cuda" or "cpu"
        m = part.measurements
        self.overheads = m.overheads
        # CPU timings are wall times of whole calls; GPU timings are device time only.
        included = m.overheads.dispatch_s.median_s if kind == "cpu" else 0.0
        self.matmul = {c.dtype: MatmulModel(c, included) for c in m.matmul}
        self.bandwidth = BandwidthModel(m.bandwidth, included)
        self.family = {(c.op, c.dtype): PointwiseModel(c, included) for c in m.pointwise}
        self._family_names = {op for op, _ in self.family}
        self.attention = {(c.dtype, c.head_dim, c.causal): AttentionModel(c) for c in m.attention}
        self.conv = {
            (c.dtype, c.tf32): ConvModel(c, self.matmul_model("tf32" if c.tf32 else c.dtype), included) for c in m.conv
        }
        host = _rnn_host_factor(m.rnn, m.overheads)
        self.rnn = {c.dtype: RnnModel(c, self.matmul_model(c.dtype), included, host) for c in m.rnn}

    @property
    def name(self) -> str:
        ident = self.part.identity
        return ident.name if hasattr(ident, "name") else ident.model

    @cached_property
    def vector_flop_per_s(self) -> float:
        """Ceiling for non-matmul arithmetic: the datasheet fp32 rate, else the measured fp32 matmul peak."""
        theo = self.part.peaks.flop_per_s.get("float32")
        measured = self.matmul["float32"].peak_flop_per_s if "float32" in self.matmul else None
        return theo or measured or 1e12

    def matmul_model(self, dtype_name: str) -> MatmulModel:
        """The curve for a dtype, falling back to the nearest measured one (bf16<->fp16, tf32->fp32)."""
        for candidate in (dtype_name, {**_TWIN, "tf32": "float32"}.get(dtype_name), "float32"):
            if candidate in self.matmul:
                return self.matmul[candidate]
        return next(iter(self.matmul.values()))

    def has_family(self, family: str) -> bool:
        """Whether the profile calibrated this op family in any dtype (older profiles lack some)."""
        return family in self._family_names

    def family_bytes_per_s(self, family: str | None, nbytes: int, dtype_name: str = "float32") -> float | None:
        """Calibrated bytes/s of an op family's kernel at this size and dtype (fp16 and bf16 stand
        for each other; float32 for any dtype without a curve), or None if not calibrated."""
        for dtype in (dtype_name, _TWIN.get(dtype_name), "float32"):
            model = self.family.get((family, dtype))
            if model:
                return model.bytes_per_s(max(nbytes, 1))
        return None

    def attention_model(self, dtype_name: str, head_dim: int, causal: bool) -> AttentionModel | None:
        """The attention curve for this dtype and mask at the nearest calibrated head size."""
        alike = {dtype_name, _TWIN.get(dtype_name, dtype_name)}
        options = [k for k in self.attention if k[0] in alike and k[2] == causal] or [k for k in self.attention if k[0] in alike]
        if not options:
            return None
        best = min(options, key=lambda k: (abs(math.log(k[1] / max(head_dim, 1))), k[2] != causal))
        return self.attention[best]

    def conv_model(self, dtype_name: str, tf32: bool) -> ConvModel | None:
        """The convolution ratios for this dtype (fp16 and bf16 stand for each other), or None."""
        if dtype_name == "float32":
            return self.conv.get(("float32", tf32))
        return self.conv.get((dtype_name, False)) or self.conv.get((_TWIN.get(dtype_name), False))

    def rnn_model(self, dtype_name: str) -> RnnModel | None:
        """The fused-RNN layer times for this dtype (fp16 and bf16 stand for each other), or None."""
        return self.rnn.get(dtype_name) or self.rnn.get(_TWIN.get(dtype_name))

    @cached_property
    def kernel_floor_s(self) -> float:
        """The least time one kernel occupies the device (GPU: a kernel inside a CUDA graph)."""
        k = self.overheads.kernel_min_s
        return k.median_s if k else 0.0

    def interleave_for(self, distinct_kinds: int | None) -> float:
        """The interleaving factor for a sequence of this many different aten ops (module ``interleave_for``)."""
        return interleave_for(self.overheads.interleave_factor, distinct_kinds)

    def dispatch_s(self, kind: str, distinct_kinds: int | None = None) -> float:
        """Host time to dispatch one op of this kind here (module ``dispatch_s``)."""
        return dispatch_s(self.overheads, kind, distinct_kinds)
