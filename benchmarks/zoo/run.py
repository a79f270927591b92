"""The zoo accuracy run: every zoo case predicted, measured and recorded, and a record priced again.

    python benchmarks/accuracy.py --zoo --profile P [--device cuda|cpu] [--only S ...] [--shard K/N] --json SHARD.json
    python benchmarks/accuracy.py --zoo --merge SHARD.json ... --json RECORD.json [--profile-file P.json]
    python benchmarks/accuracy.py --zoo --replay RECORD.json

A live run captures each case on the device (the meta-device model under fake tensors there),
predicts it with the profile, then times the real model end to end (the shared protocol, beside
the host-speed index) and, after every case is timed (a profiler session slows later launches),
each op's kernels under the profiler. It writes one JSON with each case's graph, its predictions
and its measurements. ``--merge`` joins shards of a run (device calls are limited in length) into
one record: the rows, and the graphs in a gzip file beside it. ``--replay`` prices every recorded
graph again with this code and the record's profile, on any machine, and prints the same lines:

    zoo: n=N median=X% p90=Y% max=Z%                 (end to end, as calibrated)
    zoo at the host scale: n=N median=X% p90=Y% max=Z%
    per-op |error| by family, ops >= 20 us
    the 10 worst ops with shapes and dtypes
"""

from __future__ import annotations

import gc
import gzip
import json
import math
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from roofline.graph.ops import CapturedGraph
from roofline.graph.serialize import graph_from_dict, graph_to_dict
from roofline.model.kernels import kernels_busy_s
from roofline.pipeline import Analysis, Options, read_host_level, resolve_profile
from roofline.profiles import load_profile_file

PER_OP_MIN_S = 20e-6  # ops measured shorter than this are left out of the per-op figures
WORST = 10


# ---- figures: the same lines for a live run, a merge and a replay --------------------------------


def _pct(values: list[float], q: float) -> float:
    """The q-quantile of values (linear interpolation), as a percentage of |error|."""
    xs = sorted(values)
    if not xs:
        return math.nan
    pos = q * (len(xs) - 1)
    lo, hi = int(math.floor(pos)), int(math.ceil(pos))
    return 100 * (xs[lo] + (xs[hi] - xs[lo]) * (pos - lo))


def _line(name: str, errors: list[float]) -> str:
    a = [abs(e) for e in errors]
    return f"{name}: n={len(a)} median={_pct(a, 0.5):.1f}% p90={_pct(a, 0.9):.1f}% max={100 * max(a):.1f}%" if a else f"{name}: n=0"


def op_rows(row: dict) -> list[dict]:
    """The ops of one case with a measured time at least ``PER_OP_MIN_S`` and a prediction."""
    out = []
    for op in row["ops"]:
        m, p = op.get("measured_s"), op.get("predicted_s")
        if m is not None and p is not None and m >= PER_OP_MIN_S:
            out.append({**op, "case": row["label"], "error": (p - m) / m})
    return out


def summary_lines(rows: list[dict]) -> list[str]:
    """End to end as calibrated and at the host scale, per-op by family, the worst ops."""
    lines = [
        _line("zoo", [(r["predicted_s"] - r["measured_s"]) / r["measured_s"] for r in rows]),
        _line("zoo at the host scale", [(r["predicted_now_s"] - r["measured_s"]) / r["measured_s"] for r in rows if r.get("predicted_now_s")]),
    ]
    read = [r for r in rows if r.get("predicted_read_s")]
    if read:  # as `roofline advise` prices on the profiled GPU's machine: the host read before the capture
        lines.append(_line("zoo with the host read before predicting", [(r["predicted_read_s"] - r["measured_s"]) / r["measured_s"] for r in read]))
    tabled = [r for r in rows if r.get("predicted_table_s")]
    if tabled:
        lines.append(_line("zoo with the kernel table", [(r["predicted_table_s"] - r["measured_s"]) / r["measured_s"] for r in tabled]))
        lines.append(_line("zoo with the kernel table at the host scale", [(r["predicted_table_now_s"] - r["measured_s"]) / r["measured_s"] for r in tabled if r.get("predicted_table_now_s")]))
    ops = [o for r in rows for o in op_rows(r)]
    by_family: dict[str, list[float]] = {}
    for o in ops:
        by_family.setdefault(o["family"], []).append(o["error"])
    lines.append(f"per-op |error| by family, ops >= {PER_OP_MIN_S * 1e6:.0f} us:")
    for family, errs in sorted(by_family.items(), key=lambda kv: -len(kv[1])):
        lines.append("  " + _line(family, errs))
    lines.append(f"the {WORST} worst ops:")
    for o in sorted(ops, key=lambda o: -abs(o["error"]))[:WORST]:
        lines.append(
            f"  {100 * o['error']:+8.0f}%  predicted {o['predicted_s'] * 1e6:9.1f} us  measured {o['measured_s'] * 1e6:9.1f} us  "
            f"{o['op']} {o['shapes']} {o['dtype']}  [{o['case']}]"
        )
    return lines


