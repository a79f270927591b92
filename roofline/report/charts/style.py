"""What every chart shares: figure size and fonts for a slide, regime colours, number formats,
titles, and writing PNG or SVG without metadata that names a website.

Figures are built without pyplot (no global figure registry, no backend switch, no rcParams change
leaks into the caller), sized for a slide: 10 x 6 in at 150 dpi, fonts 11 pt and up.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter

from roofline.errors import RooflineError
from roofline.schema.report import OpReport, Report

FIGSIZE = (10.0, 6.0)
DPI = 150
FONT = 11
REGIME_COLORS = {"compute": "#2e7d32", "memory": "#1565c0", "overhead": "#c2185b", "none": "#9e9e9e"}
REGIME_ORDER = ("compute", "memory", "overhead", "none")
ROOF_COLOR = "#212121"
VECTOR_COLOR = "#616161"
FLOOR_COLOR = "#c2185b"
GEMM_CATEGORIES = ("matmul", "conv", "attention")
RC = {
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
PNG_META = {"Software": None}
SVG_META = {"Creator": None, "Date": None, "Format": None, "Type": None}


def new_figure(figsize=FIGSIZE) -> Figure:
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
        fig.savefig(path, format=fmt, dpi=DPI, metadata=PNG_META if fmt == "png" else SVG_META, facecolor="white")
    except OSError as e:
        raise RooflineError(f"cannot write the chart to {path}: {e.strerror or e}; choose another path")
    return path


def eng(unit: str) -> EngFormatter:
    return EngFormatter(unit=unit, sep=" ")


def intensity_fmt(v, _pos=None) -> str:
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


def dtype_names(report: Report) -> list[str]:
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


def subtitle(report: Report) -> str:
    p = report.profile
    where = "GPU" if p.kind == "cuda" else "CPU"
    return f"{p.device} ({where}) · profile '{p.name}' · {', '.join(dtype_names(report))}"


def titles(fig: Figure, ax, title: str, report: Report) -> None:
    ax.set_title(subtitle(report), fontsize=FONT, color="#424242", loc="left", pad=8)
    fig.suptitle(f"{report.model}: {title}", fontsize=15, fontweight="bold", x=ax.get_position().x0, ha="left", y=0.975)


def is_gpu(report: Report) -> bool:
    return report.profile.kind == "cuda"


def op_time(report: Report, op: OpReport) -> float:
    """The predicted time the roofline rate is taken over: kernel time on a GPU, whole predicted time on the CPU."""
    return op.kernel_s if is_gpu(report) else op.predicted_s


