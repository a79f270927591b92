"""One part of a profile (its GPU or its host CPU) as prediction reads it: every calibrated curve
turned into a function of an op's size, the host costs, and the float32 math modes the run uses."""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass
from functools import cached_property

from roofline.model.families import ConvFamilyModel, GemmRatioModel, NormFamilyModel
from roofline.model.curves import (
    _TWIN,
    AttentionModel,
    BandwidthModel,
    ConvModel,
    CpuConvPassModel,
    MatmulModel,
    PointwiseModel,
    RnnModel,
    _rnn_host_factor,
)
from roofline.model.host import call_entry_s, dispatch_s, interleave_for, program_factor, python_call_s
from roofline.schema.profile import CpuPart, GpuPart, Overheads


@dataclass(frozen=True)
class MathModes:
    """Which float32 math the priced run uses on a GPU: TF32 tensor cores for matmuls
    (``torch.backends.cuda.matmul.allow_tf32``, off by default) and for cuDNN convolutions
    (``torch.backends.cudnn.allow_tf32``, on by default)."""

    matmul_tf32: bool = False
    conv_tf32: bool = True

    @classmethod
    def from_torch(cls, matmul_tf32: bool | None = None, conv_tf32: bool | None = None) -> "MathModes":
        """The modes torch would run with now; an argument that is not None overrides its flag."""
        import torch

        return cls(
            matmul_tf32=bool(torch.backends.cuda.matmul.allow_tf32) if matmul_tf32 is None else matmul_tf32,
            conv_tf32=bool(torch.backends.cudnn.allow_tf32) if conv_tf32 is None else conv_tf32,
        )