def family_of(op, cost) -> str:
    """The op's cost family, with convolutions split by mechanism (depthwise, grouped, dense)."""
    if cost.category == "conv":
        groups = op.args[8] if op.name.startswith("aten.convolution") and len(op.args) > 8 else 1
        weight = op.args[1] if len(op.args) > 1 else None
        if isinstance(groups, int) and groups > 1 and weight is not None:
            return "conv depthwise" if weight.shape[1] == 1 else "conv grouped"
    return cost.category


def priced_ops(analysis: Analysis, measured: list | None) -> list[dict]:
    """Each op's prediction (on a GPU its kernels' time, without the gaps between one op's kernels
    where the profile tells them, as the profiler measures an op; op time on the CPU) beside its
    measured time."""
    gpu = analysis.kind == "cuda"
    tl = analysis.timeline()
    out = []
    for i, (op, cost, t) in enumerate(zip(analysis.graph.ops, analysis.costs, tl.ops)):
        if not cost.kernels and not (measured and measured[i]):
            continue
        inputs = op.tensor_inputs()
        busy = kernels_busy_s(op, cost, analysis.dev, t.kernel_s, t.compute_s, t.memory_s) if gpu else None
        out.append(dict(
            i=i, op=op.name, family=family_of(op, cost), shapes=[list(x.shape) for x in inputs][:3],
            dtype=str(inputs[0].dtype).removeprefix("torch.") if inputs else "",
            predicted_s=(busy or t.kernel_s) if gpu else t.predicted_s,
            measured_s=measured[i] if measured else None,
        ))
    return out


def with_table(row: dict, analysis: Analysis, measured: list | None) -> None:
    """Add the case's prediction with the kernel table (end to end, at the host scale, per op)."""
    row["predicted_table_s"] = analysis.total_s
    row["predicted_table_now_s"] = analysis.at_host_scale(row["host_scale"]).total_s if row.get("host_scale") else None
    by_index = {o["i"]: o for o in priced_ops(analysis, measured)}
    for o in row["ops"]:
        o["predicted_table_s"] = by_index[o["i"]]["predicted_s"] if o["i"] in by_index else None


# ---- a live run ----------------------------------------------------------------------------------


def _build(case, device):
    torch.manual_seed(0)
    with torch.device(device):
        return case.model.build(case.batch, case.dtype)


def context_lost(error: BaseException) -> bool:
    """Whether ``error`` left the process's CUDA context unusable (a device-side assert, as an index
    out of an embedding's range raises; an illegal memory access; a failed launch): every later CUDA
    call fails the same way."""
    text = str(error)
    return any(m in text for m in ("device-side assert", "illegal memory access", "unspecified launch failure"))


def _per_op_s(case, analysis: Analysis, row: dict, device: str, runs: int) -> list | None:
    """Each op's time under the profiler over ``runs`` replays of the case; None, with a note on the
    row, where the profiled run fails."""
    from roofline.measure.run import Measurement, add_per_op
    from roofline.timing import summarize

    try:
        real, ra, rk = _build(case, device)
        meas = Measurement(total=summarize([row["measured_s"]]), op_s=[None] * len(analysis.graph.ops), profiled_runs=0)
        add_per_op(meas, analysis.graph, real, ra, rk, device, runs=runs)
        row["notes"] += meas.notes
        return meas.op_s
    except Exception as e:  # noqa: BLE001 - a case whose profiled run fails keeps its end-to-end figures
        row["notes"].append(f"per-op failed: {type(e).__name__}: {str(e)[:160]}")
        return None


