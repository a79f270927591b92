"""The report: what ``roofline advise`` prints, writes with ``--json``, and ``roofline.analyze`` returns.

One pydantic schema with a ``schema_version``; other tools read the JSON (docs/design.md, "JSON
report"). Every field is typed. Times are seconds, sizes bytes, rates per second; ``measured_s``
fields stay null unless measured.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

REPORT_SCHEMA_VERSION = 2

Regime = Literal["compute", "memory", "overhead", "none"]


def regime_parts(predicted_s: float, waited_s: float, work_regime: str) -> dict[str, float]:
    """What one op adds to the run (``predicted_s``), by regime: ``waited_s`` of it, the device idle
    waiting for the host, is overhead; the rest goes to ``work_regime``, its kernel's own. Summed
    over a run it is the split a measured run gets: the device's idle share is overhead."""
    waited = min(waited_s, predicted_s)
    parts = {"overhead": waited} if waited > 0 else {}
    if predicted_s > waited:
        parts[work_regime] = parts.get(work_regime, 0.0) + predicted_s - waited
    return parts


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProfileRef(_Model):
    name: str = Field(description="Profile name.")
    device: str = Field(description="The device predicted for (GPU name, or CPU model).")
    kind: Literal["cuda", "cpu"] = Field(description="Which part of the profile the prediction used.")
    source: str | None = Field(default=None, description="File the profile was read from.")
    host_scale_read: float | None = Field(
        default=None,
        description="The host-speed index read on this machine before pricing, over calibration's: every host cost of the "
        "prediction is the profile's times this. None: host costs at the profile's level (off the profiled machine, or --host profile).",
    )


class TensorInfo(_Model):
    shape: list[int]
    dtype: str


class OpReport(_Model):
    index: int = Field(description="Position in execution order.")
    target: str = Field(description="The aten op, e.g. aten.mm.default.")
    module: str = Field(description="Dotted path of the nn.Module that issued it; '' at top level.")
    module_type: str = Field(default="", description="Class name of that module.")
    source: str | None = Field(default=None, description="file:line of the user's code, when known.")
    category: str = Field(description="Cost family: matmul, conv, attention, pointwise, transcendental, reduction, norm, data_movement, creation, view, other.")
    inputs: list[TensorInfo] = Field(default_factory=list, description="Tensor inputs (shape, dtype).")
    outputs: list[TensorInfo] = Field(default_factory=list, description="Tensor outputs (shape, dtype).")
    flops: int = Field(ge=0, description="Floating-point operations (a multiply-add is 2).")
    bytes_read: int = Field(ge=0, description="Compulsory bytes read by the kernel.")
    bytes_written: int = Field(ge=0, description="Compulsory bytes written by the kernel.")
    kernels: int = Field(ge=0, description="Device kernels launched.")
    kernel_s: float = Field(ge=0, description="Predicted device time of its kernels, seconds: what the timeline adds, gaps between its kernels included.")
    kernels_busy_s: float | None = Field(
        default=None, ge=0,
        description="Where it differs from kernel_s: its kernels' summed time without the gaps between them, as the profiler shows an op "
        "(a dense GPU convolution priced from points that measured both), seconds; null elsewhere.",
    )
    host_s: float = Field(ge=0, description="Predicted host time to issue it (dispatch + module calls + the model's own Python before it), seconds.")
    python_calls: int = Field(default=0, ge=0, description="Python function calls of the model's own code (not torch's, not the standard library's) since the op before.")
    python_s: float = Field(default=0.0, ge=0, description="The part of host_s those Python calls take, seconds.")
    compute_s: float = Field(ge=0, description="FLOPs over the calibrated compute rate at this size, seconds.")
    memory_s: float = Field(ge=0, description="Bytes over the calibrated bandwidth at this size, seconds.")
    predicted_s: float = Field(ge=0, description="What this op adds to the run's end on the timeline, seconds.")
    start_s: float = Field(ge=0, description="Predicted start on the device timeline, seconds from the first issue.")
    issue_s: float = Field(default=0.0, ge=0, description="When the host has issued it (the end of its host_s), seconds from the first issue.")
    regime: Regime = Field(description="compute, memory or overhead bound; none for ops that take no time.")
    bound_by: str = Field(description="The term that set the time: compute, memory, floor, host or none.")
    waited_s: float = Field(default=0.0, ge=0, description="Of predicted_s, the device idle before the op's work (waiting for the host): overhead in time by regime.")
    work_regime: Regime | None = Field(default=None, description="The kernel's own regime (its larger term; overhead at the launch floor), where the rest of predicted_s goes in time by regime; None: regime.")

    def regime_parts(self) -> dict[str, float]:
        """What the op adds to the run, by regime (``regime_parts``)."""
        return regime_parts(self.predicted_s, self.waited_s, self.work_regime or self.regime)
    phase: Literal["forward", "backward", "optimizer"] = Field(
        default="forward", description="Of a training step (--train): forward (the loss included), backward or optimizer; forward otherwise. A backward op's module is the module of the forward op it differentiates.",
    )
    supported: bool = Field(description="False when no formula prices this op (bytes only, FLOPs 0).")
    uncertain: str | None = Field(
        default=None, description="Why this op's price cannot be stood behind (no formula, no calibrated family for its kernel, a dtype without a curve); null when covered.",
    )
    kernel_source: Literal["curve", "table", "mixed", "none"] = Field(
        default="curve", description="Where kernel_s comes from: the calibrated curves, the profile's shape-exact kernel table (roofline calibrate --for), both (a fused op's parts), or none (no kernel).",
    )
    measured_s: float | None = Field(
        default=None, description="Measured with --measure: the summed device time of its kernels on a GPU (torch.profiler), wall time on the CPU; else null."
    )
    error: float | None = Field(
        default=None, description="(predicted - measured) / measured, predicted being kernels_busy_s (else kernel_s) on a GPU and predicted_s on the CPU."
    )
    roofline_fraction: float | None = Field(default=None, description="Measured: roofline-bound time over measured time (1 = at the roof).")