class DeviceModel:
    """Everything prediction needs from one part (GPU or CPU) of a profile."""

    def __init__(self, part: GpuPart | CpuPart, kind: str, modes: MathModes = MathModes(), overheads: Overheads | None = None):
        self.part = part
        self.kind = kind  # "cuda" or "cpu"
        self.modes = modes
        m = part.measurements
        self.overheads = overheads or m.overheads
        # CPU timings are wall times of whole calls, which include one dispatch; GPU timings are
        # device time only.
        included = self.overheads.dispatch_s.median_s if kind == "cpu" else 0.0
        self._included = included
        self.matmul = {c.dtype: MatmulModel(c, included) for c in m.matmul}
        self.bandwidth = BandwidthModel(m.bandwidth, included)
        self.family = {(c.op, c.dtype): PointwiseModel(c, included) for c in m.pointwise}
        self._family_names = {op for op, _ in self.family}
        self.attention = {(c.dtype, c.head_dim, c.causal): AttentionModel(c) for c in m.attention}
        self.conv = {
            (c.dtype, c.tf32): ConvModel(c, self.matmul_model("tf32" if c.tf32 else c.dtype), included, self.bandwidth) for c in m.conv
        }
        self.rnn = self._rnn_models(self.overheads)
        self.conv_families = ConvFamilyModel(m.conv_families)
        passes = CpuConvPassModel(m.conv_passes[0], self.matmul["float32"], included) if kind == "cpu" and m.conv_passes and "float32" in self.matmul else None
        self.conv_passes = passes if passes is not None and passes.ok else None
        self.gemm_ratios = GemmRatioModel(m.gemm_ratios, lambda dtype, rows, n, k: self.matmul_model(dtype).time_s(rows, n, k))
        self.norm_families = NormFamilyModel(m.norm_families, included, block_per_row=kind == "cuda")
        self.foreach = m.foreach if kind == "cuda" else None  # multi_tensor_apply's kernels
        # shape-exact kernels (GPU: device time; a CPU's op times include its dispatch and stay on the curves)
        self.kernel_table = {e.key: e.time.median_s for e in m.kernels} if kind == "cuda" else {}

    def _rnn_models(self, overheads: Overheads) -> dict[str, RnnModel]:
        m = self.part.measurements
        host = _rnn_host_factor(m.rnn, overheads)
        sync = overheads.synchronize_s.median_s if overheads.synchronize_s else 0.0
        # a synchronized layer's own call: its synchronize and its dispatch, of the kind the timeline
        # gives a fused RNN op (timeline.dispatch_kind: category "matmul")
        call = (sync + dispatch_s(overheads, "addmm")) if self.kind == "cuda" else 0.0
        return {c.dtype: RnnModel(c, self.matmul_model(c.dtype), self._included, host, call) for c in m.rnn}

    def with_overheads(self, overheads: Overheads) -> "DeviceModel":
        """The same device with other host costs (a host running at another speed). On a GPU the
        curves are shared and the fused RNN layers (launched step by step from the host) follow the
        host; on the CPU the curves, whose wall times include one dispatch, are read again."""
        if self.kind == "cpu":
            return DeviceModel(self.part, self.kind, self.modes, overheads)
        twin = object.__new__(DeviceModel)
        twin.__dict__.update({k: v for k, v in self.__dict__.items() if k not in ("kernel_floor_s",)})
        twin.overheads = overheads
        twin.rnn = self._rnn_models(overheads)
        return twin

    def with_modes(self, modes: MathModes) -> "DeviceModel":
        """The same device priced with other float32 math modes."""
        twin = object.__new__(DeviceModel)
        twin.__dict__.update(self.__dict__)
        twin.modes = modes
        return twin

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

    def has_family(self, family: str, dtype_name: str | None = None) -> bool:
        """Whether the profile calibrated this op family (in this dtype or its fp16/bf16 twin; in
        any dtype when none is given): older profiles lack some."""
        if dtype_name is None:
            return family in self._family_names
        return (family, dtype_name) in self.family or (family, _TWIN.get(dtype_name)) in self.family

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

    def attention_head_factor(self, dtype_name: str, causal: bool, head_dim: int, calibrated: int, seq_k: int, tokens: int) -> float:
        """How much longer fused attention at ``head_dim`` takes than at the ``calibrated`` head
        size of its curve, at this key length and tokens in flight. A score's two products grow
        with the head size and its softmax (max, exp, rescale) does not, so time is affine in the
        head size, not proportional: between and beyond the two calibrated head sizes a < b of the
        dtype nearest it (else of the half-precision kernels, where a float32 curve has one) the time
        at this point is interpolated linearly, below ``a`` never under the products' share. 1
        where no dtype has two head sizes (then the FLOPs, proportional, price it)."""
        if head_dim == calibrated or head_dim < 1 or calibrated < 1:
            return 1.0
        for alike in ({dtype_name, _TWIN.get(dtype_name, dtype_name)}, {"bfloat16", "float16"}):
            keys = [k for k in self.attention if k[0] in alike]
            keys = [k for k in keys if k[2] == causal] or keys
            sizes = sorted({k[1] for k in keys})
            if len(sizes) < 2:
                continue
            i = min(max(bisect_left(sizes, head_dim), 1), len(sizes) - 1)
            a, b = sizes[i - 1], sizes[i]
            at = {d: next(self.attention[k] for k in keys if k[1] == d) for d in (a, b)}
            # time per score at this point on each curve: its FLOPs per score over its rate
            t_a = 4 * a / at[a].flop_per_s(seq_k, tokens)
            t_b = 4 * b / at[b].flop_per_s(seq_k, tokens)

            def time(d: int) -> float:
                linear = t_a + (d - a) * (t_b - t_a) / (b - a)
                return max(linear, t_a * d / a) if d < a else max(linear, 1e-3 * t_a)

            return time(head_dim) / time(calibrated) * calibrated / head_dim
        return 1.0

    def conv_model(self, dtype_name: str, tf32: bool) -> ConvModel | None:
        """The convolution ratios for this dtype (fp16 and bf16 stand for each other), or None."""
        if dtype_name == "float32":
            return self.conv.get(("float32", tf32))
        return self.conv.get((dtype_name, False)) or self.conv.get((_TWIN.get(dtype_name), False))

    def rnn_model(self, dtype_name: str) -> RnnModel | None:
        """The fused-RNN layer times for this dtype (fp16 and bf16 stand for each other), or None."""
        return self.rnn.get(dtype_name) or self.rnn.get(_TWIN.get(dtype_name))

    @cached_property
    def library_launch_s(self) -> float:
        """Host time of one more kernel a library launches from C++ in a loop (cuDNN over groups): the
        calibrated launch of one CUDA graph replay, one driver launch call without Python or the
        dispatcher (the lent H100's 4.7 us, where cuDNN's loops over groups took 4.7 us a kernel past
        the first: ``python benchmarks/conv_host_cost.py --show benchmarks/results/h100_grouped_host_cost.json``);
        the least kernel time where the profile has no graph launch."""
        g = self.overheads.graph_launch_s
        return g.median_s if g else self.kernel_floor_s

    @cached_property
    def kernel_floor_s(self) -> float:
        """The least time one kernel occupies the device (GPU: a kernel inside a CUDA graph)."""
        k = self.overheads.kernel_min_s
        return k.median_s if k else 0.0

    def interleave_for(self, distinct_kinds: int | None) -> float:
        """The interleaving factor for a sequence of this many different dispatch kinds."""
        return interleave_for(self.overheads.interleave_factor, distinct_kinds)

    @property
    def program_factor(self) -> float:
        """The real-program factor every eager host cost is multiplied by: the profile's where it
        sets one, else the model's (``roofline.model.host.program_factor``)."""
        return program_factor(self.overheads, self.kind)

    def dispatch_s(self, kind: str, distinct_kinds: int | None = None) -> float:
        """Host time to dispatch one op of this kind in a model's eager program: the calibrated
        op (``roofline.model.host.dispatch_s``) times the profile's program factor."""
        return dispatch_s(self.overheads, kind, distinct_kinds) * self.program_factor

    def call_entry_s(self, distinct_kinds: int | None = None) -> float:
        """The Python entry of one native torch call in a model's eager program (``roofline.model.host.call_entry_s``,
        times the program factor): what an op that a native call runs after its first does not pay."""
        return call_entry_s(self.overheads, distinct_kinds) * self.program_factor

    @property
    def module_call_s(self) -> float:
        """Host time of one nn.Module call in a model's eager program (times the program factor)."""
        return self.overheads.module_call_s.median_s * self.program_factor

    @property
    def python_call_s(self) -> float:
        """Host time of one Python function call of the model's own code in its eager program (times
        the program factor; ``roofline.model.host.python_call_s``)."""
        return python_call_s(self.overheads) * self.program_factor

    @cached_property
    def cache_bytes(self) -> int | None:
        """The last-level cache: the GPU's L2, the CPU's L3."""
        ident = self.part.identity
        return getattr(ident, "l2_cache_bytes", None) or getattr(ident, "l3_cache_bytes", None)
