"""Charts of a ``Report``: the roofline, predicted against measured, time by module, batch and placement sweeps.

Every chart is a function that returns a ``matplotlib.figure.Figure`` built without pyplot (so no
global figure registry, no backend switch and no rcParams change leaks into the caller), sized for a
slide (10 x 6 in at 150 dpi, fonts 11 pt and up). ``save(fig, path)`` writes PNG or SVG by the
path's extension; ``plot_all`` writes every chart the report has data for.

The roofline chart (``roofline_chart``) places each op at its arithmetic intensity (FLOP per byte of
compulsory traffic) and its predicted achieved rate: FLOPs over its kernel time on a GPU, over its
whole predicted time on the CPU (one queue: dispatch included). Roofs come from the profile part the
report was predicted for: the measured matmul peak of each dtype the model's GEMM-like ops use, the
vector ceiling that prices every other op, and the DRAM bandwidth (copy curve, working sets beyond
twice the last-level cache). Per-op overhead is not a function of intensity but of size: an op of F
FLOPs that costs one host dispatch ``o`` cannot run faster than ``F / o`` in eager mode, so the chart
draws that cap as dotted horizontal lines for a few decades of F.
"""

from __future__ import annotations

import math
import textwrap
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import (
    EngFormatter,
    FixedLocator,
    FuncFormatter,
    LogLocator,
    NullFormatter,
)

from roofline.errors import RooflineError
from roofline.profile import DeviceProfile
from roofline.report import OpReport, Report

# ---- style -------------------------------------------------------------------------------------

FIGSIZE = (10.0, 6.0)
DPI = 150
FONT = 11
REGIME_COLORS = {"compute": "#2e7d32", "memory": "#1565c0", "overhead": "#c2185b", "none": "#9e9e9e"}
REGIME_ORDER = ("compute", "memory", "overhead", "none")
ROOF_COLOR = "#212121"
VECTOR_COLOR = "#616161"
FLOOR_COLOR = "#c2185b"
_GEMM_CATEGORIES = ("matmul", "conv", "attention")
_RC = {
    "font.size": FONT,
    "axes.titlesize": 14,
    "axes.labelsize": 12,
    "xtick.labelsize": FONT,
    "ytick.labelsize": FONT,
    "legend.fontsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.fonttype": "none",
}
# Metadata that names no website: the HTML page must hold no URL at all.
_PNG_META = {"Software": None}
_SVG_META = {"Creator": None, "Date": None, "Format": None, "Type": None}