class Totals(_Model):
    predicted_s: float = Field(ge=0, description="Eager forward, inputs on the device, one synchronized call after warm-up, seconds.")
    measured_s: float | None = Field(default=None, description="Measured with --measure, else null.")
    flops: int = Field(ge=0)
    bytes: int = Field(ge=0, description="bytes_read + bytes_written over all ops.")
    kernels: int = Field(ge=0)
    ops: int = Field(ge=0, description="aten ops captured.")
    host_s: float = Field(ge=0, description="Total host issue time, seconds.")
    device_busy_s: float = Field(ge=0, description="Sum of kernel times, seconds.")
    achieved_flop_per_s: float = Field(ge=0, description="flops / predicted_s.")
    achieved_bytes_per_s: float = Field(ge=0, description="bytes / predicted_s.")
    regime_s: dict[str, float] = Field(description="Predicted time by regime, seconds.")
    measured_spread_s: float | None = Field(default=None, description="IQR of the measured total, seconds.")
    host_scale: float | None = Field(
        default=None, gt=0,
        description="Measured with --measure: the host-speed index (calibration's mix of representative ops, timed in blocks alternating "
        "with the model) now, over its time at calibration (with --host now: over the reading before pricing, profile.host_scale_read). "
        "Above 1: the host ran slower than when the profile was made.",
    )
    predicted_at_host_now_s: float | None = Field(
        default=None, ge=0,
        description="The prediction with every host cost times host_scale: what the model of time says for the host as it ran "
        "while the model was measured, seconds.",
    )


class ModuleRollup(_Model):
    module: str
    module_type: str = ""
    ops: int
    predicted_s: float
    flops: int
    bytes: int
    regime_s: dict[str, float]
    measured_s: float | None = None


class Placement(_Model):
    recommended: Literal["cpu", "cuda"] = Field(description="Where this model runs faster, copies included.")
    cpu_s: float = Field(ge=0, description="Predicted time of one call on the CPU alone, seconds.")
    gpu_s: float = Field(ge=0, description="Predicted time of one call on the GPU, inputs already there, seconds.")
    transfer_s: float = Field(ge=0, description="Copies one call implies: inputs in and outputs out (and weights if not resident), seconds.")
    host_memory: Literal["pinned", "pageable"] = Field(default="pageable")
    weights_resident: bool = Field(default=True, description="Whether weights are assumed already on the GPU.")
    calls: int = Field(default=1, ge=1, description="Calls in the loop the comparison is for.")
    reason: str = Field(description="One sentence: why.")


