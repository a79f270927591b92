"""Checks the advice against the GPU: placement decisions, crossover, torch.compile, CUDA-graph and
stream gains, for the seed experiments.

    python benchmarks/advice_check.py --profile PATH [--json OUT] [--skip-compile]

- placement: for seed 000's matmul and nested-sin sizes, seed 002's 10,000-step loop and seed 003's
  Linear+ReLU stacks (hidden 128-4096, batch 1-512), the predicted choice (CPU alone, or GPU plus the
  copies of one call) against the measured one; the fraction right and seed 000's crossover size.
- torch.compile: predicted against measured gain over eager on seed 003's stack and nested sin.
- CUDA graphs: predicted against measured gain of graph replay over eager.
- streams (seed 004): 16 batches of a 1024^2 matmul with copies in and out: sequential with
  pageable memory, sequential pinned, and pinned on three streams, predicted against measured.

Placement and gains are predicted twice: with the profile's host costs as calibrated, and at the
host's speed that the host-speed indexes measured beside them (``roofline.measure.host_speed``; for a
placement, the index of the host's launch path to the GPU scales the GPU side and the host CPU's
own index the CPU side). A placement's two sides are timed in alternating rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from benchmarks.cases import load_case, load_meta  # noqa: E402
from roofline.advice.placement import crossover, size_of  # noqa: E402
from roofline.advice.streams import stream_pipeline  # noqa: E402
from roofline.checks import attach_alternatives  # noqa: E402
from roofline.graph.capture import normalize_inputs  # noqa: E402
from roofline.graph.loading import load_model_file  # noqa: E402
from roofline.measure.alternatives import measure_alternatives, measure_placement, paired_placement  # noqa: E402
from roofline.measure.device import device_for  # noqa: E402
from roofline.model.device import DeviceModel  # noqa: E402
from roofline.pipeline import Analysis, Options  # noqa: E402
from roofline.profiles import find_profile  # noqa: E402
from roofline.timing import time_fn  # noqa: E402


def entries(file: str, want=None):
    """(label, meta model, meta inputs, real model, real inputs) for each sweep entry."""
    meta = load_model_file(REPO / "examples" / file)
    real = load_model_file(REPO / "examples" / file, materialize=True)
    with torch.device("meta"):
        metas = list(meta.module.sweep())
    for (label, mm, mi), (_, rm, ri) in zip(metas, real.module.sweep()):
        if want is None or want(label):
            yield label, mm, mi, rm, ri


def _placement_row(group, label, size, calibrated, now, measured: dict, calls: int = 1) -> dict:
    """One sweep case: the choice predicted as calibrated and at the measured host scales, and the
    measured one (the CPU alone, or the GPU with the copies, whichever took less)."""
    choice = "cuda" if measured["gpu_with_copies_s"] < measured["cpu_s"] else "cpu"
    scales = measured["host_scales"]
    row = dict(group=group, label=label, size=size, predicted=calibrated.recommended, predicted_now=now.recommended, measured=choice,
               cpu_s=calls * calibrated.cpu_s, gpu_total_s=calls * (calibrated.gpu_s + calibrated.transfer_s),
               cpu_now_s=calls * now.cpu_s, gpu_total_now_s=calls * (now.gpu_s + now.transfer_s), host_scales=scales,
               measured_cpu_s=measured["cpu_s"], measured_gpu_total_s=measured["gpu_with_copies_s"])
    print(f"  {group:<14} {label:<24} predicted {row['predicted']:<4} (cpu {row['cpu_s'] * 1e3:8.3f}, gpu+copies {row['gpu_total_s'] * 1e3:8.3f} ms)"
          f" | at x{scales.get('cpu', 1):.2f} cpu, x{scales.get('cuda', 1):.2f} gpu: {row['predicted_now']:<4} "
          f"(cpu {row['cpu_now_s'] * 1e3:8.3f}, gpu+copies {row['gpu_total_now_s'] * 1e3:8.3f} ms)"
          f" | measured {choice:<4} (cpu {row['measured_cpu_s'] * 1e3:8.3f}, gpu+copies {row['measured_gpu_total_s'] * 1e3:8.3f} ms)", flush=True)
    return row


def _placements(mm, mi, profile, label: str, host_scales: dict, **options) -> tuple:
    """The placement predicted as calibrated and at the measured host scales, from one capture."""
    analysis = Analysis.of(mm, mi, None, profile, Options(device="cuda", batch_sweep=False, **options), name=label)
    return analysis.placement, analysis.at_host_scales(host_scales).placement


def placement_cases(profile, device):
    rows = []

    def check(group, label, mm, mi, rm, ri, size):
        m = measure_placement(rm, *normalize_inputs(ri), device, budget_s=0.3, profile=profile)
        rows.append(_placement_row(group, label, size, *_placements(mm, mi, profile, label, m["host_scales"]), m))

    for label, mm, mi, rm, ri in entries("seed000_matmul.py", lambda s: 16 <= size_of(s) <= 8192):
        check("seed000 matmul", label, mm, mi, rm, ri, size_of(label))
    for label, mm, mi, rm, ri in entries("seed000_nested_sin.py", lambda s: size_of(s) <= 2**26):
        check("seed000 sin", label, mm, mi, rm, ri, size_of(label))
    for label, mm, mi, rm, ri in entries("seed003_linear_relu.py"):
        check("seed003 stack", label, mm, mi, rm, ri, 0)
    return rows


def replay_placement(path: str, profile) -> int:
    """Re-predict a recorded run's placement sweep with this code and ``profile`` (as calibrated,
    and at each case's recorded host scales), against its recorded measurements; no GPU needed."""
    recorded = {(r["group"], r["label"]): r for r in json.loads(Path(path).read_text())["placement"]}
    files = {"seed000 matmul": "seed000_matmul.py", "seed000 sin": "seed000_nested_sin.py", "seed003 stack": "seed003_linear_relu.py"}
    print(f"replay of {path}: placement predicted by this code with profile '{profile.name}', measured as recorded")
    rows = []
    for group, file in files.items():
        meta = load_model_file(REPO / "examples" / file)
        with torch.device("meta"):
            cases = list(meta.module.sweep())
        for label, mm, mi in cases:
            r = recorded.get((group, label))
            if r is None:
                continue
            measured = dict(cpu_s=r["measured_cpu_s"], gpu_with_copies_s=r["measured_gpu_total_s"], host_scales=r.get("host_scales", {}))
            rows.append(_placement_row(group, label, r["size"], *_placements(mm, mi, profile, label, measured["host_scales"]), measured))
    loop = next((r for r in recorded.values() if r["group"] == "seed002 loop"), None)
    if loop is not None:
        rows.append(_seed002_row(profile, loop["size"], dict(cpu_s=loop["measured_cpu_s"], gpu_with_copies_s=loop["measured_gpu_total_s"],
                                                             host_scales=loop.get("host_scales", {}))))
    _placement_summary(rows)
    return 0


