"""Training steps predicted against measured: time per step, per phase, and the peak of memory.

    python benchmarks/train_check.py --profile P [--device cuda|cpu] [--only NAME ...] [--list] [--json OUT] [--per-op]
    python benchmarks/train_check.py --profile P --replay RECORD.json   # no GPU: this code against a recorded run

Each case is a model, a batch and an optimizer. The step ``roofline advise --train`` predicts
(``Analysis`` with ``Options(train=...)``: forward, loss, backward, optimizer step as torch runs it on
the device) is set against real steps of the same model on the profile's device
(``roofline.measure.train``: zero_grad, forward, loss, backward, optimizer step, synchronize, timed
beside the host-speed index; each phase between synchronizes; the peak of memory over a step,
``torch.cuda.max_memory_allocated`` on a GPU). It prints per case the predicted and measured step
(and the step predicted at the host scale timed beside it), the phases and the peak of memory,
then the median and largest |error| of each.

``--per-op`` also times each op of the captured step (its replay under the profiler, as the zoo
times a forward's ops: ``roofline.measure.run.add_per_op``) and keeps the captured graphs beside the
record (``OUT_graphs.json.gz``); a replay of such a record prices the stored graphs (every case,
whatever is installed here) and prints the per-op |error| by phase and op family and the worst ops.

Cases: two small hand-written models (``small_mlp``, ``small_cnn``: the CPU subset), the example
files, and zoo models (``benchmarks/zoo/registry.py``) in float32 at a training batch. On the CPU
the default is the small subset; ``--only`` picks any cases by name (substrings).
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from roofline.checks import phase_prediction_s  # noqa: E402
from roofline.graph.loading import load_model_file  # noqa: E402
from roofline.graph.training import TrainStep  # noqa: E402
from roofline.measure.device import device_for  # noqa: E402
from roofline.measure.train import measure_step  # noqa: E402
from roofline.pipeline import Analysis, Options, resolve_profile  # noqa: E402


class SmallMLP(nn.Module):
    def __init__(self, width: int = 256, depth: int = 4):
        super().__init__()
        layers = [nn.Linear(64, width), nn.ReLU()]
        for _ in range(depth - 1):
            layers += [nn.Linear(width, width), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.body(x))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(self.features(x))


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], tuple[nn.Module, tuple, dict]] | None  # on the default device; None for a stored graph's case
    cpu: bool = False  # in the CPU subset


def _hand(name: str, cls, shape: tuple[int, ...]) -> Case:
    return Case(name, lambda: (cls(), (torch.randn(*shape),), {}), cpu=True)


def _example(file: str, cpu: bool = False) -> Case:
    def build():
        meta = torch.get_default_device().type == "meta"
        loaded = load_model_file(REPO / "examples" / file, materialize=not meta)
        # the file's module stays in sys.modules, and its globals would keep the model (moved to the GPU
        # in place by the measurement) allocated under every later case's peak of memory
        sys.modules.pop(loaded.module.__name__, None)
        return loaded.model, loaded.args, loaded.kwargs

    return Case(Path(file).stem, build, cpu=cpu)


ZOO = ["tv_resnet18", "tv_mobilenet_v2", "tv_efficientnet_b0", "tv_convnext_tiny", "tv_vit_b_16", "timm_deit_small",
       "hf_bert_base", "hf_gpt2", "hf_t5_small", "hf_llama_small", "unet_small", "mixer_mlp_hand", "clip_text_hand",
       "nn_transformer_encoder", "tcn_conv1d"]
ZOO_BATCH = {"cnn": 32, "vit": 32, "encoder": 8, "decoder": 4, "encdec": 8, "rnn": 16, "mlp": 64, "other": 16}


def _zoo(name: str) -> Case | None:
    try:
        from benchmarks.zoo.registry import MODELS, missing_reason
    except ImportError:
        return None
    model = next((m for m in MODELS if m.name == name), None)
    if model is None or missing_reason(model):
        return None
    return Case(f"zoo:{name}", lambda: model.build(ZOO_BATCH.get(model.family, 8), torch.float32))


def all_cases() -> list[Case]:
    cases = [
        _hand("small_mlp", SmallMLP, (32, 64)), _hand("small_cnn", SmallCNN, (16, 3, 32, 32)),
        _example("mlp_tiny.py", cpu=True), _example("gpt_block.py"), _example("resnet_cnn.py"), _example("transformer_encoder.py"),
    ]
    return cases + [c for c in map(_zoo, ZOO) if c is not None]


def err(p: float | None, m: float | None) -> float | None:
    return (p - m) / m if p is not None and m else None


def pct(e: float | None) -> str:
    return f"{100 * e:+6.1f}%" if e is not None else "     -"


def per_op_rows(analysis: Analysis, measured: list | None) -> list[dict]:
    """Each priced op of the step (``benchmarks.zoo.run.priced_ops``) with its phase."""
    from benchmarks.zoo.run import priced_ops

    rows = priced_ops(analysis, measured)
    for r in rows:
        r["phase"] = analysis.graph.ops[r["i"]].phase
    return rows


def graphs_path(record: str) -> Path:
    """The captured graphs beside a record: the file its ``graphs_file`` names (records whose cases
    captured the same graphs as an earlier record's share that one's), else RECORD_graphs.json.gz."""
    named = json.loads(Path(record).read_text()).get("graphs_file") if Path(record).exists() else None
    return Path(record).with_name(named or Path(record).name.removesuffix(".json") + "_graphs.json.gz")


def per_op_lines(rows: list[dict]) -> list[str]:
    """Per-op |error| of the recorded ops (measured at least ``PER_OP_MIN_S``) by phase and family, and the worst."""
    from benchmarks.zoo.run import PER_OP_MIN_S, WORST, _line

    ops = [dict(o, case=r["case"], error=(o["predicted_s"] - o["measured_s"]) / o["measured_s"])
           for r in rows for o in r.get("op_rows") or []
           if o.get("measured_s") is not None and o.get("predicted_s") is not None and o["measured_s"] >= PER_OP_MIN_S]
    if not ops:
        return []
    lines = [f"per-op |error| by phase and family, ops >= {PER_OP_MIN_S * 1e6:.0f} us (signed median; share of the phase's measured op time):"]
    groups: dict[tuple[str, str], list[dict]] = {}
    for o in ops:
        groups.setdefault((o["phase"], o["family"]), []).append(o)
    phase_s = {ph: sum(o["measured_s"] for o in ops if o["phase"] == ph) for ph in {o["phase"] for o in ops}}
    for (phase, family), group in sorted(groups.items(), key=lambda kv: (kv[0][0], -sum(o["measured_s"] for o in kv[1]))):
        errors = [o["error"] for o in group]
        share = sum(o["measured_s"] for o in group) / phase_s[phase]
        lines.append(f"  {_line(f'{phase} {family}', errors)} signed={100 * statistics.median(errors):+.1f}% share={100 * share:.0f}%")
    lines.append(f"the {WORST} worst ops (by |error| x measured time):")
    for o in sorted(ops, key=lambda o: -abs(o["error"]) * o["measured_s"])[:WORST]:
        lines.append(f"  {100 * o['error']:+8.0f}%  predicted {o['predicted_s'] * 1e6:9.1f} us  measured {o['measured_s'] * 1e6:9.1f} us  "
                     f"{o['phase']} {o['op']} {o['shapes']} {o['dtype']}  [{o['case']}]")
    return lines


def run_case(case: Case, profile, kind: str, device: str, step: TrainStep, analyses: dict | None = None) -> dict:
    with torch.device("meta"):
        model, args, kwargs = case.build()
    t0 = time.perf_counter()
    analysis = Analysis.of(model, args, kwargs, profile, Options(device=kind, train=step, batch_sweep=False), name=case.name)
    training = analysis.training
    analyze_s = time.perf_counter() - t0
    del model
    model, args, kwargs = case.build()
    real_step = TrainStep(optimizer=step.optimizer, implementation=analysis.graph.training.implementation, loss=step.loss)
    m = measure_step(model, args, kwargs, real_step, device, overheads=analysis.dev.overheads)
    scale = m.host_speed.scale if m.host_speed else None
    now_s = analysis.at_host_scale(scale).total_s if scale else None
    if analyses is not None:
        analyses[case.name] = analysis
    return dict(
        case=case.name, ops=len(analysis.graph.ops), implementation=training.implementation, batch=training.batch, analyze_s=analyze_s,
        predicted_s=training.predicted_s, predicted_now_s=now_s, host_scale=scale, measured_s=m.total.median_s, measured_iqr_s=m.total.iqr_s,
        # a phase is measured between synchronizations: compared with the phase alone
        phases={p.phase: dict(predicted_s=phase_prediction_s(p), in_step_s=p.predicted_s, measured_s=m.phases_s.get(p.phase))
                for p in training.phases},
        peak_bytes=training.memory.peak_bytes, measured_peak_bytes=m.peak_bytes, notes=m.notes,
    )


def add_op_rows(row: dict, case: Case, analysis: Analysis, device: str, graphs: dict) -> None:
    """Time each op of the case's captured step (its replay under the profiler) into ``row["op_rows"]``,
    and keep its graph in ``graphs``. Run after every step is timed: a profiler session slows the
    process's later launches (pytorch/pytorch#144455)."""
    from roofline.graph.serialize import graph_to_dict
    from roofline.measure.run import Measurement, add_per_op
    from roofline.timing import summarize

    model, args, kwargs = case.build()
    meas = Measurement(total=summarize([row["measured_s"]]), op_s=[None] * len(analysis.graph.ops), profiled_runs=0)
    add_per_op(meas, analysis.graph, model, args, kwargs, device, runs=3)
    row["notes"] = list(row["notes"]) + meas.notes
    row["op_rows"] = per_op_rows(analysis, meas.op_s)
    graphs[case.name] = graph_to_dict(analysis.graph)