class FusionGroup(_Model):
    ops: list[int] = Field(description="Op indices fused into one kernel.")
    kind: str = Field(description="pointwise chain, reduction epilogue, matmul epilogue, ...")
    module: str = Field(default="")
    predicted_gain_s: float = Field(ge=0, description="Predicted time saved per call, seconds.")
    bytes_saved: int = Field(ge=0, default=0)
    kernels_saved: int = Field(ge=0, default=0)


class PaddingAdvice(_Model):
    size: int = Field(ge=1, description="A GEMM dimension (N or K) as the model has it, e.g. a vocabulary of 50257.")
    padded: int = Field(ge=1, description="The size padded to a multiple of 64.")
    gemms: int = Field(ge=0, description="GEMMs of the graph with this dimension.")
    modules: list[str] = Field(default_factory=list, description="Up to three modules those GEMMs run in.")
    before_s: float = Field(ge=0, description="Predicted time of those GEMMs as they are, seconds.")
    after_s: float = Field(ge=0, description="Predicted time of those GEMMs with the dimension padded, seconds.")


class LayoutAdvice(_Model):
    module: str = Field(description="The module whose convolutions the advice is for ('' at top level).")
    convs: int = Field(ge=1, description="Its convolutions cuDNN runs one group at a time for their channels-last input.")
    before_s: float = Field(ge=0, description="Their predicted time as they are (device, and the host's launches past the first), seconds.")
    after_s: float = Field(ge=0, description="Their predicted time on an NCHW input, the copy into it included, seconds.")


class BatchPoint(_Model):
    batch: int = Field(ge=1, description="Batch size (the leading dimension of every input).")
    predicted_s: float = Field(ge=0, description="Predicted forward time at this batch size, seconds.")
    per_sample_s: float = Field(ge=0, description="predicted_s / batch.")
    regime: Regime = Field(description="The regime with the largest share of the time.")
    regime_s: dict[str, float] = Field(default_factory=dict, description="Predicted time by regime, seconds.")
    measured_s: float | None = Field(default=None, description="Measured with --measure, else null.")


class BatchSweep(_Model):
    """Time per sample over batch size (seed 001's doubling test, made quantitative)."""

    device: Literal["cuda", "cpu"]
    points: list[BatchPoint]
    leaves_overhead_at: int | None = Field(default=None, description="Smallest batch whose dominant regime is no longer overhead.")
    compute_bound_at: int | None = Field(default=None, description="Smallest batch whose dominant regime is compute.")
    doubling_ratio: float | None = Field(default=None, description="time(2B)/time(B) at the model's own batch: ~1 overhead-bound, ~2 throughput-bound.")


class PlacementPoint(_Model):
    size: int = Field(description="Problem size (the swept parameter).")
    label: str
    cpu_s: float = Field(ge=0)
    gpu_s: float = Field(ge=0, description="GPU compute only, inputs already there.")
    transfer_s: float = Field(ge=0, description="Copies in and out.")
    recommended: Literal["cpu", "cuda"]
    measured_cpu_s: float | None = None
    measured_gpu_total_s: float | None = Field(default=None, description="Measured GPU time including copies.")


class PlacementSweep(_Model):
    """CPU against GPU plus copies over problem size; where the GPU starts to win."""

    parameter: str = Field(description="What was swept, e.g. 'dim' or 'numel'.")
    points: list[PlacementPoint]
    crossover: int | None = Field(default=None, description="Smallest size from which the GPU (copies included) wins, if any.")
    measured_crossover: int | None = None


