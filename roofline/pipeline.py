"""One analysis: capture once, price once, predict on each device part once, advise, report.

``Analysis`` holds a model's captured graph and its costs, and predicts from them on demand (each
prediction computed once and kept): the eager timeline on the profile's GPU and CPU, fusion, the
compiled and graphed alternatives, placement, copies on streams, and other batch sizes. A
prediction at another host speed (``at_host_scale``) or a check against a measurement reuses the
same graph and costs. ``analyze`` is the Python API; ``roofline advise`` builds an ``Analysis`` from
a loaded model file.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Literal

import torch

from roofline.advice.applicability import host_syncs, memory_fit, missing_kernels
from roofline.advice.batch import batch_sweep, describe_batch_sweep
from roofline.advice.compiled import compiled_total_s, cuda_graph_total_s
from roofline.advice.fusion import fuse_program, fusion_groups, fusion_report
from roofline.advice.layout import layout_advice
from roofline.advice.padding import padding_advice
from roofline.advice.placement import crossover, placement, size_of
from roofline.advice.plans import DevicePart, rank_plans
from roofline.advice.step_memory import step_memory
from roofline.advice.streams import stream_pipeline
from roofline.advice.text import advice_lines
from roofline.advice.training import (
    OPTIMIZER_UNMEASURED,
    UNCALIBRATED_HOST,
    checkpointing_estimate,
    host_only,
    optimizer_measured,
    phase_times,
    training_host_cost,
    training_lines,
)
from roofline.costs import OpCost, cost_of
from roofline.errors import CaptureError, ProfileError
from roofline.graph.capture import capture, normalize_inputs
from roofline.graph.ops import CapturedGraph
from roofline.graph.rebatch import Rebatcher, leading_batch, with_batch
from roofline.graph.structure import tensors_in
from roofline.graph.training import ParameterSet, TrainStep
from roofline.model.coverage import uncertain_reason
from roofline.model.device import DeviceModel, MathModes
from roofline.model.host import scaled_overheads, with_host_scales
from roofline.model.kernels import kernel_source, kernels_busy_s
from roofline.model.timeline import KernelTerms, Timeline, predict_timeline, price_kernels
from roofline.profile_checks import profile_caveats
from roofline.profiles import default_profile, find_profile
from roofline.schema.profile import DeviceProfile
from roofline.schema.report import (
    Alternatives,
    MemoryFit,
    ModuleRollup,
    OpReport,
    PlacementPoint,
    PlacementSweep,
    ProfileRef,
    Report,
    StepMemory,
    TensorInfo,
    Totals,
    TrainingStep,
    UncertainOps,
)

BATCH_SWEEP_MAX_OPS = 600  # beyond this, a batch sweep is opt-in


@dataclass(frozen=True)
class Options:
    """What a user can choose about an analysis (``roofline advise``'s flags, ``analyze``'s keywords).

    ``device``: the profile part to predict for ('cuda' or 'cpu'; None: its GPU if it has one).
    ``allow_tf32`` / ``conv_tf32``: float32 matmuls / cuDNN convolutions on TF32 tensor cores (None:
    torch's flags now). ``calls``, ``host_memory``, ``copies_per_call``: the loop placement is for.
    ``batch_sweep``: predict other batch sizes (None: for models of up to ``BATCH_SWEEP_MAX_OPS``
    ops). ``capture_device``: where to trace (None: the predicted GPU when this machine has one,
    else the CPU). ``user_files``: files whose lines name each op's source. ``train``: analyze one
    training step (``roofline.graph.training.TrainStep``) instead of the forward. ``host``: the host
    speed the host costs are priced at: 'profile' (calibration's) or 'now' (the host-speed index read
    on this machine before pricing, ``read_host_level``; the profile's device must be here).
    """

    device: str | None = None
    allow_tf32: bool | None = None
    conv_tf32: bool | None = None
    calls: int = 1
    host_memory: Literal["pageable", "pinned"] = "pageable"
    copies_per_call: bool = True
    batch_sweep: bool | None = None
    capture_device: str | None = None
    user_files: tuple[str, ...] = field(default_factory=tuple)
    train: TrainStep | None = None
    host: Literal["profile", "now"] = "profile"

    def modes(self) -> MathModes:
        return MathModes.from_torch(self.allow_tf32, self.conv_tf32)


def resolve_profile(profile: DeviceProfile | str | Path | None, device: str | None) -> tuple[DeviceProfile, str]:
    """(profile, 'cuda'|'cpu'): the profile to use and which of its parts to predict for."""
    if isinstance(profile, DeviceProfile):
        p = profile
    elif profile is not None:
        p = find_profile(str(profile))
    else:
        want = device or ("cuda" if torch.cuda.is_available() else "cpu")
        p = default_profile(want)
        if p is None:
            raise ProfileError(
                f"no saved profile for {want}; run `roofline calibrate{' --device cpu --quick' if want == 'cpu' else ''}` "
                "first, or pass --profile NAME|PATH (`roofline profiles` lists the shipped ones)"
            )
    kind = device or ("cuda" if p.gpu is not None else "cpu")
    if kind.startswith("cuda"):
        kind = "cuda"
    if kind not in ("cuda", "cpu"):
        raise ProfileError(f"unknown device '{device}'; use 'cuda' (the profile's GPU part) or 'cpu' (its host CPU part)")
    if kind == "cuda" and p.gpu is None:
        raise ProfileError(f"profile '{p.name}' has no GPU part; use --device cpu or a GPU profile")
    return p, kind


@dataclass(frozen=True)
class HostRead:
    """The host's speed read before pricing: ``scale`` (index now over calibration's) multiplied the
    profile's host costs, unless ``warning`` says why it did not."""

    scale: float
    warning: str | None = None

    @property
    def applied(self) -> bool:
        return self.warning is None


def read_host_level(profile: DeviceProfile, kind: str, options: Options) -> tuple[DeviceProfile, HostRead | None]:
    """With ``options.host == 'now'``: the profile with its host costs at the host's speed read here
    now on its ``kind`` part (a quarter-second of the calibrated op mix, none of the model), its
    other part's too (the same host), and the reading; otherwise the profile as it is and None.

    Opt-in: a shared host's speed can flip between levels within seconds, and then a reading before
    the capture misses the level the model runs at about as often as it finds it (docs/design.md,
    "Host speed"); a host steadier over seconds than across sessions gains more."""
    if options.host != "now":
        return profile, None
    from roofline.measure.device import device_for
    from roofline.measure.host_speed import host_scale_plausible, read_host_speed

    device = device_for(profile, kind, "--host now")
    scale = read_host_speed(device, profile.part(kind).measurements.overheads).scale
    if not host_scale_plausible(scale):
        return profile, HostRead(scale, warning=(
            f"the host-speed index read before pricing ran x{scale:.2f} against profile '{profile.name}': not drift but "
            "another machine's profile or a stalled host; host costs are priced at the profile's (--host profile)"))
    # every part's host costs: the CPU part (placement's other side) runs on the same host
    parts = {"cuda": scale, "cpu": scale} if profile.gpu is not None else {"cpu": scale}
    return with_host_scales(profile, parts), HostRead(scale)


# A module this small (parameters and buffers, and inputs) runs on real CPU tensors in
# milliseconds: it is captured that way, without fake tensors, whose first use costs torch the
# import of its compiler stack (about half a second).
SMALL_STATE_BYTES = 1 << 20
SMALL_INPUT_BYTES = 64 << 10


def _small(model, args: tuple, kwargs: dict) -> bool:
    if not isinstance(model, torch.nn.Module):
        return False
    state = sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])
    inputs = sum(t.numel() * t.element_size() for t in tensors_in((args, kwargs)))
    return state <= SMALL_STATE_BYTES and inputs <= SMALL_INPUT_BYTES


