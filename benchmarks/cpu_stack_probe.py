"""Where the host CPU's time goes in seed 003's Linear + ReLU stacks, op by op, against prediction.

    python benchmarks/cpu_stack_probe.py --profile PATH [--cases 128x512,256x64,512x8,1024x1]

The placement sweep's near ties are seed 003 stacks whose CPU side measured 0.6-1.9x its prediction
(benchmarks/RESULTS.md, "Advice"). Per stack (hidden x batch) this prints the CPU forward predicted
and measured (beside the host CPU's host-speed index), then per op kind the predicted time and the
profiler's CPU time for the op in a replay of the captured graph (median per call). Then, per
shape, one GEMM timed four ways: ``mm`` as calibration times it, ``mm`` with the weight's
transposed view, ``addmm`` with a bias as ``F.linear`` calls it, and ``F.linear`` itself.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from roofline.analysis import attach_measurement, run_analysis  # noqa: E402
from roofline.loading import load_model_file  # noqa: E402
from roofline.measure import device_for, measure  # noqa: E402
from roofline.profiles import find_profile  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--cases", default="128x512,256x64,512x8,1024x1")
    args = ap.parse_args()
    profile = find_profile(args.profile)
    device = device_for(profile, "cpu")
    print(f"CPU stack probe, profile '{profile.name}', torch {torch.__version__}, {torch.get_num_threads()} threads")
    meta = load_model_file(REPO / "examples" / "seed003_linear_relu.py")
    real = load_model_file(REPO / "examples" / "seed003_linear_relu.py", materialize=True)
    want = {f"hidden={h},batch={b}" for h, b in (c.split("x") for c in args.cases.split(","))}
    with torch.device("meta"):
        metas = {label: (m, i) for label, m, i in meta.module.sweep() if label in want}
    for label, model, inputs in real.module.sweep():
        if label not in metas:
            continue
        report, graph, dev = run_analysis(*metas[label], profile, device="cpu", name=label, batch_sweep=False)
        m = measure(graph, model, inputs, device, overheads=dev.overheads)
        attach_measurement(report, m, dev)
        scale = m.host_speed.scale if m.host_speed is not None else float("nan")
        print(f"{label}: predicted {report.total.predicted_s * 1e6:8.1f} us, measured {report.total.measured_s * 1e6:8.1f} us "
              f"(host CPU index x{scale:.2f})")
        by_kind = defaultdict(lambda: ([], []))
        for op in report.ops:
            if op.measured_s is not None:
                by_kind[op.target][0].append(op.predicted_s)
                by_kind[op.target][1].append(op.measured_s)
        for target, (pred, meas) in by_kind.items():
            print(f"  {target:<28} x{len(pred):<2} predicted {statistics.median(pred) * 1e6:8.1f} us  measured {statistics.median(meas) * 1e6:8.1f} us  "
                  f"sum {sum(pred) * 1e6:8.1f} / {sum(meas) * 1e6:8.1f} us")
    print("one GEMM (batch x hidden) @ (hidden x hidden), median us:")
    from roofline.timing import time_fn

    for c in args.cases.split(","):
        h, b = (int(v) for v in c.split("x"))
        x, w, bias = torch.randn(b, h), torch.randn(h, h), torch.randn(h)
        ways = {
            "mm": lambda: torch.mm(x, w),
            "mm, weight.t()": lambda: torch.mm(x, w.t()),
            "addmm, weight.t()": lambda: torch.addmm(bias, x, w.t()),
            "F.linear": lambda: torch.nn.functional.linear(x, w, bias),
        }
        with torch.no_grad():
            times = {k: time_fn(f, device="cpu", budget_s=0.2, min_samples=20).median_s * 1e6 for k, f in ways.items()}
        print(f"  {b:>4} x {h:<5} " + "  ".join(f"{k} {v:7.1f}" for k, v in times.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