# The models whose CUDA-graph and torch.compile gains are checked, with the sweep case of each.
GAIN_CASES = {"seed003_linear_relu.py": "hidden=128,batch=1", "mlp_tiny.py": None, "seed002_rnn_step.py": None, "seed000_nested_sin.py": None}


def replay_gains(path: str, profile) -> None:
    """Re-predict a recorded run's CUDA-graph and torch.compile gains with this code and
    ``profile`` (as calibrated, and at each row's recorded host scale), against its recorded
    measurements; no GPU needed. The graph is captured here, on the CPU; the lines are those of
    the live run, to compare with its output."""
    print(f"replay of {path}: gains predicted by this code with profile '{profile.name}', measured as recorded")
    cases = {}
    for r in json.loads(Path(path).read_text()).get("gains", []):
        file, key = r["model"], r["alternative"]
        if file not in cases:
            mm, ma, mk = load_meta(file, GAIN_CASES.get(file))
            cases[file] = Analysis.of(mm, ma, mk, profile, Options(device="cuda", batch_sweep=False), name=file)
        scales = {key: r["host_scale"]} if r.get("host_scale") is not None else None
        _gain_rows([], file, cases[file], ({key: r["measured_s"]}, [], {key: r["measured_eager_s"]}, scales))


def _seed002_row(profile, steps: int, measured: dict) -> dict:
    meta = load_model_file(REPO / "examples" / "seed002_rnn_step.py")
    both = _placements(meta.model, meta.args, profile, None, measured["host_scales"], calls=steps, copies_per_call=False)
    return _placement_row("seed002 loop", f"{steps} steps", steps, *both, measured, calls=steps)


