"""A design-review page: one self-contained HTML file for a ``Report`` and its profile.

Everything is inline: the charts as base64 PNG, the CSS in a <style> element. The page names no URL
and needs no JavaScript, so it opens the same from a mail attachment, an air-gapped machine or a CI
artifact. Sections: the profile's key ceilings, totals and regime shares, advice, charts, placement,
the top ops (with measured and error columns when measured), the module roll-up, fusion groups,
further analyses, accuracy (when measured), unsupported ops and warnings.
"""

from __future__ import annotations

import base64
import html
import io
import math
from datetime import datetime, timezone
from pathlib import Path

from roofline.advice.plans import plan_label
from roofline.errors import RooflineError
from roofline.schema.profile import DeviceProfile
from roofline.schema.report import OpReport, Report
from roofline.units import count, seconds

TOP_OPS = 50
REGIME_COLORS = {"compute": "#2e7d32", "memory": "#1565c0", "overhead": "#c2185b", "none": "#9e9e9e"}

_CSS = """
:root { --ink:#212121; --muted:#616161; --line:#e0e0e0; --bg:#fafafa; }
* { box-sizing: border-box; }
body { font: 15px/1.45 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--ink);
       margin: 0; background: #fff; }
main { max-width: 1240px; margin: 0 auto; padding: 24px 32px 64px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 16px; margin: 20px 0 6px; }
.sub { color: var(--muted); margin: 0 0 14px; }
nav { font-size: 13px; margin: 10px 0 0; color: var(--muted); }
nav a { color: #1565c0; text-decoration: none; margin-right: 12px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 10px; margin: 12px 0; }
.card { background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; }
.card .k { font-size: 12px; color: var(--muted); letter-spacing: .02em; }
.card .v { font-size: 20px; font-weight: 600; }
.card .n { font-size: 12px; color: var(--muted); }
.bar { display: flex; height: 22px; border-radius: 4px; overflow: hidden; border: 1px solid var(--line); margin: 8px 0 4px; }
.bar span { display: block; height: 100%; }
.legend span { display: inline-block; margin-right: 14px; font-size: 13px; }
.legend i { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 5px; vertical-align: -1px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; margin: 6px 0 10px; }
th, td { padding: 4px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: var(--bg); font-weight: 600; position: sticky; top: 0; }
td.r, th.r { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
tr.dim td { color: #9e9e9e; }
.pill { display: inline-block; padding: 0 7px; border-radius: 9px; color: #fff; font-size: 12px; }
.good { color: #2e7d32; } .bad { color: #c62828; }
figure { margin: 14px 0 22px; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; }
figcaption { font-size: 13px; color: var(--muted); }
ul.advice li { margin: 4px 0; }
.note { font-size: 13px; color: var(--muted); }
.warn { background: #fff8e1; border: 1px solid #ffe082; border-radius: 6px; padding: 8px 12px; }
footer { margin-top: 40px; font-size: 12px; color: var(--muted); }
"""


# ---- formatting --------------------------------------------------------------------------------


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _s(x: float | None) -> str:
    return seconds(x, missing="–")


def _n(x: float | None, unit: str = "") -> str:
    return count(x, unit, missing="–")