def capture_device_for(kind: str, options: Options) -> str:
    """Where to trace: the device predicted for when this machine has it (a GPU prediction then sees
    the GPU's own kernels: cuDNN RNNs, its attention backend), else the CPU."""
    return options.capture_device or ("cuda" if kind == "cuda" and torch.cuda.is_available() else "cpu")


def capture_for(model, args: tuple, kwargs: dict, kind: str, options: Options, materialize=None, real: bool = False) -> CapturedGraph:
    """Capture on ``capture_device_for``; ``real``: the model and inputs are real CPU tensors, run as they are."""
    device = capture_device_for(kind, options)
    train = options.train.for_device(kind) if options.train is not None else None
    if real and device == "cpu":
        return capture(model, args, kwargs, user_files=options.user_files, real=True, train=train)
    try:
        graph = capture(model, args, kwargs, materialize=materialize, user_files=options.user_files, device=device, train=train)
    except CaptureError as e:
        if device == "cpu":
            raise
        # Some CUDA-only kernels (cuDNN RNNs) have no fake-tensor support: price the CPU trace.
        graph = capture(model, args, kwargs, materialize=materialize, user_files=options.user_files, device="cpu", train=train)
        graph.warnings.append(f"captured on the CPU because capture on {device} failed ({str(e)[:160]}); per-op replay may not be possible")
    cpu_path = sorted({op.name for op in graph.ops if "for_cpu" in op.name or "mkldnn" in op.name})
    if kind == "cuda" and cpu_path:
        graph.warnings.append(
            f"traced on the CPU, so {', '.join(cpu_path)} stand in for the GPU's own kernels and are priced as those; "
            "run on a machine with the GPU for its exact op sequence"
        )
    return graph