def replayed_case(case: Case | None, recorded: dict, profile, kind: str, step: TrainStep, graph=None) -> dict:
    """A recorded case priced again by this code against its recorded measurements: the step as
    calibrated and at the recorded host scale, each phase, the peak, and each recorded op. ``graph``:
    the recorded capture; without one, the case is captured here on meta tensors."""
    options = Options(device=kind, train=step, batch_sweep=False, capture_device="cpu")
    if graph is not None:
        analysis = Analysis(graph, profile, kind, options, name=recorded["case"])
    else:
        with torch.device("meta"):
            model, args, kwargs = case.build()
        analysis = Analysis.of(model, args, kwargs, profile, options, name=case.name)
    training = analysis.training
    scale = recorded.get("host_scale")
    phases = {p.phase: dict(predicted_s=phase_prediction_s(p), in_step_s=p.predicted_s, measured_s=recorded["phases"].get(p.phase, {}).get("measured_s"))
              for p in training.phases}
    out = dict(recorded, ops=len(analysis.graph.ops), predicted_s=training.predicted_s, phases=phases,
               predicted_now_s=analysis.at_host_scale(scale).total_s if scale else None, peak_bytes=training.memory.peak_bytes)
    out.pop("op_rows", None)  # the record's predictions are not this code's: priced again below, or left out
    if graph is not None and recorded.get("op_rows"):
        measured_by_op = {o["i"]: o["measured_s"] for o in recorded["op_rows"]}
        out["op_rows"] = per_op_rows(analysis, [measured_by_op.get(i) for i in range(len(analysis.graph.ops))])
    return out


