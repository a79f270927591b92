"""Measure one GPU calibration stage again on the profiled machine and put it into the profile.

    python -m calibrate.refresh PROFILE --stage attention|cat_grid|conv|conv3d|conv_patches|foreach|gather_rows|gemm_ratios|conv_families|layout|norm_families|pooling|reductions|rnn [--output PATH]

A stage's design can change after a profile is shipped (the addmm ratio grew from eight shapes to a
grid over rows, reduction length and width). Calibrating the whole machine again moves every other
figure with the host's speed of that session; this re-measures only the stage, exactly as
``roofline calibrate`` measures it (same code, same point budget), on a GPU of the profile's name,
and records when in ``calibration.refreshed`` and the stage's seconds in ``calibration.stage_seconds``.
A profile of a quick calibration is refreshed with the quick plan.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, NamedTuple

import torch

from calibrate import conv, mechanisms, memory, rnn, runner
from calibrate.runner import ATTENTION_CURVES, gpu_plan
from roofline import __version__
from roofline.errors import DeviceNotAvailable, ProfileError, RooflineError
from roofline.profiles import load_profile_file, save_profile

def _timed_convs(device: str, budget_s: float, warnings: list, quick: bool, shapes_of) -> list:
    """Dense convolution curves, every dtype of calibration's plan at ``shapes_of(plan, dtype)``, with
    their kernels' times (``calibrate.conv.with_kernel_times``, last, as calibration takes them)."""
    plan = gpu_plan(quick, torch.cuda.get_device_properties(device).total_memory)
    curves = [conv.measure_conv(dtype, shapes_of(plan, dtype), device, budget_s=budget_s, warnings=warnings, keyed=plan.conv_keyed)
              for dtype in plan.conv_dtypes]
    return conv.with_kernel_times(curves, device, warnings)


def measure_convs(device: str, *, budget_s: float, warnings: list, quick: bool):
    """The dense convolutions of calibration's plan, every dtype of it (``calibrate.conv``)."""
    return _timed_convs(device, budget_s, warnings, quick, lambda plan, dtype: plan.conv_shapes_for(dtype))


def _timed_plan_subset(device: str, budget_s: float, warnings: list, quick: bool, shapes: list, what: str) -> list:
    """The dense convolutions of calibration's plan that are among ``shapes``, every dtype of it; a
    plan that times none of them (a quick profile's) refuses, naming ``what`` they are."""
    if not any(s in shapes for s in gpu_plan(quick, torch.cuda.get_device_properties(device).total_memory).conv_shapes):
        raise ProfileError(f"this plan times no {what} (a quick profile's): refresh its conv stage instead")
    return _timed_convs(device, budget_s, warnings, quick, lambda plan, dtype: [s for s in plan.conv_shapes if s in shapes])


def measure_convs_3d(device: str, *, budget_s: float, warnings: list, quick: bool):
    """The 3-d convolutions of calibration's plan (``calibrate.conv.GPU_3D_SHAPES``), every dtype of it."""
    return _timed_plan_subset(device, budget_s, warnings, quick, conv.GPU_3D_SHAPES, "3-d convolutions")


def measure_convs_patches(device: str, *, budget_s: float, warnings: list, quick: bool):
    """The patch embeddings of calibration's plan (``calibrate.conv.GPU_PATCH_SHAPES``), every dtype of it."""
    return _timed_plan_subset(device, budget_s, warnings, quick, conv.GPU_PATCH_SHAPES, "patch embeddings of its own")


def measure_foreach(device: str, *, budget_s: float, warnings: list, quick: bool):
    """multi_tensor_apply's kernels as calibration measures them (``calibrate.mechanisms.measure_foreach``)."""
    return mechanisms.measure_foreach(device, budget_s=budget_s, warnings=warnings)


def merge_op_curves(old: list, measured: list) -> list:
    """Op curves (pointwise families): the measured ones replace theirs, the rest stay."""
    ops = {(c.op, c.dtype) for c in measured}
    return [c for c in old if (c.op, c.dtype) not in ops] + measured