class Analysis:
    """One model on one profile: its graph captured and priced once, each prediction computed once."""

    def __init__(
        self, graph: CapturedGraph, profile: DeviceProfile, kind: str, options: Options = Options(), *, name: str = "model",
        is_module: bool = True, capture_at: Callable[[int], CapturedGraph | None] | None = None, batch: int | None = None,
        devices: dict[str, DeviceModel | None] | None = None, costs: tuple[list[OpCost], list[bool]] | None = None,
        host_read: HostRead | None = None,
    ):
        self.graph, self.profile, self.kind, self.options = graph, profile, kind, options
        self.host_read = host_read  # the profile's host costs are already at its scale when applied
        self.name, self.is_module = name, is_module
        self._capture_at, self._batch = capture_at, batch
        if costs is None:
            priced = [cost_of(op) for op in graph.ops]
            costs = [host_only(c) if op.host_scalar else c for op, (c, _) in zip(graph.ops, priced)], [ok for _, ok in priced]
        self.costs, self.supported = costs
        self._devices: dict[str, DeviceModel | None] = dict(devices or {})
        self._kernels: dict[str, list[KernelTerms]] = {}
        self._timelines: dict[str, Timeline] = {}
        self._capture_step: Callable[[TrainStep], CapturedGraph] | None = None

    @classmethod
    def of(cls, model, args: Any = (), kwargs: dict | None = None, profile: DeviceProfile | str | Path | None = None,
           options: Options = Options(), *, name: str | None = None, materialize=None,
           devices: dict[str, DeviceModel | None] | None = None) -> "Analysis":
        """Capture ``model(*args, **kwargs)`` and analyze it on ``profile`` (``devices``: device
        models of this profile already built, to share between analyses)."""
        prof, kind = resolve_profile(profile, options.device)
        prof, host_read = read_host_level(prof, kind, options)
        args, kwargs = normalize_inputs(args, kwargs)
        real = materialize is not None and _small(model, args, kwargs)
        if real:  # the same model built with real tensors, and its real example inputs
            model, args, kwargs = (*materialize(), {})[:3]
            args, kwargs = normalize_inputs(args, kwargs)
        graph = capture_for(model, args, kwargs, kind, options, materialize, real=real)
        b0 = leading_batch(args, kwargs)

        def capture_at(b: int) -> CapturedGraph | None:
            try:
                a, k = with_batch(args, kwargs, b, real=real)
                return capture_for(model, a, k, kind, Options(capture_device=options.capture_device, train=options.train), real=real)
            except Exception:  # a model whose shapes do not follow its batch (hard-coded reshapes)
                return None

        label = name or getattr(model, "__name__", None) or type(model).__name__
        analysis = cls(graph, prof, kind, options, name=label, is_module=isinstance(model, torch.nn.Module), capture_at=capture_at, batch=b0,
                       devices=devices if host_read is None or not host_read.applied else None, host_read=host_read)
        if options.train is not None:  # the same step otherwise (under autocast): the training advice prices it
            analysis._capture_step = lambda step: capture_for(model, args, kwargs, kind, replace(options, train=step), materialize, real=real)
        return analysis

    # ---- device models and timelines ---------------------------------------------------------

    def device(self, kind: str | None = None) -> DeviceModel | None:
        """The profile's GPU ('cuda') or CPU ('cpu') part as prediction reads it; None if absent."""
        kind = kind or self.kind
        if kind not in self._devices:
            part = self.profile.gpu if kind == "cuda" else self.profile.host
            self._devices[kind] = DeviceModel(part, kind, self.options.modes()) if part is not None else None
        return self._devices[kind]

    @property
    def dev(self) -> DeviceModel:
        """The device predicted for."""
        return self.device(self.kind)

    def kernels(self, kind: str | None = None) -> list[KernelTerms]:
        kind = kind or self.kind
        if kind not in self._kernels:
            self._kernels[kind] = price_kernels(self.graph.ops, self.costs, self.device(kind))
        return self._kernels[kind]

    def timeline(self, kind: str | None = None) -> Timeline | None:
        """The eager timeline on the GPU or the CPU part (None where the profile has no such part)."""
        kind = kind or self.kind
        if kind not in self._timelines:
            dev = self.device(kind)
            if dev is None:
                return None
            self._timelines[kind] = step_timeline(self.graph, self.costs, dev, is_module=self.is_module, kernels=self.kernels(kind))
        return self._timelines[kind]

    @property
    def total_s(self) -> float:
        return self.timeline().total_s

    def at_host_scale(self, scale: float) -> "Analysis":
        """The same graph and costs predicted with every host cost of the predicted part times ``scale``."""
        return self.at_host_scales({self.kind: scale})

    def at_host_scales(self, scales: dict[str, float]) -> "Analysis":
        """The same graph and costs predicted with the host costs of each part named in ``scales``
        ('cuda': the host's launch path to the GPU; 'cpu': the host CPU's own ops) times its scale."""
        devices = dict(self._devices)
        for kind, scale in scales.items():
            dev = self.device(kind)
            if dev is not None:
                devices[kind] = dev.with_overheads(scaled_overheads(dev.overheads, scale))
        twin = Analysis(
            self.graph, self.profile, self.kind, self.options, name=self.name, is_module=self.is_module,
            devices=devices, costs=(self.costs, self.supported),
        )
        # device time does not depend on the host's speed, but a fused RNN's layers are launched step
        # by step from the host (``RnnModel``): a graph with one is priced again
        recurrent = any(c.recurrence is not None for c in self.costs)
        for kind, kernels in self._kernels.items():
            if kind not in scales or (kind == "cuda" and not recurrent):
                twin._kernels[kind] = kernels
        return twin

    # ---- advice ------------------------------------------------------------------------------

    @cached_property
    def fusion(self):
        """(fusion groups with their gains, total with every group fused) on the predicted part."""
        return fusion_report(self.graph, self.costs, self.dev, self.timeline(), self.kernels(), is_module=self.is_module)

    @cached_property
    def fused_total_s(self) -> float:
        """The forward with every fusion group as one kernel."""
        if "fusion" in self.__dict__:
            return self.fusion[1]
        groups = fusion_groups(self.graph, self.costs)
        if not groups:
            return self.total_s
        every = fuse_program(self.graph, self.costs, groups)
        return predict_timeline(every.graph, every.costs, self.dev, is_module=self.is_module, kernels=every.kernels(self.kernels(), self.dev)).total_s

    @cached_property
    def alternatives(self) -> Alternatives:
        return self.alternatives_on(self.kind)

    def alternatives_on(self, kind: str) -> Alternatives:
        """Eager, graphed and compiled totals on one device part (fused only on the predicted part)."""
        if kind == self.kind and "alternatives" in self.__dict__:
            return self.__dict__["alternatives"]
        dev, kernels, tl = self.device(kind), self.kernels(kind), self.timeline(kind)
        compiled = compiled_total_s(self.graph, self.costs, dev, kernels)
        both = compiled_total_s(self.graph, self.costs, dev, kernels, cuda_graphs=True) if compiled is not None else None
        return Alternatives(
            eager_s=tl.total_s, fused_s=self.fused_total_s if kind == self.kind else tl.total_s,
            cuda_graphs_s=cuda_graph_total_s(self.costs, tl, dev), torch_compile_s=compiled, torch_compile_reduce_overhead_s=both,
        )

    @cached_property
    def host_syncs(self) -> list[str]:
        """Where the model reads tensor values into Python (``advice.applicability.host_syncs``)."""
        return host_syncs(self.graph)

    def memory_on(self, kind: str) -> MemoryFit:
        """What one call holds against the memory of the profile's GPU ('cuda') or host ('cpu'); for a
        training step, its peak (``step_memory_on``), all of it beyond weights and inputs as activations."""
        part = self.profile.gpu if kind == "cuda" else self.profile.host
        capacity = part.identity.memory_bytes if part is not None else None
        if self.graph.training is None:
            return memory_fit(self.graph, self.costs, kind, capacity)
        step = self.step_memory_on(kind)
        rest = step.peak_bytes - step.weights_bytes - step.inputs_bytes
        return MemoryFit(
            device=kind, weights_bytes=step.weights_bytes, inputs_bytes=step.inputs_bytes, peak_activations_bytes=max(rest, 0),
            need_bytes=step.peak_bytes, capacity_bytes=capacity, fits=step.fits,
        )

    def step_memory_on(self, kind: str) -> StepMemory:
        """A training step's memory over its ops on the profile's GPU ('cuda') or host ('cpu')."""
        part = self.profile.gpu if kind == "cuda" else self.profile.host
        capacity = part.identity.memory_bytes if part is not None else None
        cc = getattr(part.identity, "compute_capability", None) if part is not None else None
        return step_memory(self.graph, self.costs, kind, capacity, cc)

    @cached_property
    def plans(self):
        """Every (device, execution) plan, ranked, one recommended (``advice.plans``)."""
        parts = []
        for kind in ("cuda", "cpu"):
            tl = self.timeline(kind)
            if tl is None:
                continue
            parts.append(DevicePart(
                device=kind, alternatives=self.alternatives_on(kind),
                copies_s=self.placement.transfer_s if kind == "cuda" else 0.0,
                overhead_share=tl.regime_s().get("overhead", 0.0) / tl.total_s if tl.total_s else 0.0,
                missing_kernels=missing_kernels(self.graph, kind), memory=self.memory_on(kind),
            ))
        return rank_plans(parts, self.host_syncs)

    @cached_property
    def uncertain(self) -> list[str | None]:
        """Per op, why its price is uncertain on the predicted part (None: covered)."""
        return [uncertain_reason(op, c, ok, self.dev) for op, c, ok in zip(self.graph.ops, self.costs, self.supported)]

    @cached_property
    def placement(self):
        opts = self.options
        return placement(
            self.graph, self.timeline("cuda"), self.timeline("cpu"), self.device("cuda"),
            host_memory=opts.host_memory, calls=opts.calls, copies_per_call=opts.copies_per_call,
        )

    @cached_property
    def streams(self):
        gpu, tl = self.device("cuda"), self.timeline("cuda")
        if gpu is None or tl is None:
            return None
        in_b, out_b = sum(t.nbytes for t in self.graph.inputs), sum(t.nbytes for t in self.graph.outputs)
        return stream_pipeline(gpu, tl.total_s, in_b, out_b, batches=max(self.options.calls, 16))

    def at_batch(self, b: int) -> Timeline | None:
        """The eager timeline of the model at batch ``b`` on the predicted part (None if it cannot be had)."""
        graph = self._rebatcher.at(b) if self._rebatcher else None
        if graph is None:
            return None
        if graph is self.graph:
            return self.timeline()
        costs = [host_only(cost_of(op)[0]) if op.host_scalar else cost_of(op)[0] for op in graph.ops]
        return step_timeline(graph, costs, self.dev, is_module=self.is_module)

    @cached_property
    def _rebatcher(self) -> Rebatcher | None:
        if self._capture_at is None or self._batch is None or self._batch < 1:
            return None
        return Rebatcher(self._capture_at, self._batch, self.graph)

    @cached_property
    def batch_sweep(self):
        wanted = self.options.batch_sweep
        if wanted is None:
            wanted = len(self.graph.ops) <= BATCH_SWEEP_MAX_OPS
        if not wanted or self._batch is None or self._batch < 1 or self._capture_at is None:
            return None
        return batch_sweep(self._batch, self.at_batch, self.kind)

    # ---- a training step ---------------------------------------------------------------------

    @cached_property
    def training(self) -> TrainingStep | None:
        """The training step's phases, memory and alternatives (None for a forward)."""
        info = self.graph.training
        if info is None:
            return None
        tl = self.timeline()
        batch = self._batch if self._batch and self._batch > 0 else None
        alternatives = {f"optimizer_{impl}": s for impl, s in self._optimizer_alternatives_s().items()}
        bf16 = self._autocast_step_s()
        if bf16 is not None:
            alternatives["autocast_bfloat16"] = bf16
        compiled = self.alternatives.torch_compile_s
        if compiled is not None:
            alternatives["torch_compile"] = compiled
        return TrainingStep(
            optimizer=info.optimizer, implementation=info.implementation, loss=info.loss, batch=batch, parameters=info.parameters,
            phases=phase_times(self.graph, self.costs, tl), predicted_s=tl.total_s,
            samples_per_s=batch / tl.total_s if batch and tl.total_s else None, memory=self.step_memory_on(self.kind),
            alternatives=alternatives,
        )

    def _optimizer_alone_s(self, implementation: str) -> float | None:
        """The optimizer step alone over this model's parameters in ``implementation``, on the
        predicted part (None where torch cannot build it)."""
        info = self.graph.training
        step = TrainStep(optimizer=info.optimizer, implementation=implementation, loss="sum")
        try:
            graph = capture(ParameterSet(info.parameter_shapes), (), train=step, device=capture_device_for(self.kind, self.options))
        except (CaptureError, RuntimeError, ValueError, TypeError):
            return None
        ops = [op for op in graph.ops if op.phase == "optimizer"]
        costs = [host_only(cost_of(op)[0]) if op.host_scalar else cost_of(op)[0] for op in ops]
        tl = step_timeline(replace(graph.with_ops(ops), module_calls=0), costs, self.dev, is_module=False)
        return tl.total_s - tl.sync_s

    def _optimizer_alternatives_s(self) -> dict[str, float]:
        """The step with each other optimizer implementation: its optimizer alone swapped for the other's."""
        info = self.graph.training
        mine = self._optimizer_alone_s(info.implementation)
        if mine is None:
            return {}
        out = {}
        for impl in ("foreach", "fused", "for-loop"):
            if impl == info.implementation:
                continue
            other = self._optimizer_alone_s(impl)
            if other is not None:
                out[impl] = max(self.total_s - mine + other, 0.0)
        return out

    def _autocast_step_s(self) -> float | None:
        """The step with the forward and loss under bf16 autocast, for float32 models on a part with a
        bf16 matmul curve (None otherwise, or when it cannot be captured)."""
        info = self.graph.training
        if self._capture_step is None or not info.parameter_shapes or info.parameter_shapes[0][1] != torch.float32:
            return None
        if "bfloat16" not in self.dev.matmul:
            return None
        try:
            graph = self._capture_step(replace(self.options.train, autocast="bfloat16"))
        except (CaptureError, RuntimeError):
            return None
        costs = [host_only(cost_of(op)[0]) if op.host_scalar else cost_of(op)[0] for op in graph.ops]
        return step_timeline(graph, costs, self.dev, is_module=self.is_module).total_s

    def _best_batch(self) -> tuple[int, float] | None:
        """(batch, samples/s): the batch of the sweep with the most samples per second whose step fits
        the predicted device's memory."""
        sweep = self.batch_sweep
        if sweep is None or self._rebatcher is None:
            return None
        part = self.profile.gpu if self.kind == "cuda" else self.profile.host
        capacity = part.identity.memory_bytes if part is not None else None
        best = None
        for point in sweep.points:
            graph = self._rebatcher.at(point.batch)
            if graph is None or graph.training is None or point.predicted_s <= 0:
                continue
            costs = [host_only(cost_of(op)[0]) if op.host_scalar else cost_of(op)[0] for op in graph.ops]
            mem = step_memory(graph, costs, self.kind, capacity, getattr(part.identity, "compute_capability", None))
            rate = point.batch / point.predicted_s
            if mem.fits and (best is None or rate > best[1]):
                best = (point.batch, rate)
        return best

    # ---- the report --------------------------------------------------------------------------

    def report(self) -> Report:
        tl = self.timeline()
        python_s = self.dev.python_call_s
        # a training step's host costs run at its phases' speed among the others (advice.training)
        training = self.dev.overheads.training if self.graph.training is not None else None
        switch = training.phase_switch if training is not None else {}
        ops = []
        # built without validation, one per op (thousands in a large model): the values come from
        # the model of time, not from outside; a report read back from JSON is validated whole
        for op, cost, ok, t, why in zip(self.graph.ops, self.costs, self.supported, tl.ops, self.uncertain):
            ops.append(
                OpReport.model_construct(
                    index=op.index, target=op.name, module=op.module or op.grad_of, module_type=op.module_type, source=op.source,
                    category=cost.category, inputs=_tensor_infos(op.tensor_inputs()), outputs=_tensor_infos(op.outputs),
                    flops=cost.flops, bytes_read=cost.bytes_read, bytes_written=cost.bytes_written, kernels=cost.kernels,
                    kernel_s=t.kernel_s, kernels_busy_s=kernels_busy_s(op, cost, self.dev, t.kernel_s, t.compute_s, t.memory_s),
                    host_s=t.host_s, python_calls=op.python_calls, python_s=op.python_calls * python_s * switch.get(op.phase, 1.0),
                    compute_s=t.compute_s, memory_s=t.memory_s,
                    predicted_s=t.predicted_s, start_s=t.start_s, issue_s=t.issue_s, regime=t.regime, bound_by=t.bound_by, waited_s=t.waited_s, work_regime=t.work_regime or None, supported=ok,
                    kernel_source=kernel_source(op, cost, self.dev), uncertain=why, phase=op.phase,
                )
            )
        flops = sum(c.flops for c in self.costs)
        nbytes = sum(c.bytes_read + c.bytes_written for c in self.costs)
        total_s = tl.total_s
        totals = Totals(
            predicted_s=total_s, flops=flops, bytes=nbytes, kernels=sum(c.kernels for c in self.costs), ops=len(ops),
            host_s=tl.host_s, device_busy_s=tl.device_busy_s,
            achieved_flop_per_s=flops / total_s if total_s else 0.0, achieved_bytes_per_s=nbytes / total_s if total_s else 0.0,
            regime_s=tl.regime_s(),
        )
        unsupported = Counter(op.name for op, ok in zip(self.graph.ops, self.supported) if not ok)
        fusion, _ = self.fusion
        sweep = self.batch_sweep
        report = Report(
            model=self.name,
            profile=ProfileRef(
                name=self.profile.name, device=self.dev.name, kind=self.kind, source=self.profile.source_file,
                host_scale_read=self.host_read.scale if self.host_read is not None and self.host_read.applied else None,
            ),
            capture_mode=self.graph.capture_mode, allow_tf32=self.dev.modes.matmul_tf32, conv_tf32=self.dev.modes.conv_tf32, ops=ops, total=totals,
            modules=module_rollups(ops), placement=self.placement, plans=self.plans, uncertain=uncertain_ops(ops, total_s),
            memory=[self.memory_on(k) for k in ("cuda", "cpu") if self.timeline(k) is not None],
            fusion=fusion, unsupported_ops=dict(unsupported),
            warnings=list(self.graph.warnings), alternatives=self.alternatives, streams=self.streams, batch_sweep=sweep,
            padding=padding_advice(self.graph.ops, self.costs, self.kernels(), self.dev),
            layout=layout_advice(self.graph.ops, self.costs, self.kernels(), self.dev),
            training=self.training,
        )
        report.warnings.extend(profile_caveats(self.profile, self.kind))  # a quick profile, failed checks, a busy machine
        if self.host_read is not None and self.host_read.warning:
            report.warnings.append(self.host_read.warning)
        report.advice = advice_lines(report, copies_per_call=self.options.copies_per_call)
        if report.training is not None:
            if self.dev.overheads.training is None:
                report.warnings.append(UNCALIBRATED_HOST)
            elif not optimizer_measured(self.graph, self.dev):
                info = self.graph.training
                report.warnings.append(OPTIMIZER_UNMEASURED.format(key=f"{info.optimizer} ({info.implementation})"))
            checkpointing = checkpointing_estimate(self.graph, self.costs, report.training.memory, tl)
            report.advice[:0] = training_lines(report.training, checkpointing=checkpointing, best_batch=self._best_batch())
        timed = sum(op.kernel_source == "table" for op in ops)
        if timed:
            with_kernels = sum(op.kernel_source != "none" for op in ops)
            report.advice.append(f"kernel times: {timed} of {with_kernels} ops from the profile's shape-exact kernel table (roofline calibrate --for), the rest from its curves")
        rec = report.recommended_plan
        if sweep is not None and (rec is None or rec.device == self.kind):  # a sweep of the device the plan runs on
            report.advice.append(describe_batch_sweep(sweep, self._batch))
        return report


