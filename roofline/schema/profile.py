"""The device profile: one machine's measured ceilings, as calibrated curves.

One schema, used by ``calibrate`` (which writes it) and by prediction (which reads it). A profile
describes one machine: its host CPU and, where there is one, its GPU. Every measured quantity keeps
its median, spread (IQR) and sample count (``Stat``); rates are derived from those medians and are
checked against them on load, so a hand-edited or corrupt file is rejected rather than believed.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_serializer, model_validator

SCHEMA_VERSION = 1
PROFILE_KIND = "roofline-device-profile"

# Sanity bounds: far outside anything real, tight enough to catch unit mistakes (ms vs s, GB vs B).
MAX_FLOP_PER_S = 1e17  # 100 PFLOP/s
MAX_BYTES_PER_S = 1e14  # 100 TB/s
MAX_TIME_S = 3600.0

MatmulDtype = Literal["float32", "tf32", "bfloat16", "float16"]
BandwidthKind = Literal["copy", "read", "write"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, validate_assignment=True)


class Stat(_Strict):
    """Summary of repeated timings of one measurement, in seconds."""

    median_s: float = Field(gt=0, le=MAX_TIME_S, description="Median of the repetitions, seconds.")
    iqr_s: float = Field(ge=0, le=MAX_TIME_S, description="Inter-quartile range (q75 - q25), seconds.")
    samples: int = Field(ge=1, description="Number of timed repetitions the median was taken over.")

    @property
    def relative_spread(self) -> float:
        return self.iqr_s / self.median_s


def _median_rate_beyond(points, cache_bytes: int | None, size_of, at_least: int = 3) -> float:
    """Median ``bytes_per_s`` over points whose size is at least twice the cache, or over the
    ``at_least`` largest points when fewer qualify: one sample is too noisy to stand for DRAM."""
    limit = 2 * cache_bytes if cache_bytes else 0
    ordered = sorted(points, key=size_of)
    big = [p for p in ordered if size_of(p) >= limit]
    if len(big) < at_least:
        big = ordered[-at_least:]
    big = sorted(p.bytes_per_s for p in big)
    mid = len(big) // 2
    return big[mid] if len(big) % 2 else 0.5 * (big[mid - 1] + big[mid])


def _require_sorted(points, size_of, message: str):
    """Curves are interpolated over size: their points must come in increasing size."""
    sizes = [size_of(p) for p in points]
    if sizes != sorted(sizes):
        raise ValueError(message)
    return points


def _close(a: float, b: float, rel: float = 1e-3) -> bool:
    return math.isclose(a, b, rel_tol=rel)


class MatmulPoint(_Strict):
    """One (m, n, k) product: time and the FLOP rate it achieved (2*m*n*k / median time)."""

    m: int = Field(ge=1, description="Rows of the output.")
    n: int = Field(ge=1, description="Columns of the output.")
    k: int = Field(ge=1, description="Reduction length.")
    time: Stat = Field(description="Time of one product.")
    flop_per_s: float = Field(gt=0, le=MAX_FLOP_PER_S, description="2*m*n*k / time.median_s, FLOP/s.")

    @model_validator(mode="after")
    def _rate_matches_time(self):
        expected = 2 * self.m * self.n * self.k / self.time.median_s
        if not _close(expected, self.flop_per_s):
            raise ValueError(f"flop_per_s={self.flop_per_s:.4g} does not match 2mnk/median={expected:.4g}")
        return self


class MatmulCurve(_Strict):
    """Achieved matmul FLOP/s over a grid of shapes, for one dtype."""

    dtype: MatmulDtype = Field(description="Operand dtype; tf32 is float32 with TF32 tensor cores enabled.")
    grid: list[int] = Field(min_length=1, description="Sizes measured along each of m, n and k; points cover the full cube.")
    points: list[MatmulPoint] = Field(min_length=1, description="One point per (m, n, k) in grid x grid x grid.")
    peak_probes: list[MatmulPoint] = Field(
        default_factory=list, description="Extra large shapes measured to find the peak; not part of the cube."
    )
    derived_from: MatmulDtype | None = Field(
        default=None,
        description="When set, the cube is that dtype's, each time scaled by derived_ratio, except at check_points, "
        "which are this dtype's own measurements: at them the two dtypes ran alike (calibrate.matmul.twin_curve).",
    )
    derived_ratio: float | None = Field(default=None, gt=0, description="This dtype's time over derived_from's, the median at the check points.")
    check_points: list[MatmulPoint] = Field(default_factory=list, description="The shapes measured in this dtype to derive the cube.")

    @model_validator(mode="after")
    def _cube_complete(self):
        have = {(p.m, p.n, p.k) for p in self.points}
        missing = [(m, n, k) for m in self.grid for n in self.grid for k in self.grid if (m, n, k) not in have]
        if missing:
            raise ValueError(f"matmul grid is missing {len(missing)} points, e.g. {missing[0]}")
        grid = set(self.grid)
        stray = [(p.m, p.n, p.k) for p in self.points if not {p.m, p.n, p.k} <= grid]
        if stray:
            raise ValueError(f"matmul point {stray[0]} is off the grid {sorted(grid)}")
        return self

    @property
    def peak_flop_per_s(self) -> float:
        return max(p.flop_per_s for p in [*self.points, *self.peak_probes])


class BandwidthPoint(_Strict):
    """One working-set size: time of one pass and the rate in bytes moved (read + written) per second."""

    bytes: int = Field(ge=1, description="Bytes moved by one pass (read + written).")
    working_set_bytes: int = Field(ge=1, description="Distinct bytes touched (the buffer sizes).")
    time: Stat = Field(description="Time of one pass.")
    bytes_per_s: float = Field(gt=0, le=MAX_BYTES_PER_S, description="bytes / time.median_s, B/s.")

    @model_validator(mode="after")
    def _rate_matches_time(self):
        expected = self.bytes / self.time.median_s
        if not _close(expected, self.bytes_per_s):
            raise ValueError(f"bytes_per_s={self.bytes_per_s:.4g} does not match bytes/median={expected:.4g}")
        return self


class BandwidthCurve(_Strict):
    """Memory bandwidth over working-set size for one access pattern."""

    kind: BandwidthKind = Field(description="copy: read one buffer, write another; read: a full reduction; write: a fill.")
    dtype: str = Field(default="float32", description="Element dtype of the buffers.")
    points: list[BandwidthPoint] = Field(min_length=1, description="Points in increasing working-set size.")

    @field_validator("points")
    @classmethod
    def _sorted(cls, points):
        return _require_sorted(points, lambda p: p.working_set_bytes, "bandwidth points must be sorted by working_set_bytes")

    @property
    def peak_bytes_per_s(self) -> float:
        return max(p.bytes_per_s for p in self.points)

    def dram_bytes_per_s(self, cache_bytes: int | None) -> float:
        """Median rate over working sets at least twice the last-level cache: the DRAM ceiling.

        The median of several large sizes, not the best one, so that one lucky or unlucky point on a
        shared host does not move the figure between calibrations."""
        return _median_rate_beyond(self.points, cache_bytes, lambda p: p.working_set_bytes)


class PointwisePoint(_Strict):
    """One elementwise op over ``elements`` values: time, elements/s and bytes/s (read + written)."""

    elements: int = Field(ge=1, description="Elements processed by one call.")
    bytes: int = Field(ge=1, description="Bytes moved by one call (input read + output written).")
    time: Stat = Field(description="Time of one call.")
    elements_per_s: float = Field(gt=0, description="elements / time.median_s.")
    bytes_per_s: float = Field(gt=0, le=MAX_BYTES_PER_S, description="bytes / time.median_s, B/s.")

    @model_validator(mode="after")
    def _rates_match_time(self):
        if not _close(self.elements / self.time.median_s, self.elements_per_s):
            raise ValueError("elements_per_s does not match elements/median")
        if not _close(self.bytes / self.time.median_s, self.bytes_per_s):
            raise ValueError("bytes_per_s does not match bytes/median")
        return self


class PointwiseCurve(_Strict):
    """Throughput of one elementwise op (a transcendental such as sin) over tensor size."""

    op: str = Field(description="The op measured, e.g. 'sin'.")
    dtype: str = Field(description="Element dtype.")
    points: list[PointwisePoint] = Field(min_length=1, description="Points in increasing size.")

    @field_validator("points")
    @classmethod
    def _sorted(cls, points):
        return _require_sorted(points, lambda p: p.bytes, "pointwise points must be sorted by size")

    @property
    def peak_bytes_per_s(self) -> float:
        return max(p.bytes_per_s for p in self.points)

    def dram_bytes_per_s(self, cache_bytes: int | None) -> float:
        """Median rate over sizes whose input and output exceed twice the cache: DRAM-bound throughput."""
        return _median_rate_beyond(self.points, cache_bytes, lambda p: p.bytes)


class AttentionPoint(_Strict):
    """One fused scaled-dot-product attention forward: batch x heads sequences of ``seq`` tokens."""

    batch_heads: int = Field(ge=1, description="Batch size times query heads.")
    seq: int = Field(ge=1, description="Query and key length.")
    time: Stat = Field(description="Time of one call.")
    flop_per_s: float = Field(gt=0, le=MAX_FLOP_PER_S, description="Dense FLOPs (4 x BH x seq^2 x head_dim, as flop_counter counts) / median time.")


class AttentionCurve(_Strict):
    """Achieved SDPA throughput over sequence length and token count, for one dtype, head size and mask."""

    dtype: str = Field(description="Element dtype of q, k, v.")
    head_dim: int = Field(ge=1, description="Head size.")
    causal: bool = Field(description="Causal mask (is_causal=True).")
    points: list[AttentionPoint] = Field(min_length=1)

    @model_validator(mode="after")
    def _rates_match_times(self):
        for p in self.points:
            expected = 4 * p.batch_heads * p.seq * p.seq * self.head_dim / p.time.median_s
            if not _close(expected, p.flop_per_s):
                raise ValueError(f"attention point (bh={p.batch_heads}, seq={p.seq}): flop_per_s does not match its time")
        return self


def conv2d_output_size(size: int, kernel: int, stride: int, padding: int) -> int:
    """Output height (or width) of a square 2-D convolution without dilation."""
    return (size + 2 * padding - kernel) // stride + 1


_OPTIONAL_FIELDS = ("depth", "kernel_depth", "stride_depth", "padding_depth", "kernels_s")


class ConvPoint(_Strict):
    """One dense convolution forward on square (cubic) input, without bias, as cuDNN (or oneDNN)
    picks the algorithm by default (no cudnn.benchmark): NCHW (NCL, NCDHW) unless ``layout`` says
    channels-last, ungrouped."""

    batch: int = Field(ge=1, description="Images.")
    in_channels: int = Field(ge=1, description="Input channels.")
    out_channels: int = Field(ge=1, description="Output channels (filters).")
    size: int = Field(ge=1, description="Input height = width (= depth unless ``depth`` says; the length of a 1-d input).")
    depth: int | None = Field(default=None, ge=1, description="A 3-d input's depth where it is not ``size`` (a clip of 16 frames of 56x56).")
    kernel_depth: int | None = Field(default=None, ge=1, description="A 3-d filter's depth where it is not ``kernel`` (1x3x3 spatial, 3x1x1 temporal).")
    stride_depth: int | None = Field(default=None, ge=1, description="A 3-d stride's depth where it is not ``stride`` (1x2x2: spatial only).")
    padding_depth: int | None = Field(default=None, ge=0, description="A 3-d padding's depth where it is not ``padding``.")
    kernel: int = Field(ge=1, description="Filter height = width (= depth).")
    stride: int = Field(ge=1, description="Stride.")
    padding: int = Field(ge=0, description="Zero padding on each side.")
    dims: int = Field(default=2, ge=1, le=3, description="Spatial dimensions: 1 (conv1d), 2 or 3.")
    transposed: bool = Field(default=False, description="A transposed convolution (weight: in, out, *kernel).")
    gradient: Literal["none", "input", "weight"] = Field(
        default="none", description="What was timed: the forward (none), or convolution_backward asked for the input's or the weight's gradient alone.",
    )
    layout: Literal["nchw", "channels_last"] = Field(
        default="nchw", description="Memory format of the input and weight (channels_last: a 2-d convolution in NHWC, as cuDNN's NHWC kernels take it).",
    )
    time: Stat = Field(description="Time of one call.")
    kernels_s: float | None = Field(
        default=None, gt=0,
        description="GPU: the summed durations of the kernels one call runs (torch.profiler), without the gaps between them that "
        "``time`` holds (cuDNN runs an NCHW convolution as 3-5 kernels behind layout transforms); null where not measured.",
    )
    flop_per_s: float = Field(gt=0, le=MAX_FLOP_PER_S, description="FLOPs (as flop_counter counts: 2 x N x conv positions x Cout x Cin x taps) / median time.")

    def _axes(self) -> list[tuple[int, int, int, int]]:
        """(input side, filter, stride, padding) of each spatial dimension, depth first."""
        axes = [(self.size, self.kernel, self.stride, self.padding)] * self.dims
        if self.dims == 3:
            pick = lambda value, default: default if value is None else value  # noqa: E731
            axes[0] = (pick(self.depth, self.size), pick(self.kernel_depth, self.kernel), pick(self.stride_depth, self.stride),
                       pick(self.padding_depth, self.padding))
        return axes

    def _out_side(self, side: int, kernel: int, stride: int, padding: int) -> int:
        if self.transposed:
            return (side - 1) * stride - 2 * padding + kernel
        return conv2d_output_size(side, kernel, stride, padding)

    @property
    def out_size(self) -> int:
        """The output's height (= width; a 3-d output's depth is ``shapes()``'s)."""
        return self._out_side(self.size, self.kernel, self.stride, self.padding)

    @property
    def in_sides(self) -> tuple[int, ...]:
        """The input's spatial sides (depth first for a 3-d input)."""
        return tuple(a[0] for a in self._axes())

    @property
    def strides(self) -> list[int]:
        return [a[2] for a in self._axes()]

    @property
    def paddings(self) -> list[int]:
        return [a[3] for a in self._axes()]

    @property
    def taps(self) -> int:
        """Filter taps (kernel elements per input channel)."""
        return math.prod(a[1] for a in self._axes())

    @property
    def strided(self) -> bool:
        return max(self.strides) > 1

    @property
    def out_positions(self) -> int:
        """Output positions (pixels, voxels) of one image."""
        return math.prod(self._out_side(*a) for a in self._axes())

    def shapes(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(input, weight, output) shapes, as ``roofline.costs.conv.conv_gemm`` takes them."""
        axes = self._axes()
        x = (self.batch, self.in_channels, *(a[0] for a in axes))
        channels = (self.in_channels, self.out_channels) if self.transposed else (self.out_channels, self.in_channels)
        w = (*channels, *(a[1] for a in axes))
        out = (self.batch, self.out_channels, *(self._out_side(*a) for a in axes))
        return x, w, out

    @property
    def flops(self) -> int:
        conv_positions = math.prod(self.in_sides) if self.transposed else self.out_positions
        return 2 * self.batch * conv_positions * self.out_channels * self.in_channels * self.taps

    @model_serializer(mode="wrap")
    def _without_unset_fields(self, handler):
        """A point's depth fields are written only where they are set (a 3-d point that is not a cube),
        its kernels' time only where it was measured."""
        data = handler(self)
        for name in _OPTIONAL_FIELDS:
            if data.get(name, 0) is None:
                del data[name]
        return data

    @model_validator(mode="after")
    def _rate_matches_time(self):
        if min(self._out_side(*a) for a in self._axes()) < 1:
            raise ValueError(f"conv point: kernel {self.kernel} does not fit input {self.in_sides} with padding {self.padding}")
        if self.dims != 3 and any(v is not None for v in (self.depth, self.kernel_depth, self.stride_depth, self.padding_depth)):
            raise ValueError("conv point: depth, kernel_depth, stride_depth and padding_depth belong to 3-d convolutions")
        if self.layout == "channels_last" and (self.dims != 2 or self.transposed):
            raise ValueError("conv point: channels-last is a layout of 2-d forward convolutions")
        if not _close(self.flops / self.time.median_s, self.flop_per_s):
            raise ValueError("conv point: flop_per_s does not match its shape and time")
        return self


class ConvCurve(_Strict):
    """Convolution time at representative shapes, for one dtype. Prediction prices a convolution as
    its implicit GEMM on the matmul curve times the ratio these points show (cuDNN's kernels run
    below the GEMM curve at some shapes and above it at others)."""

    dtype: Literal["float32", "bfloat16", "float16"] = Field(description="Element dtype of input and weight.")
    tf32: bool = Field(description="float32 only: cuDNN was allowed TF32 (torch.backends.cudnn.allow_tf32) when measured.")
    keyed: bool = Field(
        default=False,
        description="The points span the kernel's mechanisms (1-d, 2-d, 3-d and transposed convolutions, filter taps, "
        "stride, input channels aligned to 16 bytes or not): a convolution takes the points that share its keys first. "
        "False: 2-d points of the same filter size only, other convolutions stay on the GEMM curve.",
    )
    points: list[ConvPoint] = Field(min_length=1)


class ConvFamilyPoint(_Strict):
    """One grouped or depthwise 2-D convolution (in channels = out channels, square input) timed on the device."""

    batch: int = Field(ge=1)
    channels: int = Field(ge=1, description="Input = output channels.")
    groups: int = Field(ge=2, description="channels for a depthwise convolution.")
    size: int = Field(ge=1, description="Input height = width.")
    kernel: int = Field(ge=1, description="Filter height = width.")
    stride: int = Field(ge=1)
    time: Stat = Field(description="Time of one call.")

    @property
    def out_size(self) -> int:
        return conv2d_output_size(self.size, self.kernel, self.stride, self.kernel // 2)

    @property
    def outputs(self) -> int:
        """Output elements: batch x channels x out^2."""
        return self.batch * self.channels * self.out_size ** 2

    @property
    def macs(self) -> int:
        """Multiply-accumulates: batch x channels x out^2 x (channels / groups) x kernel^2."""
        return self.batch * self.channels * self.out_size ** 2 * (self.channels // self.groups) * self.kernel ** 2


class ConvFamilyCurve(_Strict):
    """Grouped or depthwise convolutions of one dtype and memory layout. cuDNN runs them with their
    own kernels, far from the dense GEMM curve: a depthwise convolution does a few FLOPs per byte
    and its rate depends on the filter size, a grouped one on the width of each group."""

    kind: Literal["depthwise", "grouped", "grouped_few"] = Field(
        description="grouped_few: float32 convolutions of two groups at stride 2, where cuDNN's heuristics run some one "
        "group at a time on FP32 kernels (roofline.model.families.ConvFamilyModel.looped_groups_s).",
    )
    dtype: Literal["float32", "bfloat16", "float16"]
    layout: Literal["nchw", "channels_last"]
    tf32: bool = Field(default=False, description="float32: cuDNN was allowed TF32 when measured.")
    gradient: Literal["none", "input", "weight"] = Field(
        default="none",
        description="What the points time: the forward convolution, or one gradient of its backward alone "
        "(aten.convolution_backward asked for the input's or the weight's).",
    )
    points: list[ConvFamilyPoint] = Field(min_length=1)


class GemmRatioPoint(_Strict):
    """One GEMM shape timed as the mechanism runs it and as the plain aligned ``mm`` reference, in alternation."""

    m: int = Field(ge=1)
    n: int = Field(ge=1)
    k: int = Field(ge=1)
    batch: int = Field(default=1, ge=1, description="Products in the batch (bmm); 1 otherwise.")
    time: Stat = Field(description="The mechanism's time: the misaligned product, addmm with a bias, or the batched product.")
    reference: Stat = Field(description="The same product as mm with every dimension a multiple of 64 (misaligned: rounded up), same dtype; "
                            "for bmm, the batch's products stacked into one tall mm (batch x m rows).")


class GemmRatioCurve(_Strict):
    """How much slower than the plain GEMM a mechanism runs, over size, for one dtype:
    ``misaligned_2/4/8`` (a leading dimension aligned to only 2, 4 or 8 bytes, not the 16 that
    cuBLAS's vectorized kernels need: an odd vocabulary of 50257), ``addmm`` (a bias added in the
    GEMM's epilogue, whose kernel choice differs from mm's) or ``bmm`` (a batch of small products,
    which cuBLAS tiles one product at a time, against the same rows stacked into one tall GEMM)."""

    kind: Literal["misaligned_2", "misaligned_4", "misaligned_8", "addmm", "bmm"]
    dtype: MatmulDtype
    points: list[GemmRatioPoint] = Field(min_length=1)


class NormFamilyPoint(_Strict):
    """One normalization kernel over ``rows`` rows of ``row`` elements timed on the device (eval
    batch norm: rows = N x C planes of H x W elements; group norm: rows = N x groups of
    C / groups x H x W elements; training batch norm: rows = C channels of N x H x W elements)."""

    rows: int = Field(ge=1)
    row: int = Field(ge=1, description="Elements per row (plane, group, or a training batch norm's channel).")
    time: Stat = Field(description="Time of one call.")


class NormFamilyCurve(_Strict):
    """A normalization whose kernel walks rows, of one dtype: ``batch_norm_eval`` (a contiguous NCHW
    input; its time follows the number of H x W planes, not the bytes, when planes are short),
    ``group_norm`` (a moments pass with a block per (sample, group) row, then the normalize pass:
    few long rows leave most of the GPU idle) and its backward ``group_norm_backward`` (the same rows), ``batch_norm_train`` and its backward
    ``batch_norm_train_backward`` (contiguous NCHW, a row per channel of N x H x W elements: on a GPU
    cuDNN gives each channel a block, so few channels leave SMs idle, as group norm's rows; on the
    CPU time follows the elements, at the rate of ATen's statistics and normalize passes)."""

    kind: Literal["batch_norm_eval", "group_norm", "group_norm_backward", "batch_norm_train", "batch_norm_train_backward"]
    dtype: Literal["float32", "bfloat16", "float16"]
    points: list[NormFamilyPoint] = Field(min_length=1)


class RnnPoint(_Strict):
    """One fused RNN layer (nn.LSTM or nn.GRU: one layer, one direction, batch_first) timed at two
    sequence lengths, so that its time per step and its fixed cost per call separate."""

    kind: Literal["lstm", "gru"] = Field(description="Cell type.")
    batch: int = Field(ge=1, description="Sequences in the batch.")
    input_size: int = Field(ge=1, description="Input features.")
    hidden: int = Field(ge=1, description="Hidden size.")
    steps_short: int = Field(ge=1, description="Time steps of the shorter run.")
    steps_long: int = Field(ge=2, description="Time steps of the longer run.")
    time_short: Stat = Field(description="Time of one call over steps_short steps.")
    time_long: Stat = Field(description="Time of one call over steps_long steps.")
    host_index_s: float | None = Field(
        default=None, gt=0,
        description="Host-speed index (roofline.host_speed: one pass of the overhead mix) timed beside this point, seconds; "
        "a cuDNN layer launches every step from the host, so its times move with the host's speed. None in older profiles.",
    )

    @property
    def step_s(self) -> float:
        """Time per step: the slope between the two runs (never below a tenth of the long run's average)."""
        slope = (self.time_long.median_s - self.time_short.median_s) / (self.steps_long - self.steps_short)
        return max(slope, 0.1 * self.time_long.median_s / self.steps_long)

    @property
    def fixed_s(self) -> float:
        """Fixed time per call: the intercept, at least zero."""
        return max(self.time_short.median_s - self.steps_short * self.step_s, 0.0)

    @model_validator(mode="after")
    def _longer_is_longer(self):
        if self.steps_long <= self.steps_short:
            raise ValueError("rnn point: steps_long must exceed steps_short")
        return self


class RnnCurve(_Strict):
    """Fused RNN layer times at representative shapes, for one dtype. Prediction prices a layer as
    its fixed cost plus, per step, the gate GEMM's matmul-curve time times the ratio these points
    show (a cuDNN step costs several times its GEMM: launches and the gate kernel)."""

    dtype: Literal["float32", "bfloat16", "float16"] = Field(description="Element dtype of input and weights.")
    points: list[RnnPoint] = Field(min_length=1)
    synchronized: bool = Field(
        default=False,
        description="True: each call timed alone on the host's clock with a synchronize after it, as a forward is (its fixed cost "
        "then holds the call's dispatch and that synchronize); False: calls timed back to back on the device's clock.",
    )


class TransferPoint(_Strict):
    """One host<->device copy of ``bytes``."""

    bytes: int = Field(ge=1, description="Bytes copied.")
    time: Stat = Field(description="Time of one copy.")
    bytes_per_s: float = Field(gt=0, le=MAX_BYTES_PER_S, description="bytes / time.median_s, B/s.")

    @model_validator(mode="after")
    def _rate_matches_time(self):
        if not _close(self.bytes / self.time.median_s, self.bytes_per_s):
            raise ValueError("bytes_per_s does not match bytes/median")
        return self


class TransferCurve(_Strict):
    """Host<->device copy time over size, one direction and one kind of host memory."""

    direction: Literal["h2d", "d2h"] = Field(description="h2d: host to device; d2h: device to host.")
    host_memory: Literal["pinned", "pageable"] = Field(description="Page-locked or ordinary host memory.")
    points: list[TransferPoint] = Field(min_length=1, description="Points in increasing size.")
    latency_s: float = Field(ge=0, le=1.0, description="Fitted fixed cost per copy (intercept of time vs bytes), seconds.")
    bandwidth_bytes_per_s: float = Field(gt=0, le=MAX_BYTES_PER_S, description="Fitted asymptotic bandwidth (inverse slope), B/s.")
    fresh_destination: bool = Field(
        default=False,
        description="d2h pageable: each copy went into a newly allocated tensor, as .to('cpu') does. Above the host "
        "allocator's mmap threshold (32 MiB in glibc) every page of such a tensor is faulted in during the copy.",
    )

    @property
    def peak_bytes_per_s(self) -> float:
        return max(p.bytes_per_s for p in self.points)


class OptimizerHost(_Strict):
    """Host time of one optimizer step over tiny parameters: ``call_s + per_parameter_s x tensors``."""

    call_s: float = Field(ge=0, le=MAX_TIME_S, description="Per step, whatever the parameter count, seconds.")
    per_parameter_s: float = Field(ge=0, le=MAX_TIME_S, description="Per parameter tensor, seconds.")


class TrainingOverheads(_Strict):
    """Host costs of a training step beyond the forward's dispatch (``roofline.measure.training_host``)."""

    grad_record_s: Stat = Field(description="Extra host time of an op autograd records (its node, the tensors it saves) over the same op under no_grad.")
    autograd_node_s: Stat = Field(description="Host time of the autograd engine per node it runs in backward, beyond the node's own ops.")
    optimizers: dict[str, OptimizerHost] = Field(
        default_factory=dict, description="'adamw:foreach' and the like: one optimizer step's host time over its parameter tensors.",
    )
    phase_switch: dict[str, float] = Field(
        default_factory=dict,
        description="Per phase ('forward', 'backward', 'optimizer'): how many times longer a small probe model's phase takes "
        "inside a training step, where the phases take turns, than repeated alone, as the figures above were measured (>= 1).",
    )


class HostLevel(_Strict):
    """Where a profile's host costs were moved after calibration (``calibrate.host_level``): the
    host-speed index of a typical session (the median over recorded runs of each one's median
    reading beside its models), over the index the calibration implied."""

    factor: float = Field(gt=0, le=10.0, description="Every host cost was multiplied by this.")
    readings: int = Field(ge=1, description="Index readings of the records (one beside each recorded run).")
    records: list[str] = Field(description="The records the readings come from (benchmarks/results/ file names).")


class ProgramFit(_Strict):
    """A profile's real-program factor fitted to its machine's recorded zoo runs
    (``benchmarks/program_factor.py``): how far real models' eager host time runs above the
    calibrated op mix at the same host speed depends on the host's processor as well as on the code."""

    factor: float = Field(gt=0, le=10.0, description="Prediction multiplies every eager host cost by this.")
    median_error: float = Field(ge=0, description="The mean over the records of their median |error| at the host scale at this factor.")
    records: list[str] = Field(min_length=1, description="The records it was fitted to (benchmarks/results/ file names).")


class Overheads(_Strict):
    """Fixed per-call costs: what small ops pay regardless of size."""

    kernel_min_s: Stat | None = Field(
        default=None, description="GPU: device time of the smallest kernel, replayed inside a CUDA graph."
    )
    dispatch_s: Stat = Field(
        description="Host time to dispatch one small aten op from Python (eager), seconds per op."
    )
    module_call_s: Stat = Field(description="Extra host time of one nn.Module __call__ over a plain function call.")
    synchronize_s: Stat | None = Field(
        default=None, description="GPU: round trip of torch.cuda.synchronize() on an idle device."
    )
    graph_launch_s: Stat | None = Field(
        default=None, description="GPU: host time to launch one CUDA graph replay."
    )
    graph_kernel_s: Stat | None = Field(
        default=None, description="GPU: device time per kernel inside a replayed CUDA graph of many tiny kernels."
    )
    dispatch_by_op_s: dict[str, Stat] = Field(
        default_factory=dict,
        description="Host dispatch time of a few representative small ops by name (add, relu, view, addmm, ...).",
    )
    interleave_factor: float = Field(
        default=1.0, ge=1.0, le=10.0,
        description="Host time of different ops called in turn over the sum of each repeated alone; scales every dispatch cost.",
    )
    compiled_call_s: Stat | None = Field(
        default=None,
        description="GPU: host time of one call into a torch.compile'd function, beyond its kernel launches. Measured as a ratio "
        "to the eager cost per kernel of the same GEMM + ReLU chain in the same rounds, stored times that cost as prediction prices it.",
    )
    compiled_kernel_s: Stat | None = Field(
        default=None,
        description="GPU: host time per kernel launched from torch.compile (Inductor) generated code; measured and stored as compiled_call_s is.",
    )
    compiled_input_s: Stat | None = Field(
        default=None,
        description="GPU: host time per graph input (a parameter, buffer or input tensor) of one call into a torch.compile'd "
        "function, beyond the 2 inputs of the chain compiled_call_s is measured on (guards and size checks); measured and stored as compiled_call_s is.",
    )
    program_factor: float | None = Field(
        default=None, gt=0, le=10.0,
        description="Host time of real models' eager code over what their ops' calibrated dispatch and module calls add up to, at the same host speed; "
        "prediction multiplies every eager host cost by it. null: program_fit's factor, else the model's constant "
        "(roofline.model.host.PROGRAM_FACTOR_GPU on a GPU, 1 on the CPU). Not read from a file (earlier versions stored a copy of their "
        "constant here); a replay sets it in memory to weigh other values.",
    )
    program_fit: ProgramFit | None = Field(
        default=None, description="GPU: the real-program factor fitted to this machine's recorded runs; null: the model's constant.",
    )
    op_small_s: Stat | None = Field(
        default=None,
        description="CPU: wall time of one tiny aten op (dispatch plus the op itself); the CPU's per-op overhead.",
    )
    python_call_share: float | None = Field(
        default=None, ge=0, le=10.0,
        description="Host time of one Python function call of the model's own code over one add's calibrated dispatch; "
        "null: the model's constant (roofline.model.host.PYTHON_CALL_SHARE). A replay sets it to weigh other values.",
    )
    host_phase_factor: float = Field(
        default=1.0, gt=0, le=10.0,
        description="GPU: the representative ops' time alone, median over samples after every stage of the calibration, over the "
        "overheads stage's (earlier profiles: the host-speed index's median over the run over its median around that stage); "
        "the eager host costs measured there were multiplied by it, so that they stand for the host's typical speed, not one "
        "moment's (1.0: not applied, where other programs took the CPUs or measurements waited for one, in an older "
        "profile, or for a swing beyond a host's drift, which the calibration's warnings then give).",
    )
    host_index_s: dict[str, list[float]] = Field(
        default_factory=dict,
        description="GPU: the host-speed index's samples calibration took (seconds): 'run', one pass of the representative mix after "
        "each stage, and 'run_alone' beside each, the representative ops' time each alone, summed; 'overheads', mix passes, three "
        "before and three after the overheads stage. host_phase_factor comes from 'run_alone'.",
    )
    training: TrainingOverheads | None = Field(
        default=None, description="Host costs of a training step (the autograd engine, optimizers); null when not measured.",
    )
    host_level: HostLevel | None = Field(
        default=None,
        description="GPU: every host cost was moved to the median host-speed index of recorded runs made with this profile "
        "(calibrate.host_level); null when the calibration's own index stands.",
    )

    @field_validator("program_factor", mode="before")
    @classmethod
    def _program_factor_is_the_models(cls, value):
        """A stored factor is an earlier version's copy of the model's constant, not a measurement:
        loading drops it, so every profile prices at today's model (a replay's own value is set
        with ``model_copy``, which validates nothing)."""
        return None


class KernelEntry(_Strict):
    """One op of one exact signature (aten op, every argument's shape, stride and dtype, every other
    argument) timed in isolation on the device: ``roofline calibrate --for MODEL.py``."""

    key: str = Field(description="roofline.model.kernel_table.kernel_key of the op: its name and arguments.")
    op: str = Field(description="The aten op, e.g. aten.convolution.default.")
    time: Stat = Field(description="Device time of one call on fresh tensors of that signature.")
    model: str = Field(default="", description="The model file it was timed for.")


class ForeachKernels(_Strict):
    """GPU: how ``multi_tensor_apply``'s kernels (the ``_foreach_*`` ops of a default optimizer step,
    the fused optimizers) run, each measured with ``torch._foreach_add_`` over float32 lists. A kernel
    gives each chunk of up to 65536 elements a thread block: it takes at least ``kernel_floor``, its
    bytes at ``stream_bytes_per_s``, and its largest chunk at the rate one block streams
    (``chunk``: few blocks, each a whole chunk, far from filling the GPU)."""

    kernel_floor: Stat = Field(description="Time of one kernel over tiny tensors (1024 elements each).")
    chunk: Stat = Field(description="Time of one kernel of eight blocks, each streaming one whole chunk (65536 elements, 3 accesses of 4 bytes).")
    stream_bytes_per_s: float = Field(gt=0, description="Bytes a second over large tensors (8 of 16Mi elements): its streaming rate.")


class Measurements(_Strict):
    """Everything measured on one device."""

    matmul: list[MatmulCurve] = Field(min_length=1, description="Matmul FLOP/s over a grid of shapes, one curve per dtype.")
    bandwidth: list[BandwidthCurve] = Field(min_length=1, description="Bandwidth over working-set size: copy, read, write.")
    pointwise: list[PointwiseCurve] = Field(description="Throughput of representative op-family kernels (sin, unary, add, mul_broadcast, layer_norm, softmax) over size.")
    overheads: Overheads = Field(description="Per-op and per-call fixed costs.")
    transfers: list[TransferCurve] = Field(default_factory=list, description="GPU only: host<->device copies.")
    attention: list[AttentionCurve] = Field(default_factory=list, description="GPU only: fused attention throughput.")
    conv: list[ConvCurve] = Field(default_factory=list, description="2-D convolution times at representative shapes, one curve per dtype.")
    rnn: list[RnnCurve] = Field(default_factory=list, description="Fused LSTM/GRU layer times at representative shapes, one curve per dtype.")
    conv_passes: list[ConvCurve] = Field(
        default_factory=list,
        description="CPU: oneDNN's dense 2-d NCHW convolutions at batch > 1, the forward and each gradient (ConvPoint.gradient); prediction "
        "fits each pass's efficiency on its implicit GEMM and a time per element of the NCHW tensors oneDNN reorders to its blocked layout and back.",
    )
    conv_families: list[ConvFamilyCurve] = Field(default_factory=list, description="GPU: depthwise and grouped convolutions per dtype and layout; depthwise gradients apart.")
    gemm_ratios: list[GemmRatioCurve] = Field(default_factory=list, description="GPU: misaligned GEMMs and addmm's epilogue against the plain GEMM.")
    norm_families: list[NormFamilyCurve] = Field(default_factory=list, description="GPU: eval batch norm over plane size, group norm and its backward over rows in flight, training batch norm and its backward over channels in flight; CPU: training batch norm and its backward over elements.")
    foreach: ForeachKernels | None = Field(default=None, description="GPU: multi-tensor kernels (optimizer steps); None: priced as one streaming op.")
    kernels: list[KernelEntry] = Field(
        default_factory=list, description="GPU: shape-exact kernel times of the models the profile was run --for; prediction uses them before any curve.",
    )

    @model_validator(mode="after")
    def _has_copy_curve(self):
        if not any(c.kind == "copy" for c in self.bandwidth):
            raise ValueError("bandwidth needs a 'copy' curve: it prices every op without a family curve")
        return self

    def pointwise_curve(self, op: str, dtype: str = "float32") -> PointwiseCurve | None:
        return next((c for c in self.pointwise if c.op == op and c.dtype == dtype), None)

    def matmul_curve(self, dtype: str) -> MatmulCurve | None:
        return next((c for c in self.matmul if c.dtype == dtype), None)

    def bandwidth_curve(self, kind: str) -> BandwidthCurve | None:
        return next((c for c in self.bandwidth if c.kind == kind), None)

    def transfer_curve(self, direction: str, host_memory: str) -> TransferCurve | None:
        return next((c for c in self.transfers if c.direction == direction and c.host_memory == host_memory), None)


class Peaks(_Strict):
    """Theoretical or datasheet ceilings, where they can be derived or are known."""

    flop_per_s: dict[str, float] = Field(
        default_factory=dict, description="Peak FLOP/s by dtype name (float32, tf32, bfloat16, float16)."
    )
    memory_bytes_per_s: float | None = Field(default=None, gt=0, le=MAX_BYTES_PER_S, description="Peak DRAM bandwidth, B/s.")
    host_link_bytes_per_s: float | None = Field(
        default=None, gt=0, le=MAX_BYTES_PER_S, description="Peak host<->device link bandwidth per direction (PCIe), B/s."
    )
    source: str = Field(description="Where the figures come from: 'datasheet: <name>' or 'derived: <formula>'.")

    @field_validator("flop_per_s")
    @classmethod
    def _positive(cls, v):
        for k, x in v.items():
            if not (0 < x <= MAX_FLOP_PER_S):
                raise ValueError(f"peak flop_per_s[{k}]={x} is not a plausible rate")
        return v


class CpuIdentity(_Strict):
    """The host CPU."""

    model: str = Field(description="CPU model name as the OS reports it.")
    architecture: str = Field(description="Machine architecture, e.g. x86_64.")
    physical_cores: int | None = Field(default=None, ge=1, description="Physical cores visible to this process.")
    logical_cpus: int = Field(ge=1, description="Logical CPUs (hardware threads) visible to this process.")
    threads_used: int = Field(ge=1, description="torch.get_num_threads() during calibration.")
    max_clock_mhz: float | None = Field(default=None, gt=0, description="Maximum core clock, MHz, when the OS reports it.")
    isa: list[str] = Field(default_factory=list, description="Vector/matrix extensions found (avx2, avx512f, amx_bf16, ...).")
    l3_cache_bytes: int | None = Field(default=None, ge=1, description="Last-level cache size, bytes.")
    memory_bytes: int | None = Field(default=None, ge=1, description="Host RAM, bytes.")


class GpuIdentity(_Strict):
    """The GPU, read through torch and pynvml."""

    name: str = Field(description="Device name, e.g. 'NVIDIA H100 80GB HBM3'.")
    index: int = Field(ge=0, description="CUDA device index calibrated.")
    compute_capability: str = Field(description="'major.minor'.")
    sm_count: int = Field(ge=1, description="Streaming multiprocessors.")
    memory_bytes: int = Field(ge=1, description="Device memory, bytes.")
    l2_cache_bytes: int | None = Field(default=None, ge=1, description="L2 cache size, bytes.")
    driver_version: str | None = Field(default=None, description="NVIDIA driver version (pynvml).")
    cuda_version: str | None = Field(default=None, description="CUDA runtime version torch was built with.")
    sm_clock_max_mhz: float | None = Field(default=None, gt=0, description="Maximum SM clock, MHz (pynvml).")
    memory_clock_max_mhz: float | None = Field(default=None, gt=0, description="Maximum memory clock, MHz (pynvml).")
    memory_bus_width_bits: int | None = Field(default=None, ge=1, description="Memory bus width, bits (pynvml).")
    pcie_generation: int | None = Field(default=None, ge=1, description="Current PCIe link generation (pynvml).")
    pcie_width: int | None = Field(default=None, ge=1, description="Current PCIe link width, lanes (pynvml).")
    power_limit_w: float | None = Field(default=None, gt=0, description="Enforced power limit, watts (pynvml).")


class CpuPart(_Strict):
    identity: CpuIdentity = Field(description="What the CPU is.")
    peaks: Peaks = Field(description="Theoretical ceilings, where derivable.")
    measurements: Measurements = Field(description="Measured curves and overheads.")


class GpuPart(_Strict):
    identity: GpuIdentity = Field(description="What the GPU is.")
    peaks: Peaks = Field(description="Theoretical or datasheet ceilings.")
    measurements: Measurements = Field(description="Measured curves, overheads and host<->device copies.")


class MachineLoad(_Strict):
    """How busy the machine was around the calibration (``calibrate.load``)."""

    cpus: int = Field(ge=1, description="CPUs of the machine.")
    loadavg_before: float | None = Field(default=None, ge=0, description="1-minute load average before calibration.")
    loadavg_after: float | None = Field(default=None, ge=0, description="1-minute load average after calibration.")
    others_busy_before: float | None = Field(
        default=None, ge=0, le=1, description="Share of all CPUs other programs kept busy in a short probe before calibration.",
    )
    others_busy_during: float | None = Field(default=None, ge=0, le=1, description="Share of all CPUs other programs kept busy during calibration.")
    spin_spread_before: float | None = Field(default=None, ge=0, description="Relative IQR of a fixed spin loop timed before calibration.")
    spin_spread_after: float | None = Field(default=None, ge=0, description="Relative IQR of the same loop after calibration.")
    measurements: int = Field(default=0, ge=0, description="Measurements the timing protocol made.")
    contended_measurements: int = Field(
        default=0, ge=0, description="Measurements with no round free of waits for a CPU another program held (their fastest sample kept).",
    )
    waited_share: float | None = Field(default=None, ge=0, description="Share of the timed wall time the calibration's threads waited for a CPU.")
    priority_raised: bool = Field(default=False, description="Calibration ran at a raised scheduling priority (the OS allowed it).")
    busy: bool = Field(default=False, description="The machine was busy: one of busy_reasons.")
    busy_reasons: list[str] = Field(default_factory=list, description="Why the machine counts as busy.")

    def summary(self) -> str:
        """One line: the figures and the verdict."""
        def share(x):
            return "?" if x is None else f"{100 * x:.0f}%"

        parts = [
            f"others used {share(self.others_busy_before)} of {self.cpus} CPUs before, {share(self.others_busy_during)} during",
            f"load average {'?' if self.loadavg_before is None else f'{self.loadavg_before:.2f}'}",
            f"spin spread {share(self.spin_spread_before)} / {share(self.spin_spread_after)}",
            f"{self.contended_measurements} of {self.measurements} measurements contended",
            f"priority {'raised' if self.priority_raised else 'as is'}",
        ]
        return ("busy: " if self.busy else "quiet: ") + "; ".join(parts)


class CalibrationInfo(_Strict):
    created_at: datetime = Field(description="When calibration finished (UTC).")
    duration_s: float = Field(ge=0, description="Wall time of the calibration, seconds.")
    quick: bool = Field(description="True for a reduced grid (--quick).")
    command: str = Field(description="The command line that produced this profile.")
    roofline_version: str = Field(description="Version of roofline that calibrated.")
    torch_version: str = Field(description="torch.__version__ during calibration.")
    python_version: str = Field(description="Python version during calibration.")
    hostname: str | None = Field(default=None, description="Host name of the calibrated machine.")
    warnings: list[str] = Field(default_factory=list, description="Measurements whose spread was large, and similar notes.")
    stage_seconds: dict[str, float] = Field(default_factory=dict, description="Wall time of each calibration stage, seconds.")
    load: MachineLoad | None = Field(default=None, description="How busy the machine was around calibration; null in older profiles.")
    remeasured: list[str] = Field(default_factory=list, description="Sanity-check failures (roofline.profile_checks) that calibration re-measured.")
    checks_failed: list[str] = Field(
        default_factory=list, description="Sanity checks the profile still failed when it was saved (only with --force).",
    )
    forced: bool = Field(default=False, description="Saved with --force despite failing its sanity checks.")
    refreshed: list[str] = Field(
        default_factory=list, description="Stages measured again later on the same machine (python -m calibrate.refresh): stage, when, versions.",
    )


class DeviceProfile(_Strict):
    """A calibrated machine: its host CPU and, where present, one GPU."""

    kind: Literal["roofline-device-profile"] = Field(default=PROFILE_KIND, description="Marks the file as a roofline profile.")
    schema_version: Literal[1] = Field(default=SCHEMA_VERSION, description="Version of this schema.")
    name: str = Field(min_length=1, description="Profile name, used by --profile NAME.")
    calibration: CalibrationInfo = Field(description="How and when the profile was made.")
    host: CpuPart = Field(description="The host CPU.")
    gpu: GpuPart | None = Field(default=None, description="The GPU, absent for a CPU-only profile.")
    _source_file: str | None = PrivateAttr(default=None)  # the file it was loaded from, if any

    @property
    def source_file(self) -> str | None:
        return self._source_file

    @property
    def device(self) -> str:
        """Human-readable device description: the GPU if present, else the CPU."""
        return self.gpu.identity.name if self.gpu else self.host.identity.model

    def part(self, device: str) -> CpuPart | GpuPart:
        """The CPU or GPU part; ``device`` is 'cpu' or 'cuda'."""
        if device == "cpu":
            return self.host
        if self.gpu is None:
            from roofline.errors import ProfileError

            raise ProfileError(f"profile '{self.name}' has no GPU part; calibrate on a GPU machine or use --device cpu")
        return self.gpu
