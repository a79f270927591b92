"""Does a host-speed index timed call for call beside a model track that model's eager time?

    python benchmarks/host_speed_probe.py --profile PATH [--rounds 5]

The host-bound rows of the accuracy benchmark measure 1.5-2x apart between rounds of one run
(benchmarks/RESULTS.md). ``roofline.host_speed`` times calibration's mix of representative ops in
alternation with the model and scales the prediction's host costs by the mix's time now over its
time at calibration. This probe checks that step on the host-bound examples: each round times
each model back to back (``measure_total``, as ``--measure`` did) and paired with the index, and
prints the prediction as calibrated against the back-to-back time and the scaled prediction
against the paired time, and the model's host issue time (its calls made behind a spin kernel,
so that no launch waits for the device) against the scaled prediction's host time. Then, per
model, the spread of each error over the rounds.

``--per-kind`` also times each representative op alone in the index blocks and predicts a third
way: each dispatch kind's cost times its own scale now, the other host costs times the
dispatch-weighted mean of those scales (``roofline.host_speed.kind_sample_s``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from benchmarks.cases import load_case, use_example_dtype  # noqa: E402
from calibrate.overhead import mix_alone_sum_s  # noqa: E402
from roofline.analysis import predict_at_host_scale  # noqa: E402
from roofline.host_speed import host_speed_beside  # noqa: E402
from roofline.measure import measure_total  # noqa: E402
from roofline.profiles import load_profile_file  # noqa: E402

# (label, example file, dtype, sweep label)
CASES = [
    ("mlp_tiny", "mlp_tiny.py", None, None),
    ("linear_relu h128 b1", "seed003_linear_relu.py", None, "hidden=128,batch=1"),
    ("rnn_step", "seed002_rnn_step.py", None, None),
    ("rnn_loop", "rnn_loop.py", None, None),
    ("lstm fp32", "lstm.py", "float32", None),
    ("pointwise_chain fp32", "pointwise_chain.py", "float32", None),
    ("pointwise_chain bf16", "pointwise_chain.py", "bfloat16", None),
    ("gpt_block fp16 b1", "gpt_block.py", "float16", "batch=1"),
]


def host_issue_s(model, inputs, device: str, predicted_host_s: float, budget_s: float = 0.3) -> float:
    """Median host time of one forward issued behind a spin kernel long enough to cover it."""
    cycles = int(1.8e9 * (2 * predicted_host_s + 1e-3))  # ~1.8 GHz: twice the predicted issue time, plus 1 ms
    times = []
    start = time.perf_counter()
    with torch.no_grad():
        while len(times) < 7 or time.perf_counter() - start < budget_s:
            torch.cuda.synchronize(device)
            torch.cuda._sleep(cycles)
            t0 = time.perf_counter()
            model(*inputs)
            times.append(time.perf_counter() - t0)
            torch.cuda.synchronize(device)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-kind", action="store_true", help="also scale each dispatch kind by its own op timed alone beside the model")
    args = ap.parse_args()
    profile = load_profile_file(args.profile)
    device = "cuda"
    loaded = []
    for label, file, dtype, sweep in CASES:
        use_example_dtype(dtype)
        report, mm, mi, graph, model, inputs = load_case(file, sweep, profile, device)
        loaded.append((label, report, mm, mi, graph, model, inputs))
    print(f"host speed probe on {torch.cuda.get_device_name(0)}, torch {torch.__version__}, profile {args.profile}")
    print("per round: back-to-back measured (prediction as calibrated, error) | paired measured, host scale (scaled prediction, error); times in us")
    errors = {label: ([], [], [], []) for label, *_ in loaded}
    calibrated = {name: stat.median_s for name, stat in profile.gpu.measurements.overheads.dispatch_by_op_s.items()}
    for r in range(1, args.rounds + 1):
        print(f"round {r}")
        for label, report, mm, mi, graph, model, inputs in loaded:
            def call(model=model, inputs=inputs):
                model(*inputs)
                torch.cuda.synchronize(device)

            b2b = measure_total(model, inputs, device, budget_s=0.5).median_s
            timing, speed = host_speed_beside(call, device, profile.gpu.measurements.overheads, budget_s=0.5, per_kind=args.per_kind)
            paired = timing.median_s
            scaled = predict_at_host_scale(report, mm, mi, profile, graph, speed.scale)
            by_kind = ""
            if speed.kind_scales:
                ks = speed.kind_scales
                mean = mix_alone_sum_s({k: calibrated[k] * ks[k] for k in ks}) / mix_alone_sum_s({k: calibrated[k] for k in ks})
                p2 = predict_at_host_scale(report, mm, mi, profile, graph, mean, ks).total.predicted_s
                errors[label][3].append((p2 - paired) / paired)
                by_kind = f" | per kind x{mean:4.2f} ({p2 * 1e6:8.1f}, {100 * (p2 - paired) / paired:+6.1f}%; addmm x{ks.get('addmm', 0):.2f} add x{ks.get('add', 0):.2f})"
            issue = host_issue_s(model, inputs, device, scaled.total.host_s)
            p0, p1 = report.total.predicted_s, scaled.total.predicted_s
            e0, e1 = (p0 - b2b) / b2b, (p1 - paired) / paired
            errors[label][0].append(e0)
            errors[label][1].append(e1)
            errors[label][2].append((scaled.total.host_s - issue) / issue)
            print(f"  {label:<22} {b2b * 1e6:8.1f} ({p0 * 1e6:8.1f}, {100 * e0:+6.1f}%) | {paired * 1e6:8.1f} x{speed.scale:5.2f} "
                  f"({p1 * 1e6:8.1f}, {100 * e1:+6.1f}%)  index {speed.index_now_s * 1e6:6.1f}/{speed.index_calibrated_s * 1e6:6.1f}  "
                  f"host issue {issue * 1e6:8.1f} (predicted {scaled.total.host_s * 1e6:8.1f}, {100 * (scaled.total.host_s - issue) / issue:+6.1f}%){by_kind}", flush=True)
    print("per model over the rounds: median error [min, max], as calibrated | scaled by the index | host issue, scaled")
    med0, med1, med2, all0, all1, all2 = [], [], [], [], [], []
    for label, (e0, e1, eh, e2) in errors.items():
        m0, m1 = statistics.median(e0), statistics.median(e1)
        med0.append(abs(m0))
        med1.append(abs(m1))
        all0 += [abs(e) for e in e0]
        all1 += [abs(e) for e in e1]
        kind = ""
        if e2:
            m2 = statistics.median(e2)
            med2.append(abs(m2))
            all2 += [abs(e) for e in e2]
            kind = f" | per kind {100 * m2:+6.1f}% [{100 * min(e2):+6.1f}, {100 * max(e2):+6.1f}]"
        print(f"  {label:<22} {100 * m0:+6.1f}% [{100 * min(e0):+6.1f}, {100 * max(e0):+6.1f}] | {100 * m1:+6.1f}% [{100 * min(e1):+6.1f}, {100 * max(e1):+6.1f}] | {100 * statistics.median(eh):+6.1f}%{kind}")
    kind_med = f" | per kind: median {100 * statistics.median(med2):.1f}% max {100 * max(med2):.1f}%" if med2 else ""
    kind_all = f" | per kind: median {100 * statistics.median(all2):.1f}% max {100 * max(all2):.1f}%" if all2 else ""
    print(f"median-round |error| over models: median {100 * statistics.median(med0):.1f}% max {100 * max(med0):.1f}% | median {100 * statistics.median(med1):.1f}% max {100 * max(med1):.1f}%{kind_med}")
    print(f"every round's |error|: median {100 * statistics.median(all0):.1f}% max {100 * max(all0):.1f}% | median {100 * statistics.median(all1):.1f}% max {100 * max(all1):.1f}%{kind_all}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
