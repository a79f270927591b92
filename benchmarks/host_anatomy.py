"""Where a real model's eager host time goes on a GPU machine: inside its aten ops, or between them.

    python benchmarks/host_anatomy.py --profile P [--only LABEL ...] --json OUT.json

For each zoo case (batch 1 in its natural dtype by default) on the GPU:

- ``eager_s``: the forward plus synchronize, beside the host-speed index (``roofline.measure``), and
  the host scale of that moment;
- ``replay_s``: the captured ops called one after another from a loop (``roofline.graph.replay``),
  plus synchronize: the ops' own host cost with no model code around them; ``replay_dry_s`` is the
  same loop handing back the ops' recorded outputs without calling them (the loop's own Python,
  to subtract);
- a profiled forward (``torch.profiler``, CPU activity only: no CUPTI): each top-level aten call's
  host duration and the gap of Python before it, by aten op name, and the same for the
  representative op mix (``roofline.hostmix``) repeated in a loop, for reference.

The host-speed index is timed beside each figure, so they compare at one host speed. The JSON
keeps every figure; the table printed last gives per case eager, ops alone (replay less its
loop), module code (the difference) and the profiled split, each over the profile's predicted
dispatch-only host time.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from roofline.graph.provenance import named_state  # noqa: E402
from roofline.graph.replay import arguments, bind  # noqa: E402
from roofline.hostmix import representative_ops  # noqa: E402
from roofline.measure.host_speed import host_speed_beside, warm_up  # noqa: E402
from roofline.measure.run import _quiet_native_stderr, on_device  # noqa: E402
from roofline.pipeline import Analysis, Options, resolve_profile  # noqa: E402
from roofline.timing import sync  # noqa: E402

DEFAULT_CASES = [
    "hf_gpt2 b1 fp32", "hf_bert_base b1 fp32", "hf_llama_small b1 fp32", "hf_llama_small b4 bf16", "hf_whisper_tiny b1 fp32",
    "hf_t5_small b1 fp32", "tv_resnet50 b1 fp32", "tv_mobilenet_v2 b1 fp32", "tv_squeezenet1_1 b1 fp32", "tcn_conv1d b1 fp32",
    "mixer_mlp_hand b1 fp32", "timm_swin_tiny b1 fp32", "timm_convnext_nano b1 fp32", "tv_densenet121 b1 fp32",
    "clip_text_hand b1 fp32", "unet_small b1 fp32", "hf_bert_base b8 fp16", "timm_deit_small b32 fp16",
]


def replay_fn(graph, values: dict, device: str, dry: list | None = None, record: list | None = None):
    """One call of every captured op in order (as ``roofline.graph.replay.replay``); with ``dry``
    (each op's outputs from an earlier call) the ops are not called, which times the loop alone."""

    def run():
        vals = dict(values)
        for i, op in enumerate(graph.ops):
            args, kwargs = arguments(op, vals)
            outs = dry[i] if dry is not None else [t for t in torch.utils._pytree.tree_leaves(op.target(*args, **kwargs)) if isinstance(t, torch.Tensor)]
            if record is not None:
                record.append(outs)
            for k, t in enumerate(outs):
                vals[f"op.{op.index}.{k}"] = t
        sync(device)

    return run


def profiled(fn, runs: int = 3) -> tuple[list, float]:
    """Top-level aten events of ``runs`` calls of ``fn`` under a CPU-only profiler: per call, a list of
    (name, host duration s, Python gap before it s); and the wall time per call."""
    from torch.profiler import ProfilerActivity, profile

    marks = []
    prof = profile(activities=[ProfilerActivity.CPU])
    with _quiet_native_stderr():  # the profiler's C++ side prints start/stop lines
        prof.start()
    try:
        for _ in range(runs):
            with torch.profiler.record_function("## call ##"):
                fn()
    finally:
        with _quiet_native_stderr():
            prof.stop()
    events = sorted(prof.events(), key=lambda e: e.time_range.start)
    calls = [e for e in events if e.name == "## call ##"]
    top = [e for e in events if e.name.startswith("aten::") and (e.cpu_parent is None or e.cpu_parent.name == "## call ##")]
    out = []
    for c in calls:
        inside = [e for e in top if c.time_range.start <= e.time_range.start and e.time_range.end <= c.time_range.end]
        rows, prev_end = [], c.time_range.start
        for e in inside:
            rows.append((e.name, (e.time_range.end - e.time_range.start) * 1e-6, (e.time_range.start - prev_end) * 1e-6))
            prev_end = e.time_range.end
        rows.append(("<end>", 0.0, (c.time_range.end - prev_end) * 1e-6))
        out.append(rows)
        marks.append((c.time_range.end - c.time_range.start) * 1e-6)
    return out, statistics.median(marks)


def by_name(rows: list) -> dict:
    acc: dict = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for name, dur, gap in rows:
        a = acc[name]
        a[0] += 1
        a[1] += dur
        a[2] += gap
    return {k: dict(n=v[0], host_s=v[1], gap_s=v[2]) for k, v in acc.items()}


def reference_mix(device: str, runs: int = 50) -> dict:
    """Each representative op repeated ``runs`` times under the same profiler: its host duration."""
    ops = representative_ops(device)
    out = {}
    for name, fn in ops.items():
        for _ in range(20):
            fn()
        sync(device)

        def loop(fn=fn):
            for _ in range(runs):
                fn()
            sync(device)

        calls, wall = profiled(loop, runs=1)
        rows = calls[0]
        out[name] = dict(wall_per_call_s=wall / runs, events=by_name(rows), rows=rows)
    return out


def one_case(case, profile, options, overheads, device: str) -> dict:
    from benchmarks.zoo.run import _build

    t0 = time.perf_counter()
    with torch.device("meta"):
        model, a, k = case.model.build(case.batch, case.dtype)
    analysis = Analysis.of(model, a, k, profile, options, name=case.label, materialize=lambda c=case: _build(c, "cpu"))
    tl = analysis.timeline()
    real, ra, rk = _build(case, device)
    real, ra, rk = on_device(real, ra, rk, device)

    def call():
        real(*ra, **rk)
        sync(device)

    with torch.no_grad():
        warm_up(call)
        eager, speed = host_speed_beside(call, device, overheads, budget_s=0.6)
        values = bind(analysis.graph, dict(named_state(real)), ra, rk, device)
        recorded: list = []
        replay_fn(analysis.graph, values, device, record=recorded)()
        wet, dry = replay_fn(analysis.graph, values, device), replay_fn(analysis.graph, values, device, dry=recorded)
        warm_up(wet)
        replay, speed_r = host_speed_beside(wet, device, overheads, budget_s=0.4, label="replay")
        warm_up(dry)
        replay_dry, _ = host_speed_beside(dry, device, overheads, budget_s=0.2, label="dry")
        prof_calls, prof_wall = profiled(call)
    rows = prof_calls[-1]
    out = dict(
        label=case.label, library=case.model.library, n_ops=len(analysis.graph.ops), module_calls=analysis.graph.module_calls,
        eager_s=eager.median_s, scale=speed.scale, replay_s=replay.median_s, replay_scale=speed_r.scale, replay_dry_s=replay_dry.median_s,
        predicted_s=analysis.total_s, predicted_host_s=tl.host_s, predicted_busy_s=tl.device_busy_s,
        profiled_wall_s=prof_wall, profiled_ops=len(rows) - 1, profiled_host_s=sum(r[1] for r in rows), profiled_gap_s=sum(r[2] for r in rows),
        by_name=by_name(rows), rows=rows, seconds=time.perf_counter() - t0,
    )
    del real, ra, rk, values, recorded
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
    return out


def op_tree(case, profile, options, device: str, op_name: str, limit: int = 3) -> list[str]:
    """The events inside the first ``limit`` top-level calls of ``op_name`` in one profiled forward
    (CPU and CUDA activity: runtime calls such as cudaMalloc or a synchronize show), indented."""
    from torch.profiler import ProfilerActivity, profile

    from benchmarks.zoo.run import _build

    real, ra, rk = _build(case, device)
    real, ra, rk = on_device(real, ra, rk, device)
    lines = []
    with torch.no_grad():
        for _ in range(3):
            real(*ra, **rk)
        sync(device)
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        with _quiet_native_stderr():
            prof.start()
        try:
            real(*ra, **rk)
            sync(device)
        finally:
            with _quiet_native_stderr():
                prof.stop()
    tops = [e for e in prof.events() if e.name == op_name and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::"))][:limit]

    def walk(e, depth):
        lines.append(f"{'  ' * depth}{e.name} {(e.time_range.end - e.time_range.start):.1f} us")
        for c in e.cpu_children:
            walk(c, depth + 1)

    for e in tops:
        walk(e, 1)
    return lines


def main(argv: list[str]) -> int:
    from benchmarks.zoo.registry import cases as zoo_cases

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--only", nargs="*", help="case labels (default: a spread of 16 batch-1 cases over the libraries)")
    ap.add_argument("--json", required=True)
    ap.add_argument("--tree", help="an aten event name (aten::scaled_dot_product_attention): print what runs inside its calls, for the cases given, and stop")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cpu: a check of the script on a machine without a GPU")
    args = ap.parse_args(argv)
    profile, kind = resolve_profile(args.profile, args.device)
    overheads = profile.part(kind).measurements.overheads
    options = Options(device=kind, capture_device=args.device, batch_sweep=False)
    wanted = args.only or DEFAULT_CASES
    todo = [c for c in zoo_cases() if c.label in wanted]
    if args.tree:
        for case in todo:
            print(case.label)
            print("\n".join(op_tree(case, profile, options, args.device, args.tree)), flush=True)
        return 0
    result = dict(device=torch.cuda.get_device_name() if args.device == "cuda" else "cpu", torch=torch.__version__, date=time.strftime("%Y-%m-%d"), profile=profile.name,
                  reference=reference_mix(args.device), cases=[])
    for case in todo:
        try:
            row = one_case(case, profile, options, overheads, args.device)
        except Exception as e:  # noqa: BLE001 - one case failing leaves the others
            print(f"{case.label}: FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)
            continue
        result["cases"].append(row)
        Path(args.json).write_text(json.dumps(result))
        s = row["scale"]
        print(f"{row['label']:<30} eager {row['eager_s'] * 1e3:7.2f} ms x{s:.2f} | replay {row['replay_s'] * 1e3:7.2f} dry {row['replay_dry_s'] * 1e3:6.2f} "
              f"| profiled: ops {row['profiled_host_s'] * 1e3:7.2f} gaps {row['profiled_gap_s'] * 1e3:7.2f} wall {row['profiled_wall_s'] * 1e3:7.2f} "
              f"| predicted host {row['predicted_host_s'] * 1e3:7.2f} ({row['seconds']:.0f} s)", flush=True)
    Path(args.json).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
