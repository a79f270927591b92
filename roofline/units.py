"""Numbers for people: SI prefixes on every quantity, one implementation for terminal, HTML and plots."""

from __future__ import annotations

import math

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"))


def si(x: float, unit: str = "", digits: int = 3) -> str:
    """``si(2.97e12, 'B/s') == '2.97 TB/s'``; ``si(1.03e-5, 's') == '10.3 µs'``."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g} {unit}".strip()
    for scale, prefix in _PREFIXES:
        if abs(x) >= scale * 0.9995:
            return f"{x / scale:.{digits}g} {prefix}{unit}".strip()
    return f"{x / 1e-9:.{digits}g} n{unit}"


def seconds(x: float | None, missing: str = "-") -> str:
    """A duration with the right prefix; ``missing`` for None or NaN, '0' for zero."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return missing
    if x == 0:
        return "0"
    return si(x, "s")


def count(x: float | None, unit: str = "", missing: str = "-") -> str:
    """A count or rate (FLOPs, bytes, FLOP/s): prefixes from k upward, none below 1000."""
    if x is None:
        return missing
    return si(x, unit) if abs(x) >= 1000 else f"{x:.3g} {unit}".strip()