def run_live(args) -> int:
    from benchmarks.zoo.registry import cases as zoo_cases
    from roofline.measure.device import device_for
    from roofline.measure.run import measure

    profile, kind = resolve_profile(args.profile, args.device)
    device = device_for(profile, kind)
    todo = zoo_cases()
    if args.probes:  # the host probes (benchmarks/zoo/probes.py) instead of the zoo's models
        from benchmarks.zoo.probes import probe_cases

        todo = probe_cases()
    elif args.heldout:  # the held-out zoo (benchmarks/zoo/heldout.py) instead of the zoo's models
        from benchmarks.zoo.heldout import heldout_cases

        todo = heldout_cases()
    elif args.fresh:  # the third set (heldout.FRESH)
        from benchmarks.zoo.heldout import FRESH, heldout_cases

        todo = heldout_cases(models=FRESH)
    elif args.fourth:  # the fourth set (heldout.FOURTH)
        from benchmarks.zoo.heldout import FOURTH, heldout_cases

        todo = heldout_cases(models=FOURTH)
    elif args.fifth:  # the fifth set (heldout.FIFTH)
        from benchmarks.zoo.heldout import FIFTH, heldout_cases

        todo = heldout_cases(models=FIFTH)
    if kind == "cpu" and not args.probes:  # the CPU subset: batch 1 in the natural dtype (a 2-core CPU runs the rest for minutes)
        todo = [c for c in todo if c.batch == 1 and c.dtype == c.model.dtypes[0]]
    if args.only:
        todo = [c for c in todo if any(s in c.label for s in args.only)]
    if args.shard:
        k, n = (int(x) for x in args.shard.split("/"))
        todo = todo[k - 1::n]
    # priced at the profile's host level; the host read before each case gives the prediction
    # `roofline advise --host now` makes on this machine, recorded beside it
    options = Options(device=kind, capture_device=device.split(":")[0], batch_sweep=False, host="profile")
    modes = options.modes()
    overheads = profile.part(kind).measurements.overheads
    print(f"zoo on {profile.device} ({kind}), profile '{profile.name}', torch {torch.__version__}, {time.strftime('%Y-%m-%d')}, {len(todo)} cases", flush=True)
    done, lost, not_run = [], False, []
    for position, case in enumerate(todo):
        try:
            # the reading `roofline advise --host now` makes (on the GPU only), kept where it applies it
            read = read_host_level(profile, kind, replace(options, host="now"))[1] if kind == "cuda" else None
            read_scale = read.scale if read is not None and read.applied else None
            t0 = time.perf_counter()
            with torch.device("meta"):
                model, a, k = case.model.build(case.batch, case.dtype)
            analysis = Analysis.of(model, a, k, profile, options, name=case.label, materialize=lambda c=case: _build(c, "cpu"))
            predicted = analysis.total_s
            capture_s = time.perf_counter() - t0
            real, ra, rk = _build(case, device)
            m = measure(analysis.graph, real, ra, rk, device, per_op=False, overheads=overheads, budget_s=args.budget)
            del real, ra, rk
        except Exception as e:  # noqa: BLE001 - a case that fails is reported and the run goes on
            print(f"  {case.label:<36} FAILED: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}", flush=True)
            if kind == "cuda" and context_lost(e):
                not_run = [c.label for c in todo[position + 1:]]
                print(f"  the CUDA context is lost: {len(not_run)} more cases not run, no per-op times; the cases timed are written", flush=True)
                lost = True
                break
            gc.collect()
            torch.cuda.empty_cache() if kind == "cuda" else None
            continue
        scale = m.host_speed.scale if m.host_speed else None
        now = analysis.at_host_scale(scale).total_s if scale else None
        row = dict(
            label=case.label, model=case.model.name, library=case.model.library, family=case.model.family, batch=case.batch,
            dtype=str(case.dtype).removeprefix("torch."), predicted_s=predicted, measured_s=m.total.median_s, spread_s=m.total.iqr_s,
            host_scale=scale, predicted_now_s=now, capture_s=capture_s,
            host_read_scale=read_scale, predicted_read_s=analysis.at_host_scale(read_scale).total_s if read_scale else None, n_ops=len(analysis.graph.ops), notes=list(m.notes),
        )
        done.append((case, analysis, row))
        err = (predicted - row["measured_s"]) / row["measured_s"]
        now_txt = f" | x{scale:.2f} {100 * (now - row['measured_s']) / row['measured_s']:+6.1f}%" if scale else ""
        if read_scale:
            now_txt += f" | read x{read_scale:.2f} {100 * (row['predicted_read_s'] - row['measured_s']) / row['measured_s']:+6.1f}%"
        print(f"  {case.label:<36} predicted {predicted * 1e3:9.3f} ms  measured {row['measured_s'] * 1e3:9.3f} ms  {100 * err:+6.1f}%{now_txt}  ({len(analysis.graph.ops)} ops, capture {capture_s:.1f} s)", flush=True)
        gc.collect()
        if kind == "cuda":
            torch.cuda.empty_cache()
    print("per op (profiler), after every case is timed:", flush=True)
    rows, graphs = [], {}
    # a lost CUDA context times nothing more: the cases timed keep their prices without per-op times
    table_profile = profile.model_copy(deep=True) if args.kernels and kind == "cuda" and not lost else None
    for case, analysis, row in done:
        if lost:
            op_s = None
            row["notes"].append("per-op not timed: the CUDA context was lost")
        else:
            op_s = _per_op_s(case, analysis, row, device, args.runs)
        row["ops"] = priced_ops(analysis, op_s)
        if table_profile is not None:
            from calibrate.kernels import time_graph_kernels

            table = table_profile.gpu.measurements.kernels
            table.extend(time_graph_kernels(analysis.graph, device, {e.key for e in table}, budget_s=0.005, model=case.label))
            with_table(row, Analysis(analysis.graph, table_profile, kind, options, name=case.label), op_s)
        graphs[case.label] = graph_to_dict(analysis.graph)
        rows.append(row)
        gc.collect()
        if kind == "cuda" and not lost:
            torch.cuda.empty_cache()
    lines = summary_lines(rows)
    print("\n".join(lines))
    if args.json:
        _write(args.json, dict(
            device=profile.device, kind=kind, profile=profile.name, torch=torch.__version__, date=time.strftime("%Y-%m-%d"),
            allow_tf32=modes.matmul_tf32, conv_tf32=modes.conv_tf32, rows=rows, graphs=graphs, summary=lines,
            kernel_table=[e.model_dump() for e in table_profile.gpu.measurements.kernels] if table_profile else [],
            **({"not_run": not_run} if not_run else {}),
        ))
        print(f"wrote {args.json}")
    return 0


