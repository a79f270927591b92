"""Do host overheads re-measured beside a model track that model's eager time, and under which grad mode?

    python benchmarks/refresh_probe.py --profile PATH [--rounds 7]

Earlier benchmark runs re-measured a profile's host overheads before each model
(roofline.measure.refresh_overheads) because host speed drifts; they now time the host-speed
index beside each model instead (roofline.host_speed). This probe checks the refresh on three host-bound
examples: seed 003's Linear+ReLU stack (hidden 128, batch 1), mlp_tiny and seed 002's RNN step.
Each round re-measures the overheads under torch.no_grad() and under torch.inference_mode(),
predicts each model with each, and times each model (call + synchronize, under no_grad, as
``--measure`` does). It prints every round and the median error of each grad mode, so that both
the bias of the step and its round-to-round noise are visible.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from calibrate.overhead import measure_overheads  # noqa: E402
from benchmarks.cases import load_case  # noqa: E402
from roofline.analysis import run_analysis  # noqa: E402
from roofline.measure import measure_total  # noqa: E402
from roofline.profiles import load_profile_file  # noqa: E402

CASES = [("seed003_linear_relu.py", "hidden=128,batch=1"), ("mlp_tiny.py", None), ("seed002_rnn_step.py", None)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    device = "cuda"
    profile = load_profile_file(args.profile)
    models = [(file, *load_case(file, label, profile, device)[1:]) for file, label in CASES]

    modes = {"no_grad": torch.no_grad, "inference_mode": torch.inference_mode}
    rows = {(file, key): [] for file, *_ in models for key in ("measured", *modes)}
    print(f"refresh probe on {torch.cuda.get_device_name(device)}, torch {torch.__version__}; us per forward")
    for r in range(args.rounds):
        fresh = {}
        for mode, ctx in modes.items():
            with ctx():
                fresh[mode] = measure_overheads(device, budget_s=0.1, warnings=[])
        for file, mm, mi, graph, model, inputs in models:
            for mode, ov in fresh.items():
                p = profile.model_copy(deep=True)
                p.gpu.measurements.overheads = ov.model_copy(update={k: getattr(profile.gpu.measurements.overheads, k) for k in ("compiled_call_s", "compiled_kernel_s")})
                report, _, _ = run_analysis(mm, mi, p, device="cuda", name=file, batch_sweep=False, graph=graph)
                rows[file, mode].append(report.total.predicted_s)
            rows[file, "measured"].append(measure_total(model, inputs, device, budget_s=0.3).median_s)
            print(f"  round {r + 1}  {file:<24} measured {rows[file, 'measured'][-1] * 1e6:7.1f}  "
                  + "  ".join(f"{mode} {rows[file, mode][-1] * 1e6:7.1f}" for mode in modes), flush=True)
        print(f"  round {r + 1}  dispatch add/addmm/relu/view, interleave: "
              + "  ".join(f"{mode} " + "/".join(f"{ov.dispatch_by_op_s[k].median_s * 1e6:.1f}" for k in ("add", "addmm", "relu", "view")) + f", {ov.interleave_factor:.2f}"
                          for mode, ov in fresh.items()))
    print("median over rounds (error of the round's prediction against the round's measurement):")
    for file, *_ in models:
        meas = rows[file, "measured"]
        cells = []
        for mode in modes:
            errs = [(p - m) / m for p, m in zip(rows[file, mode], meas)]
            cells.append(f"{mode}: median error {100 * statistics.median(errs):+.0f}%, spread {100 * (max(errs) - min(errs)):.0f} points")
        print(f"  {file:<24} measured {statistics.median(meas) * 1e6:7.1f} us  " + "  ".join(cells))
    ratios = [a / b for file, *_ in models for a, b in zip(rows[file, "no_grad"], rows[file, "inference_mode"])]
    print(f"prediction with no_grad overheads / with inference_mode overheads of the same round: median {statistics.median(ratios):.3f} "
          f"over {len(ratios)}, range {min(ratios):.2f}-{max(ratios):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
