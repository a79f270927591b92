"""The roofline chart: each op at its arithmetic intensity (FLOP per byte of compulsory traffic) and
its predicted achieved rate: FLOPs over its kernel time on a GPU, over its whole predicted time on
the CPU (one queue: dispatch included). Roofs come from the profile part the report was predicted
for: the measured matmul peak of each dtype the model's GEMM-like ops use, the vector ceiling that
prices every other op, and the DRAM bandwidth (copy curve, working sets beyond twice the last-level
cache). Per-op overhead is not a function of intensity but of size: an op of F FLOPs that costs one
host dispatch ``o`` cannot run faster than ``F / o`` in eager mode, so the chart draws that cap as
dotted horizontal lines for a few decades of F.
"""

from __future__ import annotations

import math
import textwrap
from collections import Counter, defaultdict
from dataclasses import dataclass

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from roofline.errors import RooflineError
from roofline.model.device import DeviceModel
from roofline.report.charts.labels import Placer, line_hits, overlap, rotated_boxes, text_width, try_keep
from roofline.report.charts.style import (
    FLOOR_COLOR,
    GEMM_CATEGORIES,
    RC,
    REGIME_COLORS,
    REGIME_ORDER,
    ROOF_COLOR,
    VECTOR_COLOR,
    eng,
    intensity_fmt,
    is_gpu,
    new_figure,
    op_time,
    short_target,
    titles,
)
from roofline.schema.profile import DeviceProfile
from roofline.schema.report import OpReport, Report
from roofline.units import si


@dataclass
class Ceiling:
    label: str
    flop_per_s: float
    style: str  # "matmul" or "vector"


@dataclass
class Roofs:
    """The ceilings the roofline chart draws, read from one part of a profile."""

    ceilings: list[Ceiling]
    dram_bytes_per_s: float
    dram_label: str
    overhead_s: float
    overhead_label: str
    kernel_floor_s: float


def profile_part(report: Report, profile: DeviceProfile):
    """The part of ``profile`` the report was predicted for; a clear error when it has none."""
    kind = report.profile.kind
    if kind == "cuda" and profile.gpu is None:
        raise RooflineError(
            f"the report was predicted for a GPU but profile '{profile.name}' has no GPU part; pass the profile it was made with (--profile)"
        )
    return profile.part(kind)


def _gemm_dtype(report: Report, op: OpReport) -> str:
    dtype = op.inputs[0].dtype if op.inputs else "float32"
    name = dtype if dtype in ("bfloat16", "float16") else "float32"
    if name == "float32":
        tf32 = report.allow_tf32 or (op.category == "conv" and is_gpu(report) and report.conv_tf32)
        if tf32:
            name = "tf32"
    return name


def roofs_for(report: Report, profile: DeviceProfile) -> Roofs:
    """The compute ceilings for the dtypes the model uses, the DRAM roof and the overhead floor."""
    part = profile_part(report, profile)
    kind = report.profile.kind
    dev = DeviceModel(part, kind)
    wanted: dict[str, float] = defaultdict(float)
    vector_used = False
    for op in report.ops:
        if op.flops <= 0:
            continue
        if op.category in GEMM_CATEGORIES:
            wanted[_gemm_dtype(report, op)] += op.flops
        else:
            vector_used = True
    ceilings: list[Ceiling] = []
    seen = set()
    for name in sorted(wanted, key=lambda d: -wanted[d]):
        model = dev.matmul_model(name)
        got = model.curve.dtype
        if got in seen:
            continue
        seen.add(got)
        note = "" if got == name else f" (for {name}: not calibrated)"
        ceilings.append(Ceiling(f"{got} matmul peak {si(model.peak_flop_per_s, 'FLOP/s')}{note}", model.peak_flop_per_s, "matmul"))
    if vector_used or "float32" in wanted or not ceilings:
        theo = part.peaks.flop_per_s.get("float32")
        src = "fp32 datasheet" if theo else "fp32 matmul peak"
        ceilings.append(Ceiling(f"non-matmul {si(dev.vector_flop_per_s, 'FLOP/s')}, {src}", dev.vector_flop_per_s, "vector"))
    ident = part.identity
    cache = getattr(ident, "l2_cache_bytes", None) or getattr(ident, "l3_cache_bytes", None)
    copy = part.measurements.bandwidth_curve("copy") or part.measurements.bandwidth[0]
    dram = copy.dram_bytes_per_s(cache)
    dram_label = f"DRAM {si(dram, 'B/s')} (measured {copy.kind})"
    ov = part.measurements.overheads
    if kind == "cuda":
        o = ov.dispatch_s.median_s
        o_label = f"host dispatch {si(o, 's')}/op"
    else:
        o = (ov.op_small_s or ov.dispatch_s).median_s
        o_label = f"CPU per-op overhead {si(o, 's')}"
    floor = ov.kernel_min_s.median_s if (kind == "cuda" and ov.kernel_min_s) else 0.0
    return Roofs(ceilings, dram, dram_label, o, o_label, floor)