# ---- merge and replay ----------------------------------------------------------------------------


def _write(path: str, data: dict) -> None:
    """JSON, gzipped when the name ends in .gz (a shard's graphs are tens of MB uncompressed)."""
    if path.endswith(".gz"):
        with gzip.open(path, "wt") as f:
            json.dump(data, f)
    else:
        Path(path).write_text(json.dumps(data))


def _read(path: str) -> dict:
    if path.endswith(".gz"):
        with gzip.open(path, "rt") as f:
            return json.load(f)
    return json.loads(Path(path).read_text())


def merge(args) -> int:
    """Shards of one run -> one record (rows and figures) plus its graphs in ``<record>_graphs.json.gz``."""
    shards = [_read(p) for p in args.merge]
    first = shards[0]
    rows = [r for s in shards for r in s["rows"]]
    graphs = {k: v for s in shards for k, v in s["graphs"].items()}
    table = {e["key"]: e for s in shards for e in s.get("kernel_table", [])}
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    graphs_file = out.with_name(out.stem + "_graphs.json.gz")
    profile_file = None
    if args.profile_file:  # kept beside the record, compressed: a replay prices with the profile the run used
        profile_file = out.with_name(out.stem + "_profile.json.gz")
        if Path(args.profile_file).resolve() != profile_file.resolve():
            source = Path(args.profile_file).read_bytes()
            profile_file.write_bytes(source if args.profile_file.endswith(".gz") else gzip.compress(source, mtime=0))
    lines = summary_lines(rows)
    # the record keeps each op's measured time; the live run's per-op rows (shapes, predictions)
    # go with the graphs, which hold the same ops
    with gzip.open(graphs_file, "wt") as f:
        json.dump(dict(graphs=graphs, kernel_table=list(table.values()), ops={r["label"]: r["ops"] for r in rows}), f)
    record = dict(
        {k: first[k] for k in ("device", "kind", "profile", "torch", "date", "allow_tf32", "conv_tf32")},
        profile_file=profile_file.name if profile_file else None, graphs_file=graphs_file.name, summary=lines,
        rows=[dict(r, ops=[[o["i"], o["measured_s"]] for o in r["ops"] if o.get("measured_s") is not None]) for r in rows],
    )
    not_run = [label for s in shards for label in s.get("not_run", [])]
    if not_run:  # cases a lost CUDA context left unmeasured: the record says which, so its n is read right
        record["not_run"] = not_run
    out.write_text(json.dumps(record, separators=(",", ":")))
    print("\n".join(lines))
    if not_run:
        print(f"{len(not_run)} cases not run (a shard's CUDA context was lost): {', '.join(not_run)}")
    print(f"wrote {out} and {graphs_file}")
    return 0