def step_timeline(graph: CapturedGraph, costs, dev: DeviceModel, *, is_module: bool = True, kernels=None) -> Timeline:
    """``predict_timeline``, with a training step's host costs where the profile measured them
    (``advice.training.training_host_cost``)."""
    host = training_host_cost(graph, costs, dev, is_module=is_module) if graph.training is not None else None
    if host is None:
        return predict_timeline(graph, costs, dev, is_module=is_module, kernels=kernels)
    host_cost, start_s = host
    return predict_timeline(graph, costs, dev, is_module=is_module, kernels=kernels, host_cost=host_cost, start_host_s=start_s)


def uncertain_ops(ops: list[OpReport], total_s: float) -> UncertainOps:
    """The ops whose price is flagged, their count by aten op, and the share of the time they carry."""
    flagged = [op for op in ops if op.uncertain]
    time_s = sum(op.predicted_s for op in flagged)
    return UncertainOps(
        ops=len(flagged), predicted_s=time_s, share=min(time_s / total_s, 1.0) if total_s else 0.0,
        by_op=dict(Counter(op.target for op in flagged)), reasons={op.target: op.uncertain for op in flagged},
    )


def _tensor_infos(metas) -> list[TensorInfo]:
    return [TensorInfo.model_construct(shape=list(t.shape), dtype=str(t.dtype).replace("torch.", "")) for t in metas]


