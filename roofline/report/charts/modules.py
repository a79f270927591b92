"""Predicted time by top-level module, split by regime."""

from __future__ import annotations

from collections import Counter

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure

from roofline.report.charts.style import (
    RC,
    REGIME_COLORS,
    REGIME_ORDER,
    eng,
    new_figure,
    titles,
)
from roofline.schema.report import Report
from roofline.units import si


def time_by_module(report: Report, *, top: int = 12) -> Figure:
    """Stacked horizontal bars: predicted time of each top-level module, split by regime."""
    mods = list(report.modules)
    if not mods:
        raise ValueError(f"report '{report.model}' has no module roll-up")
    mods.sort(key=lambda m: -m.predicted_s)
    rows: list[tuple[str, dict[str, float], float]] = []
    for m in mods[:top]:
        name = m.module + (f" ({m.module_type})" if m.module_type else "")
        rows.append((name, m.regime_s, m.predicted_s))
    rest = mods[top:]
    if rest:
        acc: Counter = Counter()
        for m in rest:
            acc.update(m.regime_s)
        rows.append((f"other ({len(rest)} modules)", dict(acc), sum(m.predicted_s for m in rest)))
    total = report.total.predicted_s or sum(r[2] for r in rows) or 1.0
    height = max(4.0, min(9.0, 1.6 + 0.42 * len(rows)))
    with rc_context(RC):
        fig = new_figure((10.0, height))
        fig.subplots_adjust(left=0.3, right=0.9, top=1 - 0.95 / height, bottom=1.15 / height)
        ax = fig.add_subplot()
        y = np.arange(len(rows))[::-1]
        left = np.zeros(len(rows))
        for r in REGIME_ORDER:
            w = np.array([row[1].get(r, 0.0) for row in rows])
            if w.sum() <= 0:
                continue
            ax.barh(y, w, left=left, color=REGIME_COLORS[r], height=0.68, label=f"{r}-bound", edgecolor="white", linewidth=0.5)
            left += w
        xmax = max(left.max(), max(r[2] for r in rows)) * 1.2
        ax.set_xlim(0, xmax if xmax > 0 else 1e-6)
        for yi, (_, _, s) in zip(y, rows):
            ax.text(s + xmax * 0.01, yi, f"{si(s, 's')}  {100 * s / total:.0f}%", va="center", fontsize=10, color="#424242")
        ax.set_yticks(y)
        ax.set_yticklabels([r[0] for r in rows])
        ax.xaxis.set_major_formatter(eng("s"))
        ax.set_xlabel("predicted time added to the forward (seconds)")
        ax.grid(True, axis="x", color="#eeeeee", lw=0.8)
        ax.set_axisbelow(True)
        ax.legend(loc="upper left", bbox_to_anchor=(-0.01, -0.6 / (height - 2.1)), ncol=4, frameon=False, fontsize=10)
        titles(fig, ax, f"predicted time by module (total {si(report.total.predicted_s, 's')})", report)
    return fig