def _replayed(old: dict, graphs: dict, profile, kind: str, options: Options, devices: dict,
              python_calls: dict | None = None) -> tuple[dict, Analysis, list]:
    """One recorded row priced again (predictions as calibrated and at the recorded host scale),
    its analysis, and each op's measured time. ``python_calls`` (label -> per-op counts) fills in the
    Python calls of a graph captured before the capture counted them (benchmarks/zoo/python_calls.py)."""
    graph = graphs[old["label"]] if isinstance(graphs[old["label"]], CapturedGraph) else graph_from_dict(graphs[old["label"]])
    counts = (python_calls or {}).get(old["label"])
    if counts is not None and not any(op.python_calls for op in graph.ops):
        if len(counts) != len(graph.ops):
            raise SystemExit(f"{old['label']}: the Python-call file has {len(counts)} counts for its {len(graph.ops)} ops; count them again (benchmarks/zoo/python_calls.py)")
        for op, n in zip(graph.ops, counts):
            op.python_calls = n
    analysis = Analysis(graph, profile, kind, options, name=old["label"], devices=devices)
    measured_by_op = dict(old["ops"])  # [op index, measured seconds] pairs
    row = dict(old, predicted_s=analysis.total_s)
    row["predicted_now_s"] = analysis.at_host_scale(old["host_scale"]).total_s if old.get("host_scale") else None
    row["predicted_read_s"] = analysis.at_host_scale(old["host_read_scale"]).total_s if old.get("host_read_scale") else None
    measured = [measured_by_op.get(i) for i in range(len(analysis.graph.ops))]
    row["ops"] = priced_ops(analysis, measured)
    return row, analysis, measured


def recaptured(record: dict, profile, kind: str) -> dict:
    """Label -> the case captured again on this machine (meta tensors, this code, the libraries here);
    a case whose library is missing or whose capture fails here is left out, with one line saying so."""
    from benchmarks.zoo.heldout import FIFTH, FOURTH, FRESH, heldout_cases
    from benchmarks.zoo.probes import probe_cases
    from benchmarks.zoo.registry import cases, missing_reason

    by_label = {c.label: c for c in cases(available_only=False) + heldout_cases(available_only=False) + heldout_cases(False, FRESH)
                + heldout_cases(False, FOURTH) + heldout_cases(False, FIFTH) + probe_cases()}
    options = Options(device=kind, batch_sweep=False)
    out = {}
    for row in record["rows"]:
        case = by_label.get(row["label"])
        reason = "not in the registry" if case is None else (None if case.model.library == "probe" else missing_reason(case.model))
        if reason is None:
            try:
                with torch.device("meta"):
                    model, a, k = case.model.build(case.batch, case.dtype)
                out[row["label"]] = Analysis.of(model, a, k, profile, options, name=row["label"], materialize=lambda c=case: _build(c, "cpu")).graph
                continue
            except Exception as e:  # noqa: BLE001 - a case that cannot be captured here is reported and left out
                reason = f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
        print(f"  {row['label']}: left out ({reason})")
    return out