class Alternatives(_Model):
    """The same forward predicted under other ways of running it (GPU only, except ``fused_s``)."""

    eager_s: float = Field(ge=0, description="Eager PyTorch: the report's total.")
    fused_s: float = Field(ge=0, description="Every fusion group run as one kernel, eagerly.")
    cuda_graphs_s: float | None = Field(default=None, description="The whole forward captured in a CUDA graph and replayed.")
    torch_compile_s: float | None = Field(default=None, description="torch.compile (Inductor's fusion, its generated code's launches).")
    torch_compile_reduce_overhead_s: float | None = Field(
        default=None, description='torch.compile(mode="reduce-overhead"): Inductor\'s fusion replayed as a CUDA graph.'
    )

    def by_name(self) -> dict[str, float]:
        """{'eager': ..., 'cuda_graphs': ..., 'torch_compile': ..., 'torch_compile_reduce_overhead': ...}
        for those predicted: the names ``--measure`` uses for the measured alternatives."""
        out = {"eager": self.eager_s}
        for name in ALTERNATIVES:
            value = getattr(self, f"{name}_s")
            if value is not None:
                out[name] = value
        return out


ALTERNATIVES = ("cuda_graphs", "torch_compile", "torch_compile_reduce_overhead")

Execution = Literal["eager", "torch_compile", "cuda_graphs", "torch_compile_reduce_overhead"]


class Plan(_Model):
    """One way to run the model: a device and an execution mode, priced per call."""

    device: Literal["cuda", "cpu"]
    execution: Execution
    predicted_s: float | None = Field(default=None, ge=0, description="Per call after warm-up, the copies the code implies included on the GPU, seconds; null when the profile cannot price it.")
    copies_s: float = Field(default=0.0, ge=0, description="Of predicted_s, the host<->device copies, seconds.")
    applicable: bool = Field(description="Whether this model can run this way (host syncs, dtypes the device lacks, memory).")
    reason: str = Field(description="Why it wins, or why it does not apply, or what limits it.")
    recommended: bool = Field(default=False, description="The one plan the report recommends.")


class UncertainOps(_Model):
    """Ops whose price the tool cannot stand behind, and how much of the predicted time they carry."""

    ops: int = Field(default=0, ge=0, description="How many ops.")
    predicted_s: float = Field(default=0.0, ge=0, description="Their predicted time, seconds.")
    share: float = Field(default=0.0, ge=0, le=1, description="predicted_s over the predicted total.")
    by_op: dict[str, int] = Field(default_factory=dict, description="aten op: count.")
    reasons: dict[str, str] = Field(default_factory=dict, description="aten op: why its price is uncertain.")


class MemoryFit(_Model):
    """What one call holds in device memory against the device's capacity (a lower bound: allocator
    fragmentation, library workspaces and the CUDA context come on top)."""

    device: Literal["cuda", "cpu"]
    weights_bytes: int = Field(ge=0, description="Parameters and buffers.")
    inputs_bytes: int = Field(ge=0, description="The example inputs.")
    peak_activations_bytes: int = Field(ge=0, description="Most intermediate values alive at once over the op order.")
    need_bytes: int = Field(ge=0, description="weights + inputs + peak activations.")
    capacity_bytes: int | None = Field(default=None, description="The device's memory (the GPU's, or the host's RAM); null when the profile does not say.")
    fits: bool = Field(description="need_bytes within capacity_bytes (true when the capacity is unknown).")


class PhaseTime(_Model):
    """One phase of a training step on the predicted timeline."""

    phase: Literal["forward", "backward", "optimizer"]
    ops: int = Field(ge=0)
    predicted_s: float = Field(ge=0, description="What the phase's ops add to the step's end, seconds.")
    alone_s: float | None = Field(
        default=None, ge=0,
        description="The phase run alone from an idle host and device, then a synchronize: what measured_s times, seconds.",
    )
    host_s: float = Field(ge=0, description="Host issue time of its ops, seconds.")
    kernel_s: float = Field(ge=0, description="Device time of its kernels, seconds.")
    flops: int = Field(ge=0)
    bytes: int = Field(ge=0)
    kernels: int = Field(ge=0)
    measured_s: float | None = Field(default=None, description="--measure --train: the phase's median wall time between synchronizations (compare with alone_s), seconds.")


class MemoryPoint(_Model):
    index: int = Field(ge=0, description="The op after which this much is allocated.")
    phase: Literal["forward", "backward", "optimizer"]
    bytes: int = Field(ge=0)


