"""The predicted eager timeline as a picture: the host issuing each op above, the device running
its kernels below (one lane on a CPU), coloured by regime; the same data as ``--trace``."""

from __future__ import annotations

from matplotlib import rc_context
from matplotlib.figure import Figure

from roofline.report.charts.style import RC, REGIME_COLORS, eng, new_figure, titles
from roofline.schema.report import Report
from roofline.units import si


def timeline_chart(report: Report) -> Figure:
    """Horizontal lanes of (start, duration) bars over the run's time."""
    if not report.ops:
        raise ValueError(f"report '{report.model}' has no ops")
    gpu = report.profile.kind == "cuda"
    lanes = [("host", [(op.issue_s - op.host_s, op.host_s, op.regime) for op in report.ops if op.host_s > 0])]
    if gpu:
        lanes.append(("GPU", [(op.start_s, op.kernel_s, op.regime) for op in report.ops if op.kernels and op.kernel_s > 0]))
    else:
        lanes[0] = ("CPU", [(op.issue_s - op.host_s, op.host_s + op.kernel_s, op.regime) for op in report.ops])
    with rc_context(RC):
        height = 1.9 + 0.7 * len(lanes)
        fig = new_figure((10.0, height))
        fig.subplots_adjust(left=0.1, right=0.97, top=1 - 1.0 / height, bottom=0.75 / height)
        ax = fig.add_subplot()
        for row, (_, bars) in enumerate(reversed(lanes)):
            for regime in REGIME_COLORS:
                spans = [(s, d) for s, d, r in bars if r == regime]
                if spans:
                    ax.broken_barh(spans, (row - 0.35, 0.7), facecolors=REGIME_COLORS[regime], edgecolor="white", linewidth=0.3)
        ax.set_yticks(range(len(lanes)))
        ax.set_yticklabels([name for name, _ in reversed(lanes)])
        ax.set_xlim(0, report.total.predicted_s or 1e-6)
        ax.xaxis.set_major_formatter(eng("s"))
        ax.set_xlabel("time from the first issue (seconds)")
        titles(fig, ax, f"predicted eager timeline ({si(report.total.predicted_s, 's')})", report)
    return fig
