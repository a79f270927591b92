"""Label placement without a dependency: each label takes the first candidate spot whose box
overlaps no earlier label, no obstacle (markers, lines, legend) and stays inside the axes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

@dataclass
class Placer:
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


def overlap(placer: Placer, ax, renderer, text: str, spot) -> float:
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


def text_width(ax, renderer, text: str, fontsize: float) -> float:
    t = ax.text(0, 0, text, fontsize=fontsize, transform=None)
    w = t.get_window_extent(renderer).width
    t.remove()
    return w


def rotated_boxes(ax, renderer, text: str, fontsize: float, xy, angle_deg: float) -> list[tuple]:
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


def line_hits(box, ax, seg) -> bool:
    (pa, qa), (pb, qb) = ax.transData.transform(seg)
    for k in range(201):
        u, v = pa + (pb - pa) * k / 200, qa + (qb - qa) * k / 200
        if box[0] <= u <= box[2] and box[1] <= v <= box[3]:
            return True
    return False


def try_keep(placer: Placer, text) -> bool:
    """Keep ``text`` if its box is free (and block it for later labels); remove it otherwise."""
    bb = text.get_window_extent(placer.renderer)
    if placer._free((bb.x0, bb.y0, bb.x1, bb.y1)):
        placer.boxes.append((bb.x0 - 2, bb.y0 - 2, bb.x1 + 2, bb.y1 + 2))
        return True
    text.remove()
    return False