@dataclass
class _Point:
    """Ops that sit at one spot of the chart (same op, FLOPs, bytes and time), possibly of several regimes."""

    ops: list[OpReport]
    intensity: float
    rate: float
    measured_rate: float | None
    regime_s: dict[str, float]  # predicted time added to the run, by regime (marker areas)

    @property
    def time_s(self) -> float:
        return sum(self.regime_s.values())

    @property
    def regime(self) -> str:
        return max(self.regime_s, key=lambda r: self.regime_s[r])


def _points(report: Report) -> tuple[list[_Point], dict[str, int]]:
    """Ops as chart points (identical ops merged), and why the others are left out."""
    left_out: Counter = Counter()
    groups: dict[tuple, list[OpReport]] = defaultdict(list)
    for op in report.ops:
        nbytes = op.bytes_read + op.bytes_written
        t = op_time(report, op)
        if op.flops <= 0:
            left_out["zero FLOPs"] += 1
            continue
        if nbytes <= 0:
            left_out["zero bytes"] += 1
            continue
        if t <= 0:
            left_out["zero time"] += 1
            continue
        key = (op.target, op.flops, nbytes, round(math.log(t), 3))
        groups[key].append(op)
    points = []
    for (_, flops, nbytes, _), ops in groups.items():
        t = op_time(report, ops[0])
        meas = [o.measured_s for o in ops if o.measured_s]
        mrate = flops / float(np.median(meas)) if meas else None
        regime_s: dict[str, float] = defaultdict(float)
        for o in ops:
            for regime, s in o.regime_parts().items():
                regime_s[regime] += s
        points.append(_Point(ops, flops / nbytes, flops / t, mrate, dict(regime_s)))
    return points, dict(left_out)


def _label_of_ops(ops: list[OpReport]) -> str:
    name = short_target(ops[0].target)
    mods = list(dict.fromkeys(o.module or "top level" for o in ops))
    where = ", ".join(mods) if len(mods) <= 3 and sum(map(len, mods)) <= 36 else f"{len(mods)} modules"
    count = f" ×{len(ops)}" if len(ops) > 1 else ""
    one = f"{name}{count} · {where}"
    return one if len(one) <= 30 else f"{name}{count}\n{where}"


def _nice(x: float) -> float:
    """Round down to 1, 2 or 5 times a power of ten."""
    e = math.floor(math.log10(x))
    m = x / 10**e
    return (5 if m >= 5 else 2 if m >= 2 else 1) * 10**e