def _merge_conv_points(old: list, measured: list, replaced: Callable) -> list:
    """Dense convolution curves: each keeps its points but those ``replaced`` says the measurement
    stands for, and takes the measured points of its dtype in their place. A profile without a
    keyed curve for a measured dtype (one whose convolutions take no such points) refuses them."""
    keyed = {(c.dtype, c.tf32) for c in old if c.keyed}
    missing = [f"{c.dtype}{' (TF32)' if c.tf32 else ''}" for c in measured if (c.dtype, c.tf32) not in keyed]
    if missing:
        raise ProfileError(f"the profile has no keyed convolution curve for {', '.join(missing)}: refresh its conv stage instead")
    new = {(c.dtype, c.tf32): c.points for c in measured}
    return [c.model_copy(update=dict(points=[p for p in c.points if not replaced(p)] + new.get((c.dtype, c.tf32), [])))
            if (c.dtype, c.tf32) in new else c for c in old]


def merge_3d_points(old: list, measured: list) -> list:
    """The measured 3-d points in place of a profile's (``_merge_conv_points``)."""
    return _merge_conv_points(old, measured, lambda p: p.dims == 3)


def merge_patch_points(old: list, measured: list) -> list:
    """The measured patch embeddings (``calibrate.conv.GPU_PATCH_SHAPES``) beside a profile's other
    points, in place of any it has of those shapes (``_merge_conv_points``)."""
    return _merge_conv_points(old, measured, conv.is_patch_point)


def measure_attentions(device: str, *, budget_s: float, warnings: list, quick: bool):
    """Fused attention as calibration measures it: every curve of ``calibrate.runner.ATTENTION_CURVES``."""
    plan = gpu_plan(quick, torch.cuda.get_device_properties(device).total_memory)
    return [memory.measure_attention(device, dtype, head_dim, causal, seqs=plan.attention_seqs, tokens=plan.attention_tokens,
                                     budget_s=budget_s, warnings=warnings, single=not plan.quick)
            for dtype, head_dim, causal in ATTENTION_CURVES]


def measure_layouts(device: str, *, budget_s: float, warnings: list, quick: bool):
    """The layout families (``calibrate.memory.LAYOUT_OPS``) as calibration measures them: every
    pointwise dtype of the plan, over its strided-family sizes."""
    plan = gpu_plan(quick, torch.cuda.get_device_properties(device).total_memory)
    return [memory.measure_pointwise(plan.strided_sizes(), device, op=op, dtype_name=dtype, budget_s=budget_s, warnings=warnings)
            for dtype in plan.pointwise_dtypes for op in memory.LAYOUT_OPS]


def measure_reductions(device: str, *, budget_s: float, warnings: list, quick: bool):
    """The reduction families (``calibrate.memory.REDUCTION_FAMILIES``) as calibration measures them:
    every pointwise dtype of the plan, over its strided-family sizes."""
    plan = gpu_plan(quick, torch.cuda.get_device_properties(device).total_memory)
    return [memory.measure_pointwise(plan.strided_sizes(), device, op=op, dtype_name=dtype, budget_s=budget_s, warnings=warnings)
            for dtype in plan.pointwise_dtypes for op in memory.REDUCTION_FAMILIES]


def measure_pooling(device: str, *, budget_s: float, warnings: list, quick: bool):
    """The pooling and resampling families as calibration measures them (``calibrate.memory.GPU_SELECTION_OPS``:
    the 2x2 max pool and the 3x3 average beside the selection families' 3x3 max pool, bilinear
    resampling), float32 over their sizes."""
    return runner.measure_pooling(gpu_plan(quick, torch.cuda.get_device_properties(device).total_memory), device, budget_s=budget_s, warnings=warnings)


def measure_rnns(device: str, *, budget_s: float, warnings: list, quick: bool):
    """Fused LSTM and GRU layers as calibration measures them (``calibrate.rnn.measure_rnn``): every
    RNN dtype and shape of the plan, the host-speed index beside each."""
    plan = gpu_plan(quick, torch.cuda.get_device_properties(device).total_memory)
    return [rnn.measure_rnn(dtype, plan.rnn_shapes, device, budget_s=budget_s, warnings=warnings) for dtype in plan.rnn_dtypes]


class Stage(NamedTuple):
    """One stage refresh can measure, as calibration does (``calibrate.runner.measure_device``)."""

    field: str  # the measurements field it fills
    measure: Callable  # (device, *, budget_s, warnings, quick) -> that field's value
    seconds_key: str  # its calibration.stage_seconds key
    budget_share: float  # of the plan's point budget per point: the mechanism families take half
    merge: Callable | None = None  # (the field's value, the measured part) -> its new value; None: replaced