def without_stages(profile, kind: str, stages: list[str]):
    """The profile with some calibration stages removed, to see what each buys on a record: a
    measurement list of the device part (``conv_families``, ``gemm_ratios``, ``attention``, ``conv``,
    ``rnn``), ``pointwise:OP`` for one op family's curves (``pointwise:layer_norm_short``),
    ``conv_patches`` for the dense curves' patch-embedding points (``calibrate.conv.GPU_PATCH_SHAPES``), or
    ``host_phase`` for the host costs as the overheads stage measured them (``host_phase_factor`` undone)."""
    stripped = profile.model_copy(deep=True)
    meas = stripped.part(kind).measurements
    for stage in stages:
        if stage == "conv_patches":
            from calibrate.conv import is_patch_point

            meas.conv = [c.model_copy(update=dict(points=[p for p in c.points if not is_patch_point(p)])) for c in meas.conv]
            continue
        if stage == "host_phase":
            from calibrate.runner import at_host_phase

            meas.overheads = at_host_phase(meas.overheads, 1.0 / meas.overheads.host_phase_factor).model_copy(update=dict(host_phase_factor=1.0))
            continue
        if stage.startswith("pointwise:"):
            meas.pointwise = [c for c in meas.pointwise if c.op != stage.split(":", 1)[1]]
            continue
        field = type(meas).model_fields.get(stage)
        if field is None or (field.default_factory is None and field.default is not None):
            raise SystemExit(f"--drop {stage}: not an optional measurement of the profile's {kind} part")
        setattr(meas, stage, field.default_factory() if field.default_factory is not None else None)
    return stripped


def rephased(profile, kind: str):
    """The profile with its host costs put at its calibration's host samples (``Overheads.host_index_s``)
    by this code's rule and gates (``calibrate.runner.with_host_phase``), the stored factor undone
    first: a profile calibrated under an earlier rule priced as a calibration now would have left it.
    As it is where it kept no samples of the ops alone, or where ``calibrate.host_level`` moved its
    host costs (the samples are against the costs before the move)."""
    from calibrate.runner import with_host_phase

    ov = profile.part(kind).measurements.overheads
    if not ov.host_index_s.get("run_alone") or ov.host_level is not None:
        return profile
    undone = without_stages(profile, kind, ["host_phase"])
    part = undone.part(kind).measurements
    part.overheads = with_host_phase(part.overheads, profile.calibration, [])
    return undone


def with_stages_dropped(record: dict, profile, kind: str, stages: list[str]) -> tuple[dict, object]:
    """(record, profile) for a replay without some calibration stages (``without_stages``); without
    ``host_phase`` the recorded host scales are read against the undone host costs' index."""
    dropped = without_stages(profile, kind, stages)
    return dict(record, rows=rebased_host_scales(record["rows"], profile, dropped, kind)), dropped


def rebased_host_scales(rows: list[dict], recorded, profile, kind: str) -> list[dict]:
    """The rows with their host scales (the index's time over the recorded profile's calibrated
    index) over ``profile``'s index instead: the same host speed, read against another profile of the
    machine (one whose host costs were moved, say)."""
    from roofline.model.host import calibrated_index_s

    factor = calibrated_index_s(recorded.part(kind).measurements.overheads) / calibrated_index_s(profile.part(kind).measurements.overheads)
    return [dict(r, **{k: r[k] * factor for k in ("host_scale", "host_read_scale") if r.get(k)}) for r in rows]


def with_host_model(profile, kind: str, **overheads):
    """A copy of ``profile`` whose ``kind`` part prices its host with these ``Overheads`` fields set
    (a replay weighing a program factor or a Python call share); the profile itself is left as it was."""
    scaled = profile.model_copy(deep=True)
    part = scaled.part(kind).measurements
    part.overheads = part.overheads.model_copy(update=overheads)
    return scaled


def replay_inputs(path: Path, profile_arg=None, python_calls: bool = True) -> tuple[dict, object, str, dict, list, dict | None]:
    """What a replay of the record at ``path`` prices: (the record, with its host scales read against
    the profile; the profile: ``profile_arg``'s (a name, a path or a loaded profile), else the record's own; its kind; the captured graphs;
    the kernel table; the Python calls of a record captured before the capture counted them, from the
    file beside it, unless ``python_calls`` is False)."""
    record = json.loads(path.read_text())
    if profile_arg:
        profile, kind = resolve_profile(profile_arg, record["kind"])
        if record.get("profile_file"):  # the recorded host scales are to the record's profile: to this one's
            record = dict(record, rows=rebased_host_scales(record["rows"], load_profile_file(path.parent / record["profile_file"]), profile, kind))
    elif record.get("profile_file"):
        profile, kind = load_profile_file(path.parent / record["profile_file"]), record["kind"]
    else:
        raise SystemExit(f"{path} names no profile file; pass --profile")
    with gzip.open(path.parent / record["graphs_file"], "rt") as f:
        stored = json.load(f)
    from benchmarks.zoo.python_calls import sidecar_path

    sidecar = sidecar_path(path)
    calls = json.loads(sidecar.read_text())["cases"] if sidecar.exists() and python_calls else None
    return record, profile, kind, stored["graphs"], stored.get("kernel_table", []), calls


