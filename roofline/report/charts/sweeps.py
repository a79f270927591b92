"""The sweeps: time per sample over batch size, and CPU against GPU over problem size."""

from __future__ import annotations

import math

from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

from roofline.report.charts.style import (
    RC,
    REGIME_COLORS,
    REGIME_ORDER,
    eng,
    new_figure,
    titles,
)
from roofline.schema.report import Report


def log_ticks(axis, unit: str) -> None:
    """SI-labelled log ticks; 1-2-5 steps when the axis spans under three decades."""
    lo, hi = sorted(axis.get_view_interval())
    subs = (1.0, 2.0, 5.0) if hi / lo < 10**2.5 else (1.0,)
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(eng(unit))
    axis.set_minor_formatter(NullFormatter())


def batch_chart(report: Report) -> Figure:
    """Predicted (and measured) time per sample over batch size, coloured by the dominant regime.

    The batch where the model leaves the overhead regime and where it turns compute-bound are marked.
    Raises ``ValueError`` when the report has no batch sweep.
    """
    sw = report.batch_sweep
    if sw is None or not sw.points:
        raise ValueError(f"report '{report.model}' has no batch sweep")
    pts = sorted(sw.points, key=lambda p: p.batch)
    with rc_context(RC):
        fig = new_figure()
        fig.subplots_adjust(left=0.11, right=0.97, top=0.86, bottom=0.17)
        ax = fig.add_subplot()
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        b = [p.batch for p in pts]
        per = [p.per_sample_s for p in pts]
        # Background: the dominant regime of each stretch of batch sizes.
        edges = [b[0] / 1.3] + [math.sqrt(b[i] * b[i + 1]) for i in range(len(b) - 1)] + [b[-1] * 1.3]
        for i, p in enumerate(pts):
            ax.axvspan(edges[i], edges[i + 1], color=REGIME_COLORS[p.regime], alpha=0.08, lw=0)
        ax.plot(b, per, color="#424242", lw=1.6, zorder=3)
        for r in REGIME_ORDER:
            sel = [p for p in pts if p.regime == r]
            if sel:
                ax.scatter([p.batch for p in sel], [p.per_sample_s for p in sel], s=70, c=REGIME_COLORS[r], zorder=4, label=f"mostly {r}-bound", edgecolors="white")
        meas = [(p.batch, p.measured_s / p.batch) for p in pts if p.measured_s]
        if meas:
            ax.plot([m[0] for m in meas], [m[1] for m in meas], ls="--", color="#757575", lw=1.0, zorder=3)
            ax.scatter([m[0] for m in meas], [m[1] for m in meas], s=70, facecolors="none", edgecolors="#212121", linewidths=1.4, zorder=5, label="measured")
        ax.set_xlim(edges[0], edges[-1])
        ylo, yhi = ax.get_ylim()
        ax.set_ylim(ylo, yhi * 1.6)
        marks = []
        if sw.leaves_overhead_at is not None and sw.leaves_overhead_at == sw.compute_bound_at:
            marks.append((sw.leaves_overhead_at, "leaves overhead, compute-bound from batch {}", REGIME_COLORS["compute"]))
        else:
            if sw.leaves_overhead_at is not None:
                marks.append((sw.leaves_overhead_at, "leaves overhead at batch {}", REGIME_COLORS["overhead"]))
            if sw.compute_bound_at is not None:
                marks.append((sw.compute_bound_at, "compute-bound from batch {}", REGIME_COLORS["compute"]))
        for at, text, col in marks:
            ax.axvline(at, color=col, ls="--", lw=1.3, zorder=2)
            ax.text(at * 1.05, ylo * 1.15, text.format(at), rotation=90, va="bottom", ha="left", fontsize=11, color=col)
        ax.xaxis.set_major_locator(FixedLocator(b))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        log_ticks(ax.yaxis, "s")
        ax.set_xlabel("batch size (leading dimension of every input)")
        ax.set_ylabel("predicted time per sample (seconds)")
        ax.grid(True, which="major", color="#eeeeee", lw=0.8)
        ax.set_axisbelow(True)
        ax.legend(loc="upper right", framealpha=0.92)
        titles(fig, ax, "time per sample over batch size", report)
        notes = []
        if sw.doubling_ratio:
            kind = "overhead-bound (time barely grows)" if sw.doubling_ratio < 1.3 else ("throughput-bound" if sw.doubling_ratio > 1.7 else "partly overhead-bound")
            notes.append(f"Doubling the model's own batch multiplies its time by {sw.doubling_ratio:.2f}: {kind}.")
        if sw.leaves_overhead_at is None and all(p.regime == "overhead" for p in pts):
            notes.append(f"Overhead-bound at every batch up to {b[-1]}: larger batches are almost free; CUDA graphs or fusion cut the floor.")
        notes.append(f"{'GPU' if sw.device == 'cuda' else 'CPU'}; background: the regime with the largest share of the time at each batch.")
        fig.text(0.02, 0.015, "\n".join(notes), fontsize=10, color="#424242", ha="left", va="bottom", linespacing=1.35)
        fig.subplots_adjust(bottom=0.115 + 0.032 * len(notes))
    return fig


