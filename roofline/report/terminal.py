"""Terminal output of a ``Report``: the ops that take the most time, a roll-up by module, the
share of each regime, totals, the recommended plan, the uncertain ops' share, and the advice.

Text that comes from the model or the analysis (names, modules, advice, warnings, source lines) is
escaped before printing: rich would take ``[y > 0]`` in a quoted line for a markup tag and drop it."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from roofline.advice.plans import plan_label
from roofline.schema.report import Report
from roofline.units import count, seconds

REGIME_STYLE = {"compute": "green", "memory": "cyan", "overhead": "magenta", "none": "dim"}


def make_console() -> Console:
    """A console as wide as the terminal; 160 columns when writing to a pipe or file."""
    import sys

    return Console() if sys.stdout.isatty() else Console(width=160)


def fmt_s(x: float | None) -> str:
    return seconds(x)


def fmt_n(x: float, unit: str = "") -> str:
    return count(x, unit)


def _shapes(op) -> str:
    dims = ["x".join(map(str, t.shape)) or "()" for t in op.inputs[:3]]
    return ", ".join(dims) + (" ..." if len(op.inputs) > 3 else "")


def _err(pred: float, meas: float | None) -> str:
    if not meas:
        return "-"
    return f"{100 * (pred - meas) / meas:+.0f}%"


def _host_read(scale: float | None) -> str:
    return "" if scale is None else f"; host costs x{scale:.2f} of calibration's, the host's speed read here now"


def render(report: Report, console: Console | None = None, top: int = 15) -> None:
    console = console or make_console()
    t = report.total
    measured = t.measured_s is not None
    console.print(
        f"[bold]{escape(report.model)}[/bold] on [bold]{escape(report.profile.device)}[/bold] "
        f"(profile '{escape(report.profile.name)}', {report.profile.kind}; capture: {report.capture_mode}"
        f"{'; float32 matmuls as TF32' if report.allow_tf32 else ''}"
        f"{_host_read(report.profile.host_scale_read)})"
    )
    line = f"predicted {fmt_s(t.predicted_s)} eager"
    if measured:
        line += f", measured {fmt_s(t.measured_s)} ({_err(t.predicted_s, t.measured_s)})"
        against = "the host read before pricing" if report.profile.host_scale_read is not None else "calibration"
        if t.predicted_at_host_now_s is not None:
            line += (
                f"; at the host's speed during the measurement (host x{t.host_scale:.2f} against {against}): "
                f"predicted {fmt_s(t.predicted_at_host_now_s)} ({_err(t.predicted_at_host_now_s, t.measured_s)})"
            )
        elif t.host_scale is not None:  # roofline.checks gives no prediction at an implausible host speed
            line += f"; [yellow]host x{t.host_scale:.2f} against {against}: implausible, no prediction at that speed (see the warning)[/]"
    console.print(
        f"{line} | {fmt_n(t.flops, 'FLOP')}, {fmt_n(t.bytes, 'B')}, {t.kernels} kernels, {t.ops} ops | "
        f"achieved {fmt_n(t.achieved_flop_per_s, 'FLOP/s')}, {fmt_n(t.achieved_bytes_per_s, 'B/s')} | "
        f"host {fmt_s(t.host_s)}, device busy {fmt_s(t.device_busy_s)}"
    )
    shares = " | ".join(
        f"[{REGIME_STYLE[r]}]{r} {100 * s / t.predicted_s:.0f}%[/]" for r, s in t.regime_s.items() if t.predicted_s and s > 0
    )
    console.print(f"time by regime: {shares}")
    rec = report.recommended_plan
    if rec is not None:
        console.print(f"[bold]plan[/bold]: {escape(plan_label(rec))}, {fmt_s(rec.predicted_s)} per call (the advice below says why)")
    elif report.plans:
        console.print("[bold red]plan: none of the ways to run this model applies (the advice below says why)[/]")
    if report.uncertain.ops:
        u = report.uncertain
        console.print(f"[yellow]uncertain: {100 * u.share:.0f}% of the predicted time is in {u.ops} op{'s' if u.ops > 1 else ''} the profile does not cover[/]")

    table = Table(title=f"top {min(top, len(report.ops))} ops by predicted time", title_justify="left")
    cols = ["#", "op", "module", "inputs", "FLOP", "bytes", "kernel", "host", "predicted", "regime"]
    if measured:
        cols += ["measured", "error", "of roof"]
        gpu = report.profile.kind == "cuda"
        table.caption = ("measured: summed kernel time per op (error against 'kernel'; a convolution's without the gaps "
                         "between its kernels)") if gpu else "measured: wall time per op (error against 'predicted')"
    for c in cols:
        table.add_column(c, justify="right" if c in ("#", "FLOP", "bytes", "kernel", "host", "predicted", "measured", "error", "of roof") else "left", overflow="fold")
    for op in sorted(report.ops, key=lambda o: -(o.measured_s or o.predicted_s) if measured else -o.predicted_s)[:top]:
        row = [
            str(op.index), escape(op.target.replace("aten.", "").replace(".default", "")) + ("" if op.supported else " (no formula)"),
            escape(op.module or "-"), _shapes(op), fmt_n(op.flops), fmt_n(op.bytes_read + op.bytes_written, "B"),
            fmt_s(op.kernel_s), fmt_s(op.host_s), fmt_s(op.predicted_s), f"[{REGIME_STYLE[op.regime]}]{op.regime}[/]",
        ]
        if measured:
            frac = f"{100 * op.roofline_fraction:.0f}%" if op.roofline_fraction is not None else "-"
            err = f"{100 * op.error:+.0f}%" if op.error is not None else "-"
            row += [fmt_s(op.measured_s), err, frac]
        table.add_row(*row)
    console.print(table)

    mods = Table(title="by module", title_justify="left")
    for c in ("module", "type", "ops", "predicted", "share", "compute", "memory", "overhead") + (("measured",) if measured else ()):
        mods.add_column(c, justify="left" if c in ("module", "type") else "right")
    for m in report.modules[:10]:
        share = 100 * m.predicted_s / t.predicted_s if t.predicted_s else 0
        row = [escape(m.module), escape(m.module_type), str(m.ops), fmt_s(m.predicted_s), f"{share:.0f}%"] + [fmt_s(m.regime_s.get(r, 0.0)) for r in ("compute", "memory", "overhead")]
        if measured:
            row.append(fmt_s(m.measured_s))
        mods.add_row(*row)
    if len(report.modules) > 10:
        mods.caption = f"... {len(report.modules) - 10} more modules in the JSON report"
    console.print(mods)

    if report.fusion:
        console.print("[bold]fusion groups[/bold] (largest predicted gain first):")
        for f in report.fusion[:5]:
            console.print(f"  ops {f.ops[0]}..{f.ops[-1]} ({len(f.ops)} ops, {f.kind}, {escape(f.module or 'top level')}): saves {fmt_s(f.predicted_gain_s)}, {fmt_n(f.bytes_saved, 'B')}, {f.kernels_saved} kernels")
    if report.alternatives is not None:
        measured = report.measured_alternatives_s
        cells = []
        for k, v in report.alternatives.by_name().items():
            m = measured.get(k) if k != "eager" else report.total.measured_s
            cells.append(f"{k.replace('_', ' ')} {fmt_s(v)}" + (f" (measured {fmt_s(m)})" if m else ""))
        console.print("[bold]predicted alternatives[/bold]: " + " | ".join(cells))
    if report.decode is not None:
        _render_decode(report.decode, console)
    if report.batch_sweep:
        bs = report.batch_sweep
        console.print(
            "[bold]batch sweep[/bold] (time per sample): "
            + "  ".join(f"{p.batch}: {fmt_s(p.per_sample_s)} [{REGIME_STYLE[p.regime]}]{p.regime[0]}[/]" for p in bs.points)
        )
    if report.placement_sweep:
        ps = report.placement_sweep
        table = Table(title=f"CPU vs GPU over {ps.parameter}", title_justify="left")
        for c in (ps.parameter, "CPU", "GPU", "copies", "GPU + copies", "choice", "measured CPU", "measured GPU + copies"):
            table.add_column(c, justify="right")
        for p in ps.points:
            table.add_row(
                str(p.size), fmt_s(p.cpu_s), fmt_s(p.gpu_s), fmt_s(p.transfer_s), fmt_s(p.gpu_s + p.transfer_s), p.recommended,
                fmt_s(p.measured_cpu_s), fmt_s(p.measured_gpu_total_s),
            )
        console.print(table)
    console.print("[bold]advice[/bold]:")
    for a in report.advice:
        console.print(f"  - {escape(a)}")
    for w in report.warnings:
        console.print(f"[yellow]warning: {escape(w)}[/]")


def _render_decode(d, console: Console) -> None:
    """Prefill, per token and total of the decode loop, measured beside predicted when it was."""
    console.print(f"[bold]decode[/bold]: batch {d.batch}, a {d.prompt_tokens}-token prompt, then {d.new_tokens} tokens one step at a time with the key-value cache")
    table = Table()
    for c in ("", "predicted", "measured", "error"):
        table.add_column(c, justify="right")
    for label, pred, meas in (
        ("prefill", d.prefill_s, d.measured_prefill_s),
        ("per token", d.per_token_s, d.measured_per_token_s),
        ("total", d.total_s, d.measured_total_s),
    ):
        table.add_row(label, fmt_s(pred), fmt_s(meas), _err(pred, meas))
    if d.per_token_now_s is not None:  # absent at an implausible host speed (roofline.checks)
        table.add_row(f"per token at host x{d.host_scale:.2f}", fmt_s(d.per_token_now_s), fmt_s(d.measured_per_token_s), _err(d.per_token_now_s, d.measured_per_token_s))
        table.add_row(f"total at host x{d.host_scale:.2f}", fmt_s(d.total_now_s), fmt_s(d.measured_total_s), _err(d.total_now_s, d.measured_total_s))
    console.print(table)
    regime = ", ".join(f"{k} {fmt_s(v)}" for k, v in d.step_regime_s.items() if v > 0)
    console.print(
        f"  one step: {d.step_ops} ops, {fmt_n(d.step_flops, 'FLOP')}, {fmt_n(d.step_bytes, 'B')} ({regime}); "
        f"weights {fmt_n(d.weights_bytes, 'B')}, cache {fmt_n(d.cache_bytes_prefill, 'B')} -> {fmt_n(d.cache_bytes_final, 'B')} "
        f"(+{fmt_n(d.cache_bytes_per_token, 'B')} per token)"
    )