def replay(args) -> int:
    """Every graph of a record priced again by this code, against the record's measurements."""
    path = Path(args.replay)
    record, profile, kind, graphs, table, python_calls = replay_inputs(path, args.profile, not args.no_python_calls and not args.recapture)
    if args.recapture:  # each case captured again here, with this code and the libraries installed here
        graphs = recaptured(record, profile, kind)
        # the recorded per-op times belong to the recorded graphs' op indices: end to end only
        record = dict(record, rows=[dict(r, ops=[]) for r in record["rows"] if r["label"] in graphs])
    if args.rephase:
        now = rephased(profile, kind)
        record, profile = dict(record, rows=rebased_host_scales(record["rows"], profile, now, kind)), now
    if args.drop:
        record, profile = with_stages_dropped(record, profile, kind, args.drop)
    table_profile = None
    if table and kind == "cuda":
        from roofline.schema.profile import KernelEntry

        table_profile = profile.model_copy(deep=True)
        table_profile.gpu.measurements.kernels = [KernelEntry(**e) for e in table]
    options = Options(device=kind, allow_tf32=record["allow_tf32"], conv_tf32=record["conv_tf32"], batch_sweep=False)
    devices: dict = {}
    table_devices: dict = {}
    if args.host_factors:
        import roofline.model.host as host_model

        calibrated_entry = host_model.CALL_ENTRY_SHARE
        try:
            for entry in args.entry_shares or [calibrated_entry]:
                host_model.CALL_ENTRY_SHARE = entry
                for share in args.python_shares or [host_model.PYTHON_CALL_SHARE]:
                    for factor in args.host_factors:
                        scaled = with_host_model(profile, kind, program_factor=factor, python_call_share=share)
                        rows = [_replayed(old, graphs, scaled, kind, options, {}, python_calls)[0] for old in record["rows"]]
                        print(f"program factor {factor:.2f}, Python call share {share:.2f}, call entry share {entry:.2f}: " + " | ".join(summary_lines(rows)[:2]))
                        if args.verbose:
                            for r in rows:
                                if r.get("predicted_now_s"):
                                    print(f"  {r['label']:<36} at the host scale x{r['host_scale']:.2f}: {100 * (r['predicted_now_s'] - r['measured_s']) / r['measured_s']:+6.1f}%")
        finally:
            host_model.CALL_ENTRY_SHARE = calibrated_entry
        return 0
    rows = []
    from benchmarks.zoo.python_calls import sidecar_path

    counted = f"; Python calls of {len(python_calls)} cases from {sidecar_path(path).name}" if python_calls else ""
    print(f"replay of {path.name} ({record['device']}, {record['date']}, torch {record['torch']}): priced by this code with profile '{profile.name}'{counted}")
    for old in record["rows"]:
        row, analysis, measured = _replayed(old, graphs, profile, kind, options, devices, python_calls)
        if table_profile is not None and old.get("predicted_table_s"):
            with_table(row, Analysis(analysis.graph, table_profile, kind, options, name=old["label"], devices=table_devices), measured)
        rows.append(row)
        if args.verbose:
            e = (row["predicted_s"] - row["measured_s"]) / row["measured_s"]
            print(f"  {row['label']:<36} predicted {row['predicted_s'] * 1e3:9.3f} ms  measured {row['measured_s'] * 1e3:9.3f} ms  {100 * e:+6.1f}%")
    lines = summary_lines(rows)
    print("\n".join(lines))
    if args.by_library:
        print("\n".join(library_lines(rows)))
    recorded = record.get("summary") or []
    if recorded and recorded[:2] != lines[:2]:
        print("recorded run printed:")
        print("\n".join("  " + x for x in recorded[:2]))
    return 0