def summary(rows: list[dict], key: str, label: str) -> str:
    errors = [abs(e) for e in (r[key] for r in rows) if e is not None]
    if not errors:
        return f"{label}: no measurement"
    return f"{label}: median |error| {100 * statistics.median(errors):.1f}%, max {100 * max(errors):.1f}% (n={len(errors)})"


def write_training_host(profile, kind: str, device: str, out: Path) -> int:
    """A copy of ``profile`` whose ``kind`` part carries the training host costs measured here."""
    from roofline.measure.training_host import measure_training_host
    from roofline.profiles import save_profile

    t0 = time.perf_counter()
    training = measure_training_host(device)
    key = "host" if kind == "cpu" else "gpu"
    part = profile.part(kind)
    overheads = part.measurements.overheads.model_copy(update=dict(training=training))
    measurements = part.measurements.model_copy(update=dict(overheads=overheads))
    profile = profile.model_copy(update={key: part.model_copy(update=dict(measurements=measurements))})
    save_profile(profile, out)
    print(f"training host costs on {device} in {time.perf_counter() - t0:.1f} s: autograd records an op for "
          f"{training.grad_record_s.median_s * 1e6:.2f} µs more, runs a node for {training.autograd_node_s.median_s * 1e6:.2f} µs")
    for name, o in training.optimizers.items():
        print(f"  {name:<16} {o.call_s * 1e6:7.1f} µs per step + {o.per_parameter_s * 1e6:6.2f} µs per parameter tensor")
    print(f"wrote {out}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", help="profile name or path (required unless --list)")
    ap.add_argument("--device", choices=["cuda", "cpu"])
    ap.add_argument("--only", nargs="*", help="case names (substrings); default: every case on a GPU, the CPU subset on the CPU")
    ap.add_argument("--optimizer", choices=["adamw", "adam", "sgd"], default="adamw")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument(
        "--training-host", metavar="OUT.json",
        help="measure the training step's host costs on this machine (roofline.measure.training_host), write a copy of the profile with them to OUT.json, and exit",
    )
    ap.add_argument("--json")
    ap.add_argument("--per-op", action="store_true", help="also time each op of the step, and keep the captured graphs beside --json")
    ap.add_argument("--replay", metavar="RECORD.json", help="price the record's cases again with this code against its measurements "
                    "(no GPU: from the graphs stored beside the record by --per-op, else the cases whose libraries are installed here, captured on this CPU)")
    args = ap.parse_args()
    cases = all_cases()
    if args.list:
        for c in cases:
            print(f"{c.name}{'  (CPU subset)' if c.cpu else ''}")
        return 0
    if not args.profile:
        ap.error("--profile is required (a profile of this machine: roofline calibrate)")
    if args.per_op and args.replay:
        ap.error("--per-op times a live run; a replay prices the per-op times its record holds")
    recorded = {r["case"]: r for r in json.loads(Path(args.replay).read_text())["rows"]} if args.replay else None
    stored: dict = {}
    if args.replay and graphs_path(args.replay).exists():
        from roofline.graph.serialize import graph_from_dict

        stored = {name: graph_from_dict(g) for name, g in json.loads(gzip.decompress(graphs_path(args.replay).read_bytes())).items()}
    profile, kind = resolve_profile(args.profile, args.device or ("cuda" if args.replay else None))
    device = None if recorded is not None else device_for(profile, kind)
    if args.training_host:
        return write_training_host(profile, kind, device, Path(args.training_host))
    if args.only:
        cases = [c for c in cases if any(s in c.name for s in args.only)]
    elif kind == "cpu" and recorded is None:
        cases = [c for c in cases if c.cpu]
    if recorded is not None:
        known = {c.name for c in all_cases()}
        for name in recorded:
            if name not in known and name not in stored:
                print(f"{name}: left out (its library is not installed here)")
        if stored:  # every recorded case, priced from its stored capture
            cases = [Case(name, None) for name in recorded if name in stored and (not args.only or any(s in name for s in args.only))]
        else:
            cases = [c for c in cases if c.name in recorded]
    step = TrainStep(optimizer=args.optimizer)
    print(f"{f'replay of {Path(args.replay).name}: ' if args.replay else ''}training steps on {profile.device} ({kind}), profile '{profile.name}', "
          f"torch {torch.__version__}, {time.strftime('%Y-%m-%d')}, {args.optimizer}")
    if recorded is not None and not stored:
        print("captured on this machine's CPU: attention, RNN and nn.TransformerEncoder paths can differ from the recorded GPU capture")
    print(f"{'case':<28} {'impl':<8} {'predicted':>11} {'at host':>11} {'measured':>11} {'error':>7} {'at host':>7} | "
          f"{'fwd':>7} {'bwd':>7} {'opt':>7} | {'peak pred':>10} {'measured':>10} {'error':>7}")
    rows, graphs, analyses = [], {}, ({} if args.per_op else None)
    for case in cases:
        try:
            if recorded is not None:
                r = replayed_case(case, recorded[case.name], profile, kind, step, graph=stored.get(case.name))
            else:
                r = run_case(case, profile, kind, device, step, analyses=analyses)
        except Exception as e:  # noqa: BLE001 - one case's failure is reported, the rest still run
            print(f"{case.name:<28} failed: {type(e).__name__}: {str(e).splitlines()[0][:140]}")
            continue
        r["error"], r["error_now"] = err(r["predicted_s"], r["measured_s"]), err(r["predicted_now_s"], r["measured_s"])
        r["peak_error"] = err(r["peak_bytes"], r["measured_peak_bytes"])
        ph = {k: err(v["predicted_s"], v["measured_s"]) for k, v in r["phases"].items()}
        now = f"{r['predicted_now_s'] * 1e3:9.3f}ms" if r["predicted_now_s"] else f"{'-':>11}"
        print(f"{case.name:<28} {r['implementation']:<8} {r['predicted_s'] * 1e3:9.3f}ms {now} {r['measured_s'] * 1e3:9.3f}ms "
              f"{pct(r['error'])} {pct(r['error_now'])} | {pct(ph['forward'])} {pct(ph['backward'])} {pct(ph['optimizer'])} | "
              f"{r['peak_bytes'] / 1e6:8.2f}MB {(r['measured_peak_bytes'] or 0) / 1e6:8.2f}MB {pct(r['peak_error'])}")
        rows.append(r)
        gc.collect()  # this case's model and optimizer, where reference cycles keep them, are not the next case's
        if kind == "cuda" and recorded is None:
            torch.cuda.empty_cache()
    if analyses:
        by_name = {c.name: c for c in cases}
        for r in rows:
            try:
                add_op_rows(r, by_name[r["case"]], analyses.pop(r["case"]), device, graphs)
            except Exception as e:  # noqa: BLE001 - the step's figures stand without its ops
                r["notes"] = list(r["notes"]) + [f"per-op failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}"]
            gc.collect()
            if kind == "cuda":
                torch.cuda.empty_cache()
    print(summary(rows, "error", "step time, as calibrated"))
    print(summary(rows, "error_now", "step time, at the host scale of the measurement"))
    print(summary(rows, "peak_error", "peak memory"))
    for line in per_op_lines(rows):
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps(dict(device=profile.device, profile=profile.name, torch=torch.__version__,
                                                   date=time.strftime("%Y-%m-%d"), replay_of=args.replay, rows=rows), separators=(",", ":"), default=str))
        if graphs:
            graphs_path(args.json).write_bytes(gzip.compress(json.dumps(graphs).encode()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