def module_rollups(ops: list[OpReport]) -> list[ModuleRollup]:
    """Time by top-level child module (``layers.3`` for ``layers.3.attn.q``), largest first."""
    acc: dict[str, dict] = defaultdict(lambda: dict(ops=0, predicted_s=0.0, flops=0, bytes=0, regime_s=Counter(), measured=None, type=""))
    for op in ops:
        parts = op.module.split(".") if op.module else []
        key = ".".join(parts[:2]) if len(parts) >= 2 and parts[1].isdigit() else (parts[0] if parts else "(top level)")
        a = acc[key]
        a["ops"] += 1
        a["predicted_s"] += op.predicted_s
        a["flops"] += op.flops
        a["bytes"] += op.bytes_read + op.bytes_written
        a["regime_s"].update(op.regime_parts())
        if op.measured_s is not None:
            a["measured"] = (a["measured"] or 0.0) + op.measured_s
        if not a["type"] and op.module_type and op.module.count(".") <= key.count("."):
            a["type"] = op.module_type
    rows = [
        ModuleRollup(module=k, module_type=v["type"], ops=v["ops"], predicted_s=v["predicted_s"], flops=v["flops"], bytes=v["bytes"], regime_s=dict(v["regime_s"]), measured_s=v["measured"])
        for k, v in acc.items()
    ]
    return sorted(rows, key=lambda r: -r.predicted_s)


