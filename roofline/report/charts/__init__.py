"""Charts of a ``Report``: the roofline, the predicted timeline, predicted against measured, time by module, batch and
placement sweeps. Every chart is a function that returns a ``matplotlib.figure.Figure``;
``save(fig, path)`` writes PNG or SVG by the path's extension, ``plot_all`` every chart the report
has data for."""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from roofline.errors import RooflineError
from roofline.report.charts.measured import accuracy, measured_pairs, predicted_vs_measured
from roofline.report.charts.modules import time_by_module
from roofline.report.charts.roofline_chart import roofline_chart, roofs_for
from roofline.report.charts.style import dtype_names, save, short_target
from roofline.report.charts.sweeps import batch_chart, placement_chart
from roofline.report.charts.timeline import timeline_chart
from roofline.schema.profile import DeviceProfile
from roofline.schema.report import Report

__all__ = [
    "CHARTS", "accuracy", "available_charts", "batch_chart", "chart_paths", "dtype_names", "make_chart", "measured_pairs",
    "placement_chart", "plot_all", "timeline_chart", "predicted_vs_measured", "roofline_chart", "roofs_for", "save", "short_target", "time_by_module",
]

CHARTS = ("roofline", "timeline", "vs_measured", "modules", "batch", "placement")


def available_charts(report: Report) -> list[str]:
    """The charts this report has data for, in ``CHARTS`` order."""
    out = ["roofline", "timeline"]
    if measured_pairs(report):
        out.append("vs_measured")
    if report.modules:
        out.append("modules")
    if report.batch_sweep and report.batch_sweep.points:
        out.append("batch")
    if report.placement_sweep and report.placement_sweep.points:
        out.append("placement")
    return out


def make_chart(name: str, report: Report, profile: DeviceProfile | None) -> Figure:
    if name == "roofline":
        if profile is None:
            raise RooflineError("the roofline chart needs the device profile; pass --profile NAME|PATH")
        return roofline_chart(report, profile)
    fn = {"timeline": timeline_chart, "vs_measured": predicted_vs_measured, "modules": time_by_module, "batch": batch_chart, "placement": placement_chart}[name]
    return fn(report)


def chart_paths(report: Report, path_stem_or_dir, names: list[str]) -> dict[str, Path]:
    """Where ``plot_all`` writes each chart.

    - a directory (existing, or written with a trailing slash): ``DIR/<model>_<chart>.png``;
    - a file name ending in .png or .svg: the roofline chart there, the others beside it as ``<stem>_<chart><ext>``;
    - any other name: a stem, ``<stem>_<chart>.png``.
    """
    raw = str(path_stem_or_dir)
    p = Path(raw).expanduser()
    if p.is_dir() or raw.endswith(("/", "\\")):
        return {n: p / f"{_safe(report.model)}_{n}.png" for n in names}
    if p.suffix.lower() in (".png", ".svg"):
        return {n: (p if n == "roofline" else p.with_name(f"{p.stem}_{n}{p.suffix}")) for n in names}
    return {n: p.with_name(f"{p.name}_{n}.png") for n in names}


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "model"


def plot_all(report: Report, profile: DeviceProfile, path_stem_or_dir) -> list[Path]:
    """Render every chart the report has data for; returns the files written (see ``chart_paths``)."""
    names = available_charts(report)
    paths = chart_paths(report, path_stem_or_dir, names)
    written = []
    for n in names:
        fig = make_chart(n, report, profile)
        written.append(save(fig, paths[n]))
    return written