def _placement_summary(rows) -> tuple:
    """Print the fraction right both ways and the seed 000 crossover; (crossover predicted as
    calibrated, at the host scales, measured)."""
    mm = [r for r in rows if r["group"] == "seed000 matmul"]
    mc = crossover([(r["size"], r["measured"]) for r in mm])
    predicted = {}
    for name, key in (("as calibrated", "predicted"), ("at the host's speed beside them", "predicted_now")):
        right = sum(r[key] == r["measured"] for r in rows)
        pc = predicted[key] = crossover([(r["size"], r[key]) for r in mm])
        print(f"placement {name}: right on {right}/{len(rows)} ({100 * right / len(rows):.0f}%); seed 000 matmul crossover predicted {pc}, "
              f"measured {mc}" + (f" (ratio {pc / mc:.2f})" if pc and mc else ""))
    return predicted["predicted"], predicted["predicted_now"], mc


def seed002_loop(profile, device, steps=10_000):
    """Seed 002: a step of 1 matmul + 5 pointwise ops, looped; state stays where it is computed.
    Loops of 1000 steps on each side, timed in alternating rounds beside the host-speed indexes."""
    import copy

    real = load_model_file(REPO / "examples" / "seed002_rnn_step.py", materialize=True)
    n = 1000
    model, inputs = real.model, real.args

    def loop_on(dev):
        m = copy.deepcopy(model).to(dev) if isinstance(model, torch.nn.Module) else model
        x = tuple(t.to(dev) if isinstance(t, torch.Tensor) else t for t in inputs)

        def loop():
            for _ in range(n):
                m(*x)
            if dev != "cpu":
                torch.cuda.synchronize()

        return loop

    m = paired_placement(loop_on("cpu"), loop_on(device), device, budget_s=1.0, profile=profile)
    return _seed002_row(profile, steps, dict(m, cpu_s=m["cpu_s"] / n * steps, gpu_with_copies_s=m["gpu_with_copies_s"] / n * steps))


def gains(profile, device, skip_compile: bool):
    """Predicted against measured gains of CUDA graphs and torch.compile.

    Each alternative is timed in rounds alternating with eager and with the host-speed index
    (``roofline.measure.host_speed``); the gain is predicted with the profile's host costs as
    calibrated and again at the host scale the index measured in those rounds. Two passes: every
    case's CUDA-graph replay first, then the torch.compile measurements, which leave the host slow
    for seconds."""
    rows = []
    overheads = profile.gpu.measurements.overheads
    timed = []
    for file, sweep_label in GAIN_CASES.items():
        analysis, model, args, kwargs = load_case(file, sweep_label, profile, device)
        alternatives = measure_alternatives(model, args, kwargs, device, compile_modes=(), overheads=overheads)
        timed.append((file, analysis, model, args, kwargs))
        _gain_rows(rows, file, analysis, alternatives)
    for file, analysis, model, args, kwargs in timed:
        if skip_compile or file in ("seed002_rnn_step.py", "mlp_tiny.py"):
            continue
        alternatives = measure_alternatives(model, args, kwargs, device, compile_modes=("default",), cuda_graphs=False, overheads=overheads)
        _gain_rows(rows, file, analysis, alternatives)
    return rows


def _gain_rows(rows, file, analysis, alternatives):
    """One row per alternative (``attach_alternatives``): measured gain against eager timed in the
    same rounds, predicted as calibrated and at the host scale of those rounds."""
    measured, notes, eager_beside, scales = alternatives
    report = analysis.report()
    attach_alternatives(report, measured, notes, eager_beside, scales, analysis.at_host_scale)
    for check in report.gain_checks:
        r = check.model_dump()
        row = dict(model=file, alternative=r["alternative"], predicted_eager_s=report.total.predicted_s, **{k: v for k, v in r.items() if k != "alternative"})
        rows.append(row)
        now = ""
        if r.get("host_scale") is not None:
            now = (f" | host x{r['host_scale']:.2f}: eager {r['predicted_eager_now_s'] * 1e6:8.1f}, alternative {r['predicted_now_s'] * 1e6:8.1f}, "
                   f"gain {r['predicted_gain_now_s'] * 1e6:8.1f} us ({_pct(r['gain_error_now'])})")
        print(f"  {file:<26} {r['alternative']:<14} eager {report.total.predicted_s * 1e6:8.1f}/{r['measured_eager_s'] * 1e6:8.1f} us  "
              f"alternative {r['predicted_s'] * 1e6:8.1f}/{r['measured_s'] * 1e6:8.1f} us  gain predicted {r['predicted_gain_s'] * 1e6:8.1f} us "
              f"measured {r['measured_gain_s'] * 1e6:8.1f} us ({_pct(r['gain_error'])}){now}", flush=True)
    for n in notes:
        print(f"    note: {n}")


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:+.0f}%"