def roofline_chart(report: Report, profile: DeviceProfile, *, top: int = 8) -> Figure:
    """Log-log roofline: every op at (FLOP/byte, achieved FLOP/s) under the profile's roofs.

    Roofs: the measured matmul peak of each dtype the GEMM-like ops use, the vector ceiling, the DRAM
    roof; ridge points marked on the intensity axis. The overhead cap (dotted) is ``F / o`` for a few
    decades of F, ``o`` being one host dispatch (GPU) or the CPU's per-op overhead. Markers: area by
    predicted time added to the run, colour by regime, hollow = measured. Ops of zero FLOPs or bytes
    are left out and counted in a note.
    """
    roofs = roofs_for(report, profile)
    points, left_out = _points(report)
    gpu = is_gpu(report)
    with rc_context(RC):
        fig = new_figure((10.0, 6.6))
        notes = _roofline_notes(report, roofs, left_out, gpu)
        fig.text(0.02, 0.015, "\n".join(notes), fontsize=10, color="#424242", ha="left", va="bottom", linespacing=1.35)
        fig.subplots_adjust(left=0.135, right=0.975, top=0.87, bottom=0.125 + 0.0295 * len(notes))
        ax = fig.add_subplot()
        ax.set_xscale("log")
        ax.set_yscale("log")
        c = _Canvas.fit(fig, ax, roofs, points)
        _draw_roofs(c)
        floor_lines = _draw_overhead_caps(c, points)
        own_box, area, tmax = _draw_points(c, points)
        _label_ceilings(c)
        _label_memory_roof(c)
        _legend(c, points, area, tmax)
        _label_ridges(c)
        _label_overhead_caps(c, floor_lines)
        _label_top_ops(c, points, own_box, top)
        ax.xaxis.set_major_formatter(FuncFormatter(intensity_fmt))
        ax.yaxis.set_major_formatter(eng("FLOP/s"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.xaxis.set_major_locator(LogLocator(base=10, numticks=12))
        ax.set_xlabel("arithmetic intensity (FLOP per byte of compulsory traffic)")
        ax.set_ylabel("achieved FLOP/s (FLOPs / " + ("kernel time)" if gpu else "predicted time)"))
        ax.grid(True, which="major", color="#eeeeee", lw=0.8, zorder=0)
        titles(fig, ax, "roofline, predicted per op", report)
    return fig


@dataclass
class _Canvas:
    """The roofline's axes and what every drawing step reads: limits, roofs, the label placer."""

    fig: Figure
    ax: object
    renderer: object
    placer: Placer
    roofs: Roofs
    ceilings: list[Ceiling]  # highest first
    W: float  # DRAM bytes/s
    peak: float
    xmin: float
    xmax: float
    ymin: float
    ymax: float

    @property
    def xr_top(self) -> float:
        """The highest ridge: where the memory roof meets the top ceiling."""
        return self.peak / self.W

    @classmethod
    def fit(cls, fig: Figure, ax, roofs: Roofs, points: list["_Point"]) -> "_Canvas":
        """Axis limits that hold every point and roof, and room right of each ridge for its label."""
        renderer = fig.canvas.get_renderer()
        ceilings = sorted(roofs.ceilings, key=lambda c: -c.flop_per_s)
        peak = ceilings[0].flop_per_s
        W = roofs.dram_bytes_per_s
        xs = [p.intensity for p in points]
        ys = [p.rate for p in points] + [p.measured_rate for p in points if p.measured_rate]
        xmin = min([*xs, ceilings[-1].flop_per_s / W / 30]) / 3
        xmax = max([*xs, peak / W]) * 6
        ymin = min([*ys, peak / 1e4]) / 4
        close = any(a.flop_per_s / b.flop_per_s < 1.5 for a, b in zip(ceilings, ceilings[1:]))
        ymax = peak * (7 if close else 4)  # room above the top roof for its label (two lines when roofs are close)
        # Widen the right side until every ceiling label fits right of its ridge.
        aw = ax.get_window_extent(renderer).width
        for c in ceilings:
            w = text_width(ax, renderer, c.label, 11) + 20
            q = min(w / aw, 0.8)
            D, r = math.log(xmax / xmin), math.log(xmax / (c.flop_per_s / W))
            if r / D < q:
                xmax *= math.exp((q * D - r) / (1 - q))
        ax.set_xlim(xmin, xmax)
        ax.set_ylim(ymin, ymax)
        return cls(fig, ax, renderer, Placer(ax, renderer), roofs, ceilings, W, peak, xmin, xmax, ymin, ymax)


def _draw_roofs(c: _Canvas) -> None:
    """The memory roof up to the highest ridge, then each compute ceiling from its own ridge;
    ridges dropped to the axis."""
    ax = c.ax
    ax.plot([c.xmin, c.xr_top], [c.W * c.xmin, c.peak], color=ROOF_COLOR, lw=2.2, zorder=3, solid_capstyle="butt")
    for ceiling in c.ceilings:
        xr = ceiling.flop_per_s / c.W
        ls = "-" if ceiling.style == "matmul" else (0, (6, 3))
        col = ROOF_COLOR if ceiling.style == "matmul" else VECTOR_COLOR
        ax.plot([xr, c.xmax], [ceiling.flop_per_s, ceiling.flop_per_s], color=col, lw=2.2 if ceiling.style == "matmul" else 1.8, ls=ls, zorder=3)
        ax.plot([xr], [ceiling.flop_per_s], marker="o", ms=5, color=col, zorder=4)
        ax.plot([xr, xr], [c.ymin, ceiling.flop_per_s], color=col, lw=0.8, ls=(0, (2, 3)), alpha=0.6, zorder=2)


def _draw_overhead_caps(c: _Canvas, points: list["_Point"]) -> list[tuple[float, float, float]]:
    """The overhead cap F / o for decades of F in the range of the ops' FLOPs, drawn where it is
    below the roof; returns (F, rate, leftmost x) of each line drawn."""
    flops = [p.ops[0].flops for p in points]
    floor_lines = []
    if not flops:
        return floor_lines
    o = c.roofs.overhead_s
    lo, hi = math.floor(math.log10(min(flops))), math.ceil(math.log10(max(flops)))
    decades = [
        d for d in range(lo, hi + 1)
        if c.ymin * 1.5 < 10.0**d / o < c.peak / 1.5
        and all(abs(math.log10(10.0**d / o / ceiling.flop_per_s)) > 0.3 for ceiling in c.ceilings)
    ]
    while len(decades) > 3:
        decades = decades[::2]
    for d in decades:
        F = 10.0**d
        rate = F / o
        x0 = max(rate / c.W, c.xmin)
        c.ax.plot([x0, c.xmax], [rate, rate], color=FLOOR_COLOR, lw=1.2, ls=(0, (1, 2.5)), alpha=0.8, zorder=2)
        floor_lines.append((F, rate, x0))
    return floor_lines


def _draw_points(c: _Canvas, points: list["_Point"]):
    """Markers, area by predicted time added to the run, biggest first so small ones stay visible on
    top; every marker and the roof lines become obstacles for labels. Returns (each point's own
    obstacle index, the area function, the largest time)."""
    ax, placer = c.ax, c.placer
    scale = c.fig.dpi / 72.0
    tmax = max((t for p in points for t in p.regime_s.values()), default=0.0)

    def area(t: float) -> float:
        return 16.0 + 520.0 * (t / tmax if tmax > 0 else 0.0)

    layers = sorted(((p, r, t) for p in points for r, t in p.regime_s.items()), key=lambda x: -x[2])
    for p, r, t in layers:
        col = REGIME_COLORS[r]
        if p.measured_rate:
            ax.plot([p.intensity, p.intensity], [p.rate, p.measured_rate], color=col, lw=1.0, alpha=0.8, zorder=4)
            ax.scatter([p.intensity], [p.measured_rate], s=area(t), facecolors="none", edgecolors=col, linewidths=1.6, zorder=5)
        ax.scatter([p.intensity], [p.rate], s=area(t), c=col, alpha=0.85, edgecolors="white", linewidths=0.8, zorder=5)
    own_box: dict[int, int] = {}
    for i, p in enumerate(points):
        rad = math.sqrt(area(max(p.regime_s.values()))) / 2 * scale + 1
        for y in (p.rate, p.measured_rate):
            if y:
                px, py = ax.transData.transform((p.intensity, y))
                if y is p.rate:
                    own_box[i] = len(placer.boxes)
                placer.block(px - rad, py - rad, px + rad, py + rad)
    for seg in [((c.xmin, c.W * c.xmin), (c.xr_top, c.peak))] + [((x.flop_per_s / c.W, x.flop_per_s), (c.xmax, x.flop_per_s)) for x in c.ceilings]:
        (pa, qa), (pb, qb) = ax.transData.transform(seg)
        n = max(int(math.hypot(pb - pa, qb - qa) / 8), 1)
        for k in range(n + 1):
            u, v = pa + (pb - pa) * k / n, qa + (qb - qa) * k / n
            placer.block(u - 1.5, v - 1.5, u + 1.5, v + 1.5)
    return own_box, area, tmax


def _label_ceilings(c: _Canvas) -> None:
    """Ceiling labels on the right; ceilings closer than 1.5x share one label (a line each)."""
    ax, placer, W = c.ax, c.placer, c.W
    groups: list[list[Ceiling]] = []
    for ceiling in c.ceilings:
        if groups and groups[-1][-1].flop_per_s / ceiling.flop_per_s < 1.5:
            groups[-1].append(ceiling)
        else:
            groups.append([ceiling])
    for g in groups:
        top_c, bot_c = g[0], g[-1]
        if len(g) == 1:
            text = top_c.label
        else:
            text = "\n".join(x.label + (" (solid)" if x.style == "matmul" else " (dashed)") for x in g)
        col = ROOF_COLOR if top_c.style == "matmul" else VECTOR_COLOR
        col = col if len(g) == 1 else ROOF_COLOR
        xr = bot_c.flop_per_s / W
        xl = [xr * 1.6 * (c.xmax / xr / 8) ** f for f in (0.0, 0.3, 0.6)]
        spots = [(c.xmax / 1.08, "right", "bottom", top_c.flop_per_s * 1.12), (c.xmax / 1.08, "right", "top", bot_c.flop_per_s / 1.12)]
        # Left of the lowest ridge, just above the top line: above the memory roof, where no op can sit.
        spots.append((xr / 1.15, "right", "bottom", top_c.flop_per_s * 1.06))
        spots += [(x, "left", va, y) for x in xl for va, y in (("bottom", top_c.flop_per_s * 1.12), ("top", bot_c.flop_per_s / 1.12))]
        for x, ha, va, y in spots:
            t = ax.text(x, y, text, ha=ha, va=va, fontsize=11, color=col, zorder=6, linespacing=1.25)
            if try_keep(placer, t):
                break
        else:  # overlapping is better than missing: the least covered spot, on a white backing
            x, ha, va, y = min(spots, key=lambda sp: overlap(placer, ax, c.renderer, text, sp))
            t = ax.text(x, y, text, ha=ha, va=va, fontsize=11, color=col, zorder=8, linespacing=1.25,
                        bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.8))
            placer.block_artist(t)


def _label_memory_roof(c: _Canvas) -> None:
    """The DRAM label along the memory roof's slope, at the least covered spot."""
    ax, W = c.ax, c.W
    ang = math.degrees(math.atan2(*reversed(np.subtract(*ax.transData.transform([(c.xr_top, c.peak), (c.xmin, W * c.xmin)])))))
    x_lo = max(c.xmin, c.ymin * 1.5 / W)
    tried = []
    for frac in (0.3, 0.42, 0.18, 0.54, 0.06, 0.66, 0.0):
        xm = math.exp(math.log(x_lo) + frac * math.log(c.xr_top / x_lo))
        boxes = rotated_boxes(ax, c.renderer, c.roofs.dram_label, 11, (xm, W * xm * 1.25), ang)
        busy = sum(not c.placer._free(b) for b in boxes)
        tried.append((busy, xm, boxes))
        if busy == 0:
            break
    _, xm, boxes = min(tried, key=lambda x: x[0])  # no free spot: the least covered one
    ax.text(xm, W * xm * 1.25, c.roofs.dram_label, rotation=ang, rotation_mode="anchor", ha="left", va="bottom", fontsize=11, color=ROOF_COLOR, zorder=6)
    c.placer.boxes.extend(boxes)


def _legend(c: _Canvas, points: list["_Point"], area, tmax: float) -> None:
    """The legend where it covers nothing, the upper left first (above the memory roof no op sits)."""
    ax = c.ax
    handles = [
        Line2D([], [], ls="", marker="o", ms=9, color=REGIME_COLORS[r], label=f"{r}-bound")
        for r in REGIME_ORDER if any(r in p.regime_s for p in points)
    ]
    if any(p.measured_rate for p in points):
        handles.append(Line2D([], [], ls="-", lw=1.0, marker="o", ms=9, mfc="none", color="#424242", label="measured (hollow)"))
    if tmax > 0:
        for t in sorted({_nice(tmax), _nice(tmax / 10)}, reverse=True):
            handles.append(Line2D([], [], ls="", marker="o", ms=math.sqrt(area(t)), color="#bdbdbd", label=f"{si(t, 's')} of the run"))
    handles.append(Line2D([], [], color=FLOOR_COLOR, lw=1.2, ls=(0, (1, 2.5)), label=f"overhead cap F / {si(c.roofs.overhead_s, 's')}"))
    leg = None
    for loc in ("upper left", "lower right", "center right", "best"):
        leg = ax.legend(handles=handles, loc=loc, framealpha=0.92, borderpad=0.6, labelspacing=0.7, handletextpad=0.8, fontsize=10)
        leg.set_zorder(7)
        bb = leg.get_window_extent(c.renderer)
        if c.placer._free((bb.x0, bb.y0, bb.x1, bb.y1)) and not line_hits((bb.x0, bb.y0, bb.x1, bb.y1), ax, [(c.xmin, c.W * c.xmin), (c.xr_top, c.peak)]):
            break
    c.placer.block_artist(leg, pad=4)


def _label_ridges(c: _Canvas) -> None:
    """Each ridge's intensity, upright beside its drop line on the intensity axis."""
    ax = c.ax
    for k, ceiling in enumerate(sorted(c.ceilings, key=lambda x: -x.flop_per_s / c.W)):
        xr = ceiling.flop_per_s / c.W
        col = ROOF_COLOR if ceiling.style == "matmul" else VECTOR_COLOR
        sides = (("left", 1.05), ("right", 1 / 1.05))
        for ha, dx in (sides if k == 0 else sides[::-1]):
            t = ax.text(xr * dx, c.ymin * 1.25, f"ridge {xr:.3g} FLOP/B", rotation=90, ha=ha, va="bottom", fontsize=10, color=col, zorder=6)
            if try_keep(c.placer, t):
                break
        else:
            c.placer.place(xr, ceiling.flop_per_s, f"ridge {xr:.3g} FLOP/B", fontsize=10, color=col, radii=(8, 14, 22, 32, 44))


def _label_overhead_caps(c: _Canvas, floor_lines: list[tuple[float, float, float]]) -> None:
    for F, rate, x0 in floor_lines:
        label = f"{si(F, 'FLOP')} op"
        spots = [(c.xmax / 1.08, "right")] + [(x0 * 1.3 * (c.xmax / x0 / 4) ** f, "left") for f in (0.0, 0.25, 0.5, 0.75)]
        for x, ha in spots:
            if try_keep(c.placer, c.ax.text(x, rate * 1.08, label, ha=ha, va="bottom", fontsize=10, color=FLOOR_COLOR, zorder=6)):
                break


def _label_top_ops(c: _Canvas, points: list["_Point"], own_box: dict[int, int], top: int) -> None:
    """The top ops by time, labelled without overlap; ops of one name on top of each other share a label."""
    ax = c.ax
    scale = c.fig.dpi / 72.0
    order = sorted(range(len(points)), key=lambda i: -points[i].time_s)
    clusters: list[list[int]] = []
    for i in order[:top]:
        pi = ax.transData.transform((points[i].intensity, points[i].rate))
        for cl in clusters:
            pj = ax.transData.transform((points[cl[0]].intensity, points[cl[0]].rate))
            if short_target(points[cl[0]].ops[0].target) == short_target(points[i].ops[0].target) and math.dist(pi, pj) < 14 * scale:
                cl.append(i)
                break
        else:
            clusters.append([i])
    for cl in clusters:
        p = points[cl[0]]
        ops = [o for i in cl for o in points[i].ops]
        c.placer.place(p.intensity, p.rate, _label_of_ops(ops), fontsize=10, color="#212121", own=own_box.get(cl[0]))


def _roofline_notes(report: Report, roofs: Roofs, left_out: dict[str, int], gpu: bool) -> list[str]:
    o = si(roofs.overhead_s, "s")
    graph = f" ({si(roofs.kernel_floor_s, 's')} per kernel in a CUDA graph)" if gpu and roofs.kernel_floor_s else ""
    notes = [f"Overhead cap (dotted): an eager op costs at least one {roofs.overhead_label}{graph}, so an op of F FLOPs cannot exceed F / {o}."]
    if gpu:
        notes.append("Points use kernel time alone: one above the dotted line of its own FLOPs finishes before the host can issue the next op.")
    else:
        notes.append("Points use the whole predicted time, per-op overhead included (one queue, as the CPU runs it).")
    if any(op.category == "transcendental" and op.flops for op in report.ops):
        notes.append("Transcendental ops (gelu, sin, exp, ...) are priced at the calibrated sin throughput, below the vector ceiling.")
    if left_out:
        what = ", ".join(f"{n} op{'s' if n > 1 else ''} with {why}" for why, n in left_out.items())
        t_out = sum(op.predicted_s for op in report.ops if op.flops <= 0 or op.bytes_read + op.bytes_written <= 0 or op_time(report, op) <= 0)
        notes.append(f"Not shown (no place on a log FLOP axis): {what}; {si(t_out, 's')} of predicted time.")
    return [ln for n in notes for ln in textwrap.wrap(n, 128, subsequent_indent="  ")]