def library_lines(rows: list[dict]) -> list[str]:
    """At the host scale: the host scales the cases ran at, signed and |error| medians by library at
    batch 1 and at the typical batch, and the five cases furthest off."""
    rows = [r for r in rows if r.get("predicted_now_s")]
    errors = {r["label"]: (r["predicted_now_s"] - r["measured_s"]) / r["measured_s"] for r in rows}
    scales = sorted(r["host_scale"] for r in rows)
    out = [f"host scales x{scales[0]:.2f}..x{scales[-1]:.2f}, median x{statistics.median(scales):.2f}, "
           f"median distance from 1 {100 * statistics.median(abs(x - 1) for x in scales):.0f}%"]
    groups: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        groups.setdefault((r["library"], "batch 1" if r["batch"] == 1 else "typical batch"), []).append(errors[r["label"]])
    for (library, batch), errs in sorted(groups.items()):
        out.append(f"  {library:<12} {batch:<13} n={len(errs):3d} signed median {100 * statistics.median(errs):+6.1f}%  "
                   f"|error| median {100 * statistics.median(abs(e) for e in errs):5.1f}%")
    worst = sorted(errors.items(), key=lambda kv: -abs(kv[1]))[:5]
    out.append("furthest at the host scale: " + ", ".join(f"{label} {100 * e:+.0f}%" for label, e in worst))
    return out


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zoo", action="store_true")
    ap.add_argument("--profile")
    ap.add_argument("--device", choices=["cuda", "cpu"])
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--shard", help="K/N: every N-th case from the K-th (device calls are limited in length)")
    ap.add_argument("--probes", action="store_true", help="run the host probes (benchmarks/zoo/probes.py) instead of the zoo's models")
    ap.add_argument("--heldout", action="store_true", help="run the held-out zoo (benchmarks/zoo/heldout.py) instead of the zoo's models")
    ap.add_argument("--fresh", action="store_true", help="run the third set (benchmarks/zoo/heldout.py, FRESH) instead of the zoo's models")
    ap.add_argument("--fourth", action="store_true", help="run the fourth set (benchmarks/zoo/heldout.py, FOURTH) instead of the zoo's models")
    ap.add_argument("--fifth", action="store_true", help="run the fifth set (benchmarks/zoo/heldout.py, FIFTH) instead of the zoo's models")
    ap.add_argument("--budget", type=float, default=0.6, help="seconds of end-to-end timing per case")
    ap.add_argument("--runs", type=int, default=3, help="profiled replays per case")
    ap.add_argument("--kernels", action="store_true", help="also time every case's distinct kernels (the kernel table) and predict with them")
    ap.add_argument("--json")
    ap.add_argument("--merge", nargs="+")
    ap.add_argument("--profile-file", help="with --merge: the profile the run used, saved beside the record")
    ap.add_argument("--replay")
    ap.add_argument("--verbose", action="store_true", help="with --replay: every case's line")
    ap.add_argument("--by-library", action="store_true", help="with --replay: host scales, errors at the host scale by library and batch, the furthest cases")
    ap.add_argument("--drop", nargs="+", help="with --replay: price without these calibration stages (see without_stages)")
    ap.add_argument("--rephase", action="store_true", help="with --replay: the profile's host costs put at its calibration's host samples by this code's rule (see rephased)")
    ap.add_argument("--host-factors", nargs="+", type=float, help="with --replay: the zoo's two summary lines at each of these program factors (the host's real-program factor)")
    ap.add_argument("--python-shares", nargs="+", type=float, help="with --host-factors: also at each of these shares of a dispatch per Python call of model code")
    ap.add_argument("--entry-shares", nargs="+", type=float, help="with --host-factors: also at each of these shares of a view's dispatch for a native call's Python entry (roofline.model.host.CALL_ENTRY_SHARE)")
    ap.add_argument("--recapture", action="store_true", help="with --replay: capture every case again here (this code, the libraries installed here) instead of the recorded graphs")
    ap.add_argument("--no-python-calls", action="store_true", help="with --replay: ignore the record's Python-calls file (price as if the model ran no Python of its own)")
    args = ap.parse_args(argv)
    if args.replay:
        return replay(args)
    if args.merge:
        return merge(args)
    if not args.profile:
        raise SystemExit("--profile is needed for a live run")
    return run_live(args)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