def _new_figure(figsize=FIGSIZE) -> Figure:
    fig = Figure(figsize=figsize, dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def save(fig: Figure, path) -> Path:
    """Write ``fig`` as PNG or SVG, chosen by the extension; a bad path is a one-line ``RooflineError``."""
    path = Path(path).expanduser()
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in ("png", "svg"):
        raise RooflineError(f"cannot write a chart to {path}: use a .png or .svg file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format=fmt, dpi=DPI, metadata=_PNG_META if fmt == "png" else _SVG_META, facecolor="white")
    except OSError as e:
        raise RooflineError(f"cannot write the chart to {path}: {e.strerror or e}; choose another path")
    return path


# ---- formatting --------------------------------------------------------------------------------


from roofline.units import si  # noqa: E402  (re-exported: plots format with it)


def _eng(unit: str) -> EngFormatter:
    return EngFormatter(unit=unit, sep=" ")


def _intensity_fmt(v, _pos=None) -> str:
    return f"{v:g}"


def short_target(target: str) -> str:
    """``aten.addmm.default`` -> ``addmm``; long internal names shortened for labels."""
    name = target
    for prefix in ("aten.", "prims."):
        if name.startswith(prefix):
            name = name[len(prefix):]
    base, _, overload = name.partition(".")
    if "scaled_dot_product" in base:
        kind = next((k for k in ("flash", "efficient", "cudnn", "math") if k in base), "")
        return f"sdpa {kind}".strip()
    base = base.removeprefix("native_").removesuffix("_for_cpu")
    if base.startswith("_") and not base.startswith("__"):
        base = base[1:]
    if overload not in ("", "default"):
        base = f"{base}.{overload}"
    return base if len(base) <= 26 else base[:25] + "…"


def _dtype_names(report: Report) -> list[str]:
    """Floating dtypes of the op inputs, most FLOPs first (what the title names)."""
    weight: Counter = Counter()
    for op in report.ops:
        for t in op.inputs[:2]:
            if t.dtype.startswith(("float", "bfloat", "complex")):
                weight[t.dtype] += op.flops + 1
    names = [d for d, _ in weight.most_common()]
    if report.allow_tf32 and "float32" in names:
        names[names.index("float32")] = "float32 (TF32 matmuls)"
    return names or ["no floating-point ops"]


def _subtitle(report: Report) -> str:
    p = report.profile
    where = "GPU" if p.kind == "cuda" else "CPU"
    return f"{p.device} ({where}) · profile '{p.name}' · {', '.join(_dtype_names(report))}"


def _titles(fig: Figure, ax, title: str, report: Report) -> None:
    ax.set_title(_subtitle(report), fontsize=FONT, color="#424242", loc="left", pad=8)
    fig.suptitle(f"{report.model}: {title}", fontsize=15, fontweight="bold", x=ax.get_position().x0, ha="left", y=0.975)


def _gpu(report: Report) -> bool:
    return report.profile.kind == "cuda"


def op_time(report: Report, op: OpReport) -> float:
    """The predicted time the roofline rate is taken over: kernel time on a GPU, whole predicted time on the CPU."""
    return op.kernel_s if _gpu(report) else op.predicted_s


# ---- label placement ---------------------------------------------------------------------------


@dataclass
class _Placer:
    """Greedy label placement: each label takes the first candidate offset whose box overlaps no
    earlier label, no obstacle (markers, legend) and stays inside the axes. No dependency needed."""

    ax: object
    renderer: object
    boxes: list = field(default_factory=list)  # (x0, y0, x1, y1) in display pixels

    def block(self, x0, y0, x1, y1) -> None:
        self.boxes.append((x0, y0, x1, y1))

    def block_artist(self, artist, pad: float = 2.0) -> None:
        bb = artist.get_window_extent(self.renderer)
        self.boxes.append((bb.x0 - pad, bb.y0 - pad, bb.x1 + pad, bb.y1 + pad))

    def _free(self, box, ignore: int | None = None) -> bool:
        ab = self.ax.get_window_extent(self.renderer)
        x0, y0, x1, y1 = box
        if x0 < ab.x0 + 2 or x1 > ab.x1 - 2 or y0 < ab.y0 + 2 or y1 > ab.y1 - 2:
            return False
        for i, (a0, b0, a1, b1) in enumerate(self.boxes):
            if i == ignore:
                continue
            if x0 < a1 and x1 > a0 and y0 < b1 and y1 > b0:
                return False
        return True

    def _size(self, text: str, fontsize: float) -> tuple[float, float]:
        t = self.ax.text(0, 0, text, fontsize=fontsize, transform=None)
        bb = t.get_window_extent(self.renderer)
        t.remove()
        return bb.width + 4, bb.height

    def place(self, x, y, text, *, fontsize=10, color="#212121", radii=(6, 12, 20, 30, 44, 60, 80, 105, 135), own: int | None = None, leader_beyond=10, weight="normal"):
        """Annotate data point (x, y) with ``text`` at a free offset; returns the annotation or None."""
        px, py = self.ax.transData.transform((x, y))
        w, h = self._size(text, fontsize)
        scale = self.ax.figure.dpi / 72.0
        angles = (35, -35, 145, -145, 0, 180, 70, -70, 110, -110, 90, -90)
        for r in radii:
            for a in angles:
                dx, dy = r * math.cos(math.radians(a)), r * math.sin(math.radians(a))
                ha = "left" if dx > 1 else ("right" if dx < -1 else "center")
                va = "bottom" if dy > 1 else ("top" if dy < -1 else "center")
                cx, cy = px + dx * scale, py + dy * scale
                x0 = cx if ha == "left" else (cx - w if ha == "right" else cx - w / 2)
                y0 = cy if va == "bottom" else (cy - h if va == "top" else cy - h / 2)
                box = (x0, y0, x0 + w, y0 + h)
                if self._free(box, ignore=own):
                    leader = dict(arrowstyle="-", color=color, lw=0.7, alpha=0.7, shrinkA=0, shrinkB=3) if r >= leader_beyond else None
                    ann = self.ax.annotate(
                        text, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, fontsize=fontsize,
                        color=color, arrowprops=leader, zorder=6, fontweight=weight,
                    )
                    self.boxes.append(box)
                    return ann
        return None


# ---- the roofline chart ------------------------------------------------------------------------


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


def _part(report: Report, profile: DeviceProfile):
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
        tf32 = report.allow_tf32
        if op.category == "conv" and _gpu(report):
            import torch

            tf32 = tf32 or bool(torch.backends.cudnn.allow_tf32)
        if tf32:
            name = "tf32"
    return name


def roofs_for(report: Report, profile: DeviceProfile) -> Roofs:
    """The compute ceilings for the dtypes the model uses, the DRAM roof and the overhead floor."""
    from roofline.curves import DeviceModel

    part = _part(report, profile)
    kind = report.profile.kind
    dev = DeviceModel(part, kind)
    wanted: dict[str, float] = defaultdict(float)
    vector_used = False
    for op in report.ops:
        if op.flops <= 0:
            continue
        if op.category in _GEMM_CATEGORIES:
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
            regime_s[o.regime] += o.predicted_s
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
    gpu = _gpu(report)
    with rc_context(_RC):
        fig = _new_figure((10.0, 6.6))
        notes = _roofline_notes(report, roofs, left_out, gpu)
        fig.text(0.02, 0.015, "\n".join(notes), fontsize=10, color="#424242", ha="left", va="bottom", linespacing=1.35)
        fig.subplots_adjust(left=0.135, right=0.975, top=0.87, bottom=0.125 + 0.0295 * len(notes))
        ax = fig.add_subplot()
        ax.set_xscale("log")
        ax.set_yscale("log")
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
            w = _text_width(ax, renderer, c.label, 11) + 20
            q = min(w / aw, 0.8)
            D, r = math.log(xmax / xmin), math.log(xmax / (c.flop_per_s / W))
            if r / D < q:
                xmax *= math.exp((q * D - r) / (1 - q))
        ax.set_xlim(xmin, xmax)
        ax.set_ylim(ymin, ymax)

        # Memory roof up to the highest ridge, then each compute ceiling from its own ridge; ridges dropped to the axis.
        xr_top = peak / W
        ax.plot([xmin, xr_top], [W * xmin, peak], color=ROOF_COLOR, lw=2.2, zorder=3, solid_capstyle="butt")
        for c in ceilings:
            xr = c.flop_per_s / W
            ls = "-" if c.style == "matmul" else (0, (6, 3))
            col = ROOF_COLOR if c.style == "matmul" else VECTOR_COLOR
            ax.plot([xr, xmax], [c.flop_per_s, c.flop_per_s], color=col, lw=2.2 if c.style == "matmul" else 1.8, ls=ls, zorder=3)
            ax.plot([xr], [c.flop_per_s], marker="o", ms=5, color=col, zorder=4)
            ax.plot([xr, xr], [ymin, c.flop_per_s], color=col, lw=0.8, ls=(0, (2, 3)), alpha=0.6, zorder=2)

        # Overhead cap: F / o for decades of F in the range of the ops' FLOPs, drawn where it is below the roof.
        flops = [p.ops[0].flops for p in points]
        floor_lines = []
        if flops:
            lo, hi = math.floor(math.log10(min(flops))), math.ceil(math.log10(max(flops)))
            decades = [
                d for d in range(lo, hi + 1)
                if ymin * 1.5 < 10.0**d / roofs.overhead_s < peak / 1.5
                and all(abs(math.log10(10.0**d / roofs.overhead_s / c.flop_per_s)) > 0.3 for c in ceilings)
            ]
            while len(decades) > 3:
                decades = decades[::2]
            for d in decades:
                F = 10.0**d
                rate = F / roofs.overhead_s
                x0 = max(rate / W, xmin)
                ax.plot([x0, xmax], [rate, rate], color=FLOOR_COLOR, lw=1.2, ls=(0, (1, 2.5)), alpha=0.8, zorder=2)
                floor_lines.append((F, rate, x0))

        placer = _Placer(ax, renderer)
        scale = fig.dpi / 72.0

        # Markers: area by predicted time added to the run; biggest first so small ones stay visible on top.
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

        # Roof labels: the memory roof along its slope, ceilings on the right, ridges on the intensity axis.
        # The roof lines are obstacles for every label.
        for seg in [((xmin, W * xmin), (xr_top, peak))] + [((c.flop_per_s / W, c.flop_per_s), (xmax, c.flop_per_s)) for c in ceilings]:
            (pa, qa), (pb, qb) = ax.transData.transform(seg)
            n = max(int(math.hypot(pb - pa, qb - qa) / 8), 1)
            for k in range(n + 1):
                u, v = pa + (pb - pa) * k / n, qa + (qb - qa) * k / n
                placer.block(u - 1.5, v - 1.5, u + 1.5, v + 1.5)

        # Ceilings closer than 1.5x share one label (one line each, top line first).
        groups: list[list[Ceiling]] = []
        for c in ceilings:
            if groups and groups[-1][-1].flop_per_s / c.flop_per_s < 1.5:
                groups[-1].append(c)
            else:
                groups.append([c])
        for g in groups:
            top_c, bot_c = g[0], g[-1]
            if len(g) == 1:
                text = top_c.label
            else:
                text = "\n".join(c.label + (" (solid)" if c.style == "matmul" else " (dashed)") for c in g)
            col = ROOF_COLOR if top_c.style == "matmul" else VECTOR_COLOR
            col = col if len(g) == 1 else ROOF_COLOR
            xr = bot_c.flop_per_s / W
            xl = [xr * 1.6 * (xmax / xr / 8) ** f for f in (0.0, 0.3, 0.6)]
            spots = [(xmax / 1.08, "right", "bottom", top_c.flop_per_s * 1.12), (xmax / 1.08, "right", "top", bot_c.flop_per_s / 1.12)]
            # Left of the lowest ridge, just above the top line: above the memory roof, where no op can sit.
            spots.append((xr / 1.15, "right", "bottom", top_c.flop_per_s * 1.06))
            spots += [(x, "left", va, y) for x in xl for va, y in (("bottom", top_c.flop_per_s * 1.12), ("top", bot_c.flop_per_s / 1.12))]
            for x, ha, va, y in spots:
                t = ax.text(x, y, text, ha=ha, va=va, fontsize=11, color=col, zorder=6, linespacing=1.25)
                if _try_keep(placer, t):
                    break
            else:  # overlapping is better than missing: the least covered spot, on a white backing
                x, ha, va, y = min(spots, key=lambda sp: _overlap(placer, ax, renderer, text, sp))
                t = ax.text(x, y, text, ha=ha, va=va, fontsize=11, color=col, zorder=8, linespacing=1.25,
                            bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.8))
                placer.block_artist(t)
        ang = math.degrees(math.atan2(*reversed(np.subtract(*ax.transData.transform([(xr_top, peak), (xmin, W * xmin)])))))
        x_lo = max(xmin, ymin * 1.5 / W)
        tried = []
        for frac in (0.3, 0.42, 0.18, 0.54, 0.06, 0.66, 0.0):
            xm = math.exp(math.log(x_lo) + frac * math.log(xr_top / x_lo))
            boxes = _rotated_boxes(ax, renderer, roofs.dram_label, 11, (xm, W * xm * 1.25), ang)
            busy = sum(not placer._free(b) for b in boxes)
            tried.append((busy, xm, boxes))
            if busy == 0:
                break
        _, xm, boxes = min(tried, key=lambda x: x[0])  # no free spot: the least covered one
        ax.text(xm, W * xm * 1.25, roofs.dram_label, rotation=ang, rotation_mode="anchor", ha="left", va="bottom", fontsize=11, color=ROOF_COLOR, zorder=6)
        placer.boxes.extend(boxes)
        # Legend in the upper left: above the memory roof nothing can sit.
        handles = [
            Line2D([], [], ls="", marker="o", ms=9, color=REGIME_COLORS[r], label=f"{r}-bound")
            for r in REGIME_ORDER if any(r in p.regime_s for p in points)
        ]
        if any(p.measured_rate for p in points):
            handles.append(Line2D([], [], ls="-", lw=1.0, marker="o", ms=9, mfc="none", color="#424242", label="measured (hollow)"))
        if tmax > 0:
            for t in sorted({_nice(tmax), _nice(tmax / 10)}, reverse=True):
                handles.append(Line2D([], [], ls="", marker="o", ms=math.sqrt(area(t)), color="#bdbdbd", label=f"{si(t, 's')} of the run"))
        handles.append(Line2D([], [], color=FLOOR_COLOR, lw=1.2, ls=(0, (1, 2.5)), label=f"overhead cap F / {si(roofs.overhead_s, 's')}"))
        leg = None
        for loc in ("upper left", "lower right", "center right", "best"):
            leg = ax.legend(handles=handles, loc=loc, framealpha=0.92, borderpad=0.6, labelspacing=0.7, handletextpad=0.8, fontsize=10)
            leg.set_zorder(7)
            bb = leg.get_window_extent(renderer)
            if placer._free((bb.x0, bb.y0, bb.x1, bb.y1)) and not _line_hits((bb.x0, bb.y0, bb.x1, bb.y1), ax, [(xmin, W * xmin), (xr_top, peak)]):
                break
        placer.block_artist(leg, pad=4)

        for k, c in enumerate(sorted(ceilings, key=lambda c: -c.flop_per_s / W)):
            xr = c.flop_per_s / W
            col = ROOF_COLOR if c.style == "matmul" else VECTOR_COLOR
            sides = (("left", 1.05), ("right", 1 / 1.05))
            for ha, dx in (sides if k == 0 else sides[::-1]):
                t = ax.text(xr * dx, ymin * 1.25, f"ridge {xr:.3g} FLOP/B", rotation=90, ha=ha, va="bottom", fontsize=10, color=col, zorder=6)
                if _try_keep(placer, t):
                    break
            else:
                placer.place(xr, c.flop_per_s, f"ridge {xr:.3g} FLOP/B", fontsize=10, color=col, radii=(8, 14, 22, 32, 44))
        for F, rate, x0 in floor_lines:
            label = f"{si(F, 'FLOP')} op"
            spots = [(xmax / 1.08, "right")] + [(x0 * 1.3 * (xmax / x0 / 4) ** f, "left") for f in (0.0, 0.25, 0.5, 0.75)]
            for x, ha in spots:
                if _try_keep(placer, ax.text(x, rate * 1.08, label, ha=ha, va="bottom", fontsize=10, color=FLOOR_COLOR, zorder=6)):
                    break

        # The top ops by time, labelled without overlap; ops of one name on top of each other share a label.
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
            placer.place(p.intensity, p.rate, _label_of_ops(ops), fontsize=10, color="#212121", own=own_box.get(cl[0]))

        ax.xaxis.set_major_formatter(FuncFormatter(_intensity_fmt))
        ax.yaxis.set_major_formatter(_eng("FLOP/s"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.xaxis.set_major_locator(LogLocator(base=10, numticks=12))
        ax.set_xlabel("arithmetic intensity (FLOP per byte of compulsory traffic)")
        ax.set_ylabel("achieved FLOP/s (FLOPs / " + ("kernel time)" if gpu else "predicted time)"))
        ax.grid(True, which="major", color="#eeeeee", lw=0.8, zorder=0)
        _titles(fig, ax, "roofline, predicted per op", report)
    return fig


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


def _overlap(placer: _Placer, ax, renderer, text: str, spot) -> float:
    """Area of ``text`` at ``spot`` (x, ha, va, y) covered by placed boxes or outside the axes, pixels^2."""
    x, ha, va, y = spot
    t = ax.text(x, y, text, ha=ha, va=va, fontsize=11, linespacing=1.25)
    bb = t.get_window_extent(renderer)
    t.remove()
    ab = ax.get_window_extent(renderer)
    inside = max(0.0, min(bb.x1, ab.x1) - max(bb.x0, ab.x0)) * max(0.0, min(bb.y1, ab.y1) - max(bb.y0, ab.y0))
    total = bb.width * bb.height - inside
    for b in placer.boxes:
        total += max(0.0, min(bb.x1, b[2]) - max(bb.x0, b[0])) * max(0.0, min(bb.y1, b[3]) - max(bb.y0, b[1]))
    return total


def _text_width(ax, renderer, text: str, fontsize: float) -> float:
    t = ax.text(0, 0, text, fontsize=fontsize, transform=None)
    w = t.get_window_extent(renderer).width
    t.remove()
    return w


def _rotated_boxes(ax, renderer, text: str, fontsize: float, xy, angle_deg: float) -> list[tuple]:
    """Small boxes covering a label drawn at data ``xy`` (anchor: bottom left) rotated by ``angle_deg``."""
    t = ax.text(0, 0, text, fontsize=fontsize, transform=None)
    bb = t.get_window_extent(renderer)
    t.remove()
    w, h = bb.width, bb.height
    ax0, ay0 = ax.transData.transform(xy)
    c, s = math.cos(math.radians(angle_deg)), math.sin(math.radians(angle_deg))
    n = max(int(w / (h * 0.8)), 1)
    out = []
    for k in range(n + 1):
        d = w * k / n
        cx, cy = ax0 + c * d - s * h / 2, ay0 + s * d + c * h / 2
        out.append((cx - h / 2, cy - h / 2, cx + h / 2, cy + h / 2))
    return out


def _line_hits(box, ax, seg) -> bool:
    (pa, qa), (pb, qb) = ax.transData.transform(seg)
    for k in range(201):
        u, v = pa + (pb - pa) * k / 200, qa + (qb - qa) * k / 200
        if box[0] <= u <= box[2] and box[1] <= v <= box[3]:
            return True
    return False


def _try_keep(placer: _Placer, text) -> bool:
    """Keep ``text`` if its box is free (and block it for later labels); remove it otherwise."""
    bb = text.get_window_extent(placer.renderer)
    if placer._free((bb.x0, bb.y0, bb.x1, bb.y1)):
        placer.boxes.append((bb.x0 - 2, bb.y0 - 2, bb.x1 + 2, bb.y1 + 2))
        return True
    text.remove()
    return False


def _contains(box, x, y) -> bool:
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


# ---- predicted against measured ----------------------------------------------------------------


def measured_pairs(report: Report) -> list[tuple[OpReport, float, float]]:
    """(op, predicted, measured) for measured ops; predicted is kernel time on a GPU, predicted time on the CPU."""
    out = []
    for op in report.ops:
        if op.measured_s and op.measured_s > 0:
            pred = op_time(report, op)
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
    gpu = _gpu(report)
    with rc_context(_RC):
        fig = _new_figure()
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
        placer = _Placer(ax, fig.canvas.get_renderer())
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
        ax.xaxis.set_major_formatter(_eng("s"))
        ax.yaxis.set_major_formatter(_eng("s"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(f"measured ({'kernel device time' if gpu else 'wall time'} per op)")
        ax.set_ylabel(f"predicted ({'kernel time' if gpu else 'predicted time'} per op)")
        ax.grid(True, which="major", color="#eeeeee", lw=0.8, zorder=0)
        _titles(fig, ax, f"predicted vs measured, {len(pairs)} ops", report)
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
    if out["median_abs_error"] is None:
        out["median_abs_error"] = out["max_abs_error"] = float("nan")
    return out


# ---- time by module ----------------------------------------------------------------------------


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
    with rc_context(_RC):
        fig = _new_figure((10.0, height))
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
        ax.xaxis.set_major_formatter(_eng("s"))
        ax.set_xlabel("predicted time added to the forward (seconds)")
        ax.grid(True, axis="x", color="#eeeeee", lw=0.8)
        ax.set_axisbelow(True)
        ax.legend(loc="upper left", bbox_to_anchor=(-0.01, -0.6 / (height - 2.1)), ncol=4, frameon=False, fontsize=10)
        _titles(fig, ax, f"predicted time by module (total {si(report.total.predicted_s, 's')})", report)
    return fig


# ---- batch and placement sweeps ----------------------------------------------------------------


def _log_ticks(axis, unit: str) -> None:
    """SI-labelled log ticks; 1-2-5 steps when the axis spans under three decades."""
    lo, hi = sorted(axis.get_view_interval())
    subs = (1.0, 2.0, 5.0) if hi / lo < 10**2.5 else (1.0,)
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(_eng(unit))
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
    with rc_context(_RC):
        fig = _new_figure()
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
        _log_ticks(ax.yaxis, "s")
        ax.set_xlabel("batch size (leading dimension of every input)")
        ax.set_ylabel("predicted time per sample (seconds)")
        ax.grid(True, which="major", color="#eeeeee", lw=0.8)
        ax.set_axisbelow(True)
        ax.legend(loc="upper right", framealpha=0.92)
        _titles(fig, ax, "time per sample over batch size", report)
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
    with rc_context(_RC):
        fig = _new_figure()
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
        _log_ticks(ax.yaxis, "s")
        ax.set_xlabel(f"sweep point ({sw.parameter} and more)" if categorical else f"problem size ({sw.parameter})")
        ax.set_ylabel("predicted time per call (seconds)")
        ax.grid(True, which="major", color="#eeeeee", lw=0.8)
        ax.legend(loc="upper left", framealpha=0.92)
        _titles(fig, ax, "CPU or GPU over problem size", report)
    return fig


# ---- everything --------------------------------------------------------------------------------

CHARTS = ("roofline", "vs_measured", "modules", "batch", "placement")


def available_charts(report: Report) -> list[str]:
    """The charts this report has data for, in ``CHARTS`` order."""
    out = ["roofline"]
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
    fn = {"vs_measured": predicted_vs_measured, "modules": time_by_module, "batch": batch_chart, "placement": placement_chart}[name]
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