def _pct(x: float | None, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{100 * x:+.0f}%" if signed else f"{100 * x:.0f}%"


def _err_class(err: float | None) -> str:
    if err is None:
        return ""
    return "good" if abs(err) <= 0.25 else "bad"


def _pill(regime: str) -> str:
    return f'<span class="pill" style="background:{REGIME_COLORS.get(regime, "#9e9e9e")}">{_e(regime)}</span>'


def _table(headers: list[str], rows: list[list[str]], right: set[int] = frozenset(), row_classes: list[str] | None = None) -> str:
    """``rows`` hold HTML already escaped by the caller."""
    head = "".join(f'<th class="r">{_e(h)}</th>' if i in right else f"<th>{_e(h)}</th>" for i, h in enumerate(headers))
    body = []
    for k, row in enumerate(rows):
        cls = f' class="{row_classes[k]}"' if row_classes and row_classes[k] else ""
        cells = "".join(f'<td class="r">{c}</td>' if i in right else f"<td>{c}</td>" for i, c in enumerate(row))
        body.append(f"<tr{cls}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _cards(items: list[tuple[str, str, str]]) -> str:
    return '<div class="cards">' + "".join(
        f'<div class="card"><div class="k">{_e(k)}</div><div class="v">{v}</div><div class="n">{n}</div></div>' for k, v, n in items
    ) + "</div>"


def _short(target: str) -> str:
    from roofline.report.charts import short_target

    return short_target(target)


def _shapes(op: OpReport) -> str:
    dims = ["×".join(map(str, t.shape)) or "()" for t in op.inputs[:3]]
    return ", ".join(dims) + (" …" if len(op.inputs) > 3 else "")


# ---- figures -----------------------------------------------------------------------------------


def _png_data_uri(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, metadata={"Software": None}, facecolor="white")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


_CAPTIONS = {
    "roofline": "Each op at its arithmetic intensity and predicted achieved rate under the profile's measured roofs; "
    "marker area is the time it adds to the run, colour its regime, hollow markers measured. Dotted lines: the rate an op "
    "of the labelled FLOPs reaches when its time is one host dispatch.",
    "timeline": "The predicted eager timeline: the host issuing each op and the device running its kernels, coloured by regime (roofline advise --trace writes it for Perfetto).",
    "vs_measured": "Per-op predicted against measured time; the band is ±25%.",
    "modules": "Predicted time each top-level module adds to the forward, split by regime.",
    "batch": "Predicted time per sample over batch size; where the model leaves the overhead regime and turns compute-bound.",
    "placement": "CPU alone against the GPU with and without host↔device copies over the sweep's problem sizes.",
}


def _figures(report: Report, profile: DeviceProfile) -> tuple[str, list[str]]:
    from roofline.report import charts

    out, problems = [], []
    for name in charts.available_charts(report):
        try:
            fig = charts.make_chart(name, report, profile)
        except (ValueError, RooflineError) as e:
            problems.append(f"{name} chart not drawn: {e}")
            continue
        out.append(
            f'<figure id="fig-{name}"><img alt="{_e(name)} chart" src="{_png_data_uri(fig)}">'
            f"<figcaption>{_e(_CAPTIONS.get(name, ''))}</figcaption></figure>"
        )
    return "".join(out), problems


# ---- sections ----------------------------------------------------------------------------------


def _profile_section(report: Report, profile: DeviceProfile) -> str:
    from roofline.report.charts import roofs_for

    kind = report.profile.kind
    part = profile.part(kind)
    m = part.measurements
    ident = part.identity
    rows = []
    for c in m.matmul:
        theo = part.peaks.flop_per_s.get(c.dtype)
        rows.append([f"matmul peak, {_e(c.dtype)}", _n(c.peak_flop_per_s, "FLOP/s"), _n(theo, "FLOP/s") if theo else "–",
                     _pct(c.peak_flop_per_s / theo) if theo else "–"])
    cache = getattr(ident, "l2_cache_bytes", None) or getattr(ident, "l3_cache_bytes", None)
    for b in m.bandwidth:
        theo = part.peaks.memory_bytes_per_s
        dram = b.dram_bytes_per_s(cache)
        rows.append([f"DRAM bandwidth, {_e(b.kind)}", _n(dram, "B/s"), _n(theo, "B/s") if theo else "–", _pct(dram / theo) if theo else "–"])
    ov = m.overheads
    if report.profile.host_scale_read is not None:
        rows.append(["host costs: the host's speed read before pricing", f"x{report.profile.host_scale_read:.2f} of calibration's", "–", "–"])
    rows.append(["host dispatch per op (eager)", _s(ov.dispatch_s.median_s), "–", "–"])
    rows.append(["nn.Module call", _s(ov.module_call_s.median_s), "–", "–"])
    if ov.kernel_min_s:
        rows.append(["smallest kernel (in a CUDA graph)", _s(ov.kernel_min_s.median_s), "–", "–"])
    if ov.synchronize_s:
        rows.append(["synchronize round trip", _s(ov.synchronize_s.median_s), "–", "–"])
    if ov.op_small_s:
        rows.append(["CPU per-op overhead", _s(ov.op_small_s.median_s), "–", "–"])
    for t in m.transfers:
        rows.append([f"copy {t.direction}, {t.host_memory}", _n(t.bandwidth_bytes_per_s, "B/s") + f" + {_s(t.latency_s)}",
                     _n(part.peaks.host_link_bytes_per_s, "B/s") if part.peaks.host_link_bytes_per_s else "–", "–"])
    try:
        roofs = roofs_for(report, profile)
        ridges = ", ".join(f"{c.label.split(' ')[0]} {c.flop_per_s / roofs.dram_bytes_per_s:.3g} FLOP/B" for c in roofs.ceilings)
    except RooflineError:
        ridges = "–"
    cal = profile.calibration
    what = ident.name if hasattr(ident, "name") else ident.model
    extra = []
    if hasattr(ident, "sm_count"):
        extra.append(f"{ident.sm_count} SMs, {_n(ident.memory_bytes, 'B')} memory, L2 {_n(ident.l2_cache_bytes or 0, 'B')}, CUDA {_e(ident.cuda_version or '?')}")
    else:
        extra.append(f"{ident.logical_cpus} logical CPUs ({ident.threads_used} threads used), L3 {_n(ident.l3_cache_bytes or 0, 'B')}")
    return (
        f'<h2 id="profile">Device profile</h2>'
        f"<p><b>{_e(what)}</b> ({'GPU' if kind == 'cuda' else 'CPU'} part of profile <b>{_e(profile.name)}</b>) — {'; '.join(extra)}.<br>"
        f'<span class="note">Calibrated {_e(cal.created_at.strftime("%Y-%m-%d %H:%M"))} UTC with torch {_e(cal.torch_version)}'
        f"{', quick grid' if cal.quick else ''}; ridge points: {_e(ridges)}. Peaks: {_e(part.peaks.source)}.</span></p>"
        + _table(["quantity", "measured", "theoretical", "of theoretical"], rows, right={1, 2, 3})
    )


def _summary_section(report: Report) -> str:
    t = report.total
    measured = t.measured_s is not None
    cards = [
        ("predicted", _s(t.predicted_s), "eager forward, one synchronized call"),
    ]
    if measured:
        err = (t.predicted_s - t.measured_s) / t.measured_s if t.measured_s else None
        cards.append(("measured", _s(t.measured_s), f'<span class="{_err_class(err)}">{_pct(err, True)}</span> error; IQR {_s(t.measured_spread_s)}'))
        if t.predicted_at_host_now_s is not None and t.measured_s:
            err_now = (t.predicted_at_host_now_s - t.measured_s) / t.measured_s
            cards.append((
                f"at the host's speed (x{t.host_scale:.2f})", _s(t.predicted_at_host_now_s),
                f'<span class="{_err_class(err_now)}">{_pct(err_now, True)}</span> error; host costs times the host-speed index measured beside the model',
            ))
    cards += [
        ("work", _n(t.flops, "FLOP"), f"{_n(t.bytes, 'B')} moved"),
        ("achieved", _n(t.achieved_flop_per_s, "FLOP/s"), _n(t.achieved_bytes_per_s, "B/s")),
        ("ops / kernels", f"{t.ops} / {t.kernels}", "aten ops captured / kernels launched"),
        ("host issue", _s(t.host_s), f"device busy {_s(t.device_busy_s)}"),
    ]
    alts = report.alternatives
    for v, label in ((alts and alts.fused_s, "fused (predicted)"), (alts and alts.cuda_graphs_s, "CUDA graph (predicted)")):
        if v is not None and t.predicted_s:
            cards.append((label, _s(v), f"{t.predicted_s / v:.2f}x vs eager" if v else ""))
    total = t.predicted_s or 1.0
    shares = [(r, s) for r, s in t.regime_s.items() if s > 0]
    bar = "".join(f'<span title="{_e(r)} {_pct(s / total)}" style="width:{100 * s / total:.2f}%;background:{REGIME_COLORS.get(r, "#9e9e9e")}"></span>' for r, s in shares)
    legend = "".join(f'<span><i style="background:{REGIME_COLORS.get(r, "#9e9e9e")}"></i>{_e(r)} {_pct(s / total)} ({_s(s)})</span>' for r, s in shares)
    return (
        '<h2 id="summary">Totals and regimes</h2>'
        + _cards(cards)
        + f'<div class="bar">{bar}</div><div class="legend">{legend}</div>'
        + '<p class="note">Regime shares: predicted time each regime adds to the run (compute- or memory-bound kernels, '
        "host overhead the device waits for).</p>"
    )


def _advice_section(report: Report) -> str:
    if not report.advice:
        return ""
    items = "".join(f"<li>{_e(a)}</li>" for a in report.advice)
    return f'<h2 id="advice">Advice</h2><ul class="advice">{items}</ul>'


def _plans_section(report: Report) -> str:
    """Every way to run the model, the recommended one first."""
    if not report.plans:
        return ""
    rows = [
        [("<b>" if p.recommended else "") + _e(plan_label(p)) + ("</b>" if p.recommended else ""), _s(p.predicted_s) if p.predicted_s is not None else "—",
         "yes" if p.applicable else "no", _e(p.reason)]
        for p in report.plans
    ]
    return '<h2 id="plans">Plans</h2>' + _table(["plan", "predicted per call", "applies", "why"], rows, right={1})


def _placement_section(report: Report) -> str:
    p = report.placement
    rows = [
        ["CPU alone", _s(p.cpu_s)],
        ["GPU, inputs already there", _s(p.gpu_s)],
        [f"copies in and out ({_e(p.host_memory)} memory{', weights resident' if p.weights_resident else ', weights copied'})", _s(p.transfer_s)],
        ["GPU + copies", _s(p.gpu_s + p.transfer_s)],
    ]
    calls = f" over a loop of {p.calls} calls" if p.calls > 1 else " for one call"
    out = (
        f'<h2 id="placement">Placement</h2><p>Recommended: <b>{"GPU" if p.recommended == "cuda" else "CPU"}</b>{calls} — {_e(p.reason)}.</p>'
        + _table(["alternative", "predicted per call"], rows, right={1})
    )
    sw = report.placement_sweep
    if sw and sw.points:
        rows = []
        for pt in sw.points:
            rows.append([_e(pt.label), _s(pt.cpu_s), _s(pt.gpu_s), _s(pt.transfer_s), _s(pt.gpu_s + pt.transfer_s),
                         "GPU" if pt.recommended == "cuda" else "CPU", _s(pt.measured_cpu_s), _s(pt.measured_gpu_total_s)])
        cross = f"the GPU (copies included) wins from {_e(sw.parameter)}={sw.crossover}" if sw.crossover is not None else "the CPU wins at every size of the sweep"
        if sw.measured_crossover is not None:
            cross += f"; measured: from {sw.measured_crossover}"
        out += f"<h3>Over problem size ({_e(sw.parameter)})</h3><p>{cross}.</p>" + _table(
            ["point", "CPU", "GPU", "copies", "GPU + copies", "faster", "CPU measured", "GPU + copies measured"], rows, right={1, 2, 3, 4, 6, 7}
        )
    return out


def _batch_section(report: Report) -> str:
    sw = report.batch_sweep
    if not sw or not sw.points:
        return ""
    rows = [[str(p.batch), _s(p.predicted_s), _s(p.per_sample_s), _pill(p.regime), _s(p.measured_s)] for p in sorted(sw.points, key=lambda p: p.batch)]
    bits = []
    if sw.leaves_overhead_at is not None:
        bits.append(f"leaves the overhead regime at batch {sw.leaves_overhead_at}")
    if sw.compute_bound_at is not None:
        bits.append(f"turns compute-bound at batch {sw.compute_bound_at}")
    if sw.doubling_ratio is not None:
        bits.append(f"time(2B)/time(B) = {sw.doubling_ratio:.2f} at the model's batch")
    return (
        f'<h2 id="batch">Batch size</h2><p>{_e("; ".join(bits) or "no regime change over the sweep")}.</p>'
        + _table(["batch", "predicted", "per sample", "dominant regime", "measured"], rows, right={0, 1, 2, 4})
    )


def _ops_section(report: Report) -> str:
    measured = any(op.measured_s is not None for op in report.ops)
    gpu = report.profile.kind == "cuda"
    key = (lambda o: -(o.measured_s or o.predicted_s)) if measured else (lambda o: -o.predicted_s)
    ops = sorted(report.ops, key=key)[:TOP_OPS]
    headers = ["#", "op", "module", "inputs", "FLOP", "bytes", "FLOP/B", "kernel", "host", "predicted", "regime", "bound by"]
    right = {0, 4, 5, 6, 7, 8, 9}
    if measured:
        headers += ["measured", "error", "of roof"]
        right |= {12, 13, 14}
    rows, classes = [], []
    for op in ops:
        nbytes = op.bytes_read + op.bytes_written
        inten = f"{op.flops / nbytes:.3g}" if nbytes and op.flops else "–"
        name = _e(_short(op.target)) + ("" if op.supported else ' <span class="bad">(no formula)</span>')
        row = [str(op.index), f'<span title="{_e(op.target)}">{name}</span>', _e(op.module or "–"), f'<span class="mono">{_e(_shapes(op))}</span>',
               _n(op.flops), _n(nbytes, "B"), inten, _s(op.kernel_s), _s(op.host_s), _s(op.predicted_s), _pill(op.regime), _e(op.bound_by)]
        if measured:
            row += [_s(op.measured_s), f'<span class="{_err_class(op.error)}">{_pct(op.error, True)}</span>',
                    _pct(op.roofline_fraction) if op.roofline_fraction is not None else "–"]
        rows.append(row)
        classes.append("dim" if op.regime == "none" else "")
    more = f" ({len(report.ops) - len(ops)} more in the JSON report)" if len(report.ops) > len(ops) else ""
    gpu_note = "summed kernel time; error against 'kernel' (a convolution's without the gaps between its kernels)"
    what = ("measured: " + (gpu_note if gpu else "wall time; error against 'predicted'")) if measured else ""
    return (
        f'<h2 id="ops">Top {len(ops)} ops by {"measured" if measured else "predicted"} time{more}</h2>'
        + (f'<p class="note">{_e(what)}. “of roof”: the roofline-bound time over the measured time.</p>' if measured else "")
        + _table(headers, rows, right=right, row_classes=classes)
    )


def _modules_section(report: Report) -> str:
    if not report.modules:
        return ""
    total = report.total.predicted_s or 1.0
    measured = any(m.measured_s is not None for m in report.modules)
    headers = ["module", "type", "ops", "predicted", "share", "compute", "memory", "overhead", "FLOP", "bytes"] + (["measured (sum of ops)"] if measured else [])
    rows = []
    for m in report.modules:
        row = [_e(m.module), _e(m.module_type or "–"), str(m.ops), _s(m.predicted_s), _pct(m.predicted_s / total)]
        row += [_s(m.regime_s.get(r, 0.0)) for r in ("compute", "memory", "overhead")]
        row += [_n(m.flops), _n(m.bytes, "B")]
        if measured:
            row.append(_s(m.measured_s))
        rows.append(row)
    return '<h2 id="modules">By module</h2>' + _table(headers, rows, right={2, 3, 4, 5, 6, 7, 8, 9, 10})


def _fusion_section(report: Report) -> str:
    if not report.fusion:
        return '<h2 id="fusion">Fusion groups</h2><p class="note">No group of fusible pointwise or reduction ops found.</p>'
    by_index = {op.index: op for op in report.ops}
    rows = []
    for f in report.fusion:
        names = ", ".join(_short(by_index[i].target) for i in f.ops[:8] if i in by_index) + (" …" if len(f.ops) > 8 else "")
        rows.append([f"{f.ops[0]}–{f.ops[-1]}", str(len(f.ops)), _e(f.kind), _e(f.module or "top level"), _e(names),
                     _s(f.predicted_gain_s), _n(f.bytes_saved, "B"), str(f.kernels_saved)])
    fused = report.alternatives.fused_s if report.alternatives else None
    line = f"<p>All groups fused: {_s(fused)} instead of {_s(report.total.predicted_s)}.</p>" if fused is not None else ""
    return '<h2 id="fusion">Fusion groups</h2>' + line + _table(
        ["ops", "count", "kind", "module", "members", "predicted gain", "bytes saved", "kernels saved"], rows, right={1, 5, 6, 7}
    )


def _extras_section(report: Report) -> str:
    out = ""
    if report.alternatives is not None:
        beside = {g.alternative: g.measured_eager_s for g in report.gain_checks}
        rows = []
        for k, v in report.alternatives.by_name().items():
            m = report.measured_alternatives_s.get(k)
            e = beside.get(k)
            rows.append([_e(k.replace("_", " ")), _s(v), _s(m) if m is not None else "–", _s(e) if e is not None else "–"])
        # the eager time measured in alternating rounds with each alternative: its gain is against that
        out += "<h3>Execution alternatives</h3>" + _table(["alternative", "predicted", "measured", "eager, timed beside it"], rows, right={1, 2, 3})
    if report.streams is not None:
        rows = [[_e(k.replace("_", " ")), _s(v) if k.endswith("_s") else (f"{v:.3g}" if isinstance(v, float) else _e(v))]
                for k, v in report.streams.model_dump().items() if v is not None]
        out += "<h3>A stream of batches: copies and compute</h3>" + _table(["quantity", "value"], rows, right={1})
    if report.decode is not None:
        d = report.decode
        rows = []
        for label, pred, meas in (("prefill", d.prefill_s, d.measured_prefill_s), ("per token", d.per_token_s, d.measured_per_token_s), ("total", d.total_s, d.measured_total_s)):
            rows.append([label, _s(pred), _s(meas) if meas is not None else "–"])
        if d.per_token_now_s is not None:
            rows.append([f"per token at host ×{d.host_scale:.2f}", _s(d.per_token_now_s), _s(d.measured_per_token_s)])
        out += (
            f"<h3>Decode: batch {d.batch}, a {d.prompt_tokens}-token prompt, {d.new_tokens} new tokens</h3>"
            + _table(["", "predicted", "measured"], rows, right={1, 2})
            + f"<p class=\"note\">One step: {d.step_ops} ops, {_n(d.step_bytes, 'B')}; weights {_n(d.weights_bytes, 'B')}; "
            f"the key-value cache grows from {_n(d.cache_bytes_prefill, 'B')} to {_n(d.cache_bytes_final, 'B')}; "
            f"memory floor per token {_s(d.memory_floor_per_token_s)}"
            + (f"; a step as a CUDA graph {_s(d.cuda_graphs_per_token_s)}" if d.cuda_graphs_per_token_s is not None else "") + ".</p>"
        )
    return ('<h2 id="further">Further analyses</h2>' + out) if out else ""


_ERROR_BASIS = {
    True: "kernel time (GPU: a convolution’s without the gaps between its kernels; measured: summed kernel time)",
    False: "predicted time (CPU: measured wall time)",
}


def _accuracy_section(report: Report) -> str:
    from roofline.report.charts import accuracy, measured_pairs

    if report.total.measured_s is None and not measured_pairs(report):
        return ""
    acc = accuracy(report) or {}
    cards = []
    if acc.get("n_ops"):
        cards += [
            (f"median |error|, ops ≥ {_s(acc['min_s'])}", _pct(acc["median_abs_error"]), f"{acc['n_ops']} of {acc['n_measured']} measured ops"),
            (f"max |error|, ops ≥ {_s(acc['min_s'])}", _pct(acc["max_abs_error"]), ""),
        ]
    else:
        cards.append((f"ops ≥ {_s(acc.get('min_s', 20e-6))}", "none", f"{acc.get('n_measured', 0)} measured ops, all shorter"))
    if acc.get("total_error") is not None:
        cards.append(("whole forward error", f'<span class="{_err_class(acc["total_error"])}">{_pct(acc["total_error"], True)}</span>',
                      f"{_s(report.total.predicted_s)} predicted, {_s(report.total.measured_s)} measured"))
    gpu = report.profile.kind == "cuda"
    return (
        '<h2 id="accuracy">Accuracy</h2>' + _cards(cards)
        + f'<p class="note">Per-op error = (predicted − measured) / measured, predicted being the {_ERROR_BASIS[gpu]}; '
        "the whole-forward error compares the eager total with its measured median.</p>"
    )


def _issues_section(report: Report, problems: list[str]) -> str:
    out = ""
    if report.unsupported_ops:
        rows = [[f'<span class="mono">{_e(k)}</span>', str(v)] for k, v in sorted(report.unsupported_ops.items())]
        out += '<h2 id="unsupported">Unsupported ops</h2><p class="note">No cost formula: priced by their bytes only (FLOPs 0).</p>' + _table(["aten op", "count"], rows, right={1})
    notes = list(report.warnings) + problems
    if notes:
        out += '<h2 id="warnings">Warnings</h2><div class="warn"><ul>' + "".join(f"<li>{_e(w)}</li>" for w in notes) + "</ul></div>"
    return out


# ---- the page ----------------------------------------------------------------------------------


def render_html(report: Report, profile: DeviceProfile) -> str:
    """The whole page as a string."""
    from roofline import __version__
    from roofline.report.charts import dtype_names
    from roofline.report.charts.roofline_chart import profile_part

    profile_part(report, profile)  # a report for a GPU with a CPU-only profile is a clear error, not a traceback
    figures, problems = _figures(report, profile)
    p = report.profile
    sections = [
        _summary_section(report),
        _advice_section(report),
        _plans_section(report),
        f'<h2 id="charts">Charts</h2>{figures}',
        _accuracy_section(report),
        _profile_section(report, profile),
        _placement_section(report),
        _batch_section(report),
        _ops_section(report),
        _modules_section(report),
        _fusion_section(report),
        _extras_section(report),
        _issues_section(report, problems),
    ]
    nav_items = [("summary", "totals"), ("advice", "advice"), ("plans", "plans"), ("charts", "charts"), ("accuracy", "accuracy"), ("profile", "profile"),
                 ("placement", "placement"), ("batch", "batch"), ("ops", "ops"), ("modules", "modules"), ("fusion", "fusion"),
                 ("further", "further"), ("unsupported", "unsupported"), ("warnings", "warnings")]
    body = "".join(sections)
    nav = "".join(f'<a href="#{k}">{_e(v)}</a>' for k, v in nav_items if f'id="{k}"' in body)
    title = f"{report.model} on {p.device} — roofline review"
    sub = (f"{_e(p.device)} ({'GPU' if p.kind == 'cuda' else 'CPU'}) · profile '{_e(p.name)}' · {_e(', '.join(dtype_names(report)))} · "
           f"capture: {_e(report.capture_mode)}{' · float32 matmuls as TF32' if report.allow_tf32 else ''}")
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body><main>"
        f"<h1>{_e(report.model)}: roofline review</h1><p class=\"sub\">{sub}</p><nav>{nav}</nav>"
        f"{body}"
        f"<footer>Generated by roofline {_e(__version__)} on {_e(stamp)} from report schema v{report.schema_version}. "
        "Predictions rest on the profile's measured ceilings; check them with <code>roofline advise --measure</code>.</footer>"
        "</main></body></html>\n"
    )


def write_html(report: Report, profile: DeviceProfile, path) -> Path:
    """Write the self-contained design-review page; an unwritable path is a one-line ``RooflineError``."""
    path = Path(path).expanduser()
    if path.suffix.lower() not in (".html", ".htm"):
        raise RooflineError(f"cannot write the HTML report to {path}: give a file name ending in .html")
    if path.is_dir():
        raise RooflineError(f"cannot write the HTML report to {path}: it is a directory; give a file name ending in .html")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # fail before the minute-long part, not after
    except OSError as e:
        raise RooflineError(f"cannot write the HTML report to {path}: {e.strerror or e}; choose another path")
    page = render_html(report, profile)
    try:
        path.write_text(page, encoding="utf-8")
    except OSError as e:
        raise RooflineError(f"cannot write the HTML report to {path}: {e.strerror or e}; choose another path")
    return path
