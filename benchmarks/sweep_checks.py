"""What the sweep checks share: a sweep's points of one family, and one line of their errors.

The checks (``addmm_grid_check.py``, ``conv_channels_check.py``, ``conv_backward_check.py``,
``attention_lengths_check.py``, ``cat_inputs_check.py``) price the points ``mechanism_sweep.py`` recorded with a profile.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path


def sweep_points(path: str | Path, family: str) -> list[dict]:
    """The points of one family (``conv_channels``, ``addmm_grid``, ...) of a recorded sweep."""
    return [p for p in json.loads(Path(path).read_text())["points"] if p["family"] == family]


def error_line(errors: list[float]) -> str:
    """n, median and p90 of |error| (p90: the value at 90% of the sorted list), and the signed median."""
    a = sorted(abs(e) for e in errors)
    return (f"n={len(a):3d} median {100 * statistics.median(a):5.1f}%, p90 {100 * a[int(0.9 * (len(a) - 1))]:5.1f}%, "
            f"signed median {100 * statistics.median(errors):+6.1f}%")