STAGES = {
    "attention": Stage("attention", measure_attentions, "gpu attention", 1.0),
    "conv": Stage("conv", measure_convs, "gpu conv", 1.0),
    "conv3d": Stage("conv", measure_convs_3d, "gpu conv 3d", 1.0, merge=merge_3d_points),
    "conv_patches": Stage("conv", measure_convs_patches, "gpu conv patches", 1.0, merge=merge_patch_points),
    "foreach": Stage("foreach", measure_foreach, "gpu foreach", 1.0),
    "gemm_ratios": Stage("gemm_ratios", mechanisms.measure_gemm_ratios, "gpu gemm ratios", 0.5),
    "conv_families": Stage("conv_families", mechanisms.measure_conv_families, "gpu conv families", 0.5),
    "norm_families": Stage("norm_families", mechanisms.measure_norm_families, "gpu norm families", 0.5),
    "cat_grid": Stage("pointwise", memory.measure_cat_grid, "gpu cat grid", 1.0, merge=merge_op_curves),
    "gather_rows": Stage("pointwise", memory.measure_gather_rows, "gpu gather rows", 1.0, merge=merge_op_curves),
    "layout": Stage("pointwise", measure_layouts, "gpu layout", 1.0, merge=merge_op_curves),
    "pooling": Stage("pointwise", measure_pooling, "gpu pooling", 1.0, merge=merge_op_curves),
    "reductions": Stage("pointwise", measure_reductions, "gpu reductions", 1.0, merge=merge_op_curves),
    "rnn": Stage("rnn", measure_rnns, "gpu rnn", 1.0),
}


def gpu_of(profile) -> str:
    """'cuda:N' of a GPU named as the profile's (``measure.device.device_for`` words its refusals for
    advise's flags); one clear error otherwise."""
    if profile.gpu is None:
        raise ProfileError(f"profile '{profile.name}' has no GPU part: the stages refresh measures are a GPU's")
    want = profile.gpu.identity.name
    if not torch.cuda.is_available():
        raise DeviceNotAvailable(f"profile '{profile.name}' describes a {want} but torch sees no CUDA device here: refresh it on that machine")
    for index in range(torch.cuda.device_count()):
        if torch.cuda.get_device_name(index) == want:
            return f"cuda:{index}"
    raise ProfileError(f"profile '{profile.name}' describes a {want} but this machine has a {torch.cuda.get_device_name(0)}: refresh it on that machine")


def refresh(profile, stage: str, device: str):
    """The profile with ``stage`` measured again on ``device``, and the warnings of the measurement."""
    field, measure, key, share, merge = STAGES[stage]
    quick = profile.calibration.quick
    plan = gpu_plan(quick, torch.cuda.get_device_properties(device).total_memory)
    warnings: list[str] = []
    start = time.perf_counter()
    torch.cuda.set_device(device)  # the timing protocol's events and sleeps go to the current device, as in calibration
    with torch.no_grad():  # calibration's grad mode
        measured = measure(device, budget_s=plan.point_budget_s * share, warnings=warnings, quick=quick)
    seconds = round(time.perf_counter() - start, 3)
    if merge is not None:
        measured = merge(getattr(profile.gpu.measurements, field), measured)
    gpu = profile.gpu.model_copy(update=dict(measurements=profile.gpu.measurements.model_copy(update={field: measured})))
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    calibration = profile.calibration.model_copy(update=dict(
        stage_seconds={**profile.calibration.stage_seconds, key: seconds},
        refreshed=[*profile.calibration.refreshed, f"{stage} {now}, roofline {__version__}, torch {torch.__version__}"],
        warnings=[*profile.calibration.warnings, *warnings],
    ))
    return profile.model_copy(update=dict(gpu=gpu, calibration=calibration)), warnings


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profile", type=Path)
    ap.add_argument("--stage", required=True, choices=sorted(STAGES))
    ap.add_argument("--output", type=Path, help="where to write the profile (default: over PROFILE)")
    args = ap.parse_args(argv)
    try:
        profile = load_profile_file(args.profile)
        new, warnings = refresh(profile, args.stage, gpu_of(profile))
        out = save_profile(new, args.output or args.profile, keep_layout=True, layout_of=args.profile)
    except RooflineError as e:
        print(f"calibrate.refresh: {e}", file=sys.stderr)
        return 2
    print(f"{args.stage} measured again on {profile.gpu.identity.name} in {new.calibration.stage_seconds[STAGES[args.stage].seconds_key]:.1f} s"
          f"{f' ({len(warnings)} warnings)' if warnings else ''}: wrote {out}")
    for w in warnings:
        print(f"  {w}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
