"""Checks the ranked plan against the GPU: every plan of a model timed per call as the plan says
(CPU eager; GPU eager, a CUDA graph, torch.compile, reduce-overhead, each with the copies of one
call: inputs in, outputs out), the predicted best against the measured best, and each plan the
advisor rules out tried, to see that it really fails.

    python3 benchmarks/plan_check.py --profile PATH [--json OUT] [--skip-compile]

Plans are timed in alternating rounds (``roofline.timing.time_rounds``), so every plan sees the
same host. A recommendation is right when its measured time is within 10% of the measured best
(the threshold the advisor uses to prefer a simpler plan).
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from roofline.advice.plans import GAIN_WORTH_IT, plan_label  # noqa: E402
from roofline.graph.loading import load_model_file  # noqa: E402
from roofline.graph.structure import map_tensors, tensors_in  # noqa: E402
from roofline.measure.alternatives import single_process_compile  # noqa: E402
from roofline.pipeline import Analysis, Options  # noqa: E402
from roofline.profiles import find_profile  # noqa: E402
from roofline.timing import Slot, sync, time_rounds  # noqa: E402

CASES = [
    "examples/mlp_tiny.py", "examples/seed003_linear_relu.py", "examples/pointwise_chain.py", "examples/seed000_nested_sin.py",
    "examples/norms_softmax.py", "examples/gpt_block.py", "examples/resnet_cnn.py", "examples/attention.py",
    "benchmarks/plans/host_read.py", "benchmarks/plans/int_matmul.py",
]


def _outputs_to_host(out) -> None:
    for t in tensors_in(out):
        t.cpu()


def _runner(plan, model_cpu, model_gpu, args, kwargs, device: str):
    """A callable that runs one call of the model as ``plan`` says, copies included, synchronized."""
    if plan.device == "cpu":
        return lambda: model_cpu(*args, **kwargs)
    model = model_gpu
    on_gpu = lambda a: map_tensors(a, lambda t: t.to(device))  # noqa: E731
    if plan.execution == "eager":
        def run():
            _outputs_to_host(model(*on_gpu(args), **on_gpu(kwargs)))
        return run
    if plan.execution == "cuda_graphs":
        static_args, static_kwargs = on_gpu(args), on_gpu(kwargs)
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            for _ in range(3):
                model(*static_args, **static_kwargs)
        torch.cuda.current_stream(device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = model(*static_args, **static_kwargs)

        def run():
            for dst, src in zip(tensors_in((static_args, static_kwargs)), tensors_in((args, kwargs))):
                dst.copy_(src)
            graph.replay()
            _outputs_to_host(static_out)
        run.graph = graph
        return run
    mode = "reduce-overhead" if plan.execution == "torch_compile_reduce_overhead" else "default"
    with single_process_compile():
        compiled = torch.compile(model, mode=mode)
        for _ in range(3):
            compiled(*on_gpu(args), **on_gpu(kwargs))

    def run():
        _outputs_to_host(compiled(*on_gpu(args), **on_gpu(kwargs)))
    return run


def check(path: str, profile, device: str, skip_compile: bool) -> dict:
    meta = load_model_file(REPO / path)
    analysis = Analysis.of(meta.model, meta.args, meta.kwargs, profile, Options(device="cuda", batch_sweep=False, user_files=(str(REPO / path),)),
                           name=meta.name, materialize=meta.materializer())
    report = analysis.report()
    real = load_model_file(REPO / path, materialize=True)
    model = real.model.eval() if isinstance(real.model, torch.nn.Module) else real.model
    model_gpu = copy.deepcopy(model).to(device) if isinstance(model, torch.nn.Module) else model
    row = {"case": path, "plans": [], "refused": []}
    slots = {}
    with torch.no_grad():
        for plan in report.plans:
            label = plan_label(plan)
            if plan.execution.startswith("torch_compile") and skip_compile:
                continue
            try:
                run = _runner(plan, model, model_gpu, real.args, real.kwargs, device)
                run()
                sync(device)
                failed = None
            except Exception as e:  # noqa: BLE001 - a plan the GPU refuses is data here
                failed = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
                torch.cuda.synchronize() if torch.cuda.is_available() else None
            if not plan.applicable:
                row["refused"].append({"plan": label, "predicted_reason": plan.reason, "measured_failure": failed})
                continue
            if failed:
                row["plans"].append({"plan": label, "predicted_s": plan.predicted_s, "measured_s": None, "failure": failed, "recommended": plan.recommended})
                continue
            slots[label] = Slot(run, seconds=0.05)
            row["plans"].append({"plan": label, "predicted_s": plan.predicted_s, "recommended": plan.recommended})
        timed = time_rounds(slots, rounds=5, device=device) if slots else {}
    for entry in row["plans"]:
        if entry["plan"] in timed:
            entry["measured_s"] = statistics.median(float(np.median(r)) for r in timed[entry["plan"]])
    measured = [e for e in row["plans"] if e.get("measured_s")]
    rec = next((e for e in row["plans"] if e["recommended"]), None)
    if measured and rec and rec.get("measured_s"):
        best = min(measured, key=lambda e: e["measured_s"])
        row["measured_best"] = best["plan"]
        row["recommended"] = rec["plan"]
        row["recommended_vs_best"] = rec["measured_s"] / best["measured_s"]
        row["right"] = rec["measured_s"] <= best["measured_s"] * (1 + GAIN_WORTH_IT)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--json")
    ap.add_argument("--skip-compile", action="store_true")
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    profile = find_profile(args.profile)
    device = "cuda"
    rows = []
    for path in CASES:
        if args.only and not any(o in path for o in args.only):
            continue
        row = check(path, profile, device, args.skip_compile)
        rows.append(row)
        print(f"{path}: recommended {row.get('recommended')} ({row.get('recommended_vs_best', float('nan')):.2f}x the measured best, {row.get('measured_best')})")
        for e in row["plans"]:
            m = e.get("measured_s")
            err = f"{100 * (e['predicted_s'] / m - 1):+.0f}%" if m and e["predicted_s"] else "-"
            pred = f"{1e6 * e['predicted_s']:9.1f} us" if e["predicted_s"] is not None else "not priced"
            print(f"    {e['plan']:<52} predicted {pred:>12}  measured {1e6 * m if m else float('nan'):9.1f} us  {err}"
                  + (f"  FAILED {e['failure']}" if e.get("failure") else ""))
        for r in row["refused"]:
            print(f"    ruled out: {r['plan']}: the GPU {'refused it: ' + r['measured_failure'] if r['measured_failure'] else 'RAN IT'}")
    judged = [r for r in rows if "right" in r]
    refused = [x for r in rows for x in r["refused"]]
    print(f"plans: recommended plan within {100 * GAIN_WORTH_IT:.0f}% of the measured best on {sum(r['right'] for r in judged)}/{len(judged)} models; "
          f"plans ruled out that the GPU refused: {sum(1 for x in refused if x['measured_failure'])}/{len(refused)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"profile": profile.name, "device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
