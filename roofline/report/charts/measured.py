"""Predicted against measured, op by op (``--measure``): the scatter and the accuracy figures."""

from __future__ import annotations


import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from roofline.report.charts.labels import Placer
from roofline.report.charts.style import (
    RC,
    REGIME_COLORS,
    REGIME_ORDER,
    ROOF_COLOR,
    eng,
    is_gpu,
    new_figure,
    op_time,
    short_target,
    titles,
)
from roofline.schema.report import OpReport, Report
from roofline.units import si


def measured_pairs(report: Report) -> list[tuple[OpReport, float, float]]:
    """(op, predicted, measured) for measured ops; predicted is kernel time on a GPU (a convolution's
    without the gaps between its kernels, as the profiler measures it), predicted time on the CPU."""
    out = []
    for op in report.ops:
        if op.measured_s and op.measured_s > 0:
            pred = op.kernels_busy_s or op_time(report, op)  # kernels_busy_s: GPU convolutions only
            if pred > 0:
                out.append((op, pred, op.measured_s))
    return out


def predicted_vs_measured(report: Report, *, band: float = 0.25, top: int = 8) -> Figure:
    """Per-op log-log scatter of predicted against measured time, with y = x and a ±25% band.

    Raises ``ValueError`` when the report has no measured op times (``roofline advise --measure``).
    The right-hand panel lists the accuracy figures and the ops with the largest errors.
    """
    pairs = measured_pairs(report)
    if not pairs:
        raise ValueError(f"report '{report.model}' has no measured op times; run `roofline advise --measure` to get them")
    gpu = is_gpu(report)
    with rc_context(RC):
        fig = new_figure()
        ax = fig.add_axes((0.1, 0.12, 0.432, 0.72))  # square: 4.32 x 4.32 in
        ax.set_xscale("log")
        ax.set_yscale("log")
        t = report.total
        vals = [v for _, p, m in pairs for v in (p, m)]
        if t.measured_s:
            vals += [t.measured_s, t.predicted_s]
        lo, hi = min(vals) / 2, max(vals) * 2
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        line = np.geomspace(lo / 10, hi * 10, 80)
        ax.fill_between(line, line * (1 - band), line * (1 + band), color="#e0e0e0", alpha=0.9, lw=0, zorder=1, label=f"within ±{band:.0%}")
        ax.plot(line, line, color=ROOF_COLOR, lw=1.4, zorder=2, label="predicted = measured")
        for r in REGIME_ORDER:
            sel = [(p, m) for op, p, m in pairs if op.regime == r]
            if sel:
                ax.scatter([m for _, m in sel], [p for p, _ in sel], s=54, c=REGIME_COLORS[r], alpha=0.9, edgecolors="white", linewidths=0.6, zorder=4, label=f"{r}-bound op")
        if t.measured_s:
            ax.scatter([t.measured_s], [t.predicted_s], marker="*", s=300, c="#ff8f00", edgecolors="#212121", linewidths=0.8, zorder=5, label="whole forward")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        fig.canvas.draw()
        placer = Placer(ax, fig.canvas.get_renderer())
        scale = fig.dpi / 72.0
        own_of = {}
        for op, p, m in pairs:
            px, py = ax.transData.transform((m, p))
            own_of[op.index] = len(placer.boxes)
            placer.block(px - 4.5 * scale, py - 4.5 * scale, px + 4.5 * scale, py + 4.5 * scale)
        # Label the ops that matter: largest measured time first, then largest error among ops >= 20 us.
        big = sorted(pairs, key=lambda x: -x[2])[: max(top // 2, 1)]
        wrong = sorted((x for x in pairs if x[2] >= 20e-6), key=lambda x: -abs(x[1] - x[2]) / x[2])
        chosen: list = []
        for x in [*big, *wrong]:
            if all(x[0].index != c[0].index for c in chosen) and len(chosen) < top:
                chosen.append(x)
        for op, p, m in chosen:
            label = f"{short_target(op.target)}" + (f" · {op.module}" if op.module else "") + f" {(p - m) / m:+.0%}"
            placer.place(m, p, label, fontsize=10, own=own_of[op.index], leader_beyond=10)
        ax.xaxis.set_major_formatter(eng("s"))
        ax.yaxis.set_major_formatter(eng("s"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(f"measured ({'summed kernel time' if gpu else 'wall time'} per op)")
        ax.set_ylabel(f"predicted ({'kernel time' if gpu else 'predicted time'} per op)")
        ax.grid(True, which="major", color="#eeeeee", lw=0.8, zorder=0)
        titles(fig, ax, f"predicted vs measured, {len(pairs)} ops", report)
        fig.legend(*ax.get_legend_handles_labels(), loc="upper left", bbox_to_anchor=(0.6, 0.86), frameon=False, fontsize=10)

        # Right panel: the accuracy figures and the largest errors.
        acc = accuracy(report) or {}
        lines = []
        if acc.get("n_ops"):
            lines.append(f"ops ≥ {si(acc['min_s'], 's')}: {acc['n_ops']}")
            lines.append(f"  median |error| {acc['median_abs_error']:.0%}")
            lines.append(f"  max |error| {acc['max_abs_error']:.0%}")
        else:
            errs = [abs(p - m) / m for _, p, m in pairs]
            lines.append(f"all {len(errs)} ops (none ≥ {si(acc.get('min_s', 20e-6), 's')}):")
            lines.append(f"  median |error| {float(np.median(errs)):.0%}")
            lines.append(f"  max |error| {max(errs):.0%}")
        if acc.get("total_error") is not None:
            lines.append(f"whole forward: {si(t.predicted_s, 's')} predicted,")
            lines.append(f"  {si(t.measured_s, 's')} measured ({acc['total_error']:+.0%})")
        lines.append("")
        lines.append("largest errors (measured time):")
        worst = sorted(pairs, key=lambda x: -abs(x[1] - x[2]) / x[2])
        for op, p, m in worst[:5]:
            name = short_target(op.target) + (f" · {op.module}" if op.module else "")
            lines.append(f"  {name[:26]}: {(p - m) / m:+.0%} ({si(m, 's')})")
        fig.text(0.605, 0.5, "\n".join(lines), fontsize=11, va="top", ha="left", color="#212121", linespacing=1.4)
    return fig


def accuracy(report: Report, min_s: float = 20e-6) -> dict | None:
    """Median and max |error| over measured ops whose measured time is at least ``min_s``; total error."""
    pairs = measured_pairs(report)
    if not pairs and report.total.measured_s is None:
        return None
    errs = [abs(p - m) / m for _, p, m in pairs if m >= min_s]
    out: dict = {"n_ops": len(errs), "min_s": min_s, "n_measured": len(pairs)}
    out["median_abs_error"] = float(np.median(errs)) if errs else None
    out["max_abs_error"] = float(max(errs)) if errs else None
    t = report.total
    out["total_error"] = (t.predicted_s - t.measured_s) / t.measured_s if t.measured_s else None
    return out
