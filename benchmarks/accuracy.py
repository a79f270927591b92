"""Accuracy benchmark: predicted against measured, model by model, beside PyTorch's RuntimeEstimator.

    python benchmarks/accuracy.py --profile PATH_OR_NAME [--device cuda|cpu] [--json OUT] [--only NAME ...]
    python benchmarks/accuracy.py --zoo ...     (the zoo of library models: benchmarks/zoo/run.py)

For each case (a model file of examples/, a dtype, a size from its sweep) it captures the model on
the target device under fake tensors, predicts with the profile, runs it for real with the shared
timing protocol (`roofline.measure`), and prints predicted, measured and error, plus
RuntimeEstimator's "operator-level-cost-model" estimate for the same model (GPU only: it needs
CUDA). Then: median and max |error| end to end, median per-op |error| over ops measured at
>= 20 us, and agreement of the dominant regime (predicted shares against measured ones: the
device-idle share of the measured run is overhead; kernel time splits into compute and memory by
each op's roofline).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from benchmarks.cases import load_meta, pick, use_example_dtype  # noqa: E402
from roofline.checks import attach_measurement  # noqa: E402
from roofline.graph.loading import load_model_file  # noqa: E402
from roofline.measure.device import device_for  # noqa: E402
from roofline.measure.run import add_per_op, measure  # noqa: E402
from roofline.pipeline import Analysis, Options, resolve_profile  # noqa: E402

# (label, example file, dtype or None, sweep label or None, regime the case is meant to exercise)
CASES_GPU = [
    ("mlp_tiny", "mlp_tiny.py", None, None, "overhead"),
    ("linear_relu h128 b1", "seed003_linear_relu.py", None, "hidden=128 batch=1", "overhead"),
    ("linear_relu h1024 b64", "seed003_linear_relu.py", None, "hidden=1024 batch=64", "overhead"),
    ("linear_relu h4096 b512", "seed003_linear_relu.py", None, "hidden=4096 batch=512", "compute"),
    ("rnn_step", "seed002_rnn_step.py", None, None, "overhead"),
    ("rnn_loop", "rnn_loop.py", None, None, "overhead"),
    ("nested_sin 2^24", "seed000_nested_sin.py", None, None, "memory"),
    ("pointwise_chain fp32", "pointwise_chain.py", "float32", None, "memory"),
    ("pointwise_chain bf16", "pointwise_chain.py", "bfloat16", None, "memory"),
    ("norms_softmax fp32", "norms_softmax.py", "float32", None, "memory"),
    ("norms_softmax fp16", "norms_softmax.py", "float16", None, "memory"),
    ("embedding", "embedding.py", None, None, "memory"),
    ("matmul 4096 fp32", "seed000_matmul.py", None, None, "compute"),
    ("conv_big bf16", "conv_big.py", "bfloat16", None, "compute"),
    ("resnet_cnn fp32", "resnet_cnn.py", "float32", None, "compute"),
    ("attention bf16", "attention.py", "bfloat16", None, "compute"),
    ("attention fp16", "attention.py", "float16", None, "compute"),
    ("gpt_block bf16 b8", "gpt_block.py", "bfloat16", None, "compute"),
    ("gpt_block fp16 b1", "gpt_block.py", "float16", "batch=1", "compute"),
    ("lstm fp32", "lstm.py", "float32", None, "overhead"),
]

CASES_CPU = [
    ("mlp_tiny", "mlp_tiny.py", None, None, "overhead"),
    ("linear_relu h128 b1", "seed003_linear_relu.py", None, "hidden=128 batch=1", "overhead"),
    ("linear_relu h1024 b64", "seed003_linear_relu.py", None, "hidden=1024 batch=64", "compute"),
    ("rnn_step", "seed002_rnn_step.py", None, None, "overhead"),
    ("rnn_loop", "rnn_loop.py", None, None, "overhead"),
    ("nested_sin 2^20", "seed000_nested_sin.py", None, "numel=2**20", "memory"),
    ("pointwise_chain 2^18", "pointwise_chain.py", "float32", "numel=2**18", "memory"),
    ("matmul 512", "seed000_matmul.py", None, "dim=512", "compute"),
    ("matmul 1024", "seed000_matmul.py", None, "dim=1024", "compute"),
    ("embedding", "embedding.py", None, None, "memory"),
    ("lstm b1", "lstm.py", "float32", "batch=1", "overhead"),
    ("gpt_block b1", "gpt_block.py", "float32", "batch=1", "compute"),
]


def runtime_estimator_s(model, args, kwargs, device: str) -> float | None:
    """PyTorch's RuntimeEstimator (operator-level-cost-model) under FakeTensorMode, seconds."""
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.distributed._tools.runtime_estimator import RuntimeEstimator

        from roofline.graph.provenance import named_state
        from roofline.graph.structure import map_tensors
    except Exception:
        return None
    try:
        with FakeTensorMode(allow_non_fake_inputs=True):
            def fake(t):
                if not isinstance(t, torch.Tensor):
                    return t
                return torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device=device)

            f_args, f_kwargs = map_tensors(args, fake), map_tensors(kwargs, fake)
            rte = RuntimeEstimator()
            # RuntimeEstimator cannot price cuDNN attention (two output dtypes); ask SDPA for the
            # flash kernel, which it can, and keep its summary print out of the table.
            import contextlib

            from torch.nn.attention import SDPBackend, sdpa_kernel

            # (the math backend: RuntimeEstimator cannot price any fused SDPA kernel, whose outputs
            # mix dtypes; on the math path it prices the decomposed matmuls and softmax instead)
            with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), sdpa_kernel([SDPBackend.MATH]), rte("operator-level-cost-model"), torch.no_grad():
                if isinstance(model, torch.nn.Module):
                    state = {n: fake(t) for n, t in named_state(model)}
                    torch.func.functional_call(model.eval(), state, f_args, f_kwargs, strict=False)
                else:
                    model(*f_args, **f_kwargs)
        return rte.total_runtime * 1e-3
    except Exception as e:  # report, never hide, a baseline that cannot run
        print(f"    RuntimeEstimator failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
        return None


def measured_regime_shares(report) -> dict[str, float]:
    """Shares of the measured run: idle device time is overhead; kernel time splits by each op's roofline term."""
    total = report.total.measured_s or 0.0
    gpu = report.profile.kind == "cuda"
    shares = {"compute": 0.0, "memory": 0.0, "overhead": 0.0}
    busy = 0.0
    for op in report.ops:
        if op.measured_s is None or not op.kernels:
            continue
        t = op.measured_s
        if not gpu:  # CPU: the part of an op's wall time beyond its work is its overhead
            work = max(op.compute_s, op.memory_s)
            shares["overhead"] += max(t - work, 0.0)
            t = min(t, work)
        busy += t
        shares["compute" if op.compute_s >= op.memory_s else "memory"] += t
    if gpu:
        shares["overhead"] += max(total - busy, 0.0)
    s = sum(shares.values()) or 1.0
    return {k: v / s for k, v in shares.items()}


OVERHEAD_SHARE_CLOSE = 0.12  # predicted and measured overhead shares this close count as agreeing


def dominant(shares: dict[str, float]) -> str:
    return max(("compute", "memory", "overhead"), key=lambda k: shares.get(k, 0.0))


def timed_round(t: dict, profile, kind, device, index: bool) -> tuple[float, float, float | None, float | None]:
    """(predicted as calibrated, measured, host scale, predicted at that host speed) for one timing
    of a captured case; the last two are None without the host-speed index."""
    overheads = profile.part(kind).measurements.overheads if index else None
    analysis = t["analysis"]
    m = measure(analysis.graph, t["model"], t["args"], t["kwargs"], device, per_op=False, overheads=overheads)
    t["measurement"] = m
    pred = analysis.total_s
    if m.host_speed is None:
        return pred, m.total.median_s, None, None
    scale = m.host_speed.scale
    return pred, m.total.median_s, scale, analysis.at_host_scale(scale).total_s


def time_case(case, profile, kind, device, with_rte: bool, index: bool) -> dict:
    """Capture, predict and time one case end to end (no profiler: see ``profile_case``)."""
    label, file, dtype, sweep_label, intended = case
    use_example_dtype(dtype)
    path = REPO / "examples" / file
    meta_model, meta_args, meta_kwargs = load_meta(file, sweep_label)
    real = load_model_file(path, materialize=True)
    real_model, real_args, real_kwargs = pick(real, sweep_label)
    t0 = time.perf_counter()
    options = Options(device=kind, user_files=(str(path),), capture_device="cuda" if kind == "cuda" else "cpu", batch_sweep=False)
    analysis = Analysis.of(meta_model, meta_args, meta_kwargs, profile, options, name=label)
    report = analysis.report()
    analyze_s = time.perf_counter() - t0
    t = dict(analysis=analysis, report=report, model=real_model, args=real_args, kwargs=real_kwargs, meta_model=meta_model)
    pred, meas, scale, now = timed_round(t, profile, kind, device, index)
    rte = runtime_estimator_s(meta_model, meta_args, meta_kwargs, "cuda") if with_rte else None
    t["row"] = dict(
        label=label, intended=intended, predicted_s=pred, measured_s=meas, spread_s=t["measurement"].total.iqr_s,
        host_scale=scale, predicted_now_s=now, error=(pred - meas) / meas, error_now=None if now is None else (now - meas) / meas,
        rte_s=rte, rte_error=((rte - meas) / meas) if rte is not None else None,
        ops=len(report.ops), analyze_s=analyze_s, warnings=report.warnings[:3],
    )
    t["rounds"] = [(pred, meas, scale, now)]
    return t


def profile_case(case: dict, device: str) -> dict:
    """Per-op times for a timed case, and what depends on them (per-op errors, measured regime).

    Runs after every case is timed: a torch.profiler session with CUDA activities slows later
    launches from the process, so no end-to-end time may follow one."""
    report, row, analysis = case["report"], case["row"], case["analysis"]
    add_per_op(case["measurement"], analysis.graph, case["model"], case["args"], case["kwargs"], device)
    attach_measurement(report, case["measurement"], analysis)
    report.total.measured_s = row["measured_s"]  # the kept round's
    pred = report.total.predicted_s
    row["op_errors"] = [abs(o.error) for o in report.ops if o.error is not None and o.measured_s and o.measured_s >= 20e-6]
    p_shares = {k: v / pred for k, v in report.total.regime_s.items() if k != "none"}
    m_shares = measured_regime_shares(report)
    row.update(
        predicted_regime=dominant(p_shares), measured_regime=dominant(m_shares),
        predicted_shares=p_shares, measured_shares=m_shares,
        ops_detail=[
            dict(i=o.index, target=o.target, kernel_s=o.kernel_s, predicted_s=o.predicted_s, measured_s=o.measured_s, regime=o.regime)
            for o in report.ops if o.measured_s is not None and o.measured_s >= 5e-6
        ][:200],
    )
    return row


def replay(path: str, profile, kind: str) -> int:
    """Re-predict the cases of a recorded run with this code and compare with that run's measurements.

    For checking a change to the model of time without the device: capture happens on this machine
    (on the CPU, where the GPU is absent), and host overheads are the profile's as calibrated."""
    recorded = {r["label"]: r for r in json.loads(Path(path).read_text())["rows"]}
    cases = [c for c in (CASES_GPU if kind == "cuda" else CASES_CPU) if c[0] in recorded]
    print(f"replay of {path}: predicted by this code with profile '{profile.name}', measured as recorded")
    errs, errs_now, agree, regimes, overhead_gaps = [], [], 0, 0, []
    for label, file, dtype, sweep_label, _ in cases:
        use_example_dtype(dtype)
        model, args, kwargs = load_meta(file, sweep_label)
        analysis = Analysis.of(model, args, kwargs, profile, Options(device=kind, batch_sweep=False), name=label)
        predicted = analysis.total_s
        row = recorded[label]
        measured = row["measured_s"]
        err = (predicted - measured) / measured
        errs.append(abs(err))
        line = f"  {label:<26} predicted {predicted * 1e3:9.3f} ms  measured {measured * 1e3:9.3f} ms  error {100 * err:+6.1f}%  (recorded run: {100 * row['error']:+.1f}%)"
        if row.get("host_scale"):
            # the same graph at the host speed the run recorded beside this measurement
            now = analysis.at_host_scale(row["host_scale"]).total_s
            errs_now.append(abs((now - measured) / measured))
            line += f" | x{row['host_scale']:.2f} {now * 1e3:9.3f} ms {100 * (now - measured) / measured:+6.1f}% (recorded: {_fmt_err(row.get('error_now'))})"
        if row.get("measured_regime"):  # the dominant regime this code predicts against the recorded run's
            shares = {k: v for k, v in analysis.timeline().regime_s().items() if k != "none"}
            regimes += 1
            agree += dominant(shares) == row["measured_regime"]
            overhead = shares.get("overhead", 0.0) / (sum(shares.values()) or 1.0)
            measured_overhead = row["measured_shares"]["overhead"]
            overhead_gaps.append(abs(overhead - measured_overhead))
            line += f" | regime {dominant(shares)}/{row['measured_regime']}, overhead {overhead:.2f}/{measured_overhead:.2f}"
        print(line)
    print(f"end-to-end |error|: median {100 * statistics.median(errs):.1f}%, max {100 * max(errs):.1f}% over {len(errs)} models")
    if errs_now:
        print(f"at the recorded host scale: median {100 * statistics.median(errs_now):.1f}%, max {100 * max(errs_now):.1f}% over {len(errs_now)} models")
    if regimes:
        close = sum(g <= OVERHEAD_SHARE_CLOSE for g in overhead_gaps)
        print(f"dominant regime agrees: {agree}/{regimes}; overhead share within {OVERHEAD_SHARE_CLOSE} of the measured on "
              f"{close}/{regimes}, median difference {statistics.median(overhead_gaps):.2f}")
    return 0


def _fmt_err(e) -> str:
    return "     -" if e is None else f"{100 * e:+6.1f}%"


def main() -> int:
    if "--zoo" in sys.argv[1:]:
        from benchmarks.zoo.run import main as zoo_main

        return zoo_main(sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--device", choices=["cuda", "cpu"], default=None)
    ap.add_argument("--json")
    ap.add_argument("--only", nargs="*", help="labels (substrings) to run")
    ap.add_argument("--no-rte", action="store_true", help="skip the RuntimeEstimator baseline")
    ap.add_argument("--rounds", type=int, default=3, help="time every model this many times; the median-error round is kept (default 3)")
    ap.add_argument("--fixed-overheads", action="store_true",
                    help="time models without the host-speed index beside them: predictions as calibrated only")
    ap.add_argument("--replay", metavar="ACC_JSON", help="re-predict a recorded run's cases with this code, against its recorded measurements (no device needed)")
    args = ap.parse_args()

    profile, kind = resolve_profile(args.profile, args.device)
    if args.replay:
        return replay(args.replay, profile, kind)
    device = device_for(profile, kind)
    cases = CASES_GPU if kind == "cuda" else CASES_CPU
    if args.only:
        cases = [c for c in cases if any(s in c[0] for s in args.only)]
    index = not args.fixed_overheads
    print(f"accuracy on {profile.device} ({kind}), profile '{profile.name}', torch {torch.__version__}, {time.strftime('%Y-%m-%d')}")
    print("host overheads: as calibrated" + (
        "; each model also timed in blocks alternating with the host-speed index (roofline.measure.host_speed), and predicted again "
        "with host costs times the index's scale ('now')" if index else ""))
    timed = []
    print("end to end (every case timed before any per-op profiling); predicted as calibrated | at the host's speed now:")
    for case in cases:
        try:
            t = time_case(case, profile, kind, device, with_rte=kind == "cuda" and not args.no_rte, index=index)
        except Exception as e:
            print(f"  {case[0]:<26} FAILED: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
            continue
        timed.append(t)
        r = t["row"]
        rte = f"{r['rte_s'] * 1e3:9.3f} ms {100 * r['rte_error']:+6.0f}%" if r["rte_s"] is not None else f"{'-':>19}"
        now = f"| x{r['host_scale']:.2f} {r['predicted_now_s'] * 1e3:9.3f} ms {_fmt_err(r['error_now'])}" if r["host_scale"] else ""
        print(
            f"  {r['label']:<26} predicted {r['predicted_s'] * 1e3:9.3f} ms  measured {r['measured_s'] * 1e3:9.3f} ms "
            f"(IQR {100 * (r['spread_s'] or 0) / r['measured_s']:3.0f}%)  error {100 * r['error']:+6.1f}% {now} |  RTE {rte}",
            flush=True,
        )
    for round_ in range(2, args.rounds + 1):
        print(f"round {round_} of {args.rounds}: every model timed again" + (" beside the index" if index else ""), flush=True)
        for t in timed:
            t["rounds"].append(timed_round(t, profile, kind, device, index))
    if args.rounds > 1:
        print(f"end to end over {args.rounds} rounds, predicted/measured ms (error) [host scale, error at it]; the round with the median error is kept:")
    for t in timed:
        r, rounds = t["row"], t["rounds"]
        errors = [(p - m) / m for p, m, _, _ in rounds]
        errors_now = [None if n is None else (n - m) / m for _, m, _, n in rounds]
        key = errors_now if index and all(e is not None for e in errors_now) else errors
        keep = sorted(range(len(key)), key=lambda i: key[i])[len(key) // 2]
        r["rounds"] = [dict(predicted_s=p, measured_s=m, host_scale=sc, predicted_now_s=n) for p, m, sc, n in rounds]
        r["predicted_s"], r["measured_s"], r["host_scale"], r["predicted_now_s"] = rounds[keep]
        r["error"], r["error_now"] = errors[keep], errors_now[keep]
        if r["rte_s"] is not None:
            r["rte_error"] = (r["rte_s"] - r["measured_s"]) / r["measured_s"]
        if args.rounds > 1:
            listed = "  ".join(
                f"{1e3 * p:7.3f}/{1e3 * m:7.3f} ({100 * e:+5.1f}%)" + (f" [x{sc:.2f} {100 * en:+5.1f}%]" if sc else "")
                for (p, m, sc, _), e, en in zip(rounds, errors, errors_now)
            )
            print(f"  {r['label']:<26} {listed}  ->  {_fmt_err(r['error'])}" + (f" | now {_fmt_err(r['error_now'])}" if index else ""), flush=True)
    print("per op (profiler), and the dominant regime predicted/measured:")
    rows = []
    for t in timed:
        r = profile_case(t, device)
        rows.append(r)
        med = f"{100 * statistics.median(r['op_errors']):5.1f}%" if r["op_errors"] else "    -"
        print(f"  {r['label']:<26} ops >= 20 us: {len(r['op_errors']):3d}, median |error| {med}  |  regime {r['predicted_regime']}/{r['measured_regime']}", flush=True)
        for k in ("model", "args", "kwargs", "analysis", "measurement", "meta_model"):
            t[k] = None  # free device memory as we go
    if not rows:
        return 1
    op_errs = [e for r in rows for e in r["op_errors"]]
    agree = sum(r["predicted_regime"] == r["measured_regime"] for r in rows)
    rte_rows = [r for r in rows if r["rte_s"] is not None]
    print()
    print(f"models: {len(rows)}")
    for name, key in (("as calibrated", "error"), ("at the host's speed now", "error_now")):
        errs = [abs(r[key]) for r in rows if r.get(key) is not None]
        if not errs:
            continue
        line = f"end-to-end |error|, {name}: median {100 * statistics.median(errs):.1f}%, max {100 * max(errs):.1f}%"
        if rte_rows:
            wins = sum(abs(r[key]) < abs(r["rte_error"]) for r in rte_rows if r.get(key) is not None)
            line += f"; lower than RuntimeEstimator on {wins}/{len(rte_rows)} models"
        print(line)
    if index:
        scales = [r["host_scale"] for r in rows if r["host_scale"]]
        print(f"host scale over the kept rounds: median {statistics.median(scales):.2f}, {min(scales):.2f}-{max(scales):.2f}")
    if op_errs:
        print(f"per-op |error| for ops >= 20 us: median {100 * statistics.median(op_errs):.1f}% over {len(op_errs)} ops")
    print(f"dominant regime agrees: {agree}/{len(rows)}")
    if rte_rows:
        print(f"RuntimeEstimator: median |error| {100 * statistics.median(abs(r['rte_error']) for r in rte_rows):.1f}%")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(device=profile.device, kind=kind, profile=profile.name, torch=torch.__version__, host_index=index, rows=rows), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