def streams(profile, device, batches=16, n=1024):
    """Seed 004's pipeline, measured three ways and predicted by stream_pipeline."""
    dev = DeviceModel(profile.gpu, "cuda")
    a = torch.randn(n, n, device=device)
    compute = time_fn(lambda: torch.matmul(a, a), device=device, budget_s=0.2).median_s
    pred = stream_pipeline(dev, compute, n * n * 4, n * n * 4, batches).model_dump()
    pageable = [torch.randn(n, n) for _ in range(batches)]
    pinned = [t.pin_memory() for t in pageable]

    def sequential(inputs):
        def run():
            for x in inputs:
                g = x.to(device)
                c = torch.matmul(g, g)
                x.copy_(c)
            torch.cuda.synchronize()
        return run

    streams_ = [torch.cuda.Stream() for _ in range(batches)]

    def streamed():
        for x, s in zip(pinned, streams_):
            with torch.cuda.stream(s):
                g = x.to(device, non_blocking=True)
                c = torch.matmul(g, g)
                x.copy_(c, non_blocking=True)
        torch.cuda.synchronize()

    m = {
        "sequential_pageable_s": time_fn(sequential(pageable), device=device, clock="host", inner=1, budget_s=0.5, min_samples=5).median_s,
        "sequential_pinned_s": time_fn(sequential(pinned), device=device, clock="host", inner=1, budget_s=0.5, min_samples=5).median_s,
        "streams_pinned_s": time_fn(streamed, device=device, clock="host", inner=1, budget_s=0.5, min_samples=5).median_s,
    }
    for k in m:
        print(f"  seed004 {k:<24} predicted {pred[k] * 1e3:7.2f} ms  measured {m[k] * 1e3:7.2f} ms  ({100 * (pred[k] - m[k]) / m[k]:+.0f}%)")
    return dict(predicted=pred, measured=m)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--json")
    ap.add_argument("--skip-compile", action="store_true")
    ap.add_argument("--replay", metavar="ADVICE_JSON", help="re-predict a recorded run's gains and placement sweep with this code against its recorded measurements (no GPU needed)")
    args = ap.parse_args()
    profile = find_profile(args.profile)
    if args.replay:
        replay_gains(args.replay, profile)
        return replay_placement(args.replay, profile)
    device = device_for(profile, "cuda")
    print(f"advice check on {profile.device}, profile '{profile.name}', torch {torch.__version__}")
    print("placement:")
    rows = placement_cases(profile, device)
    rows.append(seed002_loop(profile, device))
    pc, pc_now, mc = _placement_summary(rows)
    print("gains (predicted/measured), as calibrated | at the host's speed beside them:")
    g = gains(profile, device, args.skip_compile)
    for kind in ("torch_compile", "cuda_graphs"):
        for name, key in (("as calibrated", "gain_error"), ("at the host's speed beside them", "gain_error_now")):
            errs = [abs(r[key]) for r in g if r["alternative"] == kind and r.get(key) is not None]
            if errs:
                within = sum(e <= 0.25 for e in errs)
                print(f"  {kind}, {name}: |gain error| median {100 * statistics.median(errs):.0f}%, max {100 * max(errs):.0f}%, "
                      f"within 25% on {within}/{len(errs)} models")
    print("streams (seed 004):")
    s = streams(profile, device)
    if args.json:
        Path(args.json).write_text(json.dumps(dict(placement=rows, gains=g, streams=s, crossover=dict(predicted=pc, predicted_now=pc_now, measured=mc)), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