class StepMemory(_Model):
    """Device memory over one training step, predicted from the capture: what stays (parameters and
    buffers, inputs, optimizer state), gradients as backward makes them, every other value from the op
    that makes it to its last reader, and the allocator's workspace."""

    device: Literal["cuda", "cpu"]
    weights_bytes: int = Field(ge=0, description="Parameters and buffers.")
    inputs_bytes: int = Field(ge=0, description="The batch.")
    optimizer_state_bytes: int = Field(ge=0, description="Optimizer state on the device (moments, momentum buffers).")
    gradients_bytes: int = Field(ge=0, description="Parameters' gradients at the end of the step.")
    saved_activations_bytes: int = Field(ge=0, description="Values alive at the end of the forward and loss that the backward pass reads.")
    peak_bytes: int = Field(ge=0, description="Most bytes allocated at once over the step.")
    peak_index: int = Field(ge=0, description="The op at the peak.")
    peak_phase: Literal["forward", "backward", "optimizer"]
    at_peak: dict[str, int] = Field(default_factory=dict, description="The peak by part: weights, inputs, optimizer_state, gradients, activations (other values alive), workspace (cuBLAS's, and a reduction's staging buffer when the peak falls in one).")
    workspace_bytes: int = Field(ge=0, description="Library workspaces and allocator rounding (an estimate on a GPU; 0 on the CPU).")
    capacity_bytes: int | None = Field(default=None, description="The device's memory; null when the profile does not say.")
    fits: bool = Field(description="peak_bytes within capacity_bytes (true when the capacity is unknown).")
    timeline: list[MemoryPoint] = Field(default_factory=list, description="Bytes allocated after each op (at most a few hundred points; phase ends and the peak always kept).")
    measured_peak_bytes: int | None = Field(default=None, description="--measure --train: torch.cuda.max_memory_allocated over a step on a GPU; on the CPU, the resident state plus the profiler's peak of allocations during the step.")


class TrainingStep(_Model):
    """A training step (--train): forward and loss, backward, optimizer step, per phase and in memory."""

    optimizer: str = Field(description="adamw, adam or sgd.")
    implementation: str = Field(description="foreach, fused or for-loop: how the optimizer updates its tensors.")
    loss: str = Field(description="What the loss is, in words.")
    batch: int | None = Field(default=None, description="The inputs' leading dimension.")
    parameters: int = Field(ge=0, description="Trainable parameter tensors.")
    phases: list[PhaseTime]
    predicted_s: float = Field(ge=0, description="One step, synchronized at its end, seconds.")
    samples_per_s: float | None = Field(default=None, description="batch / predicted_s.")
    measured_s: float | None = Field(default=None, description="--measure: one step (gradients zeroed, forward, loss, backward, optimizer, synchronize), median, seconds.")
    memory: StepMemory
    alternatives: dict[str, float] = Field(default_factory=dict, description="The step predicted otherwise, seconds: optimizer implementations (optimizer_foreach, optimizer_fused, optimizer_for-loop), torch_compile.")


class StreamPipeline(_Model):
    """A stream of independent batches: copy in, compute, copy out (seed 004)."""

    batches: int = Field(ge=1)
    h2d_pageable_s: float = Field(ge=0)
    h2d_pinned_s: float = Field(ge=0)
    compute_s: float = Field(ge=0)
    d2h_pageable_s: float = Field(ge=0)
    d2h_pinned_s: float = Field(ge=0)
    sequential_pageable_s: float = Field(ge=0, description="One stream, pageable memory: batches x (in + compute + out).")
    sequential_pinned_s: float = Field(ge=0, description="One stream, pinned memory.")
    streams_pinned_s: float = Field(ge=0, description="Pinned memory, copies and compute on separate streams: sum + (batches - 1) x the slowest stage.")
    pinned_gain: float | None = None
    streams_gain: float | None = None