def analyze(model, example_inputs: Any = (), profile: DeviceProfile | str | Path | None = None, *, kwargs: dict | None = None,
            name: str | None = None, materialize=None, **options) -> Report:
    """Capture, price and predict ``model(*example_inputs, **kwargs)`` on a profile's GPU or CPU.

    ``example_inputs`` is a tuple of positional inputs, or a dict of keyword inputs; ``profile`` a
    ``DeviceProfile``, a profile name or path, or None for the newest saved one. Other keywords are
    ``Options`` fields (``device``, ``allow_tf32``, ``calls``, ``host_memory``, ``batch_sweep``, ...);
    ``train=True`` (or a ``TrainStep``) analyzes one training step instead of the forward.
    """
    if "user_files" in options:
        options["user_files"] = tuple(str(f) for f in options["user_files"] or ())
    if isinstance(options.get("train"), bool):  # train=True: torch's default step (adamw, the device's implementation)
        options["train"] = TrainStep() if options["train"] else None
    return Analysis.of(model, example_inputs, kwargs, profile, Options(**options), name=name, materialize=materialize).report()


def placement_sweep(entries, profile: DeviceProfile, options: Options) -> PlacementSweep | None:
    """CPU vs GPU plus copies for each ``(label, model, inputs)`` of a model file's ``sweep()``."""
    if profile.gpu is None:
        return None
    points = []
    each = Options(device="cuda", allow_tf32=options.allow_tf32, conv_tf32=options.conv_tf32, host_memory=options.host_memory, batch_sweep=False, capture_device="cpu", host="profile")
    devices = {"cuda": DeviceModel(profile.gpu, "cuda", each.modes()), "cpu": DeviceModel(profile.host, "cpu", each.modes())}
    for label, model, inputs in entries:
        one = Analysis.of(model, inputs, None, profile, each, devices=devices)
        place = one.placement
        points.append(PlacementPoint(size=size_of(label), label=label, cpu_s=place.cpu_s, gpu_s=place.gpu_s, transfer_s=place.transfer_s, recommended=place.recommended))
    parameter = "size"
    if points and "=" in points[0].label:
        parameter = points[0].label.split("=", 1)[0].strip()
    return PlacementSweep(parameter=parameter, points=points, crossover=crossover([(p.size, p.recommended) for p in points]))
