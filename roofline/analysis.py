"""One analysis: capture -> cost registry -> model of time -> advice -> ``Report``.

``analyze`` is the Python API; ``roofline advise`` calls it with a loaded model file.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable

import torch

from roofline.advice import (
    compiled_total_s,
    cuda_graph_total_s,
    fusion_report,
    placement,
    stream_pipeline,
)
from roofline.capture import capture
from roofline.costs import OpCost, cost_of
from roofline.curves import DeviceModel
from roofline.errors import CaptureError, ProfileError
from roofline.ops import CapturedGraph
from roofline.predict import Timeline, predict_timeline
from roofline.profile import DeviceProfile
from roofline.profiles import default_profile, find_profile
from roofline.report import (
    ModuleRollup,
    OpReport,
    ProfileRef,
    Report,
    TensorInfo,
    Totals,
)
from roofline.units import seconds


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


def _tensor_infos(metas) -> list[TensorInfo]:
    return [TensorInfo(shape=list(t.shape), dtype=str(t.dtype).replace("torch.", "")) for t in metas]


def _module_rollups(ops: list[OpReport]) -> list[ModuleRollup]:
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
        a["regime_s"][op.regime] += op.predicted_s
        if op.measured_s is not None:
            a["measured"] = (a["measured"] or 0.0) + op.measured_s
        if not a["type"] and op.module_type and op.module.count(".") <= key.count("."):
            a["type"] = op.module_type
    rows = [
        ModuleRollup(module=k, module_type=v["type"], ops=v["ops"], predicted_s=v["predicted_s"], flops=v["flops"], bytes=v["bytes"], regime_s=dict(v["regime_s"]), measured_s=v["measured"])
        for k, v in acc.items()
    ]
    return sorted(rows, key=lambda r: -r.predicted_s)


def build_report(
    name: str,
    graph: CapturedGraph,
    costs: list[OpCost],
    supported: list[bool],
    timeline: Timeline,
    profile: DeviceProfile,
    kind: str,
    dev: DeviceModel,
    *,
    allow_tf32: bool,
    is_module: bool,
    calls: int = 1,
    host_memory: str = "pageable",
    copies_per_call: bool = True,
) -> Report:
    ops = []
    for op, cost, ok, t in zip(graph.ops, costs, supported, timeline.ops):
        ops.append(
            OpReport(
                index=op.index, target=op.name, module=op.module, module_type=op.module_type, source=op.source,
                category=cost.category, inputs=_tensor_infos(op.tensor_inputs()), outputs=_tensor_infos(op.outputs),
                flops=cost.flops, bytes_read=cost.bytes_read, bytes_written=cost.bytes_written, kernels=cost.kernels,
                kernel_s=t.kernel_s, host_s=t.host_s, compute_s=t.compute_s, memory_s=t.memory_s,
                predicted_s=t.predicted_s, start_s=t.start_s, regime=t.regime, bound_by=t.bound_by, supported=ok,
            )
        )
    flops = sum(c.flops for c in costs)
    nbytes = sum(c.bytes for c in costs)
    regime_s = Counter()
    for o in ops:
        regime_s[o.regime] += o.predicted_s
    total_s = timeline.total_s
    totals = Totals(
        predicted_s=total_s, flops=flops, bytes=nbytes, kernels=sum(c.kernels for c in costs), ops=len(ops),
        host_s=timeline.host_s, device_busy_s=timeline.device_busy_s,
        achieved_flop_per_s=flops / total_s if total_s else 0.0, achieved_bytes_per_s=nbytes / total_s if total_s else 0.0,
        regime_s={r: regime_s.get(r, 0.0) for r in ("compute", "memory", "overhead", "none")},
    )
    unsupported = Counter(op.name for op, ok in zip(graph.ops, supported) if not ok)

    # Placement: the same program on the profile's CPU part (one queue) against its GPU part.
    cpu_dev = DeviceModel(profile.host, "cpu")
    cpu_tl = timeline if kind == "cpu" else predict_timeline(graph, costs, cpu_dev, allow_tf32=allow_tf32, is_module=is_module)
    gpu_dev = DeviceModel(profile.gpu, "cuda") if profile.gpu is not None else None
    gpu_tl = timeline if kind == "cuda" else (predict_timeline(graph, costs, gpu_dev, allow_tf32=allow_tf32, is_module=is_module) if gpu_dev else None)
    place = placement(graph, gpu_tl, cpu_tl, gpu_dev, host_memory=host_memory, calls=calls, copies_per_call=copies_per_call)

    fusion, fused_total = fusion_report(graph, costs, dev, timeline, allow_tf32=allow_tf32, is_module=is_module)
    extras: dict[str, Any] = {"fused_total_s": fused_total}
    advice = [f"placement: {place.recommended} — {place.reason}"]
    advice += _speedup_advice(graph, costs, dev, timeline, regime_s, fusion, fused_total, extras, allow_tf32)
    if gpu_dev is not None and gpu_tl is not None:
        in_b, out_b = sum(t.nbytes for t in graph.inputs), sum(t.nbytes for t in graph.outputs)
        streams = stream_pipeline(gpu_dev, gpu_tl.total_s, in_b, out_b, batches=max(calls, 16))
        if streams:
            extras["streams"] = streams
            copy_share = (streams["h2d_pinned_s"] + streams["d2h_pinned_s"]) / max(sum((streams["h2d_pinned_s"], streams["compute_s"], streams["d2h_pinned_s"])), 1e-12)
            if place.recommended == "cuda" and copy_share > 0.2 and copies_per_call:
                advice.append(
                    f"copies: for a stream of {streams['batches']} batches, pinned host memory takes the loop from "
                    f"{seconds(streams['sequential_pageable_s'])} to {seconds(streams['sequential_pinned_s'])} ({streams['pinned_gain']:.1f}x), "
                    f"and overlapping copies with compute on separate CUDA streams to {seconds(streams['streams_pinned_s'])} "
                    f"(a further {streams['streams_gain']:.1f}x)"
                )
    if unsupported:
        advice.append(f"{sum(unsupported.values())} ops have no cost formula and are priced by their bytes only: {', '.join(sorted(unsupported))}")

    return Report(
        model=name,
        profile=ProfileRef(name=profile.name, device=dev.name, kind=kind, source=profile.source_file),
        capture_mode=graph.capture_mode, allow_tf32=allow_tf32, ops=ops, total=totals, modules=_module_rollups(ops),
        placement=place, fusion=fusion, advice=advice, unsupported_ops=dict(unsupported), warnings=list(graph.warnings), extras=extras,
    )


def _why(best_name: str, overhead_pct: float, fusion_gain_s: float, total_s: float) -> str:
    """What the recommended change removes: host overhead, memory traffic, or both."""
    fused_pct = 100 * fusion_gain_s / total_s if total_s else 0
    if best_name == "cuda_graphs" or fused_pct < 5:
        return f"{overhead_pct:.0f}% of eager time is host overhead"
    if overhead_pct < 5:
        return f"fusing pointwise ops removes {fused_pct:.0f}% of eager time in memory traffic and launches"
    return f"{overhead_pct:.0f}% of eager time is host overhead and fusion removes {fused_pct:.0f}%"


GAIN_WORTH_IT = 0.10  # a change that saves less than this share of the time is not worth a user's effort


def _speedup_advice(graph, costs, dev, timeline, regime_s, fusion, fused_total, extras, allow_tf32) -> list[str]:
    """Predicted totals under torch.compile, CUDA graphs and both; a recommendation when one pays."""
    total_s = timeline.total_s
    alternatives = {"eager": total_s}
    graph_total = cuda_graph_total_s(costs, timeline, dev)
    if graph_total is not None:
        alternatives["cuda_graphs"] = graph_total
    compiled = compiled_total_s(graph, costs, dev, allow_tf32=allow_tf32)
    if compiled is not None:
        alternatives["torch_compile"] = compiled
        both = compiled_total_s(graph, costs, dev, allow_tf32=allow_tf32, cuda_graphs=True)
        if both is not None:
            alternatives["torch_compile_reduce_overhead"] = both
    extras["alternatives_s"] = alternatives
    if graph_total is not None:
        extras["cuda_graph_total_s"] = graph_total
    lines = []
    overhead_pct = 100 * regime_s.get("overhead", 0) / total_s if total_s else 0
    best_name, best = min(alternatives.items(), key=lambda kv: kv[1])
    names = {
        "cuda_graphs": "capture the forward in a CUDA graph (torch.cuda.graphs) and replay it",
        "torch_compile": "torch.compile the model",
        "torch_compile_reduce_overhead": 'torch.compile(model, mode="reduce-overhead") (fusion plus CUDA graphs)',
    }
    if best_name != "eager" and total_s - best > GAIN_WORTH_IT * total_s:
        detail = ", ".join(f"{k.replace('_', ' ')} {seconds(v)}" for k, v in alternatives.items())
        lines.append(
            f"recommended: {names[best_name]}: {seconds(best)} instead of {seconds(total_s)} ({total_s / best:.1f}x); "
            f"{_why(best_name, overhead_pct, total_s - fused_total, total_s)} ({detail})"
        )
    elif len(alternatives) > 1:
        lines.append(
            f"no change recommended: torch.compile or CUDA graphs would save under {100 * GAIN_WORTH_IT:.0f}% "
            f"({', '.join(f'{k.replace(chr(95), chr(32))} {seconds(v)}' for k, v in alternatives.items())})"
        )
    fusion_gain = total_s - fused_total
    if fusion and fusion_gain > 0.05 * total_s:
        lines.append(
            f"fusion: {len(fusion)} group{'s' if len(fusion) > 1 else ''} of pointwise/reduction ops could each run as one kernel: "
            f"{seconds(fused_total)} instead of {seconds(total_s)} ({100 * fusion_gain / total_s:.0f}% less); largest: ops "
            f"{fusion[0].ops[0]}..{fusion[0].ops[-1]} ({fusion[0].kind}) saves {seconds(fusion[0].predicted_gain_s)}"
        )
    return lines


def analyze(
    model: Callable,
    example_inputs: Any,
    profile: DeviceProfile | str | Path | None = None,
    *,
    device: str | None = None,
    name: str | None = None,
    allow_tf32: bool | None = None,
    materialize: Callable | None = None,
    calls: int = 1,
    host_memory: str = "pageable",
    copies_per_call: bool = True,
    graph: CapturedGraph | None = None,
    user_files: list | None = None,
    capture_device: str | None = None,
    batch_sweep: bool | None = None,
) -> Report:
    """Capture, price and predict ``model(*example_inputs)`` on a profile's GPU or CPU.

    ``device`` picks the profile part ('cuda' or 'cpu'; default: the GPU if the profile has one).
    ``allow_tf32`` prices float32 matmuls on TF32 tensor cores; by default it follows
    ``torch.backends.cuda.matmul.allow_tf32`` (False unless the user turned it on).
    """
    return run_analysis(
        model, example_inputs, profile, device=device, name=name, allow_tf32=allow_tf32, materialize=materialize,
        calls=calls, host_memory=host_memory, copies_per_call=copies_per_call, graph=graph, user_files=user_files,
        capture_device=capture_device, batch_sweep=batch_sweep,
    )[0]


def run_analysis(
    model, example_inputs, profile, *, device=None, name=None, allow_tf32=None, materialize=None, calls=1,
    host_memory="pageable", copies_per_call=True, graph=None, user_files=None, capture_device=None, batch_sweep=None,
) -> tuple[Report, CapturedGraph, DeviceModel]:
    """``analyze``, also returning the captured graph and the device model (``--measure`` needs both).

    ``capture_device`` None traces on the device predicted for when this machine has it (a GPU
    prediction then sees the GPU's kernels: cuDNN RNNs, its attention backend), else on the CPU."""
    prof, kind = resolve_profile(profile, device)
    if capture_device is None:
        capture_device = "cuda" if kind == "cuda" and torch.cuda.is_available() else "cpu"
    if allow_tf32 is None:
        allow_tf32 = bool(torch.backends.cuda.matmul.allow_tf32)
    if graph is None:
        try:
            graph = capture(model, example_inputs, materialize=materialize, user_files=user_files, device=capture_device)
        except CaptureError as e:
            if capture_device == "cpu":
                raise
            # Some CUDA-only kernels (cuDNN RNNs) have no fake-tensor support: price the CPU trace.
            graph = capture(model, example_inputs, materialize=materialize, user_files=user_files, device="cpu")
            graph.warnings.append(f"captured on the CPU because capture on {capture_device} failed ({str(e)[:160]}); per-op replay may not be possible")
    priced = [cost_of(op) for op in graph.ops]
    costs = [c for c, _ in priced]
    supported = [ok for _, ok in priced]
    dev = DeviceModel(prof.gpu if kind == "cuda" else prof.host, kind)
    is_module = isinstance(model, torch.nn.Module)
    timeline = predict_timeline(graph, costs, dev, allow_tf32=allow_tf32, is_module=is_module)
    cpu_path = sorted({op.name for op in graph.ops if "for_cpu" in op.name or "mkldnn" in op.name})
    if kind == "cuda" and cpu_path:
        graph.warnings.append(
            f"traced on the CPU, so {', '.join(cpu_path)} stand in for the GPU's own kernels and are priced as those; "
            "run on a machine with the GPU for its exact op sequence"
        )
    report = build_report(
        name or getattr(model, "__name__", None) or type(model).__name__, graph, costs, supported, timeline, prof, kind, dev,
        allow_tf32=allow_tf32, is_module=is_module, calls=calls, host_memory=host_memory, copies_per_call=copies_per_call,
    )
    if batch_sweep is None:
        batch_sweep = len(graph.ops) <= BATCH_SWEEP_MAX_OPS
    if batch_sweep:
        from roofline.sweeps import batch_sweep as sweep_batches
        from roofline.sweeps import describe_batch_sweep, leading_batch

        sweep = sweep_batches(model, example_inputs, dev, allow_tf32=allow_tf32)
        if sweep is not None:
            report.batch_sweep = sweep
            report.advice.append(describe_batch_sweep(sweep, leading_batch(example_inputs)))
    return report, graph, dev


BATCH_SWEEP_MAX_OPS = 600  # beyond this, a batch sweep (one capture per point) is opt-in


def attach_measurement(report: Report, measurement, dev: DeviceModel) -> Report:
    """Fill ``measured_s``, per-op errors and roofline fractions from a ``roofline.measure.Measurement``."""
    from roofline.measure import roofline_time_s
    from roofline.predict import matmul_dtype_name

    report.total.measured_s = measurement.total.median_s
    report.total.measured_spread_s = measurement.total.iqr_s
    cache = getattr(dev.part.identity, "l2_cache_bytes", None) or getattr(dev.part.identity, "l3_cache_bytes", None)
    copy_curve = dev.part.measurements.bandwidth_curve("copy")
    peak_bw = copy_curve.dram_bytes_per_s(cache) if copy_curve else 0.0
    gpu = report.profile.kind == "cuda"
    for op, measured in zip(report.ops, measurement.op_s):
        op.measured_s = measured
        if measured is None or measured <= 0:
            continue
        predicted = op.kernel_s if gpu else op.predicted_s
        if predicted > 0 or op.kernels:
            op.error = (predicted - measured) / measured
        if op.kernels:
            if op.category in ("matmul", "conv", "attention"):
                dtype = op.inputs[0].dtype if op.inputs else "float32"
                name = matmul_dtype_name(getattr(torch, dtype, torch.float32), report.allow_tf32)
                peak_flops = dev.matmul_model(name).peak_flop_per_s
            else:
                peak_flops = dev.vector_flop_per_s
            roof = roofline_time_s(op.flops, op.bytes_read + op.bytes_written, peak_flops, peak_bw)
            op.roofline_fraction = roof / measured if roof > 0 else None
    report.modules = _module_rollups(report.ops)
    report.warnings += measurement.notes
    return report


def predict_at_host_scale(report: Report, model, example_inputs, profile, graph, scale: float, kind_scales: dict[str, float] | None = None) -> Report:
    """The report's captured graph predicted again with every host cost times ``scale`` (each
    dispatch kind's times its own ``kind_scales`` entry, where given)."""
    from roofline.host_speed import with_host_scale

    prof, kind = resolve_profile(profile, report.profile.kind)
    return run_analysis(
        model, example_inputs, with_host_scale(prof, kind, scale, kind_scales), device=kind, name=report.model, graph=graph,
        allow_tf32=report.allow_tf32, batch_sweep=False,
    )[0]


def attach_host_speed(report: Report, speed, model, example_inputs, profile, graph) -> Report:
    """Put the prediction at the host's speed of the measurement beside the one as calibrated: the
    same graph predicted again with every host cost times the host-speed index's scale
    (``roofline.host_speed``). Host speed drifts by tens of percent on a shared machine; this
    separates that drift from the model's own error."""
    again = predict_at_host_scale(report, model, example_inputs, profile, graph, speed.scale)
    report.total.host_scale = speed.scale
    report.total.predicted_at_host_now_s = again.total.predicted_s
    return report


def attach_alternatives(
    report: Report, measured: dict, notes: list[str], eager_beside: dict | None = None, scale_beside: dict | None = None, predict_at=None
) -> Report:
    """Put measured CUDA-graph and torch.compile times beside the predicted ones, with the gains.

    A measured gain is the eager time timed beside the alternative (``eager_beside``, from
    ``measure.measure_alternatives``) less the alternative's; without it, the report's own eager time.
    With the host scales timed beside each alternative (``scale_beside``) and ``predict_at(scale)``
    (a Report predicted at that host scale: ``predict_at_host_scale``), each row also carries the
    gain predicted at the host's speed of its own measurement."""
    predicted = report.extras.get("alternatives_s", {})
    report.extras["measured_alternatives_s"] = measured
    rows = []
    for key, value in measured.items():
        pred = predicted.get(key)
        eager_measured = (eager_beside or {}).get(key) or report.total.measured_s
        if pred is None or not eager_measured:
            continue
        pred_gain = report.total.predicted_s - pred
        meas_gain = eager_measured - value
        err = (pred_gain - meas_gain) / abs(meas_gain) if meas_gain else None
        row = dict(alternative=key, predicted_s=pred, measured_s=value, measured_eager_s=eager_measured,
                   predicted_gain_s=pred_gain, measured_gain_s=meas_gain, gain_error=err)
        now = ""
        scale = (scale_beside or {}).get(key)
        if scale is not None and predict_at is not None:
            at = predict_at(scale)
            alt_now = at.extras.get("alternatives_s", {}).get(key)
            if alt_now is not None:
                gain_now = at.total.predicted_s - alt_now
                err_now = (gain_now - meas_gain) / abs(meas_gain) if meas_gain else None
                row.update(host_scale=scale, predicted_eager_now_s=at.total.predicted_s, predicted_now_s=alt_now,
                           predicted_gain_now_s=gain_now, gain_error_now=err_now)
                now = f"; at the host's speed beside it (x{scale:.2f}) {seconds(gain_now)}" + (f", {100 * err_now:+.0f}%" if err_now is not None else "")
        rows.append(row)
        report.advice.append(
            f"checked: {key.replace('_', ' ')} measured {seconds(value)} against eager {seconds(eager_measured)} "
            f"(gain {seconds(meas_gain)}; predicted {seconds(pred_gain)}" + (f", {100 * err:+.0f}%" if err is not None else "") + now + ")"
        )
    report.extras["alternative_gains"] = rows
    report.warnings += notes
    return report