class GainCheck(_Model):
    """A measured alternative (``--measure``) against its predicted gain over eager."""

    alternative: str = Field(description="cuda_graphs, torch_compile or torch_compile_reduce_overhead.")
    predicted_s: float
    measured_s: float
    measured_eager_s: float = Field(description="Eager, timed in rounds alternating with the alternative.")
    predicted_gain_s: float
    measured_gain_s: float
    gain_error: float | None = Field(default=None, description="(predicted gain - measured gain) / |measured gain|.")
    host_scale: float | None = Field(default=None, description="The host-speed index's scale timed beside this alternative.")
    predicted_eager_now_s: float | None = None
    predicted_now_s: float | None = None
    predicted_gain_now_s: float | None = Field(default=None, description="The gain predicted at the host's speed beside the alternative.")
    gain_error_now: float | None = None


class DecodeReport(_Model):
    """A causal LM serving loop: the prompt's prefill, then one forward per new token with a growing
    key-value cache (``roofline advise --decode N``)."""

    batch: int = Field(ge=1, description="Sequences decoded together.")
    prompt_tokens: int = Field(ge=1, description="Prompt length per sequence.")
    new_tokens: int = Field(ge=1, description="Decode steps: tokens generated per sequence.")
    prefill_s: float = Field(ge=0, description="The prefill alone (one synchronized forward over the prompt), seconds.")
    decode_s: float = Field(ge=0, description="The N steps after the prefill, run back to back without a host sync between them, seconds.")
    total_s: float = Field(ge=0, description="Prefill and steps in one loop, synchronized once at the end, seconds.")
    per_token_s: float = Field(ge=0, description="decode_s / new_tokens: one step, one token per sequence, seconds.")
    step_s: list[float] = Field(description="What each step adds to the loop's end, seconds, in order.")
    step_regime_s: dict[str, float] = Field(description="The last step's predicted time by regime, seconds.")
    step_ops: int = Field(ge=0, description="aten ops of one step.")
    step_flops: int = Field(ge=0, description="FLOPs of the last step.")
    step_bytes: int = Field(ge=0, description="Compulsory bytes of the last step (weights and the cache read once each at least).")
    weights_bytes: int = Field(ge=0, description="Parameters and buffers, read by every step.")
    cache_bytes_prefill: int = Field(ge=0, description="The key-value cache after the prefill, bytes.")
    cache_bytes_final: int = Field(ge=0, description="The key-value cache after the last step, bytes.")
    cache_bytes_per_token: int = Field(ge=0, description="What each step adds to the cache, bytes (all sequences).")
    memory_floor_per_token_s: float = Field(ge=0, description="Weights plus the mean cache read once at the calibrated peak bandwidth: no step can be faster, seconds.")
    cuda_graphs_per_token_s: float | None = Field(default=None, description="One step captured in a CUDA graph and replayed (host launch cost gone), seconds.")
    steps_derived: bool = Field(description="True: steps beyond the three captured were computed from their fit over the cache length; False: captured each.")
    measured_prefill_s: float | None = Field(default=None, description="--measure: the prefill alone, seconds.")
    measured_total_s: float | None = Field(default=None, description="--measure: prefill and steps as one loop, synchronized once, seconds.")
    measured_per_token_s: float | None = Field(default=None, description="--measure: (loop - prefill) / new_tokens, seconds.")
    measured_spread_s: float | None = Field(default=None, description="--measure: IQR of the measured loop, seconds.")
    host_scale: float | None = Field(default=None, gt=0, description="--measure: the host-speed index's scale timed beside the loop.")
    per_token_now_s: float | None = Field(default=None, description="--measure: per token predicted at the host scale of the measurement, seconds.")
    total_now_s: float | None = Field(default=None, description="--measure: the loop predicted at that host scale, seconds.")


def _pandas(what: str):
    try:
        import pandas
    except ImportError:
        from roofline.errors import RooflineError

        raise RooflineError(f"report.{what}() needs pandas: pip install 'roofline[frames]' (or pip install pandas)") from None
    return pandas