def placement_chart(report: Report) -> Figure:
    """CPU alone against GPU (without and with copies) over problem size; the crossover marked.

    Raises ``ValueError`` when the report has no placement sweep. Sweeps whose sizes repeat (several
    parameters varied at once) are drawn one slot per point, labelled.
    """
    sw = report.placement_sweep
    if sw is None or not sw.points:
        raise ValueError(f"report '{report.model}' has no placement sweep")
    pts = sorted(sw.points, key=lambda p: p.size)
    sizes = [p.size for p in pts]
    categorical = len(set(sizes)) < len(sizes)
    with rc_context(RC):
        fig = new_figure()
        longest = max(len(p.label) for p in sw.points)
        bottom = min(0.13 + 0.0125 * longest, 0.4) if categorical else 0.13
        fig.subplots_adjust(left=0.11, right=0.97, top=0.86, bottom=bottom)
        ax = fig.add_subplot()
        ax.set_yscale("log")
        if categorical:  # the sweep varies more than one thing: one slot per point, in the file's order
            pts = list(sw.points)
            x = list(range(1, len(pts) + 1))
        else:
            ax.set_xscale("log")
            x = sizes
        pos = {}
        for xi, p in zip(x, pts):
            pos.setdefault(p.size, xi)
        ax.plot(x, [p.cpu_s for p in pts], marker="s", color="#6d4c41", lw=2, label="CPU")
        ax.plot(x, [p.gpu_s for p in pts], marker="o", color="#00897b", lw=1.4, ls="--", label="GPU, inputs already there")
        ax.plot(x, [p.gpu_s + p.transfer_s for p in pts], marker="o", color="#00695c", lw=2.2, label="GPU + copies in and out")
        mc = [(xi, p.measured_cpu_s) for xi, p in zip(x, pts) if p.measured_cpu_s]
        mg = [(xi, p.measured_gpu_total_s) for xi, p in zip(x, pts) if p.measured_gpu_total_s]
        if mc:
            ax.scatter(*zip(*mc), marker="s", s=80, facecolors="none", edgecolors="#6d4c41", linewidths=1.5, zorder=5, label="CPU, measured")
        if mg:
            ax.scatter(*zip(*mg), marker="o", s=80, facecolors="none", edgecolors="#00695c", linewidths=1.5, zorder=5, label="GPU + copies, measured")
        ylo, yhi = ax.get_ylim()
        ax.set_ylim(ylo, yhi * 2)
        for at, text, ls in ((sw.crossover, "GPU wins from {}={}", "--"), (sw.measured_crossover, "measured: GPU wins from {}={}", ":")):
            if at is None or at not in pos:
                continue
            xa = pos[at]
            if xa == x[0]:
                text = "GPU wins at every size" if ls == "--" else "measured: GPU wins at every size"
            ax.axvline(xa, color="#212121", ls=ls, lw=1.3)
            ax.text(xa + 0.1 if categorical else xa * 1.06, ylo * 1.2, text.format(sw.parameter, at), rotation=90, va="bottom", ha="left", fontsize=11)
        if categorical:
            ax.xaxis.set_major_locator(FixedLocator(x))
            ax.set_xticklabels([p.label for p in pts], rotation=90 if len(pts) > 8 else 30, ha="center" if len(pts) > 8 else "right", fontsize=10)
            ax.set_xlim(0.5, len(pts) + 0.5)
        else:
            if len(x) <= 12:
                ax.xaxis.set_major_locator(FixedLocator(x))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
        log_ticks(ax.yaxis, "s")
        ax.set_xlabel(f"sweep point ({sw.parameter} and more)" if categorical else f"problem size ({sw.parameter})")
        ax.set_ylabel("predicted time per call (seconds)")
        ax.grid(True, which="major", color="#eeeeee", lw=0.8)
        ax.legend(loc="upper left", framealpha=0.92)
        titles(fig, ax, "CPU or GPU over problem size", report)
    return fig