class Report(_Model):
    schema_version: Literal[2] = REPORT_SCHEMA_VERSION
    model: str = Field(description="Model name (the model file's stem, or the callable's name).")
    profile: ProfileRef
    capture_mode: str = Field(description="fake (fake tensors: no memory allocated) or real (ran on real CPU tensors: a model small enough to run in milliseconds, or one whose control flow needs tensor values).")
    allow_tf32: bool = Field(default=False, description="Whether float32 matmuls were priced on TF32 tensor cores.")
    conv_tf32: bool = Field(default=True, description="Whether float32 cuDNN convolutions were priced on TF32 tensor cores.")
    ops: list[OpReport]
    total: Totals
    modules: list[ModuleRollup] = Field(default_factory=list)
    placement: Placement
    plans: list[Plan] = Field(default_factory=list, description="Every (device, execution) plan, best applicable first; exactly one is recommended.")
    uncertain: UncertainOps = Field(default_factory=UncertainOps, description="Ops the prediction cannot stand behind.")
    memory: list[MemoryFit] = Field(default_factory=list, description="Memory one call holds against each device part's capacity.")
    fusion: list[FusionGroup] = Field(default_factory=list)
    padding: list[PaddingAdvice] = Field(default_factory=list, description="GPU: GEMM dimensions whose padding to a multiple of 64 cuts their GEMMs' predicted time by more than 10 %.")
    layout: list[LayoutAdvice] = Field(default_factory=list, description="GPU: convolutions whose channels-last input sends cuDNN to a loop over groups, where an NCHW input cuts their predicted time by more than 10 %.")
    advice: list[str] = Field(default_factory=list, description="Recommendations in plain words.")
    unsupported_ops: dict[str, int] = Field(default_factory=dict, description="aten ops without a formula: count. They still cost their bytes.")
    warnings: list[str] = Field(default_factory=list)
    batch_sweep: BatchSweep | None = Field(default=None, description="Time per sample over batch size, when computed.")
    placement_sweep: PlacementSweep | None = Field(default=None, description="CPU vs GPU over problem size, when the model file has a sweep().")
    alternatives: Alternatives | None = Field(default=None, description="The forward predicted fused, graphed and compiled.")
    streams: StreamPipeline | None = Field(default=None, description="GPU: a stream of batches with copies, sequential against overlapped.")
    measured_alternatives_s: dict[str, float] = Field(default_factory=dict, description="--measure on a GPU: measured time of each alternative.")
    gain_checks: list[GainCheck] = Field(default_factory=list, description="--measure on a GPU: each alternative's gain, predicted against measured.")
    decode: DecodeReport | None = Field(default=None, description="--decode N: prefill plus N decode steps with the key-value cache.")
    training: TrainingStep | None = Field(default=None, description="--train: the training step's phases, memory over the step and its peak.")

    def ops_frame(self):
        """The ops as a pandas DataFrame, one row per op in execution order (shapes as strings)."""
        pd = _pandas("ops_frame")
        rows = []
        for op in self.ops:
            row = op.model_dump(exclude={"inputs", "outputs"})
            row["input_shapes"] = "; ".join("x".join(map(str, t.shape)) for t in op.inputs)
            row["output_shapes"] = "; ".join("x".join(map(str, t.shape)) for t in op.outputs)
            row["dtype"] = op.outputs[0].dtype if op.outputs else (op.inputs[0].dtype if op.inputs else "")
            rows.append(row)
        return pd.DataFrame(rows)

    def modules_frame(self):
        """The module roll-up as a pandas DataFrame, largest first; time by regime as columns."""
        pd = _pandas("modules_frame")
        rows = []
        for m in self.modules:
            row = m.model_dump(exclude={"regime_s"})
            for regime in ("compute", "memory", "overhead"):
                row[f"{regime}_s"] = m.regime_s.get(regime, 0.0)
            rows.append(row)
        return pd.DataFrame(rows)

    def _repr_html_(self) -> str:
        """Jupyter's view: headline, plan, top ops and the roofline chart (``roofline.report.notebook``)."""
        from roofline.report.notebook import notebook_html  # the renderer sits above the schema

        return notebook_html(self)

    @property
    def recommended_plan(self) -> Plan | None:
        """The plan the report recommends (None for a report without plans)."""
        return next((p for p in self.plans if p.recommended), None)

    def write_json(self, path) -> None:
        from pathlib import Path

        from roofline.errors import RooflineError

        try:
            Path(path).write_text(self.model_dump_json(indent=1) + "\n")
        except OSError as e:
            raise RooflineError(f"cannot write the JSON report to {path}: {e.strerror or e}; choose another --json path")
